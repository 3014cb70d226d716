"""Host binaries: ELF files (elf.py; their symbols, versions and search paths in
elfsyms.py), PE/COFF images (pe.py) and ``ar`` archives (ar.py), and the one function
that recognises a file by its magic bytes and reads it, streamed, into an inventory
``Binary`` (sniff.py: :func:`~cuwheel.read.binary.sniff.read_binary`; bytes already in
memory and the cubins embedded whole in a library's data: embedded.py).  It reads the
stream a source hands it, asks read/device/ for the device code inside, and hands on
``Binary`` facts.  Import from the modules; this package exports nothing."""
