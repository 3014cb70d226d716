/* Host side of the check fixtures' CUDA libraries: an allocator entry point that the
 * ownership check looks for, and a call into (a stand-in for) libcudart. */
extern int cudaGetDeviceCount(int *n);
int cw_cuda_alloc(void **p, unsigned long n) { (void)p; (void)n; int d = 0; return cudaGetDeviceCount(&d); }
