"""Exported programs and other device-code artifacts that are not wheels
(docs/artifacts.md): AOTInductor packages (``.pt2``), ExecuTorch programs and data files
(``.pte`` / ``.ptd``, executorch.py), Triton caches and plain libraries (programs.py).  It
reads their containers and metadata, hands embedded libraries and cubins to
read/binary/, and hands on a ``Source`` with ``ArtifactFacts``: what the artifact records
about itself (exporter metadata, the host it needs, the CUDA release its toolchain
wrote).  The CUDA train those facts imply is judged above, in
``cuwheel.rules.artifact_train``.  Import from the modules; this package exports
nothing."""
