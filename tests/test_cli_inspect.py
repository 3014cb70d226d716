"""The inspect CLI and its JSON document: schema, exit codes, one-line errors, sources."""

from __future__ import annotations

import importlib.metadata
import json
import os
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

import cuwheel
from cuwheel.cli import main
from cuwheel.render.inspect_json import inventory_to_dict, load_schema
from wheelfactory import make_wheel

BIN = Path(__file__).parent / "data" / "bin"
FIXTURES = sorted(p for p in BIN.iterdir() if p.is_file())


@pytest.fixture(scope="module")
def validator() -> jsonschema.protocols.Validator:
    schema = load_schema()
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.name)
def test_json_document_of_every_fixture_matches_the_schema(path: Path, validator) -> None:
    doc = inventory_to_dict(cuwheel.inspect(path), full=True)
    validator.validate(doc)
    assert (doc["schema"], doc["version"], doc["config"]) == ("cuwheel-inspect", 2, None)


def test_schema_rejects_a_document_that_breaks_it(validator) -> None:
    doc = inventory_to_dict(cuwheel.inspect(BIN / "sm90a.so"))
    doc["sources"][0]["binaries"][0]["containers"][0]["entries"][0]["kind"] = "sass-ish"
    with pytest.raises(jsonschema.ValidationError):
        validator.validate(doc)


def test_cli_json_for_a_wheel(tmp_path: Path, capsys, validator) -> None:
    whl = make_wheel(tmp_path, {
        "pkg/lib/two_tu.so": (BIN / "two_tu.so").read_bytes(),
        "pkg/lib/win.dll": (BIN / "win_sm80_86.dll").read_bytes(),
        "pkg/__init__.py": b"",
    }, name="pkg", version="1.0+cu130", tag="py3-none-manylinux_2_28_x86_64",
        requires=("nvidia-cuda-runtime==13.*",))
    assert main(["inspect", "--json", whl]) == 0
    doc = json.loads(capsys.readouterr().out)
    validator.validate(doc)
    src = doc["sources"][0]
    assert src["kind"] == "wheel"
    assert src["wheel"]["local_version"] == "cu130"
    assert src["wheel"]["requires_dist"] == ["nvidia-cuda-runtime==13.*"]
    paths = [b["path"].split("!", 1)[1] for b in src["binaries"]]
    assert paths == ["pkg/lib/two_tu.so", "pkg/lib/win.dll"]
    so = src["binaries"][0]["summary"]
    # two_tu.so: TU1 sm_80,sm_86; TU2 sm_90 + compute_90, sm_120; device-link stub sm_75
    assert [s["target"] for s in so["sass"]] == ["sm_75", "sm_80", "sm_86", "sm_90", "sm_120"]
    assert [s["target"] for s in so["ptx"]] == ["compute_90"]


def test_text_summary_shows_coverage_ptx_and_linkage(capsys) -> None:
    assert main(["inspect", str(BIN / "two_tu.so"), str(BIN / "win_sm80_86.dll")]) == 0
    out = capsys.readouterr().out
    assert "SASS  sm_75 1/3" in out and "sm_120 1/3" in out
    assert "PTX   compute_90 1/3" in out
    assert "PTX ISA 9.0" in out
    assert "links CUDA: libcudart.so.13" in out
    assert "links CUDA: cublas64_13.dll cudart64_13.dll" in out


def test_bad_inputs_give_one_line_errors_exit_2_and_the_rest_is_read(tmp_path: Path,
                                                                      capsys) -> None:
    broken = tmp_path / "broken.so"
    data = (BIN / "sm80.so").read_bytes()
    broken.write_bytes(data[: len(data) // 2])
    notwheel = tmp_path / "fake.whl"
    notwheel.write_bytes(b"PK\x03\x04" + b"\0" * 100)
    code = main(["inspect", str(broken), str(notwheel), str(BIN / "sm90a.so")])
    cap = capsys.readouterr()
    assert code == 2
    assert "sm_90a" in cap.out  # the good input is still reported
    errors = [line for line in cap.err.splitlines() if line]
    assert len(errors) == 2
    assert all(line.startswith("cuwheel: error: ") for line in errors)
    assert str(broken) in errors[0] and str(notwheel) in errors[1]
    assert "Traceback" not in cap.err


def test_nothing_to_inspect_is_a_usage_error(capsys) -> None:
    assert main(["inspect"]) == 2
    assert "nothing to inspect" in capsys.readouterr().err


def test_installed_distribution_is_read_from_its_record() -> None:
    # isal (a cuwheel dependency) ships a compiled extension module
    inv = cuwheel.inspect([], dists=["isal"])
    src = inv.sources[0]
    assert src.kind == "distribution"
    assert src.path.startswith("isal ")
    assert src.files_seen == len([f for f in importlib.metadata.distribution("isal").files or []
                                  if os.path.isfile(f.locate())])
    assert any(b.format == "elf" and b.file_type == "shared" for b in src.binaries)


def test_unknown_distribution_is_a_problem_not_an_exception() -> None:
    inv = cuwheel.inspect([], dists=["no-such-dist-cuwheel"])
    assert [p.message for p in inv.problems] == ["no such distribution is installed"]


def test_env_reads_every_distribution(monkeypatch: pytest.MonkeyPatch) -> None:
    from cuwheel.read.sources import installed

    site = os.path.dirname(os.fspath(importlib.metadata.distribution("isal")._path))  # type: ignore[attr-defined]
    # the site twice (a path on sys.path twice): isal is read once
    monkeypatch.setattr(installed, "site_dirs", lambda: [site, site])
    monkeypatch.setattr(installed, "_dist_infos", lambda s, real=installed._dist_infos: (
        lambda r: (r[0], [i for i in r[1] if os.path.basename(i).startswith("isal-")], r[2])
    )(real(s)))
    inv = cuwheel.inspect([], env=True)
    assert [s.path.split()[0] for s in inv.sources] == ["isal"]  # once, not twice


def test_python_dash_m_and_console_script_agree() -> None:
    out = subprocess.run([sys.executable, "-m", "cuwheel", "inspect", "--json",
                          str(BIN / "sm100f.so")], capture_output=True, text=True, check=True)
    doc = json.loads(out.stdout)
    targets = [e["target"] for c in doc["sources"][0]["binaries"][0]["containers"]
               for e in c["entries"]]
    # -gencode arch=compute_100f,code=sm_100f: the f is kept (cuobjdump drops it)
    assert set(targets) == {"sm_100f"}


def test_bzip2_and_lzma_members_are_read_and_corrupt_ones_reported(tmp_path: Path) -> None:
    import zipfile

    data = (BIN / "sm90a.so").read_bytes()
    good = tmp_path / "good-1.0-py3-none-any.whl"
    with zipfile.ZipFile(good, "w") as z:
        z.writestr("a/bz.so", data, compress_type=zipfile.ZIP_BZIP2)
        z.writestr("a/xz.so", data, compress_type=zipfile.ZIP_LZMA)
    (mapped,) = cuwheel.inspect(BIN / "sm90a.so").binaries
    inv = cuwheel.inspect(good)
    assert not inv.problems
    assert [b.containers for b in inv.binaries] == [mapped.containers] * 2
    # Corrupt the bzip2 stream in the middle: one Problem, no exception.
    raw = bytearray(good.read_bytes())
    at = raw.find(b"BZh") + 200
    raw[at : at + 64] = bytes(64)
    bad = tmp_path / "bad-1.0-py3-none-any.whl"
    bad.write_bytes(bytes(raw))
    inv = cuwheel.inspect(bad)
    assert [p.path.endswith("a/bz.so") for p in inv.problems] == [True]


def test_control_characters_from_hostile_names_stay_on_one_line(tmp_path: Path) -> None:
    from wheelfactory import raw_zip

    whl = tmp_path / "evil-1.0-py3-none-any.whl"
    raw_zip(whl, [(b"lib/a\nb\r.so", b"\x7fELF" + bytes(60))])
    (problem,) = cuwheel.inspect(whl).problems
    assert "\n" not in str(problem) and "\r" not in str(problem)
    assert "a\\nb\\r.so" in problem.path
    # a PE section name of control characters, reported from inside the file
    data = bytearray((BIN / "win_rdc.dll").read_bytes())
    data[134] = 18  # NumberOfSections: the extra section headers are garbage
    dll = tmp_path / "w.dll"
    dll.write_bytes(bytes(data))
    for p in cuwheel.inspect(dll).problems:
        assert str(p).isprintable()
