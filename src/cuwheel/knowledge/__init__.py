"""Knowledge: the validated GPU / CUDA / package / consumer catalog read from
``cuwheel/data/*.toml`` and the lookups over it."""
