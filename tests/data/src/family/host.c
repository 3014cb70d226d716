/* Host code of the kernel-family fixtures (tests/data/build_family.sh).
 *
 * Device code: cwfam::Gemm<float, 75> sm_75 | Gemm<float, 80> compute_80 + sm_80 |
 * Gemm<float, 90> sm_90a, one translation unit each; FAMILY_UNIQUE's Turing unit also holds
 * cwfam::Epilogue<float>, which no other unit has.
 *   FAMILY_DISPATCH  cw_dispatch picks the Gemm instantiation by compute capability
 *   FAMILY_SM75      the same device code; cw_dispatch calls the sm_75 one on every GPU
 *   FAMILY_UNIQUE    cw_dispatch picks the Gemm by compute capability, then runs Epilogue
 *   FAMILY_NEWPTX    Gemm<float, 90> sm_90 alone, beside two units with no kernel (table.cu:
 *                    device data only; empty.cu: nothing) whose only code for CC 9.0 is
 *                    compute_75 PTX of an ISA newer than the driver (cuRAND 13.4's shape);
 *                    cw_dispatch runs the Gemm
 *   FAMILY_NEWVAR    as FAMILY_NEWPTX, with var.cu (a device variable its own host code reads,
 *                    cw_read_table) in place of table.cu and empty.cu
 * cw_gemm75 / cw_gemm80 / cw_gemm90 / cw_epilogue launch one kernel each.  Every function
 * returns 0 on success, else the first CUDA error (cudaError_t), after a synchronize.
 */
#include <cuda_runtime_api.h>

int launch_gemm90(float *p);
#if !defined(FAMILY_NEWPTX) && !defined(FAMILY_NEWVAR)
int launch_gemm75(float *p);
int launch_gemm80(float *p);
#endif
#if defined(FAMILY_UNIQUE)
int launch_epilogue(float *p);
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
#if defined(FAMILY_SM75)
    return sync_after(launch_gemm75(p));
#elif defined(FAMILY_NEWPTX) || defined(FAMILY_NEWVAR)
    return sync_after(launch_gemm90(p));
#else
    /* sm_90a code runs on CC 9.0 alone; compute_80 PTX is JIT-compiled on newer GPUs */
    int c = cc();
    int err = c == 90 ? launch_gemm90(p) : c >= 80 ? launch_gemm80(p) : launch_gemm75(p);
#if defined(FAMILY_UNIQUE)
    err = err ? err : launch_epilogue(p);
#endif
    return sync_after(err);
#endif
}

int cw_gemm90(float *p) { return sync_after(launch_gemm90(p)); }
#if !defined(FAMILY_NEWPTX) && !defined(FAMILY_NEWVAR)
int cw_gemm75(float *p) { return sync_after(launch_gemm75(p)); }
int cw_gemm80(float *p) { return sync_after(launch_gemm80(p)); }
#endif
#if defined(FAMILY_UNIQUE)
int cw_epilogue(float *p) { return sync_after(launch_epilogue(p)); }
#endif
