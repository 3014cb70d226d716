// Relocatable device code: calls a __device__ function defined in rdc_b.cu.
extern __device__ int cw_rdc_twice(int x);
extern "C" __global__ void rdc_kernel(int *a) { a[threadIdx.x] = cw_rdc_twice(a[threadIdx.x]); }
extern "C" int cw_rdc_launch(int *a) { rdc_kernel<<<1, 32>>>(a); return (int)cudaGetLastError(); }
