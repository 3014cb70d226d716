/* Host code of the dispatch fixtures (tests/data/build_dispatch.sh).
 *
 * cw_dispatch launches the kernel its library has for this GPU's compute capability, as
 * NVIDIA's libraries pick kernels; cw_all launches every kernel of the library, as a library
 * that never dispatches would.  Which kernels exist per library is set at build time:
 *   DISPATCH_PERARCH  k_a sm_75, k_b sm_80, k_c sm_90 (one container per architecture)
 *   DISPATCH_LISTS    k_a {sm_75, sm_80}, k_c sm_90
 *   DISPATCH_BEFORE   k_a {sm_75, sm_80}, k_p compute_80 PTX; its host code knows CC 7.5
 *                     and 8.0 and sends any other GPU to its newest kernels (k_a), as a
 *                     library written before the GPU existed does
 * Both return 0 on success, else the first CUDA error (cudaError_t).
 */
#include <cuda_runtime_api.h>

int launch_a(float *p);
#if defined(DISPATCH_PERARCH)
int launch_b(float *p);
#endif
#if defined(DISPATCH_PERARCH) || defined(DISPATCH_LISTS)
int launch_c(float *p);
#endif
#if defined(DISPATCH_BEFORE)
int launch_p(float *p);
#endif

static int cc(void) {
    int dev = 0, major = 0, minor = 0;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev);
    cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev);
    return major * 10 + minor;
}

static int sync_after(int err) {
    int s = (int)cudaDeviceSynchronize();
    return err ? err : s;
}

int cw_dispatch(float *p) {
    int c = cc();
#if defined(DISPATCH_PERARCH)
    return sync_after(c >= 90 ? launch_c(p) : c >= 80 ? launch_b(p) : launch_a(p));
#elif defined(DISPATCH_LISTS)
    return sync_after(c >= 90 ? launch_c(p) : launch_a(p));
#else
    (void)c; /* 7.5 and 8.0 are the GPUs it knows: both k_a; anything else gets k_a too */
    return sync_after(launch_a(p));
#endif
}

int cw_all(float *p) {
    int err = launch_a(p);
#if defined(DISPATCH_PERARCH)
    err = err ? err : launch_b(p);
#endif
#if defined(DISPATCH_PERARCH) || defined(DISPATCH_LISTS)
    err = err ? err : launch_c(p);
#endif
#if defined(DISPATCH_BEFORE)
    err = err ? err : launch_p(p);
#endif
    return sync_after(err);
}
