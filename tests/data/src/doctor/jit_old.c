/* Stand-in for an older libnvJitLink.so.12: defines the 12.1 entry point only. */
int __nvJitLinkAddData_12_1(void *h, int kind, const void *data, unsigned long size,
                            const char *name) {
    (void)h; (void)kind; (void)data; (void)size; (void)name;
    return 0;
}
