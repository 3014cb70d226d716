/* A torch extension's host side, reduced to its links (tests/data/build_deps.sh): with
   CW_CXX_API it uses two symbols of torch's C++ API that auto_gptq 0.7.1's
   autogptq_cuda_64 module imports from libc10.so; otherwise two of the stable C shim
   (aoti_torch_*) that xformers 0.0.35's _C.so imports. */
#if defined(CW_CXX_API_211)
/* a CUDA 13 build against torch 2.11: c10::MessageLogger::MessageLogger(SourceLocation,
   int, bool), exported from 2.11.0 on, and c10::cuda::impl::CUDAGuardImpl's destructor,
   exported until 2.11.0 (data/torch_abi.toml) */
extern void _ZN3c1013MessageLoggerC1ENS_14SourceLocationEib(void);
extern void _ZN3c104cuda4impl13CUDAGuardImplD1Ev(void);
void *cw_torch_use(void) {
    _ZN3c104cuda4impl13CUDAGuardImplD1Ev();
    return (void *)&_ZN3c1013MessageLoggerC1ENS_14SourceLocationEib;
}
#elif defined(CW_CXX_API)
extern char _ZN3c1019UndefinedTensorImpl10_singletonE;
extern void _ZN3c1015SmallVectorBaseIjE8grow_podEPvmm(void *, unsigned long, unsigned long);
void *cw_torch_use(void) {
    _ZN3c1015SmallVectorBaseIjE8grow_podEPvmm(0, 0, 0);
    return &_ZN3c1019UndefinedTensorImpl10_singletonE;
}
#else
extern int aoti_torch_abi_version(void);
extern int aoti_torch_create_device_guard(int, void **);
int cw_torch_use(void) { return aoti_torch_abi_version() + aoti_torch_create_device_guard(0, 0); }
#endif
