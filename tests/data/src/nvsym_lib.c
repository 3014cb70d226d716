/* Stand-ins of an NVIDIA library whose C API is versioned in the symbol names
   (tests/data/build_nvsyms.sh builds a release 1 and a release 2 of it). */
int cwLinkCreate(void) { return 0; }
int cwLinkAdd_1_0(int x) { return x; }
#ifdef CW_RELEASE2
int cwLinkAdd_1_1(int x) { return x + 1; }
int cwLinkDestroy(void) { return 0; }
#else
int cwLinkOld(void) { return 0; }
#endif
