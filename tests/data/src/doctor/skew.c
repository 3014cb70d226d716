/* A CUDA library built against the newer nvJitLink (as cuSPARSE of a later update is). */
int __nvJitLinkAddData_12_8(void *h, int kind, const void *data, unsigned long size,
                            const char *name);
int cw_skew(void) { return __nvJitLinkAddData_12_8(0, 0, 0, 0, 0); }
