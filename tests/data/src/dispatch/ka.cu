// One translation unit, one kernel: built for its own arch list by build_dispatch.sh.
#include <cuda_runtime.h>

__global__ void k_a(float* p) { p[threadIdx.x] += 1.0f; }

extern "C" int launch_a(float* p) {
    k_a<<<1, 32>>>(p);
    return (int)cudaGetLastError();
}
