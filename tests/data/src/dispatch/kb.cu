// One translation unit, one kernel: built for its own arch list by build_dispatch.sh.
#include <cuda_runtime.h>

__global__ void k_b(float* p) { p[threadIdx.x] += 1.0f; }

extern "C" int launch_b(float* p) {
    k_b<<<1, 32>>>(p);
    return (int)cudaGetLastError();
}
