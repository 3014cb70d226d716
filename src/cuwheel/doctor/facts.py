"""The facts a pasted error text states (a traceback, a CI log, a Windows dialog): library
names with versions and what happened to them, symbols and symbol-version nodes, CUDA error
names, numbers and messages (data/cuda_errors.toml), GPU architectures, driver and CUDA
versions, package versions, the operating system and the tools that printed it.

Facts are what the text says, nothing judged: data/errors.toml's rules turn them into
causes (:mod:`.explain`).  The text is cut at :data:`MAX_TEXT` characters and each line at
:data:`MAX_LINE`, and every pattern is bounded: any paste costs linear time.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

__all__ = ["KINDS", "MAX_LINE", "MAX_TEXT", "Fact", "extract_facts"]

MAX_TEXT = 256 << 10
MAX_LINE = 4096

# fact kinds -> what the value is
KINDS = {
    "library": "a shared library or DLL name (state: missing, too-old, loaded)",
    "component": "a CUDA library named without a file name (cuSPARSE -> cusparse)",
    "symbol": "an undefined symbol (detail: the version node it was asked with)",
    "version-node": "a symbol version not found (GLIBC_2.34; detail: the library asked)",
    "cuda-error": "a cudaError_t / CUresult name (detail: how the text gave it)",
    "os-error": "a Windows loader error number (126: module not found, 127: procedure)",
    "arch": "a GPU architecture, sm_XY (detail: gpu, built, ptxas)",
    "driver": "an NVIDIA driver version",
    "cuda": "a CUDA version (detail: where it came from)",
    "package": "a package version (name==version, local tags +cpu / +cu121 kept)",
    "os": "linux, windows, macos, wsl",
    "tool": "what printed the text (torch, jax, tensorflow, onnxruntime, ...)",
    "symptom": "a known message that is no CUDA error (torch-cpu-build, nccl-network, ...)",
    "python-exception": "the exception type of a Python traceback's last line",
}


@dataclass(frozen=True)
class Fact:
    kind: str  # one of KINDS
    value: str  # canonical: "libcublas.so.12", "GLIBC_2.34", "sm_86", "torch==2.2.1+cpu"
    quote: str  # the text it was read from (cut to 160 characters)
    detail: str | None = None


def _quote(line: str, m: re.Match[str]) -> str:
    start = max(0, m.start() - 40)
    return line[start : m.end() + 60].strip()[:160]


# -- libraries ------------------------------------------------------------------------
_LIB = r"(?:lib[\w+-]{1,80}\.so(?:\.\d{1,6}){0,4}|[\w+-]{1,80}\.dll)"
_LIB_RE = re.compile(rf"(?<![\w.+-]){_LIB}(?![\w-])", re.I)
# What happened to a library, by the words around it (the loaders', cuDNN's, TF's, ...).
_MISSING = re.compile(
    r"cannot open shared object file|could not (?:load|locate|find|open)|not found|"
    r"cannot be loaded|failed to (?:dlopen|load)|unable to (?:load|find)|"
    r"not configured correctly|can ?not find|error code (?:is )?12[67]|no such file|"
    r"dll load failed|error while loading shared libraries", re.I)
_TOO_OLD = re.compile(r"\bis too old\b|older than", re.I)
_COMPONENT = re.compile(
    r"(?:unable to load|could not load|failed to load|the)\s{1,3}"
    r"(cu(?:sparse|blas|blaslt|fft|solver|rand|dnn|pti|tensor)|nvjitlink|nccl|nvrtc)\b"
    r"(?:\s{1,3}library)?(?=[\s.,:;!?]|$)", re.I)

# -- symbols and symbol versions -------------------------------------------------------
_UNDEF = re.compile(r"undefined symbol:?\s{0,3}([\w@.$]{1,1000})(?:,\s{0,3}version\s{1,3}"
                    r"([\w.+-]{1,200}))?")
_NODE = re.compile(r"\b(GLIBCXX|GLIBC|CXXABI|GCC|GLIBCPP)[_ ](\d{1,3}(?:\.\d{1,3}){1,3})\b")
_NODE_LIB = re.compile(r"(lib[\w+-]{1,80}\.so(?:\.\d{1,6}){0,4})\s*:\s*version\s*`?"
                       r"(?:GLIBCXX|GLIBC|CXXABI|GCC)")

# -- CUDA errors ------------------------------------------------------------------------
_ERR_NAME = re.compile(r"\b(cudaError[A-Z]\w{0,60}|CUDA_ERROR_[A-Z_]{2,60}|"
                       r"(?<![\w])ERROR_[A-Z_]{2,60}(?=\)))")
# numbers, by the way tools print them: "CUDA error 209", "CUDA failure 35:", "code=35(",
# "cuda runtime error (35)", "Error 804:", "returned 35", "CUresult 222", "[ 222 ]", "#214"
_ERR_NUM = re.compile(
    r"(?:cuda\s{0,2}(?:runtime\s)?(?:error|failure):?\s{0,2}\(?|cuda error code[:=]?\s{0,2}|"
    r"\bcode\s?[=#]\s?|\berror\s(?=\d{3}:)|\breturned\s|\bcuresult\s{0,2}[=:(]?\s{0,2}|"
    r"\berror code\s(?=\d{3}\b)|\[\s?(?=\d{2,3}\s?\]))(\d{1,3})\b", re.I)
_DRIVER_CONTEXT = re.compile(r"CUresult|CUDA_ERROR|\bcu[A-Z]\w+\(|cuInit|cuModule|cuLaunch")

# -- architectures ------------------------------------------------------------------------
_SM = re.compile(r"\b(?:sm|compute)_(\d{2,3})([af]?)\b")
_CAP = re.compile(r"(?:compute\s)?capability(?:\s(?:major/minor\sversion\snumber))?[\s:]{1,3}"
                  r"(?:sm_)?(\d{1,2})\.(\d)\b", re.I)
_GGML_ARCH = re.compile(r"\bCUDA arch (\d{2,4})\b")
_PTXAS_ARCH = re.compile(r"Value '(sm_\d{2,3}[af]?)' is not defined for option 'gpu-name'")
_NOT_COMPATIBLE = re.compile(r"with CUDA capability (sm_\d{2,3}) is not compatible")

# -- versions ---------------------------------------------------------------------------
_DRIVER = re.compile(r"(?:driver(?:\sversion)?|NVIDIA-SMI)[\s:=]{1,4}(?:is\s)?"
                     r"(\d{3}(?:\.\d{1,3}){1,2})\b", re.I)
_CUDA_VER = re.compile(r"(?:\bCUDA(?:\sVersion|\sruntime(?:\sversion)?|\sRuntime API Version|"
                       r"\sDriver API Version|_VERSION)?[\s:=]{0,3}|\bcuda|"
                       r"\bcompilation tools, release\s)(\d{1,2}\.\d{1,2})(?:\.\d+)?\b", re.I)
_LOCAL_TAG = re.compile(r"\b([A-Za-z][\w.-]{0,40}?)[\s=:-]{1,3}v?(\d{1,4}(?:\.\d{1,6}){1,3})"
                        r"(\+(?:cpu|cu\d{2,3}|rocm[\d.]{1,8}|cuda\d{2}[\w.]{0,20}))")
_FOUND_VERSION = re.compile(r"driver on your system is too old \(found version (\d{4,6})\)")
_CUDA_MAJOR = re.compile(r"(?:xla_cuda|jax-cuda|jax_cuda|[-_]cu)(1[0-3])(?![\d.])")
_BARE_TAG = re.compile(r"(?<![\w.])(\d{1,4}(?:\.\d{1,6}){1,3})\+(cpu|cu\d{2,3})\b")

# -- tools, OS and the messages that are no CUDA error -----------------------------------
_TOOLS = (
    ("torch", re.compile(r"torch[/\\.]|PyTorch|TORCH_USE_CUDA_DSA|\btorch\b", re.I)),
    ("torchvision", re.compile(r"torchvision")),
    ("jax", re.compile(r"\bjax(?:lib)?\b|xla_bridge|jax_plugins")),
    ("tensorflow", re.compile(r"tensorflow|stream_executor|dso_loader\.cc")),
    ("onnxruntime", re.compile(r"onnxruntime", re.I)),
    ("ctranslate2", re.compile(r"Library \S+ is not found or cannot be loaded")),
    ("paddle", re.compile(r"paddle", re.I)),
    ("triton", re.compile(r"\btriton\b|Triton Error", re.I)),
    ("inductor", re.compile(r"inductor")),
    ("nvfuser", re.compile(r"nvfuser|NVIDIA/Fuser", re.I)),
    ("ptxas", re.compile(r"\bptxas\b")),
    ("nvrtc", re.compile(r"\bnvrtc\b")),
    ("nvcc", re.compile(r"\bnvcc\b")),
    ("nccl", re.compile(r"\bNCCL\b")),
    ("ggml", re.compile(r"ggml|llama\.cpp")),
    ("cudnn", re.compile(r"Could not (?:load|locate) (?:library )?(?:lib)?cudnn", re.I)),
    ("loader", re.compile(r"error while loading shared libraries|cannot open shared object|"
                          r"version `|DLL load failed|specified module could not be found")),
    ("pip", re.compile(r"\bpip(?:3)? install\b|ERROR: (?:Could not find|No matching dist)")),
)
_OS = (
    ("wsl", re.compile(r"/usr/lib/wsl|\bWSL\b")),
    ("windows", re.compile(r"\.dll\b|[A-Z]:\\|\bWindows\b|win_amd64|\bwin32\b", re.I)),
    ("linux", re.compile(r"\.so\b|\.so\.\d|/usr/lib|/lib64|\bUbuntu\b|\bLinux\b|manylinux")),
    ("macos", re.compile(r"\bdarwin\b|macOS|\.dylib\b", re.I)),
)
_SYMPTOMS = (
    ("torch-cpu-build", re.compile(r"Torch not compiled with CUDA enabled", re.I)),
    ("torchvision-op-missing", re.compile(r"(?:operator|No such operator) torchvision::\w+")),
    ("arch-not-in-build", re.compile(r"is not compatible with the current PyTorch installation|"
                                     r"no device code compatible with CUDA arch")),
    ("ptxas-unknown-arch", re.compile(r"is not defined for option 'gpu-name'|"
                                      r"nvrtc: error: invalid value for --gpu-architecture")),
    ("no-driver", re.compile(r"Found no NVIDIA driver|no NVIDIA driver (?:on|is installed)", re.I)),
    ("cpu-fallback", re.compile(r"a CUDA-enabled jaxlib is not installed")),
    ("nccl-network", re.compile(r"(?:NCCL WARN|socket|NET/Socket|Call to connect).{0,120}?"
                                r"(?:connect|Connection (?:refused|timed out|closed|reset)|"
                                r"connection abort|remote peer)", re.I)),
    ("device-mismatch", re.compile(r"Expected all tensors to be on the same device")),
    ("device-assert", re.compile(r"Assertion `.{1,200}` failed")),
    ("driver-too-old", re.compile(r"NVIDIA driver on your system is too old")),
    ("dll-procedure-missing", re.compile(r"specified (?:procedure|program) could not be found")),
    ("dll-load-failed", re.compile(r"DLL load failed(?!.{0,60}specified (?:procedure|program))")),
)
_PY_EXC = re.compile(r"^\s*(?:[\w.]{1,80}\.)?([A-Z]\w{0,60}(?:Error|Exception))(?::|$)")
_TORCH_BUILT = re.compile(r"supports CUDA capabilities ((?:(?:sm|compute)_\d{2,3}\s?){1,30})")


def extract_facts(text: str) -> tuple[Fact, ...]:
    """Every fact ``text`` states, in the order found, each value once per kind."""
    from cuwheel.knowledge.cudaerrors import load_cuda_errors

    errors = load_cuda_errors()
    lines = [ln[:MAX_LINE] for ln in text[:MAX_TEXT].splitlines()]
    seen: set[tuple[str, str]] = set()
    out: list[Fact] = []
    for fact in _all(lines, errors):
        key = (fact.kind, fact.value)
        if key not in seen:
            seen.add(key)
            out.append(fact)
    return tuple(out)


def _all(lines: list[str], errors: object) -> Iterator[Fact]:
    from cuwheel.knowledge.cudaerrors import CudaErrors

    assert isinstance(errors, CudaErrors)
    whole = "\n".join(lines)
    for n, line in enumerate(lines):
        context = " ".join(lines[max(0, n - 1) : n + 2])
        yield from _libraries(line, context)
        yield from _symbols(line)
        yield from _cuda_errors(line, errors)
        yield from _archs(line)
        yield from _versions(line)
        for name, pattern in _SYMPTOMS:
            if m := pattern.search(line):
                yield Fact("symptom", name, _quote(line, m))
    for name, pattern in _TOOLS:
        if m := pattern.search(whole):
            yield Fact("tool", name, m[0])
    for name, pattern in _OS:
        if m := pattern.search(whole):
            yield Fact("os", name, m[0])
    last = next((ln for ln in reversed(lines) if ln.strip()), "")
    if m := _PY_EXC.match(last):
        yield Fact("python-exception", m[1], last.strip()[:160])


def _libraries(line: str, context: str) -> Iterator[Fact]:
    for m in _LIB_RE.finditer(line):
        name = m[0]
        if name.lower().endswith(".so") and not name.startswith("lib"):
            continue
        state = ("asked" if _NODE.search(line) else  # a symbol version, not the library
                 "too-old" if _TOO_OLD.search(line) else
                 "missing" if _MISSING.search(line) or _MISSING.search(context) else None)
        yield Fact("library", name, _quote(line, m), state)
    for m in _COMPONENT.finditer(line):
        yield Fact("component", m[1].lower(), _quote(line, m), "missing")


def _symbols(line: str) -> Iterator[Fact]:
    for m in _UNDEF.finditer(line):
        yield Fact("symbol", m[1], _quote(line, m), m[2])
    if "not found" in line or "not defined" in line or "version `" in line:
        asked = _NODE_LIB.search(line)
        for m in _NODE.finditer(line):
            yield Fact("version-node", f"{m[1]}_{m[2]}", _quote(line, m),
                       asked[1] if asked else None)


def _cuda_errors(line: str, errors: object) -> Iterator[Fact]:
    from cuwheel.knowledge.cudaerrors import CudaErrors

    assert isinstance(errors, CudaErrors)
    for m in _ERR_NAME.finditer(line):
        e = errors.by_name(m[1])
        if e is not None:
            yield Fact("cuda-error", e.name, _quote(line, m), "name")
    low = line.lower()
    said = []
    for message, e in errors.messages:
        i = low.find(message)
        if i >= 0:
            said.append(e)
            yield Fact("cuda-error", e.name, line[max(0, i - 40) : i + len(message) + 20].strip(),
                       "message")
            low = low[:i] + " " * len(message) + low[i + len(message) :]
    if re.search(r"load(?:ing)? library|\.dll|LoadLibrary", line, re.I):
        if w := re.search(r"error code (?:is )?(12[67])\b", line, re.I):
            yield Fact("os-error", w[1], _quote(line, w))
        return
    for m in _ERR_NUM.finditer(line):
        value = int(m[1])
        api = "driver" if _DRIVER_CONTEXT.search(line) else "runtime"
        e = errors.by_value(value, api)
        other = errors.by_value(value, "driver" if api == "runtime" else "runtime")
        if said and e not in said and other in said:
            e = other  # the number is the other API's: its message is on the line
        if e is not None and value != 0:
            yield Fact("cuda-error", e.name, _quote(line, m), f"number {value}")


def _archs(line: str) -> Iterator[Fact]:
    if m := _PTXAS_ARCH.search(line):
        yield Fact("arch", m[1], _quote(line, m), "ptxas")
    if m := _NOT_COMPATIBLE.search(line):
        yield Fact("arch", m[1], _quote(line, m), "gpu")
    if m := _TORCH_BUILT.search(line):
        for a in m[1].split():
            yield Fact("arch", a.replace("compute_", "sm_"), _quote(line, m), "built")
    for m in _GGML_ARCH.finditer(line):  # ggml prints 100 * major + 10 * minor
        v = int(m[1])
        yield Fact("arch", f"sm_{v // 100}{(v // 10) % 10}", _quote(line, m), "gpu")
    for m in _CAP.finditer(line):
        yield Fact("arch", f"sm_{m[1]}{m[2]}", _quote(line, m), "gpu")
    for m in _SM.finditer(line):
        yield Fact("arch", f"sm_{m[1]}{m[2]}", _quote(line, m))


def _train(tag: str) -> str | None:
    """``cu121`` -> ``12.1`` by the one train parser; None for ``cpu`` and the rest."""
    from cuwheel.errors import TrainSpellingError
    from cuwheel.model.train import parse_train_name

    if not tag.lower().startswith("cu"):
        return None
    try:
        t = parse_train_name(tag)
    except TrainSpellingError:
        return None
    return f"{t.major}.{t.minor}"


def _versions(line: str) -> Iterator[Fact]:
    for m in _DRIVER.finditer(line):
        yield Fact("driver", m[1], _quote(line, m))
    for m in _CUDA_VER.finditer(line):
        yield Fact("cuda", m[1], _quote(line, m))
    if fv := _FOUND_VERSION.search(line):  # CUDA_VERSION style: 12020 -> 12.2
        v = int(fv[1])
        yield Fact("cuda", f"{v // 1000}.{(v % 1000) // 10}", _quote(line, fv), "driver supports")
    for m in _CUDA_MAJOR.finditer(line):
        yield Fact("cuda", m[1], _quote(line, m), "name")
    spans = []
    for m in _LOCAL_TAG.finditer(line):
        spans.append(m.span())
        yield Fact("package", f"{m[1].lower()}=={m[2]}{m[3]}", _quote(line, m))
        if (t := _train(m[3].removeprefix("+"))) is not None:
            yield Fact("cuda", t, _quote(line, m), "local tag")
    for m in _BARE_TAG.finditer(line):
        if any(a <= m.start() < b for a, b in spans):
            continue
        yield Fact("package", f"=={m[1]}+{m[2]}", _quote(line, m))
        if (t := _train(m[2])) is not None:
            yield Fact("cuda", t, _quote(line, m), "local tag")
