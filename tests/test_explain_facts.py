"""The facts of an error text (cuwheel/doctor/facts.py) and the data they resolve against:
data/cuda_errors.toml checked against NVIDIA's own header and library (the nvidia-cuda-runtime
wheel of the test extra: include/driver_types.h and libcudart.so.13's cudaGetErrorString),
the rules of data/errors.toml against the check codes, and hostile text bounded."""

from __future__ import annotations

import ctypes
import re
import resource
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import _absent
from cuwheel.checks.codes import CODES
from cuwheel.doctor import diagnose_text, extract_facts
from cuwheel.doctor.rules import load_rules, parse_rules
from cuwheel.errors import CatalogError
from cuwheel.knowledge.cudaerrors import load_cuda_errors


def _cu13() -> Path | None:
    import importlib.util

    spec = importlib.util.find_spec("nvidia")
    for d in spec.submodule_search_locations if spec and spec.submodule_search_locations else ():
        if (Path(d) / "cu13" / "include" / "driver_types.h").is_file():
            return Path(d) / "cu13"
    return None


CU13 = _cu13()
# off Linux only: on Linux the test extra installs the wheel, and its absence fails
needs_cu13 = _absent.skip_without("linux", not sys.platform.startswith("linux"),
                                  "the test extra's nvidia-cuda-runtime wheel is Linux's")


@needs_cu13
def test_runtime_codes_are_nvidias() -> None:
    assert CU13 is not None
    header = (CU13 / "include" / "driver_types.h").read_text("utf-8", "replace")
    body = header[header.index("enum __device_builtin__ cudaError"):]
    body = body[: body.index("};")]
    enum = {m[1]: int(m[2]) for m in re.finditer(r"^\s*(cuda\w+)\s*=\s*(\d+)", body, re.M)}
    data = {e.name: e for e in load_cuda_errors().errors if e.api == "runtime"}
    assert len(data) >= 130
    both = enum.keys() & data.keys()
    assert len(both) >= 130 and all(enum[n] == data[n].value for n in both)
    cudart = ctypes.CDLL(str(CU13 / "lib" / "libcudart.so.13"))
    cudart.cudaGetErrorString.restype = ctypes.c_char_p
    for n in both:
        assert cudart.cudaGetErrorString(enum[n]).decode() == data[n].text, n


@needs_cu13
def test_driver_codes_are_nvidias() -> None:
    assert CU13 is not None
    header = (CU13 / "include" / "cuda.h").read_text("utf-8", "replace")
    body = header[header.index("typedef enum cudaError_enum"):]
    body = body[: body.index("} CUresult;")]
    enum = {m[1]: int(m[2]) for m in re.finditer(r"^\s*(CUDA_\w+)\s*=\s*(\d+)", body, re.M)}
    data = {e.name: e for e in load_cuda_errors().errors if e.api == "driver"}
    both = enum.keys() & data.keys()
    assert len(both) >= 100 and all(enum[n] == data[n].value for n in both)
    assert all(e.text for e in data.values())  # every driver message recorded (R580)


def test_lookups() -> None:
    errs = load_cuda_errors()
    e = errs.by_value(209, "runtime")
    assert e is not None and e.name == "cudaErrorNoKernelImageForDevice"
    assert errs.counterpart(e) is errs.by_name("CUDA_ERROR_NO_BINARY_FOR_GPU")
    assert errs.by_name("ERROR_ECC_UNCORRECTABLE") is errs.by_name("cuda_error_ecc_uncorrectable")
    assert "unknown error" not in dict(errs.messages)  # too generic to find in prose


def _facts(text: str) -> set[tuple[str, str]]:
    return {(f.kind, f.value) for f in extract_facts(text)}


@pytest.mark.parametrize(("text", "fact"), [
    ("CUDA error 209 at ggml-cuda.cu:5284", ("cuda-error", "cudaErrorNoKernelImageForDevice")),
    ("Cuda failure: 222 the provided", ("cuda-error", "cudaErrorUnsupportedPtxVersion")),
    ("CUresult 222 from cuModuleLoadData", ("cuda-error", "CUDA_ERROR_UNSUPPORTED_PTX_VERSION")),
    ("Error 804: forward compatibility", ("cuda-error", "cudaErrorCompatNotSupportedOnDevice")),
    ("code=35(cudaErrorInsufficientDriver)", ("cuda-error", "cudaErrorInsufficientDriver")),
    ("no device code compatible with CUDA arch 520.", ("arch", "sm_52")),
    ("GPU Compute Capability: 8.6, Driver API", ("arch", "sm_86")),
    ("ptxas fatal   : Value 'sm_121a' is not defined for option 'gpu-name'", ("arch", "sm_121a")),
    ("torch 2.1.2+cu121 installed", ("package", "torch==2.1.2+cu121")),
    ("torch 2.1.2+cu121 installed", ("cuda", "12.1")),
    ("NVIDIA-SMI 535.113.01    Driver Version: 535.113.01", ("driver", "535.113.01")),
    ("The NVIDIA driver on your system is too old (found version 12020).", ("cuda", "12.2")),
    ("version `GLIBCXX_3.4.30' not found (required by x)", ("version-node", "GLIBCXX_3.4.30")),
    ("RuntimeError: Unable to load cuSPARSE. Is it installed?", ("component", "cusparse")),
    ("Could not load library cudnn_cnn_infer64_8.dll. Error code 127", ("os-error", "127")),
    ("Could not load library cudnn_cnn_infer64_8.dll. Error code 127", ("os", "windows")),
    ("triton/backends/nvidia/bin/ptxas -lineinfo", ("tool", "triton")),
])  # fmt: skip
def test_facts(text: str, fact: tuple[str, str]) -> None:
    assert fact in _facts(text)


def test_no_cuda_error_from_a_windows_loader_code() -> None:
    assert not [f for f in extract_facts("Could not load library x64_8.dll. Error code 126")
                if f.kind == "cuda-error"]


def test_every_rule_names_real_codes_and_errors() -> None:
    for r in load_rules():
        assert set(r.codes) <= CODES.keys(), r.id
        assert r.packaging or not r.codes


def test_bad_rules_are_refused() -> None:
    meta = {"title": "t", "compiled": "2026-12-02", "sources": ["s"]}
    rule = {"id": "x", "title": "t", "cause": "c", "fix": "f", "codes": [],
            "when": [{"kind": "cuda-error", "value": ["cudaErrorNoSuchThing"]}]}
    with pytest.raises(CatalogError, match="no CUDA error 'cudaerrornosuchthing'"):
        parse_rules({"meta": meta, "cause": [rule]})
    with pytest.raises(CatalogError, match="unknown fact kind"):
        parse_rules({"meta": meta, "cause": [{**rule, "when": [{"kind": "colour"}]}]})
    with pytest.raises(CatalogError, match="unknown resolver"):
        parse_rules({"meta": meta, "cause": [{**rule, "when": [{"kind": "library"}],
                                              "resolve": "guess"}]})


def test_hostile_text_is_bounded() -> None:
    before = resource.getrusage(resource.RUSAGE_SELF).ru_utime
    text = ("undefined symbol: " + "a" * 5000 + " " + "sm_" * 20000 + "\n") * 200
    diagnose_text(text + "libcuda.so.1: cannot open shared object file" * 1000)
    diagnose_text("(" * 300000)
    assert resource.getrusage(resource.RUSAGE_SELF).ru_utime - before < 20  # CPU seconds


_PIECES = ["libcublas.so.12", "cudnn64_8.dll", "undefined symbol: _ZN3c10x", "version `GLIBC_2.",
           "CUDA error 2", "sm_", "capability 8.", "+cu12", "Driver Version: 5", "not found",
           "Error code 12", "\\", "`", "'", "(", ")", ":", "\n", " ", "\x00", "é", "NCCL WARN"]


@given(st.lists(st.sampled_from(_PIECES) | st.text(max_size=20), max_size=40))
@settings(max_examples=300, deadline=None)
def test_any_text_is_answered_or_unknown(parts: list[str]) -> None:
    d = diagnose_text("".join(parts))  # never raises
    for c in d.causes:
        assert c.title and c.fix and (c.packaging or not c.install)


def test_a_whole_log_of_every_corpus_text() -> None:
    """Every corpus text in one 256 KiB log (CI logs hold many errors): answered, each
    cause once, in bounded CPU time; a CUDA major alone (xla_cuda12) names no release."""
    from cuwheel._toml import tomllib

    corpus = Path(__file__).parent / "data" / "explain" / "corpus.toml"
    log = "\n".join(c["text"] for c in tomllib.loads(corpus.read_text("utf-8"))["case"])
    before = resource.getrusage(resource.RUSAGE_SELF).ru_utime
    d = diagnose_text((log + "\n") * 40)
    assert resource.getrusage(resource.RUSAGE_SELF).ru_utime - before < 20
    ids = [c.id for c in d.causes]
    assert len(ids) == len(set(ids)) >= 15
    assert diagnose_text("jax_plugins/xla_cuda12: the provided PTX was compiled with an "
                         "unsupported toolchain.").lead is not None


@pytest.mark.parametrize(("text", "cause"), [
    ("version 'GLIBC_2.34' not found", "glibc-too-old"),
    ("GLIBCXX_3.4.30 not found", "libstdcxx-too-old"),
    ("version `CXXABI_1.3.13' not found", "libstdcxx-too-old"),
    ("Library libcublas.so.12 is not found or cannot be loaded", "library-missing"),
    ("Could not load library cudnn_ops_infer64_8.dll", "library-missing"),
    ("Could not load dynamic library 'cudart64_110.dll'", "library-missing"),
    ("Unable to load cuSPARSE", "library-missing"),
    ("Failed to dlopen libcuda.so", "driver-missing"),
    ("The third-party dynamic library (cudnn64_8.dll) that Paddle depends on is not configured "
     "correctly", "library-missing"),
    ("Torch not compiled with CUDA enabled", "torch-cpu-build"),
    ("operator torchvision::nms does not exist", "torchvision-mismatch"),
    ("libnvJitLink.so.12 is too old", "nvjitlink-skew"),
    ("ptxas fatal : Value 'sm_121a' is not defined for option 'gpu-name'", "toolkit-arch"),
    ("no device code compatible with CUDA arch 520", "no-kernel-image"),
    ("CUDA error 209", "no-kernel-image"),
    ("error code 804", "forward-compat"),
    ("CUresult 222", "ptx-too-new"),
])  # fmt: skip
def test_the_issues_own_examples(text: str, cause: str) -> None:
    """Issue 32 lists these as unmatched by the ten patterns; each leads with its cause."""
    d = diagnose_text(text)
    assert d.lead is not None and d.lead.id == cause, [c.id for c in d.causes]
