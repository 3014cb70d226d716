#include <cstdio>
__global__ void cw_prog_kernel(int *a) { a[threadIdx.x] = threadIdx.x; }
int main() {
    int *d = nullptr;
    if (cudaMalloc(&d, 32 * sizeof(int)) != cudaSuccess) { std::puts("no device"); return 0; }
    cw_prog_kernel<<<1, 32>>>(d);
    cudaFree(d);
    return 0;
}
