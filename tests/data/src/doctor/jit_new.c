/* Stand-in for a newer libnvJitLink.so.12: the 12.1 and the 12.8 entry points. */
int __nvJitLinkAddData_12_1(void *h, int kind, const void *data, unsigned long size,
                            const char *name) {
    (void)h; (void)kind; (void)data; (void)size; (void)name;
    return 0;
}
int __nvJitLinkAddData_12_8(void *h, int kind, const void *data, unsigned long size,
                            const char *name) {
    (void)h; (void)kind; (void)data; (void)size; (void)name;
    return 1;
}
