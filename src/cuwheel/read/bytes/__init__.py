"""Bytes as every reader sees them: the ``Scan`` that serves byte-range requests while a
file streams past once and searches it for a signature the caller names (stream.py), the
bounded helpers every reader shares -- anomalies, the name budget, string tables, range
maps (tables.py) -- and the host sections as the container search sees them
(regions.py).  It reads no format of its own; it hands ranges of bytes to the format
readers in read/device/ and read/binary/.  Import from the modules; this package exports
nothing."""
