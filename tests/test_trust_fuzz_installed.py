"""Structure fuzzing of the third round's surfaces (issue 31): installed-distribution
folders (METADATA, RECORD, WHEEL bytes and links in a site directory, read by doctor and
``check --dist``), ExecuTorch ``.pte`` programs and AOTInductor ``.pt2`` packages (built
with the real field layout and hostile values, or a real file cut and mutated), and
catalog cache entries (mutated bytes of a real entry, planted with and without a MAC).

The only outcomes allowed: each reader's one-line problems, no exception; a cache entry
that is not byte-for-byte cuwheel's own is never loaded.  A few dozen cases per reader in
the suite; the campaign ran with CUWHEEL_TRUST_FUZZ=2000 (docs/trust.md).
"""

from __future__ import annotations

import gzip
import os
import sys
import tempfile
import zipfile
from pathlib import Path

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).parent))
import ptebuild
from cuwheel.doctor import read_environment
from cuwheel.read.artifacts.programs import read_artifact
from cuwheel.read.sources import installed

SETTINGS = settings(max_examples=int(os.environ.get("CUWHEEL_TRUST_FUZZ", "40")),
                    deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
BIN = Path(__file__).parent / "data" / "bin"
SO = (BIN / "sm80.so").read_bytes()
PTE = gzip.decompress((Path(__file__).parent / "data" / "artifacts" / "et_cuda.pte.gz")
                      .read_bytes())  # fmt: skip

_pieces = st.sampled_from([
    b"Name: x\n", b"Version: 1\n", b"Requires-Dist: torch\n", b"Metadata-Version: 2.1\n",
    b"\xe9\xff\x00", b"\r\n", b"Name:\n", b"Requires-Dist: ;;;\n", b"\xef\xbb\xbf", b"\xff\xfe",
    b"pkg/k.so,,\n", b"../../etc/passwd,,\n", b"/etc/passwd,,\n", b"pkg/link/k.so,,\n",
    b"\"a,b\",c\n", b"pkg/\x00.so,,\n", b",,,\n", b"pkg/loop/loop/k.so,,\n", b"a" * 300,
])
_file = st.lists(_pieces, max_size=12).map(b"".join)


@st.composite
def _site(draw: st.DrawFn) -> dict[str, object]:
    return {
        "METADATA": draw(_file), "RECORD": draw(_file), "WHEEL": draw(_file),
        "special": draw(st.sampled_from(["", "METADATA", "RECORD", "WHEEL"])),
        "how": draw(st.sampled_from(["fifo", "dir", "loop", "out"])),
        "name": draw(st.sampled_from(["x", "X_y", "a.b", "-", "Ünï", "x" * 200])),
    }


@SETTINGS
@given(_site())
def test_installed_distribution_folders(case: dict[str, object]) -> None:
    with tempfile.TemporaryDirectory() as d:
        site = Path(d) / "site"
        (site / "pkg").mkdir(parents=True)
        (site / "pkg" / "k.so").write_bytes(SO)
        os.symlink("..", site / "pkg" / "loop")
        os.symlink(d, site / "pkg" / "link")  # a folder that leads out
        info = site / f"{case['name']}-1.0.dist-info"
        info.mkdir()
        for n in ("METADATA", "RECORD", "WHEEL"):
            (info / n).write_bytes(case[n])  # type: ignore[arg-type]
        special = case["special"]
        if special:
            target = info / str(special)
            target.unlink()
            how = case["how"]
            if how == "fifo":
                os.mkfifo(target)
            elif how == "dir":
                target.mkdir()
            elif how == "loop":
                os.symlink(target.name, target)
            else:
                (Path(d) / "outside").write_bytes(b"Name: outside\n")
                os.symlink(Path(d) / "outside", target)
        env = read_environment([str(site)], workers=1)
        for dist in env.distributions:
            assert all(f.startswith(os.path.realpath(site) + os.sep) for f in dist.files)
            assert all("\n" not in p.message for p in dist.problems)
        for dist in installed.distributions([str(site)]):
            assert all(f.startswith(dist.base + os.sep) for f in dist.files)


# ------------------------------------------------------------------ .pte / .pt2


_strings = st.one_of(st.text(max_size=12), st.binary(max_size=12),
                     st.sampled_from(["forward", "CudaBackend", "forward_so_blob", ""]))


@st.composite
def _program(draw: st.DrawFn) -> bytes:
    seg = draw(st.sampled_from([b"", SO, b"\x7fELF" + b"\0" * 60, b"\0" * 64]))
    nseg = draw(st.integers(0, 3))
    segs = [(draw(st.integers(0, 1 << 40)) if draw(st.booleans()) else 0,
             draw(st.integers(0, 1 << 40)) if draw(st.booleans()) else len(seg))
            for _ in range(nseg)]  # fmt: skip
    named = [(draw(_strings), draw(st.integers(0, 5))) for _ in range(draw(st.integers(0, 4)))]
    keys = draw(st.lists(_strings, max_size=4))
    plans = [ptebuild.delegate_plan(draw(_strings), draw(_strings), keys)] \
        if draw(st.booleans()) else []
    data = bytearray(ptebuild.program(plans=plans, segments=segs, named=named,
                                      segment_data=seg))  # fmt: skip
    for _ in range(draw(st.integers(0, 6))):  # then a few bytes flipped anywhere
        at = draw(st.integers(0, len(data) - 1))
        data[at] = draw(st.integers(0, 255))
    return bytes(data[: draw(st.integers(8, len(data)))])


@st.composite
def _mutated_real(draw: st.DrawFn) -> bytes:
    data = bytearray(PTE[: draw(st.integers(8, len(PTE)))])
    for _ in range(draw(st.integers(0, 10))):
        at = draw(st.integers(0, min(len(data) - 1, 8192)))  # the flatbuffer and header
        data[at] = draw(st.integers(0, 255))
    return bytes(data)


def _read_pte(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "p.pte"
        path.write_bytes(data)
        src = read_artifact(str(path))
        assert all("\n" not in p.message for p in src.problems)


@SETTINGS
@given(_program())
def test_built_programs(data: bytes) -> None:
    _read_pte(data)


@SETTINGS
@given(_mutated_real())
def test_mutated_real_program(data: bytes) -> None:
    _read_pte(data)


_AOTI = "model/data/aotinductor/model/"
_members = st.dictionaries(
    st.sampled_from([f"{_AOTI}model_metadata.json", f"{_AOTI}k.cpp", f"{_AOTI}k.json",
                     f"{_AOTI}model.wrapper.so", f"{_AOTI}k.cubin", f"{_AOTI}../../x.so",
                     "/abs.so", f"{_AOTI}a.fatbin"]),
    st.one_of(st.sampled_from([SO, b"[" * 5000, b'{"AOTI_DEVICE_KEY": "cuda"}',
                               b"\x7fELF", b"cuda-13.0", b"\xff" * 64, b""]),
              st.binary(max_size=64)),
    max_size=5,
)


@SETTINGS
@given(_members)
def test_built_packages(members: dict[str, bytes]) -> None:
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "m.pt2"
        with zipfile.ZipFile(path, "w") as z:
            for name, data in members.items():
                z.writestr(name, data)
        src = read_artifact(str(path))
        assert all("\n" not in p.message for p in src.problems)


# ------------------------------------------------------------------ catalog cache entries


@SETTINGS
@given(st.data())
def test_cache_entries_not_cuwheels_own_are_never_loaded(data: st.DataObject) -> None:
    from cuwheel.knowledge import _cache
    from cuwheel.knowledge.catalog import DATA_FILES, Catalog, build_catalog, read_data_file

    with tempfile.TemporaryDirectory() as d:
        os.environ["CUWHEEL_CACHE"] = d
        try:
            calls: list[int] = []

            def build() -> Catalog:
                calls.append(1)
                return build_catalog({n: read_data_file(n) for n in DATA_FILES})

            first = _cache.cached(DATA_FILES, build, Catalog)
            key = _cache._key(DATA_FILES)
            assert key is not None
            path = Path(d) / f"catalog-{key[:32]}.pickle"
            # a cache that could not be written (a full /tmp) is no error and no case here
            assume(path.exists())
            real = bytearray(path.read_bytes())
            n = data.draw(st.integers(1, 8))
            for _ in range(n):
                at = data.draw(st.integers(0, len(real) - 1))
                real[at] = (real[at] + data.draw(st.integers(1, 255))) % 256
            real = real[: data.draw(st.integers(0, len(real)))]
            path.write_bytes(bytes(real))
            second = _cache.cached(DATA_FILES, build, Catalog)
            assert calls == [1, 1]  # any changed byte: rebuilt, never believed
            assert second == first
        finally:
            del os.environ["CUWHEEL_CACHE"]
