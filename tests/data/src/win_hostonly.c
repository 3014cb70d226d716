/* Host-only DLL: imports only KERNEL32 (plus nothing CUDA). */
#include <windows.h>
__declspec(dllexport) int cw_host_add(int a, int b) { return a + b; }
__declspec(dllexport) unsigned long cw_tick(void) { return GetTickCount(); }
