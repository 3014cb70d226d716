/* Host-only library that links libcudart (DT_NEEDED libcudart.so.13) but has no device code. */
#include <cuda_runtime_api.h>
int cw_device_count(void) { int n = 0; return cudaGetDeviceCount(&n) == cudaSuccess ? n : -1; }
