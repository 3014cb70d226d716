/* Stand-in for the driver's libcuda: exports a few driver API entry points, as the real one
 * does (a wheel that bundles it under another name is still bundling the driver). */
int cuInit(unsigned flags) { (void)flags; return 0; }
int cuDriverGetVersion(int *v) { *v = 13000; return 0; }
int cuModuleLoadData(void **m, const void *image) { (void)m; (void)image; return 0; }
