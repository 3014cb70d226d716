/* The nvJitLink entry points tests/data/src/nvsym_user.c calls, so that it links. */
#ifdef CW_CUDA13
#define ADD __nvJitLinkAddData_13_1
#define CREATE __nvJitLinkCreate_13_0
#else
#define ADD __nvJitLinkAddData_12_4
#define CREATE __nvJitLinkCreate_12_0
#endif
int ADD(void *h, int k, const void *d, unsigned long n, const char *s) {
    (void)h; (void)k; (void)d; (void)n; (void)s; return 0;
}
int CREATE(void **h, unsigned n, const char **o) { (void)h; (void)n; (void)o; return 0; }
