/* A libc10.so stand-in for the front read of tools/torch_symbols.py: two strong c10
   symbols (one function, one object), one weak and one hidden (not exported). */
int _ZN3c1019UndefinedTensorImpl10_singletonE = 1;
int _ZN3c106detail14torchCheckFailEPKcS2_jS2_(void) { return 2; }
__attribute__((weak)) int _ZN3c1010cw_weak_oneEv(void) { return 3; }
__attribute__((visibility("hidden"))) int cw_hidden(void) { return 4; }
