/* Stand-in for torch's libc10.so / libtorch*.so: defines what tests/data/src/torchext.c
   uses, so that the fixture links; only the sonames and symbol names matter. */
char _ZN3c1019UndefinedTensorImpl10_singletonE;
void _ZN3c1015SmallVectorBaseIjE8grow_podEPvmm(void *p, unsigned long a, unsigned long b) {
    (void)p; (void)a; (void)b;
}
int aoti_torch_abi_version(void) { return 0; }
int aoti_torch_create_device_guard(int d, void **g) { (void)d; (void)g; return 0; }
