"""The torch ABI answer against the real loader: each extension binary of the given wheels
is relocated by glibc's ld.so (``ldd -r``: every relocation processed, as dlopen with
RTLD_NOW does) against the torch/lib of PyPI's torch wheels of the given releases,
extracted under /tmp/torchlibs (one release at a time, removed after).  A release is
inside the answer when rules/torch_abi.py says the binary loads with it; the loader must
then report no undefined torch symbol, and at least one outside it.  Libraries the
extension needs that are not torch's (libcudart.so.12 ...) are not installed: ld.so says
"not found" for them and the symbols they would define are left out of the count.

    PYTHONPATH=src python bench/torch_abi_loader.py --torch 2.1.2,2.2.2 W1.whl W2.whl
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))

import torch_symbols

from cuwheel.read.inspect import inspect
from cuwheel.rules.torch_abi import resolve_torch_abi

LIBS = Path("/tmp/torchlibs")
EXTS = Path("/tmp/torchexts")


def extract_torch(version: str) -> Path:
    out = LIBS / version
    if out.exists():
        return out
    (info,) = [i for i in torch_symbols.index_files([version]) if i["platform"] == "linux-x86_64"]
    remote = torch_symbols.Remote(info["url"], info["size"])
    out.mkdir(parents=True)
    for m in torch_symbols.members(remote):
        if m.name.startswith("torch/lib/") and ".so" in m.name:
            with open(out / m.name.rsplit("/", 1)[1], "wb") as f:
                for piece in torch_symbols.inflated(remote, m):
                    f.write(piece)
    return out


def extension_binaries(wheel: str) -> list[tuple[str, Path, set[str]]]:
    """(member, extracted path, releases of the answer) of each torch-linked binary."""
    src = inspect([wheel], workers=1, payload="none").sources[0]
    out = []
    with zipfile.ZipFile(wheel) as z:
        for b in src.binaries:
            ans = resolve_torch_abi(b)
            if ans is None or ans.platform != "linux-x86_64" or not ans.imported:
                continue
            member = b.path.rsplit("!", 1)[1]
            dest = EXTS / Path(wheel).name / member
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(z.read(member))
            out.append((member, dest, set(ans.versions)))
    return out


# A name whose outermost scope is one of torch's namespaces (a function, a const / ref
# member, a vtable or typeinfo): only torch can define it.  (Names that merely mention a
# torch type, torchaudio::io::StreamWriter::add_audio_stream(..., c10::optional<...>),
# belong to whoever defines the outer scope, here a library whose own deps are missing.)
TORCH_OUTER = re.compile(r"^_Z(?:N[KRO]*|T[VIS]N)(?:3c10|2at|5torch|6caffe2|4c10d)")


def undefined_torch(path: Path, libs: Path) -> list[str]:
    env = {**os.environ, "LD_LIBRARY_PATH": f"{libs}:{path.parent}"}
    res = subprocess.run(["ldd", "-r", str(path)], env=env, capture_output=True, text=True)
    out = []
    for line in (res.stdout + res.stderr).splitlines():
        if line.startswith("undefined symbol: "):
            name = line.split()[2].rstrip(",")
            if TORCH_OUTER.match(name):
                out.append(name)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--torch", required=True)
    ap.add_argument("wheels", nargs="+")
    args = ap.parse_args()
    bins = [(Path(w).name, m, p, ans) for w in args.wheels for m, p, ans in extension_binaries(w)]
    agree = disagree = 0
    for version in args.torch.split(","):
        libs = extract_torch(version)
        for wheel, member, path, ans in bins:
            bad = undefined_torch(path, libs)
            inside = version in ans
            ok = inside == (not bad)
            agree += ok
            disagree += not ok
            where = "in " if inside else "out"
            print(f"{'agree   ' if ok else 'DISAGREE'} torch {version} {where} "
                  f"{wheel} {member}: ld.so: {len(bad)} undefined torch symbols"
                  + (f" ({bad[0]})" if bad else ""), flush=True)
        shutil.rmtree(libs)
    print(f"{agree} agree, {disagree} disagree")


if __name__ == "__main__":
    main()
