"""Device code: fatbin containers and entry headers (fatbin.py), cubins (cubin.py), PTX
text (ptx.py), the walk that finds containers in a host file as it streams past
(containers.py) and the choice of which entry payloads are decoded and what is read from
them (payloads.py).  It reads the bytes the host readers (read/binary/) point it at and
hands on inventory facts: ``FatbinContainer`` and ``FatbinEntry`` values, the toolkit that
built a cubin, the names of its entry kernels.  Import from the modules; this package
exports nothing."""
