// The kernel library: one tiny kernel and a host launcher with a C interface.
#include <cuda_runtime.h>

__global__ void add_one_kernel(float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] += 1.0f;
}

// Adds 1 to each of the n floats at host pointer x on the current GPU; returns the
// cudaError_t (0 on success).
extern "C" int cuda_ext_add_one(float* x, int n) {
  float* d = nullptr;
  size_t bytes = sizeof(float) * (size_t)n;
  cudaError_t err = cudaMalloc(&d, bytes);
  if (err != cudaSuccess) return (int)err;
  err = cudaMemcpy(d, x, bytes, cudaMemcpyHostToDevice);
  if (err == cudaSuccess) {
    add_one_kernel<<<(n + 255) / 256, 256>>>(d, n);
    err = cudaGetLastError();
  }
  if (err == cudaSuccess) err = cudaMemcpy(x, d, bytes, cudaMemcpyDeviceToHost);
  cudaFree(d);
  return (int)err;
}
