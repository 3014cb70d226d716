// One kernel template, instantiated per architecture: build_family.sh compiles this file
// once per target with -DCW_TAG=75|80|90 (the instantiation's own template argument, as
// per-architecture translation units of real libraries carry one), and once more with
// -DCW_UNIQUE for a Turing-only unit that also holds a kernel no other unit has.
#include <cuda_runtime.h>

namespace cwfam {
template <typename T, int Arch>
__global__ void Gemm(T* p) { p[threadIdx.x] += T(Arch); }
#ifdef CW_UNIQUE
template <typename T>
__global__ void Epilogue(T* p) { p[threadIdx.x] *= T(2); }
#endif
}  // namespace cwfam

#define CW_CAT(a, b) a##b
#define CW_NAME(a, b) CW_CAT(a, b)

extern "C" int CW_NAME(launch_gemm, CW_TAG)(float* p) {
    cwfam::Gemm<float, CW_TAG><<<1, 32>>>(p);
    return (int)cudaGetLastError();
}

#ifdef CW_UNIQUE
extern "C" int launch_epilogue(float* p) {
    cwfam::Epilogue<float><<<1, 32>>>(p);
    return (int)cudaGetLastError();
}
#endif
