/* Stand-in for libcudart: only its soname matters (DT_NEEDED of the check fixtures). */
int cudaGetDeviceCount(int *n) { *n = 0; return 0; }
