"""cuwheel doctor: environments assembled from the committed fixtures (tests/data/bin_doctor,
built by tests/data/build_doctor.sh), judged, and the loader's verdicts checked against
glibc's real loader (a subprocess that dlopens them), the ld.so cache reader against
``ldconfig -p``."""

from __future__ import annotations

import json
import os
import re
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

import _absent
import cuwheel.cli
from cuwheel import compat
from cuwheel.doctor import SearchContext, diagnose, diagnose_text, parse_ld_cache, read_environment
from cuwheel.doctor.diagnose import INSUFFICIENT_DRIVER, NO_KERNEL_IMAGE, UNSUPPORTED_PTX
from cuwheel.errors import InputError
from cuwheel.render.envelope import load_schema

BIN = Path(__file__).parent / "data" / "bin"
DOC = BIN.parent / "bin_doctor"
LINUX = sys.platform.startswith("linux")
NO_SYSTEM = SearchContext((), None, ())  # nothing outside the environment is searched


def _real_cudart() -> Path:
    """NVIDIA's libcudart.so.13, from the nvidia-cuda-runtime wheel of the test extra (the
    stand-in in tests/data/bin_doctor has its soname only, not its symbol versions)."""
    import importlib.util

    spec = importlib.util.find_spec("nvidia")
    assert spec is not None and spec.submodule_search_locations
    for d in spec.submodule_search_locations:
        p = Path(d) / "cu13" / "lib" / "libcudart.so.13"
        if p.is_file():
            return p
    raise AssertionError("nvidia-cuda-runtime 13 (the test extra) is not installed")


def make_dist(site: Path, name: str, files: dict[str, Path | bytes], version: str = "1.0",
              requires: tuple[str, ...] = ()) -> None:
    """An installed distribution: files under ``site`` and a dist-info whose RECORD lists them."""
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    rows = []
    for rel, src in files.items():
        dst = site / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        dst.write_bytes(src if isinstance(src, bytes) else src.read_bytes())
        rows.append(f"{rel},,")
    reqs = "".join(f"Requires-Dist: {r}\n" for r in requires)
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n{reqs}")
    rows.append(f"{info.name}/METADATA,,")
    (info / "RECORD").write_text("\n".join(rows) + "\n")


def run(site: Path, gpu: str = "H100", driver: str = "580.65.06",
        ctx: SearchContext = NO_SYSTEM):  # type: ignore[no-untyped-def]
    env = read_environment([str(site)], workers=1)
    targets = compat.targets_for_gpu(gpu, compat.parse_driver(driver))
    return diagnose(env, targets[:1], ctx)


def findings(d, code: str | None = None):  # type: ignore[no-untyped-def]
    out = [f for t in d.targets for r in t.distributions for f in r.findings]
    out += [f for f in d.loader_findings if f not in out]
    return [f for f in out if code is None or f.code == code]


def real_load(paths: list[str], env: dict[str, str] | None = None) -> dict[str, object]:
    """glibc's answer: dlopen each path in one fresh process (RTLD_NOW, as ctypes and
    import do); the error text, and the libcudart files mapped."""
    code = (
        "import ctypes, json, sys\nout = {'error': None}\n"
        "try:\n    [ctypes.CDLL(p) for p in sys.argv[1:]]\n"
        "except OSError as exc:\n    out['error'] = str(exc)\n"
        "out['cudart'] = sorted({l.split()[-1] for l in open('/proc/self/maps') "
        "if 'libcudart.so' in l})\nprint(json.dumps(out))\n"
    )
    full = dict(os.environ, **(env or {}))
    full.pop("LD_LIBRARY_PATH", None) if env is None or "LD_LIBRARY_PATH" not in env else None
    p = subprocess.run([sys.executable, "-c", code, *paths], capture_output=True, text=True,
                       env=full, check=True, timeout=60)  # fmt: skip
    out: dict[str, object] = json.loads(p.stdout)
    return out


# ---------------------------------------------------------------------------- ld.so cache


def _cache(entries: list[tuple[int, str, str]], old: int = 0) -> bytes:
    """A cache built from glibc's documented layout (dl-cache.h), independently of the reader."""
    strings = b""
    offs = []
    head = 48 + 24 * len(entries)
    for _, key, value in entries:
        k = head + len(strings)
        strings += key.encode() + b"\0"
        v = head + len(strings)
        strings += value.encode() + b"\0"
        offs.append((k, v))
    new = b"glibc-ld.so.cache1.1" + struct.pack("<IIB3xI12x", len(entries), len(strings), 2, 0)
    for (flags, _, _), (k, v) in zip(entries, offs, strict=True):
        new += struct.pack("<iIIIQ", flags, k, v, 0, 0)
    new += strings
    if not old:
        return new
    prefix = b"ld.so-1.7.0" + b"\0" + struct.pack("<I", old) + bytes(12 * old)
    prefix += bytes(-len(prefix) % 8)
    return prefix + new


def test_ld_cache_layout() -> None:
    data = _cache([(0x0303, "libcudart.so.12", "/usr/local/cuda-12.8/lib64/libcudart.so.12"),
                   (0x0A03, "libcudart.so.12", "/usr/lib/aarch64/libcudart.so.12")])  # fmt: skip
    for blob in (data, _cache([(0x0303, "libz.so.1", "/lib/libz.so.1")], old=3)):
        assert parse_ld_cache(blob).entries
    c = parse_ld_cache(data)
    assert c.lookup("libcudart.so.12", "x86_64") == "/usr/local/cuda-12.8/lib64/libcudart.so.12"
    assert c.lookup("libcudart.so.12", "aarch64") == "/usr/lib/aarch64/libcudart.so.12"
    assert c.lookup("libcudart.so.13", "x86_64") is None
    assert parse_ld_cache(_cache([(0x0303, "libz.so.1", "/lib/libz.so.1")], old=3)).lookup(
        "libz.so.1", "x86_64") == "/lib/libz.so.1"
    for bad in (b"", b"glibc-ld.so.cache1.1", data[:60], b"\x7fELF" + bytes(100),
                data[:48] + struct.pack("<iIIIQ", 3, 10**6, 10**6, 0, 0)):
        with pytest.raises(InputError):
            parse_ld_cache(bad)


@_absent.skip_without("glibc", not (LINUX and os.path.exists("/etc/ld.so.cache")))
def test_ld_cache_agrees_with_ldconfig() -> None:
    ldconfig = shutil.which("ldconfig") or "/sbin/ldconfig"
    out = subprocess.run([ldconfig, "-p"], capture_output=True, text=True, check=True).stdout
    want = set()
    for line in out.splitlines()[1:]:
        name, arrow, path = line.strip().partition(" => ")
        if arrow:  # not the "Cache generated by" line of the extension section
            want.add((name.split(" (")[0], path))
    cache = parse_ld_cache(Path("/etc/ld.so.cache").read_bytes())
    got = {(e.soname, e.path) for e in cache.entries}
    assert got == want and len(got) > 10


# ---------------------------------------------------------------------------- error texts

# (text as a user pastes it, the known error it is); the glibc and driver texts were
# observed (glibc here, the CUDA ones on the H200: tests/probe/doctor_gpu.json).
TEXTS = [
    ("RuntimeError: CUDA error: no kernel image is available for execution on the device\n"
     "CUDA kernel errors might be asynchronously reported at some other API call",
     "no-kernel-image"),
    ("UserWarning: NVIDIA GeForce GTX 1080 with CUDA capability sm_61 is not compatible with "
     "the current PyTorch installation.", "no-kernel-image"),
    ("CUDA driver version is insufficient for CUDA runtime version", "driver-too-old"),
    ("RuntimeError: The NVIDIA driver on your system is too old (found version 12020).",
     "driver-too-old"),
    ("ImportError: libcudart.so.12: cannot open shared object file: No such file or directory",
     "library-missing"),
    ("RuntimeError: Triton Error [CUDA]: the provided PTX was compiled with an unsupported "
     "toolchain.", "ptx-too-new"),
    ("CUDA error: device kernel image is invalid", "invalid-image"),
    ("OSError: /x/libcusparse.so.12: undefined symbol: __nvJitLinkAddData_12_8, version "
     "libnvJitLink.so.12", "nvjitlink-skew"),
    ("ImportError: /x/_C.so: undefined symbol: _ZN3c104cuda9SetDeviceEi", "extension-mismatch"),
    ("ImportError: /x/k.so: undefined symbol: cublasLtMatmul, version libcublasLt.so.12",
     "undefined-symbol"),
    ("OSError: libcuda.so.1: cannot open shared object file: No such file or directory",
     "driver-missing"),
]  # fmt: skip


@pytest.mark.parametrize(("text", "want"), TEXTS)
def test_error_texts(text: str, want: str) -> None:
    assert [c.id for c in diagnose_text(text).causes][:1] == [want]


def test_error_text_names_library_and_symbol() -> None:
    (cause,) = diagnose_text(TEXTS[7][0]).causes
    facts = {(f.kind, f.value, f.detail) for f in cause.facts}
    assert ("symbol", "__nvJitLinkAddData_12_8", "libnvJitLink.so.12") in facts
    assert any("12.8" in b for b in cause.because)
    assert diagnose_text("segmentation fault in my own code").causes == ()
    assert diagnose_text("x" * (1 << 20) + "no kernel image is available").causes == ()  # cut


def test_explain_text_and_no_match(capsys: pytest.CaptureFixture[str]) -> None:
    rc = cuwheel.cli.main(["explain", TEXTS[4][0], "--color", "never"])
    out, _ = capsys.readouterr()
    assert rc == 0 and out.startswith("cause: libcudart.so.12 not found by the loader")
    assert "ENV004" in out and "nvidia-cuda-runtime-cu12" in out and "libcudart.so.12" in out
    assert "find the culprit: cuwheel doctor" in out
    rc = cuwheel.cli.main(["explain", "the printer is on fire", "-f", "json"])
    out, err = capsys.readouterr()
    assert rc == 2 and out == "" and "no match" in err and "Traceback" not in err
    rc = cuwheel.cli.main(["explain", TEXTS[0][0], "-f", "json"])
    doc = json.loads(capsys.readouterr()[0])
    jsonschema.Draft202012Validator(load_schema("explain")).validate(doc)
    assert doc["errors"][0]["causes"][0]["id"] == "no-kernel-image"
    assert {"ENV001", "DC001"} <= {c["code"] for c in doc["codes"]}
    rc = cuwheel.cli.main(["explain", "CUDA out of memory. Tried to allocate 2 GiB", "-f", "json"])
    doc = json.loads(capsys.readouterr()[0])
    jsonschema.Draft202012Validator(load_schema("explain")).validate(doc)
    (cause,) = doc["errors"][0]["causes"]
    assert cause["packaging"] is False and cause["install"] == [] and doc["codes"] == []


# ---------------------------------------------------------------------------- device code


def test_no_code_for_the_gpu(tmp_path: Path) -> None:
    make_dist(tmp_path, "cw-ext", {"cw_ext/k.so": BIN / "sm80only.so"})
    (f,) = findings(run(tmp_path, "H100"), "ENV001")
    assert f.error_text == NO_KERNEL_IMAGE and f.library and f.library.endswith("cw_ext/k.so")
    assert not findings(run(tmp_path, "A10"), "ENV001")  # sm_86 runs sm_80 SASS


def test_runtime_floor_and_ptx_isa(tmp_path: Path) -> None:
    make_dist(tmp_path, "cw-rt", {"cw_rt/rt13.so": DOC / "rt13.so",
                                  "cw_rt/libcudart.so.13": DOC / "libcudart.so.13"})
    make_dist(tmp_path, "cw-ptx", {"cw_ptx/ptx91.so": DOC / "ptx91.so"})
    d = run(tmp_path, "H100", "535.104.05")
    assert {f.code for f in findings(d)} >= {"ENV002"}
    assert {f.error_text for f in findings(d, "ENV002")} == {INSUFFICIENT_DRIVER}
    d = run(tmp_path, "H100", "580.65.06")
    (f,) = findings(d, "ENV003")  # PTX ISA 9.1 needs CUDA 13.1
    assert f.error_text == UNSUPPORTED_PTX and "13.1" in f.message
    assert not findings(run(tmp_path, "H100", "590.44.01"), "ENV003")


# ---------------------------------------------------------------------------- the loader


@_absent.skip_without("glibc", not LINUX)
def test_missing_library_text_is_the_loaders(tmp_path: Path) -> None:
    make_dist(tmp_path, "cw-cu12", {"cw_cu12/ext12.so": DOC / "ext12.so"})
    (f,) = findings(run(tmp_path), "ENV004")
    real = real_load([str(tmp_path / "cw_cu12/ext12.so")])
    assert real["error"] == f.error_text == "libcudart.so.12: cannot open shared object file: " \
        "No such file or directory"
    assert "nvidia-cuda-runtime-cu12" in f.message


@_absent.skip_without("glibc", not LINUX)
def test_symbol_the_resolved_version_lacks(tmp_path: Path) -> None:
    make_dist(tmp_path, "cw-skew", {"cw_skew/libcwskew.so": DOC / "libcwskew.so",
              "cw_skew/jit_old/libnvJitLink.so.12": DOC / "jit_old" / "libnvJitLink.so.12"})
    (f,) = findings(run(tmp_path), "ENV007")
    real = real_load([str(tmp_path / "cw_skew/libcwskew.so")])
    assert real["error"] == f.error_text
    assert str(real["error"]).endswith(
        "undefined symbol: __nvJitLinkAddData_12_8, version libnvJitLink.so.12")
    # the release that has it, from NVIDIA's wheels (data/nvidia_symbols.toml): a 12.8
    assert re.search(r"nvidia-nvjitlink-cu12 (12\.8\.[0-9]+) is the first release that does: "
                     r"install nvidia-nvjitlink-cu12>=\1$", f.message), f.message
    # the newer copy in its place: both the loader and doctor are content
    shutil.copyfile(DOC / "jit_new" / "libnvJitLink.so.12",
                    tmp_path / "cw_skew/jit_old/libnvJitLink.so.12")
    assert not findings(run(tmp_path), "ENV007")
    assert real_load([str(tmp_path / "cw_skew/libcwskew.so")])["error"] is None


@_absent.skip_without("glibc", not LINUX)
def test_two_majors_through_ld_library_path(tmp_path: Path) -> None:
    site, llp = tmp_path / "site", tmp_path / "llp"
    make_dist(site, "cw-two", {"cw_two/ext12.so": DOC / "ext12.so",
                               "cw_two/rt13.so": DOC / "rt13.so"})
    llp.mkdir()
    for n in ("libcudart.so.12", "libcudart.so.13"):
        shutil.copyfile(DOC / n, llp / n)
    d = run(site, ctx=SearchContext((str(llp),), None, ()))
    (f,) = findings(d, "ENV005")
    assert "libcudart.so.12" in f.message and "libcudart.so.13" in f.message
    real = real_load([str(site / "cw_two/ext12.so"), str(site / "cw_two/rt13.so")],
                     {"LD_LIBRARY_PATH": str(llp)})
    assert real["error"] is None
    assert {os.path.basename(str(p)) for p in real["cudart"]} == {  # type: ignore[attr-defined]
        "libcudart.so.12", "libcudart.so.13"}


@_absent.skip_without("glibc", not LINUX)
def test_ld_library_path_shadows_the_wheels_runtime(tmp_path: Path) -> None:
    site, llp = tmp_path / "site", tmp_path / "cuda" / "lib64"
    make_dist(site, "nvidia-cuda-runtime", {"nvidia/cu13/lib/libcudart.so.13":
                                            DOC / "libcudart.so.13"})
    make_dist(site, "cw-rt", {"cw_rt/rt13.so": DOC / "rt13.so"})
    d = run(site)
    assert not findings(d)  # RUNPATH $ORIGIN/../nvidia/cu13/lib reaches the wheel's
    llp.mkdir(parents=True)
    shutil.copyfile(DOC / "libcudart.so.13", llp / "libcudart.so.13")
    d = run(site, ctx=SearchContext((str(llp),), None, ()))
    (f,) = findings(d, "ENV006")
    assert str(llp) in f.message and f.distribution == "cw-rt 1.0"
    real = real_load([str(site / "cw_rt/rt13.so")], {"LD_LIBRARY_PATH": str(llp)})
    assert real["cudart"] == [str(llp / "libcudart.so.13")]


@_absent.skip_without("glibc", not LINUX)
def test_a_package_imports_its_dependencies_first(tmp_path: Path) -> None:
    # cw-user's module needs libcudart.so.12 and its run path reaches none (torchaudio's
    # libc10.so on the H200): only the copy cw-base's module loaded first satisfies it
    make_dist(tmp_path, "cw-user", {"cw_user/x/ext12.so": DOC / "ext12.so"},
              requires=("cw-base>=1", "numpy; extra == 'x'"))
    make_dist(tmp_path, "cw-base", {"cw_base/ext12.so": DOC / "ext12.so",
                                    "cu12/libcudart.so.12": DOC / "libcudart.so.12"})
    assert not findings(run(tmp_path), "ENV004")
    base, user = str(tmp_path / "cw_base/ext12.so"), str(tmp_path / "cw_user/x/ext12.so")
    assert real_load([base, user])["error"] is None
    assert str(real_load([user])["error"]).startswith("libcudart.so.12: cannot open")
    # no Requires-Dist (torchaudio 2.11's METADATA has none): the library cw-base ships
    # and cw-user's module needs still puts cw-base first
    (tmp_path / "cw_user-1.0.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: cw-user\nVersion: 1.0\n")
    env = read_environment([str(tmp_path)], workers=1)
    assert [d.name for d in env.import_order()] == ["cw-base", "cw-user"]
    assert not findings(run(tmp_path), "ENV004")


def _torch(site: Path, cuda: str | None) -> None:
    version = f"cuda = '{cuda}'" if cuda else "cuda = None"
    make_dist(site, "torch", {"torch/version.py": f"__version__ = '2.11.0'\n{version}\n".encode(),
                              "torch/lib/libtorch_global_deps.so": DOC / "global_deps.so"},
              version="2.11.0")  # fmt: skip
    make_dist(site, "nvidia-cuda-runtime", {"nvidia/cu13/lib/libcudart.so.13": _real_cudart()})


@_absent.skip_without("glibc", not LINUX)
def test_torch_preload(tmp_path: Path) -> None:
    _torch(tmp_path, "13.0")
    d = run(tmp_path)
    assert d.process.preloaded_by == "torch"
    rt = d.process.loaded["libcudart.so.13"]
    assert rt.how == "RPATH $ORIGIN/../../nvidia/cu13/lib"
    assert rt.path == str(tmp_path / "nvidia/cu13/lib/libcudart.so.13")
    real = real_load([str(tmp_path / "torch/lib/libtorch_global_deps.so")])
    assert real["cudart"] == [rt.path]


def _bnb(site: Path) -> None:
    make_dist(site, "bitsandbytes", {
        "bitsandbytes/libbitsandbytes_cuda128.so": DOC / "ext12.so",
        "bitsandbytes/libbitsandbytes_cuda130.so": BIN / "sm80.so",
        "bitsandbytes/libbitsandbytes_cpu.so": BIN / "hostonly.so",
    }, version="0.50.2")  # fmt: skip


def test_variants_are_alternatives(tmp_path: Path) -> None:
    _torch(tmp_path, "13.0")
    _bnb(tmp_path)
    d = run(tmp_path, "H100")
    (bnb,) = [r for r in d.targets[0].distributions if r.name == "bitsandbytes"]
    # bitsandbytes' rule (cextension.py): torch 13.0 -> its exact variant; the CUDA 12.8
    # variant, whose libcudart.so.12 is not installed, is never loaded
    assert bnb.status == "runs" and bnb.variants is not None
    assert bnb.variants.selected and bnb.variants.selected.endswith("cuda130.so")
    (f,) = findings(run(tmp_path, "GTX 1080"), "ENV001")
    assert f.library and f.library.endswith("libbitsandbytes_cuda130.so")
    ctx = SearchContext((), None, (), (("BNB_CUDA_VERSION", "128"),))
    (f,) = findings(run(tmp_path, ctx=ctx), "ENV004")
    assert f.error_text and f.error_text.startswith("libcudart.so.12: cannot open")
    ctx = SearchContext((), None, (), (("BNB_CUDA_VERSION", "125"),))
    (f,) = findings(run(tmp_path, ctx=ctx), "ENV008")
    assert "BNB_CUDA_VERSION=125" in f.message


def test_variant_selection_rule(tmp_path: Path) -> None:
    # torch for CUDA 12.4: no exact, none lower in 12 -> the lowest above in 12 (12.8)
    _torch(tmp_path, "12.4")
    _bnb(tmp_path)
    d = run(tmp_path, "H100")
    (bnb,) = [r for r in d.targets[0].distributions if r.name == "bitsandbytes"]
    assert bnb.variants and bnb.variants.selected
    assert bnb.variants.selected.endswith("cuda128.so")


def test_windows_dll_search(tmp_path: Path) -> None:
    make_dist(tmp_path, "cw-win", {"cw_win/win_sm80_86.pyd": BIN / "win_sm80_86.dll"})
    fs = findings(run(tmp_path, "A100"), "ENV004")
    assert {f.library.rsplit("/", 1)[-1] for f in fs if f.library} == {"win_sm80_86.pyd"}
    assert fs[0].error_text == ("DLL load failed while importing win_sm80_86: "
                                "The specified module could not be found.")
    # torch adds torch/lib with os.add_dll_directory: DLLs there are found
    make_dist(tmp_path, "torch", {"torch/lib/cudart64_13.dll": BIN / "win_hostonly.dll",
                                  "torch/lib/cublas64_13.dll": BIN / "win_hostonly.dll"})
    d = run(tmp_path, "A100")
    assert not findings(d, "ENV004")
    hows = {r.how for r in d.process.resolutions if r.name.lower().startswith("cu")}
    assert hows == {"os.add_dll_directory (torch)"}


# ---------------------------------------------------------------------------- the command


def test_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    make_dist(tmp_path, "cw-ext", {"cw_ext/k.so": BIN / "sm80only.so"})
    argv = ["doctor", "--path", str(tmp_path), "--gpu", "H100", "--driver", "580",
            "--ld-cache", "none", "--ld-library-path", str(_real_cudart().parent)]
    assert cuwheel.cli.main([*argv, "--color", "never"]) == 1
    out = capsys.readouterr()[0]
    assert out.startswith("cw-ext 1.0 does not run on H100")  # the culprit first
    assert "DOES NOT RUN" in out and "ENV001 error: " in out and "(k.so)" in out
    assert "fails with: no kernel image is available for execution on the device" in out
    assert cuwheel.cli.main([*argv, "-f", "json"]) == 1
    doc = json.loads(capsys.readouterr()[0])
    jsonschema.Draft202012Validator(load_schema("doctor")).validate(doc)
    assert doc["targets"][0]["distributions"][0]["findings"][0]["code"] == "ENV001"
    assert cuwheel.cli.main([*argv[:3], "--gpu", "A100", *argv[7:], "-q"]) == 0
    assert capsys.readouterr()[0] == ""
    assert cuwheel.cli.main(["doctor", "--path", str(tmp_path / "nope"), "--gpu", "A100"]) == 2
    assert "not a directory" in capsys.readouterr()[1]


def test_one_line_per_distribution_per_cause(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    make_dist(tmp_path, "cw-ext", {f"cw_ext/k{i}.so": BIN / "sm80only.so" for i in range(7)})
    argv = ["doctor", "--path", str(tmp_path), "--gpu", "H100", "--driver", "580",
            "--ld-cache", "none", "--ld-library-path", str(_real_cudart().parent),
            "--color", "never"]
    assert cuwheel.cli.main(argv) == 1
    out = capsys.readouterr()[0]
    assert out.count("ENV001 error:") == 1 and "(7 modules: " in out
    assert cuwheel.cli.main([*argv, "-v"]) == 1
    out = capsys.readouterr()[0]
    assert all(f"cw_ext/k{i}.so: " in out for i in range(7))  # -v: every module


def test_error_text_with_the_environment(tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    """explain --path and doctor --error name the distribution whose binary needs the
    library the text says is missing, and the one that ships it."""
    make_dist(tmp_path, "cw-rt", {"cw_rt/rt13.so": DOC / "rt13.so"})
    make_dist(tmp_path, "cw-other", {"cw_other/k.so": BIN / "hostonly.so"})
    text = "ImportError: libcudart.so.13: cannot open shared object file: No such file or directory"
    assert cuwheel.cli.main(["explain", text, "--path", str(tmp_path), "--color", "never"]) == 0
    out = capsys.readouterr()[0]
    assert out.startswith("culprit: cw-rt 1.0: libcudart.so.13 not found by the loader")
    assert "supplier: nvidia-cuda-runtime [library-missing]: not installed" in out
    assert "cw-other" not in out
    argv = ["doctor", "--path", str(tmp_path), "--gpu", "H100", "--driver", "580",
            "--ld-cache", "none", "--ld-library-path", "", "--error", text]
    assert cuwheel.cli.main([*argv, "--color", "never"]) == 1
    out = capsys.readouterr()[0]
    assert out.startswith("culprit: cw-rt 1.0")
    assert cuwheel.cli.main([*argv, "-f", "json"]) == 1
    doc = json.loads(capsys.readouterr()[0])
    jsonschema.Draft202012Validator(load_schema("doctor")).validate(doc)
    assert doc["error"]["causes"][0]["id"] == "library-missing"
    assert {"cause": "library-missing", "distribution": "cw-rt 1.0", "role": "culprit",
            "reason": "rt13.so needs libcudart.so.13"} in doc["error"]["distributions"]


def test_symbol_culprits(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The distribution whose binary asks for the symbol or the symbol version a text
    names is the culprit; one whose binaries do not is not named."""
    make_dist(tmp_path, "cw-ext", {"cw_ext/k.so": BIN / "sm80only.so"})
    make_dist(tmp_path, "cw-rt", {"cw_rt/rt13.so": DOC / "rt13.so"})
    for text, reason in [
        ("x.so: /lib64/libstdc++.so.6: version `CXXABI_1.3' not found (required by x.so)",
         "k.so asks for CXXABI_1.3"),
        ("ImportError: x.so: undefined symbol: __cudaGetKernel", "k.so asks for __cudaGetKernel"),
    ]:
        assert cuwheel.cli.main(["explain", text, "--path", str(tmp_path), "-f", "json"]) == 0
        doc = json.loads(capsys.readouterr()[0])
        blames = doc["errors"][0]["distributions"]
        assert {"cause": doc["errors"][0]["causes"][0]["id"], "distribution": "cw-ext 1.0",
                "role": "culprit", "reason": reason} in blames
        assert not [b for b in blames if b["distribution"].startswith("cw-rt")]


def test_windows_import_culprit(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """'DLL load failed while importing _C' names the distribution that owns module _C."""
    make_dist(tmp_path, "cw-win", {"cw_win/_C.cp312-win_amd64.pyd": BIN / "win_hostonly.dll"})
    make_dist(tmp_path, "cw-other", {"cw_other/k.pyd": BIN / "win_hostonly.dll"})
    text = ("ImportError: DLL load failed while importing _C: The specified module could not "
            "be found.")
    assert cuwheel.cli.main(["explain", text, "--path", str(tmp_path), "-f", "json"]) == 0
    (err,) = json.loads(capsys.readouterr()[0])["errors"]
    assert err["causes"][0]["id"] == "library-missing" and not err["causes"][0]["sure"]
    assert [b["distribution"] for b in err["distributions"]] == ["cw-win 1.0"]


def test_a_packages_own_preload_list(tmp_path: Path) -> None:
    """faiss-gpu-cu12 1.9.0.0 preloads what faiss/PRELOAD_SHARED_LIBRARIES.json names
    (shared_library_preload_trigger.py: the first file of the named distribution matching
    the expression, CDLL RTLD_GLOBAL).  Its module's libcudart.so.12, on no run path, is
    then satisfied by the preloaded copy: no "cannot open shared object" (ENV004)."""
    make_dist(tmp_path, "faiss-gpu-cu12", {
        "faiss/_swigfaiss.so": DOC / "ext12.so",
        "faiss/PRELOAD_SHARED_LIBRARIES.json": (
            b'[{"package_name": "nvidia-cuda-runtime-cu12", "filename_regex": '
            b'"libcudart.so.12*", "group": "CUDA"}]'),
    }, version="1.9.0.0")
    make_dist(tmp_path, "nvidia-cuda-runtime-cu12",
              {"nvidia/cuda_runtime/lib/libcudart.so.12": DOC / "libcudart.so.12"})
    d = run(tmp_path)
    assert not findings(d, "ENV004")
    rt = d.process.loaded["libcudart.so.12"]
    assert rt.path == str(tmp_path / "nvidia/cuda_runtime/lib/libcudart.so.12")
    assert rt.by == "faiss-gpu-cu12 preload"
    # without the list the same install is reported as the loader would fail
    (tmp_path / "faiss/PRELOAD_SHARED_LIBRARIES.json").write_text("[]")
    assert findings(run(tmp_path), "ENV004")


# ----------------------------------------------------- kernel names where a verdict needs them


@pytest.mark.parametrize(("library", "status", "named"), [
    # the driver on the H200 (tests/test_family_truth.py): the per-architecture template
    # runs; a kernel only in the sm_75 unit is missing code; kernel-less units of too-new
    # PTX never load unless host code reads their variables (cw_table, in family_newvar)
    ("family_dispatch.so", "runs", None),
    ("family_unique.so", "does not run", "cwfam::Epilogue"),
    ("family_newptx.so", "runs", None),
    ("family_newvar.so", "does not run", "cw_table"),
])
def test_doctor_reads_names_where_they_decide(tmp_path: Path, library: str, status: str,
                                              named: str | None) -> None:
    site, lib = tmp_path / "site", tmp_path / "lib"
    make_dist(site, "cw-fam", {f"cw_fam/{library}": BIN / library})
    lib.mkdir()
    (lib / "libcudart.so.13").write_bytes(_real_cudart().read_bytes())
    ctx = SearchContext.from_environ({"LD_LIBRARY_PATH": str(lib)}, None)
    d = run(site, "H200", "580.65.06", ctx)
    (report,) = [r for t in d.targets for r in t.distributions]
    assert report.status == status, report
    if named is not None:
        assert named in report.cause, report.cause


def test_an_optional_features_library_is_a_warning(tmp_path: Path) -> None:
    """CuPy imports its cuTENSOR module only inside try/except ImportError
    (cupy/cuda/cutensor.py): the library missing for it costs cuTENSOR, not CuPy."""
    mod = "cupy_backends/cuda/libs/cutensor.cpython-312-x86_64-linux-gnu.so"
    make_dist(tmp_path, "cupy-cuda13x", {mod: DOC / "cutensor_mod.so"}, version="14.0.1")
    make_dist(tmp_path, "cw-other", {"cw_other/cutensor.so": DOC / "cutensor_mod.so"})
    d = run(tmp_path)
    (opt,) = findings(d, "ENV010")
    assert opt.distribution == "cupy-cuda13x 14.0.1" and "cuTENSOR" in opt.message
    assert opt.error_text == (
        "libcutensor.so.2: cannot open shared object file: No such file or directory")
    (req,) = findings(d, "ENV004")
    assert req.library and req.library.endswith("cw_other/cutensor.so")
    status = {r.name: r.status for t in d.targets for r in t.distributions}
    assert status["cw-other"] == "does not run" and status["cupy-cuda13x"] != "does not run"
