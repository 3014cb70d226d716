"""Plan: release rows (CUDA train x platform -> architectures, PTX, dependencies), the one
row picker, and the emitters that write a row in each consumer's terms."""
