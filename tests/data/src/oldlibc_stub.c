/* Stand-ins for an old glibc (before 2.34) at link time, built with version scripts:
   libc.so.6 without shm_open (it lived in librt.so.1), librt.so.1 with it.  Only their
   names, sonames and version nodes matter; the consumers are never run. */
#ifdef CW_LIBRT
int shm_open(const char *name, int flags, unsigned mode) { (void)name; (void)flags; (void)mode; return -1; }
int shm_unlink(const char *name) { (void)name; return -1; }
#else
void __cxa_finalize(void *d) { (void)d; }
#endif
