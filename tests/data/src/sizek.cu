// Kernels for the size ledger fixtures (tests/data/build_size.sh): enough templated
// device code that every architecture costs kilobytes, so that a what-if on the full
// build can be compared with the real smaller builds.
#include <cuda_runtime.h>

template <int N, typename T>
__global__ void stencil(const T* __restrict__ in, T* __restrict__ out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    T acc = 0;
#pragma unroll
    for (int k = -N; k <= N; ++k) {
        int j = min(max(i + k, 0), n - 1);
        acc += in[j] * T(k * k + 1) / T(N + 1);
    }
    out[i] = acc;
}

template <int B, typename T>
__global__ void reduce(const T* __restrict__ in, T* __restrict__ out, int n) {
    __shared__ T s[B];
    int i = blockIdx.x * B + threadIdx.x;
    s[threadIdx.x] = i < n ? in[i] : T(0);
    __syncthreads();
#pragma unroll
    for (int w = B / 2; w > 0; w >>= 1) {
        if (threadIdx.x < w) s[threadIdx.x] += s[threadIdx.x + w];
        __syncthreads();
    }
    if (threadIdx.x == 0) out[blockIdx.x] = s[0];
}

#define INST(T)                                                                 \
    template __global__ void stencil<1, T>(const T*, T*, int);                  \
    template __global__ void stencil<4, T>(const T*, T*, int);                  \
    template __global__ void reduce<64, T>(const T*, T*, int);                  \
    template __global__ void reduce<256, T>(const T*, T*, int);                 \
    template __global__ void reduce<512, T>(const T*, T*, int);

INST(float)


extern "C" int cw_size_launch(const float* in, float* out, int n) {
    stencil<4, float><<<(n + 255) / 256, 256>>>(in, out, n);
    return (int)cudaGetLastError();
}
