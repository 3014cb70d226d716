/* A library needing the CUDA 13 runtime (DT_NEEDED libcudart.so.13). */
int cudaGetDeviceCount(int *n);
int cw_count13(void) { int n = -1; return cudaGetDeviceCount(&n) == 0 ? n : -1; }
