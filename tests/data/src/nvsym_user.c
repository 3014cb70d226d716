/* A library built against nvJitLink's header: nvJitLinkAddData maps to the newest
   release's entry point, __nvJitLinkAddData_12_4 in 12.4 (or, with -DCW_CUDA13,
   __nvJitLinkAddData_13_1 in 13.1; tests/data/build_nvsyms.sh). */
#ifdef CW_CUDA13
#define ADD __nvJitLinkAddData_13_1
#define CREATE __nvJitLinkCreate_13_0
#else
#define ADD __nvJitLinkAddData_12_4
#define CREATE __nvJitLinkCreate_12_0
#endif
extern int ADD(void *, int, const void *, unsigned long, const char *);
extern int CREATE(void **, unsigned, const char **);
int cw_link(void *h) {
    void *p = 0;
    CREATE(&p, 0, 0);
    return ADD(h, 0, 0, 0, "x");
}
