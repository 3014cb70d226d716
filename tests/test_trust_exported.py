"""Trust boundaries of exported programs (issue 31): budgets by bytes, not items, for
``.pte`` / ``.pt2`` files and every decoded string or segment (decoded once, shared), and
the one bounded JSON loader for their metadata, Triton's kernel JSON and variant.json.

Hostile programs are written here (tests/ptebuild.py, zipfile).  Against the code before
issue 31: one segment under 2,000 names was read 2,000 times, 90,000 compile specs of one
key were decoded 90,000 times (MemoryError under RLIMIT_AS), 600 kernel sources of 8 MiB
were all read, a 511 MiB wrapper library was joined in memory, a plain library copied
whole, and deep JSON was a RecursionError.  Counts are of operations, memory is
tracemalloc's peak or RLIMIT_AS in a child: nothing is timed by the wall clock.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tracemalloc
import zipfile
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
import ptebuild
from cuwheel.read.artifacts import executorch
from cuwheel.read.artifacts import programs as artifacts
from cuwheel.read.artifacts.programs import read_artifact

SRC = Path(os.environ.get("CW_TEST_SRC") or Path(__file__).resolve().parent.parent / "src")
BIN = Path(__file__).parent / "data" / "bin"
SO = (BIN / "sm80.so").read_bytes()


def _count_reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    calls: list[str] = []
    real = executorch.read_bytes

    def counted(display: str, data: bytes) -> tuple[list, list]:
        calls.append(display)
        return real(display, data)

    monkeypatch.setattr(executorch, "read_bytes", counted)
    return calls


def test_one_segment_under_2000_names_is_read_once(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    seg = SO + b"\0" * ((16 << 20) - len(SO))  # a 16 MiB library
    pte = tmp_path / "shared.pte"
    pte.write_bytes(ptebuild.program(segments=[(0, len(seg))],
                                     named=[(f"blob{i}", 0) for i in range(2000)],
                                     segment_data=seg))  # fmt: skip
    calls = _count_reads(monkeypatch)
    src = read_artifact(str(pte))
    assert calls == [f"{pte}!blob0"] and not src.problems
    assert src.artifact is not None and len(src.artifact.meta("ET_NAMED_DATA")) == 2000


_CHILD = r"""
import json, resource, sys
resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
from cuwheel.read.artifacts.programs import read_artifact
src = read_artifact(sys.argv[1])
print(json.dumps({"problems": [p.message for p in src.problems],
                  "meta": [list(m) for m in src.artifact.metadata]}))
"""


def _isolated(path: Path) -> dict:
    proc = subprocess.run([sys.executable, "-c", _CHILD, str(path)], capture_output=True,
                          text=True, timeout=300, check=False,
                          env={**os.environ, "PYTHONPATH": str(SRC)})  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    out: dict = json.loads(proc.stdout)
    return out


def test_90000_compile_specs_of_one_key_are_decoded_once(tmp_path: Path) -> None:
    key = ptebuild.Shared("k" * (1 << 20))  # one 1 MiB key, named 90,000 times
    pte = tmp_path / "specs.pte"
    pte.write_bytes(ptebuild.program(
        plans=[ptebuild.delegate_plan("forward", "CudaBackend", [key] * 90_000)]))
    out = _isolated(pte)
    specs = [v for k, v in out["meta"] if k == "ET_COMPILE_SPEC"]
    assert specs == ["CudaBackend:" + "k" * executorch.MAX_STRING], len(specs)


@pytest.mark.parametrize("length,kept", [(4096, 4096), (4097, 4096)])
def test_a_flatbuffer_string_at_and_past_its_bound(tmp_path: Path, length: int,
                                                   kept: int) -> None:  # fmt: skip
    assert executorch.MAX_STRING == 4096
    pte = tmp_path / "s.pte"
    pte.write_bytes(ptebuild.program(plans=[ptebuild.delegate_plan("f", "B", ["x" * length])]))
    src = read_artifact(str(pte))
    assert src.artifact is not None
    (spec,) = src.artifact.meta("ET_COMPILE_SPEC")
    assert len(spec) == len("B:") + kept


@pytest.mark.parametrize("segments,read", [(2, 2), (3, 2)])
def test_the_segment_budget_at_and_past_its_bound(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                  segments: int, read: int) -> None:  # fmt: skip
    size = len(SO) + (-len(SO) % 16)
    monkeypatch.setattr(executorch, "MAX_SEGMENTS_TOTAL", 2 * size)
    data = b"".join(SO + b"\0" * (size - len(SO)) for _ in range(segments))
    pte = tmp_path / "budget.pte"
    pte.write_bytes(ptebuild.program(segments=[(i * size, size) for i in range(segments)],
                                     named=[(f"s{i}", i) for i in range(segments)],
                                     segment_data=data))  # fmt: skip
    calls = _count_reads(monkeypatch)
    src = read_artifact(str(pte))
    assert len(calls) == read
    assert src.artifact is not None
    assert len([n for n in src.artifact.notes if "not read" in n]) == segments - read


def _pt2(path: Path, members: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in members.items():
            z.writestr(name, data)
    return path


_AOTI = "model/data/aotinductor/model/"


def test_600_kernel_sources_of_8_mib_are_read_up_to_the_text_budget(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src8 = b"// /usr/local/cuda-13.0/include\n" + b" " * ((8 << 20) - 40)
    pt2 = _pt2(tmp_path / "k.pt2", {f"{_AOTI}k{i}.cpp": src8 for i in range(600)})
    seen: list[str] = []
    real = artifacts._build_paths
    monkeypatch.setattr(artifacts, "_build_paths",
                        lambda where, text: seen.append(where) or real(where, text))
    src = read_artifact(str(pt2))
    assert len(seen) == artifacts.MAX_TEXT_TOTAL // len(src8) == 8
    assert src.artifact is not None
    assert len([n for n in src.artifact.notes if "not read" in n]) == 592


def test_a_511_mib_wrapper_library_of_zeros_is_not_joined_in_memory(tmp_path: Path) -> None:
    lib = SO + b"\0" * ((511 << 20) - len(SO))
    pt2 = _pt2(tmp_path / "w.pt2", {f"{_AOTI}model.wrapper.so": lib})
    del lib
    assert pt2.stat().st_size < 1 << 20  # a ~520 KB package
    tracemalloc.start()
    try:
        src = read_artifact(str(pt2))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert not src.problems, src.problems
    assert peak < 64 << 20, peak


def test_a_plain_library_is_searched_through_a_map_not_copied(tmp_path: Path) -> None:
    lib = tmp_path / "big.so"
    with open(lib, "wb") as f:
        f.write(SO)
        f.truncate(500 << 20)  # sparse: 500 MiB, under MAX_SCANNED
    tracemalloc.start()
    try:
        src = read_artifact(str(lib))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert src.binaries and peak < 64 << 20, peak


_DEEP = b"[" * 100_000 + b"]" * 100_000


def test_deep_pt2_metadata_json_is_no_recursion_error(tmp_path: Path) -> None:
    pt2 = _pt2(tmp_path / "d.pt2", {f"{_AOTI}model_metadata.json": _DEEP,
                                    f"{_AOTI}model.wrapper.so": SO})  # fmt: skip
    src = read_artifact(str(pt2))
    assert src.binaries


def test_deep_triton_kernel_json_is_a_problem(tmp_path: Path) -> None:
    d = tmp_path / "cache" / "abc"
    d.mkdir(parents=True)
    (d / "k.cubin").write_bytes((BIN.parent / "bin" / "k90.cubin").read_bytes())
    (d / "k.json").write_bytes(_DEEP)
    src = read_artifact(str(tmp_path / "cache"))
    assert any("unreadable kernel metadata" in p.message for p in src.problems)


def test_a_fifo_in_a_triton_cache_is_not_waited_on(tmp_path: Path) -> None:
    d = tmp_path / "cache" / "abc"
    d.mkdir(parents=True)
    (d / "k.cubin").write_bytes((BIN / "k90.cubin").read_bytes())
    (d / "k.json").write_text("{}")
    os.mkfifo(d / "x.json")
    code = ("import sys; from cuwheel.read.artifacts.programs import read_artifact; "
            "read_artifact(sys.argv[1])")
    proc = subprocess.run([sys.executable, "-c", code, str(tmp_path / "cache")],
                          capture_output=True, text=True, timeout=60, check=False,
                          env={**os.environ, "PYTHONPATH": str(SRC)})  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-1000:]


def test_deep_variant_json_is_a_declared_problem(tmp_path: Path) -> None:
    import wheelfactory
    from cuwheel.variant.properties import read_declared, vocabulary

    name = f"cwfixture-1.0.dist-info/{vocabulary().dist_info_file}"
    whl = wheelfactory.make_wheel(tmp_path, {"pkg/k.so": SO, name: _DEEP})
    dec = read_declared(whl)
    assert dec is not None and any("not JSON" in p for p in dec.problems), dec
