"""``cuwheel toolkit``: a CUDA toolkit for a release train, assembled from NVIDIA's
checksummed redistributable archives or NVIDIA's component wheels, without an installer or
admin rights, for any target platform from any host.

>>> lock = resolve("cu130", "linux-x86_64", for_="build", source="wheels")  # doctest: +SKIP
>>> install("/opt/cuda-13.0", lock)                                         # doctest: +SKIP

docs/toolkit.md describes the component sets, the layout, the lockfile and the cache.
"""

from cuwheel.toolkit.assemble import Installed, check_build_tools, install, verify
from cuwheel.toolkit.cache import Cache, default_cache_dir
from cuwheel.toolkit.env import env_lines
from cuwheel.toolkit.lock import LOCK_NAME, Lock, Part, read_lock
from cuwheel.toolkit.manifest import Manifest, parse_manifest
from cuwheel.toolkit.resolve import (
    DEFAULT_REDIST_URL,
    host_platform,
    meta_pins,
    normalize_train,
    parse_train,
    resolve,
    select_components,
)
from cuwheel.toolkit.verify import Damage

__all__ = [
    "DEFAULT_REDIST_URL",
    "LOCK_NAME",
    "Cache",
    "Damage",
    "Installed",
    "Lock",
    "Manifest",
    "Part",
    "check_build_tools",
    "default_cache_dir",
    "env_lines",
    "host_platform",
    "install",
    "meta_pins",
    "normalize_train",
    "parse_manifest",
    "parse_train",
    "read_lock",
    "resolve",
    "select_components",
    "verify",
]
