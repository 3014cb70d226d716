#include "tmpl.cuh"
template __global__ void kj::scale<4>(float*);
