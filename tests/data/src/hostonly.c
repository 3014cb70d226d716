/* Plain host library: no CUDA at all. */
int cw_host_add(int a, int b) { return a + b; }
