/* Windows DLL that links cudart statically in spirit: it imports no CUDA DLL (only KERNEL32,
 * like any DLL) and exports the allocator entry point; its device code comes from a
 * generated fatbin .c file. */
__declspec(dllimport) unsigned long __stdcall GetTickCount(void);
__declspec(dllexport) int cw_cuda_alloc(void **p, unsigned long long n) {
    (void)p; (void)n; return (int)(GetTickCount() & 0);
}
