// Kernel names of several shapes, for the family decoder (model/kernels.py) against c++filt.
#include <cstdint>
namespace outer { namespace inner {
template <typename T, int N, bool B>
__global__ void tiled(T* p) { if (B) p[threadIdx.x] += N; }
struct Config { int x; };
template <typename C>
__global__ void with_struct(int* p) { p[0] = sizeof(C); }
}}  // namespace outer::inner
namespace {
__global__ void hidden(int* p) { p[0] = 1; }
}  // namespace
static __global__ void file_static(int* p) { p[0] = 2; }
extern "C" __global__ void c_linkage(int* p) { p[0] = 3; }
__global__ void overloaded(int* p) { p[0] = 4; }
__global__ void overloaded(float* p) { p[0] = 5; }
template <typename F>
__global__ void apply(F f, int* p) { p[threadIdx.x] = f(threadIdx.x); }
template <long long V>
__global__ void big_literal(long long* p) { p[0] = V; }

void launch_all(int* i, float* f, long long* l) {
  outer::inner::tiled<float, 4, true><<<1, 1>>>(f);
  outer::inner::tiled<std::int8_t, -2, false><<<1, 1>>>(reinterpret_cast<std::int8_t*>(i));
  outer::inner::with_struct<outer::inner::Config><<<1, 1>>>(i);
  hidden<<<1, 1>>>(i);
  file_static<<<1, 1>>>(i);
  c_linkage<<<1, 1>>>(i);
  overloaded<<<1, 1>>>(i);
  overloaded<<<1, 1>>>(f);
  apply<<<1, 1>>>([] __device__(int x) { return 2 * x; }, i);
  big_literal<1125899906909952LL><<<1, 1>>>(l);
}
