"""Where binaries come from: a wheel (the zip structure in zipdir.py, decompression in
inflate.py, members as streams in wheelfile.py, its own description in wheelmeta.py), a
directory or a file on disk (files.py), an installed distribution (installed.py), each
behind one interface (source.py: a ``Plan`` of what the source is and holds, and one
member read at a time).  It reads files and zip members and hands each member, sniffed
and streamed, to read/binary/; what it hands on is a ``Source``: wheel metadata, the
``Binary`` facts of its members and the problems met on the way.  Import from the
modules; this package exports nothing."""
