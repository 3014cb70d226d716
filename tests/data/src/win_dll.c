/* Windows DLL host code: imports from cudart64_13.dll / cublas64_13.dll through stub import
 * libraries; the device code comes from a generated fatbin_*.c file (see build.sh). */
#include <stddef.h>
typedef int cudaError_t;
typedef struct cublasContext *cublasHandle_t;
__declspec(dllimport) cudaError_t cudaMalloc(void **p, size_t n);
__declspec(dllimport) cudaError_t cudaFree(void *p);
__declspec(dllimport) int cublasCreate_v2(cublasHandle_t *h);
__declspec(dllimport) int cublasDestroy_v2(cublasHandle_t h);

__declspec(dllexport) int cw_alloc(void **p, size_t n) { return cudaMalloc(p, n); }
__declspec(dllexport) int cw_free(void *p) { return cudaFree(p); }
__declspec(dllexport) int cw_blas_roundtrip(void) {
    cublasHandle_t h;
    int rc = cublasCreate_v2(&h);
    return rc ? rc : cublasDestroy_v2(h);
}
