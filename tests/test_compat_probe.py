"""The committed H200 probe table against cuwheel.compat (CPU only; no GPU needed).

tests/probe/h200_results.json was written by tests/probe/h200_probe.py on the H200 machine:
per fatbin container, cuwheel's prediction for CC 9.0 + driver 580.159.04 (CUDA 13.0) and
what ``cuModuleLoadData`` returned.  The ``today`` tests recompute the predictions with
today's rules/ for every committed container (tests/data/bin and the probe's PTX variants)
and compare them with what the driver did, not with the prediction recorded beside it; the
others check that the record is complete and that every exception in it is of a kind
docs/compat.md explains.
"""

from __future__ import annotations

import importlib.util
import json
import os
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import cuwheel
from cuwheel import compat
from cuwheel.model.arch import Arch

HERE = Path(__file__).parent
RESULTS = HERE / "probe" / "h200_results.json"
DOCS = HERE.parent / "docs" / "compat.md"
FIXTURES = HERE / "data" / "bin"
LOADS = {"native", "compat", "JIT"}
# What cuModuleLoadData answers when there is nothing for the GPU: a cubin of another
# arch (209), PTX for a higher / other-family arch (218), a too-new PTX ISA (222).
FAILURES = {
    "-": {"CUDA_ERROR_NO_BINARY_FOR_GPU", "CUDA_ERROR_INVALID_PTX"},
    "driver": {"CUDA_ERROR_UNSUPPORTED_PTX_VERSION"},
}
# Containers that compat does not count (docs/compat.md, "Containers that do not count").
EXPLAINED = {
    "stub": set(),  # must agree: the stub of an sm_90 build loads, others are refused
    "empty": {"CUDA_ERROR_NO_BINARY_FOR_GPU"},
    "lto": {"CUDA_ERROR_NO_BINARY_FOR_GPU", "CUDA_ERROR_NOT_FOUND"},
    "reloc": {"CUDA_ERROR_NOT_FOUND", "CUDA_ERROR_INVALID_IMAGE", "CUDA_ERROR_NO_BINARY_FOR_GPU"},
}


@pytest.fixture(scope="module")
def table() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(RESULTS.read_text())
    cols = data["row_columns"]
    data["dict_rows"] = [dict(zip(cols, r, strict=False)) for r in data["rows"]]
    data["by_id"] = {lib["id"]: lib for lib in data["libraries"]}
    return data


def probed(table: dict[str, Any]) -> list[dict[str, Any]]:
    return [r for r in table["dict_rows"] if r["rc"] is not None]


def test_machine(table: dict[str, Any]) -> None:
    m = table["machine"]
    assert "H200" in m["gpu"] and m["cc"] == "9.0"
    assert m["driver"] == "580.159.04" and m["driver_cuda"] == 13000
    assert m["nvml_via"] == "nvml" and m["libcuda_fallback"]["gpus"] == [[0, "NVIDIA H200", "9.0"]]


def test_rows_are_consistent(table: dict[str, Any]) -> None:
    for r in probed(table):
        assert r["predicted_loads"] == (r["predicted"] in LOADS)
        assert r["agree"] == (r["predicted_loads"] == (r["rc"] == 0))


def test_counted_containers_agree(table: dict[str, Any]) -> None:
    """The record: the probe's cuwheel (``cuwheel_commit``) agreed with the driver on every
    counted container.  The installed libraries (site/) are on the H200 machine alone, so
    their predictions can only be read from the record; the committed containers are
    recomputed with today's rules below (``test_todays_*``)."""
    assert len(table["cuwheel_commit"]) == 40
    counted = [r for r in probed(table) if r["ignored"] is None]
    assert len(counted) >= 1500
    bad = [r for r in counted if not r["agree"]]
    assert bad == []
    for r in counted:
        if r["predicted"] in LOADS:
            assert r["result"] == "CUDA_SUCCESS"
        else:
            assert r["result"] in FAILURES[r["predicted"]], r
    kinds = Counter(r["predicted"] for r in counted)
    assert kinds["native"] > 1000 and kinds["-"] > 100 and kinds["JIT"] > 20
    summary = table["summary"]
    assert summary["counted"] == len(counted) and summary["counted_disagree"] == 0


def test_coverage(table: dict[str, Any]) -> None:
    paths = [lib["path"] for lib in table["libraries"] if lib["probed"]]
    real = [p for p in paths if p.startswith("site/")]
    assert len(real) >= 25
    for name in (
        "libtorch_cuda.so",
        "libcublasLt.so.13",
        "libcudnn_ops.so.9",
        "libnccl.so.2",
        "xla_cuda_plugin.so",
        "cub.cpython-312-x86_64-linux-gnu.so",
    ):
        assert any(p.endswith(name) for p in real), name
    fixtures = {p.split("/", 1)[1] for p in paths if p.startswith("fixtures/")}
    assert {
        "sm80.so",
        "sm90a.so",
        "sm100f.so",
        "ptx120.so",
        "two_tu.so",
        "k89.ptx",
        "k90.cubin",
        "k86.fatbin",
        "win_sm80_86.dll",
        "librdc.so",
    } <= fixtures


def test_ignored_containers_are_explained(table: dict[str, Any]) -> None:
    docs = DOCS.read_text()
    for r in probed(table):
        kind = r["ignored"]
        if kind is None or r["agree"]:
            continue
        assert kind in EXPLAINED and r["result"] in EXPLAINED[kind], r
    for result in ("CUDA_ERROR_NOT_FOUND", "CUDA_ERROR_INVALID_IMAGE"):
        assert result in docs
    stubs = [r for r in probed(table) if r["ignored"] == "stub"]
    assert stubs and all(r["agree"] for r in stubs)
    # the stubs' cubins that could be read have no kernel code (.text.* sections)
    counts = [n for r in stubs for n in (r["stub_text_sections"] or []) if n is not None]
    assert counts and set(counts) == {0}


def test_crashes_are_explained(table: dict[str, Any]) -> None:
    docs = DOCS.read_text()
    for crash in table["crashes"]:
        row = dict(zip(table["crash_columns"], crash, strict=True))
        assert row["ignored"] == "reloc" and row["section"] == "__nv_relfatbin"
        lib = table["by_id"][row["lib"]]["path"]
        assert os.path.basename(lib) in docs


def test_kernel_launches(table: dict[str, Any]) -> None:
    """What the launches did (today's verdicts for them: the last test of this file)."""
    launches = table["launches"]
    assert len(launches) >= 14
    by = {(x["library"], x["function"]): x for x in launches}
    assert by[("two_tu.so", "cw_tu1_launch")]["launch_error_name"] == (
        "cudaErrorNoKernelImageForDevice"
    )
    assert by[("librdc.so", "cw_rdc_launch")]["launch_error"] == 0


def _probe_module() -> Any:
    spec = importlib.util.spec_from_file_location("h200_probe", HERE / "probe" / "h200_probe.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def today(table: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Today's predictions, recomputed by rules/ for every probed container of a committed
    fixture or a synthetic PTX variant (the site/ libraries were on the H200 machine only):
    rows (table row, container verdict) and the binaries by label."""
    target = compat.Target(Arch(90), "H200", compat.Driver("580.159.04", (13, 0)))
    variants = _probe_module().write_ptx_variants(str(tmp_path_factory.mktemp("ptx")))
    inv = cuwheel.inspect([str(FIXTURES), variants])
    by_label: dict[str, cuwheel.Binary] = {}
    for b in inv.binaries:
        root, prefix = (
            (str(FIXTURES), "fixtures")
            if b.path.startswith(str(FIXTURES))
            else (variants, "synthetic")
        )
        by_label[
            f"{prefix}/{os.path.relpath(b.archive or b.path, root)}"
            + (f"({b.member})" if b.member else "")
        ] = b
    rows = []
    for r in table["dict_rows"]:
        label = table["by_id"][r["lib"]]["path"]
        if not label.startswith(("fixtures/", "synthetic/")) or r["rc"] is None:
            continue
        b = by_label[label]
        stub = compat.link_stub_index(b)
        cv = compat.evaluate_container(
            b.containers[r["index"]], target, compat.binary_os(b), stub=r["index"] == stub
        )
        rows.append((label, r, cv))
    return {"target": target, "rows": rows, "by_label": by_label}


def test_todays_predictions_match_the_driver(today: dict[str, Any]) -> None:
    """Per container the driver loaded (rc 0) or refused, today's rules must say the same:
    the driver's answer is the oracle, not the prediction recorded beside it."""
    counted = [(label, r, cv) for label, r, cv in today["rows"] if cv.ignored is None]
    assert len(counted) >= 35
    kinds: Counter[str] = Counter()
    for label, r, cv in counted:
        assert cv.verdict is not None, (label, r)
        kinds[cv.verdict.short] += 1
        assert cv.verdict.loads == (r["rc"] == 0), (label, r["index"], cv.verdict, r["result"])
        if not cv.verdict.loads:
            assert r["result"] in FAILURES[cv.verdict.short], (label, r, cv.verdict)
    # every way of loading and of failing occurs among the committed containers
    assert {"native", "JIT", "-", "driver"} <= set(kinds), kinds
    # a PTX ISA newer than the driver: the ISA 9.1 and 9.5 variants, family_newptx.so's two
    # and family_newvar.so's one kernel-less ISA 9.4 unit (tests/data/build_family.sh), all
    # refused by the driver
    too_new = sorted((label, r["index"]) for label, r, cv in counted
                     if cv.verdict is compat.Verdict.DRIVER)  # fmt: skip
    assert too_new == [
        ("fixtures/family_newptx.so", 2),
        ("fixtures/family_newptx.so", 3),
        ("fixtures/family_newvar.so", 2),
        ("synthetic/k_isa9.1_sm_89.ptx", 0),
        ("synthetic/k_isa9.5_sm_89.ptx", 0),
    ]


def test_todays_ignored_containers_are_explained(today: dict[str, Any]) -> None:
    """A container today's rules do not count either never loads, with one of the
    results docs/compat.md names for its kind, or loads and is never needed on its own:
    a device-link stub or a self-contained relocatable object (docs/compat.md,
    "Containers that do not count")."""
    ignored = [(label, r, cv) for label, r, cv in today["rows"] if cv.ignored is not None]
    assert ignored
    for label, r, cv in ignored:
        kind = r["ignored"]
        assert kind is not None, (label, r, cv.ignored)  # the table's kind for it
        if r["rc"] != 0:
            assert r["result"] in EXPLAINED[kind] | FAILURES["-"], (label, r)
        else:
            assert kind in ("stub", "reloc"), (label, r)


def test_todays_library_verdicts_match_the_launches(
    table: dict[str, Any], today: dict[str, Any]
) -> None:
    """Kernel launches on the H200 against today's library verdicts."""
    for x in table["launches"]:
        lv = compat.evaluate_binary(today["by_label"][f"fixtures/{x['library']}"], today["target"])
        assert lv is not None
        ran = x["launch_error"] == 0 and x["sync_error"] == 0
        if x["library"] == "two_tu.so":
            # one kernel runs, the other has no kernel image: the bytes cannot tell which
            # the host code calls, and today's roll-up says so
            assert lv.verdict is compat.Verdict.DEPENDS
        else:
            assert lv.verdict.runs == ran, (x, lv.verdict)
