"""DEP013's symbol releases against the real loader: for a wheel whose library uses symbols
of an NVIDIA library, a fresh venv with the wheel and the providers of a boundary release
installed (``pip install --no-deps`` of local wheel files), then ``dlopen`` of the library
with RTLD_NOW through ctypes (every relocation bound, as importing an extension does).
The data says which side of the boundary each release is on; glibc's loader must agree:
the release before the first that exports the symbol fails with "undefined symbol", the
first loads.  No GPU or libcuda is needed for these libraries.

    python bench/nvidia_symbols_loader.py CONSUMER.whl nvidia/cusparse/lib/libcusparse.so.12 \\
        --old nvidia_nvjitlink_cu12-12.3.101-...whl --new nvidia_nvjitlink_cu12-12.4.99-...whl \\
        [--with OTHER.whl ...]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import venv

PROBE = """
import ctypes, os, sys
try:
    ctypes.CDLL(sys.argv[1], mode=os.RTLD_NOW | os.RTLD_LOCAL)
    print("loaded")
except OSError as exc:
    print("FAILED:", exc)
"""


def load_with(consumer: str, library: str, providers: list[str]) -> str:
    with tempfile.TemporaryDirectory(prefix="nvsym-venv-") as root:
        venv.create(root, with_pip=True)
        py = os.path.join(root, "bin", "python")
        subprocess.run([py, "-m", "pip", "install", "-q", "--no-deps", "--no-index", consumer,
                        *providers], check=True, capture_output=True)
        site = subprocess.run([py, "-c", "import sysconfig; print(sysconfig.get_paths()"
                               "['purelib'])"], check=True, capture_output=True,
                              text=True).stdout.strip()
        env = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
        out = subprocess.run([py, "-c", PROBE, os.path.join(site, library)], env=env,
                             capture_output=True, text=True)
        return (out.stdout or out.stderr).strip().replace(site + "/", "")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("consumer")
    ap.add_argument("library", help="the library's path under site-packages")
    ap.add_argument("--old", required=True, help="the provider release before the boundary")
    ap.add_argument("--new", required=True, help="the first provider release past it")
    ap.add_argument("--with", dest="others", action="append", default=[],
                    help="other wheels the library needs (same on both sides)")
    args = ap.parse_args(argv)
    results = {}
    for side, wheel in (("old", args.old), ("new", args.new)):
        results[side] = load_with(args.consumer, args.library, [wheel, *args.others])
        print(f"{os.path.basename(args.consumer)} + {os.path.basename(wheel)}: "
              f"{results[side]}")
    agree = results["old"].startswith("FAILED") and results["new"] == "loaded"
    print("loader agrees with the data" if agree else "LOADER DISAGREES")
    return 0 if agree else 1


if __name__ == "__main__":
    sys.exit(main())
