/* A library that copies with memcpy.  Linked on glibc >= 2.14 the reference is
   memcpy@GLIBC_2.14 (the overlap-safe rewrite), beyond manylinux1 (glibc 2.5); with
   -DOLD_MEMCPY the .symver directive binds the old memcpy@GLIBC_2.2.5 instead, the usual
   fix for an old tag. */
#include <string.h>
#ifdef OLD_MEMCPY
__asm__(".symver memcpy, memcpy@GLIBC_2.2.5");
#endif
void *cw_copy(void *dst, const void *src, size_t n) { return memcpy(dst, src, n); }
