/* An extension linked against the CUDA 12 runtime (DT_NEEDED libcudart.so.12). */
int cudaGetDeviceCount(int *n);
int cw_count12(void) { int n = -1; return cudaGetDeviceCount(&n) == 0 ? n : -1; }
