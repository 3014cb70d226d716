__device__ int cw_rdc_twice(int x) { return 2 * x; }
