extern "C" __global__ void cw_tu1(int *a) { a[threadIdx.x] += 1; }
extern "C" int cw_tu1_launch(int *a) { cw_tu1<<<1, 32>>>(a); return (int)cudaGetLastError(); }
