extern "C" __global__ void cw_tu2(int *a) { a[threadIdx.x] -= 2; }
extern "C" int cw_tu2_launch(int *a) { cw_tu2<<<1, 32>>>(a); return (int)cudaGetLastError(); }
