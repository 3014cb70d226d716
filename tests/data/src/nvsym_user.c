/* A library built against nvJitLink 12.4's header: nvJitLinkAddData maps to
   __nvJitLinkAddData_12_4 (tests/data/build_nvsyms.sh). */
extern int __nvJitLinkAddData_12_4(void *, int, const void *, unsigned long, const char *);
extern int __nvJitLinkCreate_12_0(void **, unsigned, const char **);
int cw_link(void *h) {
    void *p = 0;
    __nvJitLinkCreate_12_0(&p, 0, 0);
    return __nvJitLinkAddData_12_4(h, 0, 0, 0, "x");
}
