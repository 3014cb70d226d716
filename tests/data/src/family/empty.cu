// No device code at all.
int cw_empty_host(void) { return 0; }
