/* A stand-in torch extension for the torch ABI resolution (tests/test_torch_abi.py): it
   imports one symbol of torch's C++ API that every release since 2.0 exports
   (c10::UndefinedTensorImpl::_singleton) and, with CW_NEW, one that libc10.so exports
   from 2.13.0 on (c10::TensorImpl::set_fake_device(c10::Device)), otherwise one that
   2.13.0 no longer exports (c10::getDtypeNames[abi:cxx11](c10::ScalarType)).  The
   names are given as assembler labels: no torch header is needed, and the references
   are data relocations, bound when the loader loads the file. */
#ifdef CW_NEW
extern char cw_sym __asm__("_ZN3c1010TensorImpl15set_fake_deviceENS_6DeviceE");
#else
extern char cw_sym __asm__("_ZN3c1013getDtypeNamesB5cxx11ENS_10ScalarTypeE");
#endif
extern char cw_common __asm__("_ZN3c1019UndefinedTensorImpl10_singletonE");
void *cw_torch_sym(void) { return &cw_sym; }
void *cw_torch_common(void) { return &cw_common; }
