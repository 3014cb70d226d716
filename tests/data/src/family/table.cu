// Device data and no kernel: the shape of cuRAND 13.4's data-only units.
static __device__ unsigned int cw_table[64] = {1, 2, 3, 4, 5, 6, 7, 8};
