"""Reading: sources (wheels, directories, installed distributions, files) -> host binary
readers (ELF, PE/COFF, ar) -> the container walk -> device-code parsers (fatbin, cubin,
PTX) -> inventory facts.  The entry point is :func:`cuwheel.read.inspect.inspect`."""
