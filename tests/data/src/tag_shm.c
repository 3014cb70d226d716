/* A library that uses POSIX shared memory.  glibc before 2.34 has shm_open/shm_unlink in
   librt.so.1 only; from 2.34 in libc.so.6 (GLIBC_2.34). */
#include <fcntl.h>
#include <sys/mman.h>
int cw_shm(const char *name) {
    int fd = shm_open(name, O_RDWR | O_CREAT, 0600);
    if (fd >= 0) shm_unlink(name);
    return fd;
}
