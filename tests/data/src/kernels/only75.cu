// a kernel no other container has: built for sm_75 only, so missing on every other GPU
namespace kj {
__global__ void turing_only(float* p) { p[threadIdx.x] += 1.0f; }
}  // namespace kj
