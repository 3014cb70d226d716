#include "tmpl.cuh"
template __global__ void kj::scale<2>(float*);
template __global__ void kj::scale<3>(float*);
