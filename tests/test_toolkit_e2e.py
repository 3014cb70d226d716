"""`cuwheel toolkit` for real, with NVIDIA's own bytes (needs the package index; skipped,
not failed, when it cannot be reached, and skipped when CUWHEEL_SKIP_NETWORK=1):

- the redist path: NVIDIA's CUDA 13.0 wheels (fetched with plain pip, not with cuwheel)
  repacked into the redist archive layout with their genuine sha256, served by a local HTTP
  server under NVIDIA's real 13.0.2 manifest; the assembled toolkit's nvcc compiles and links
  a Thrust program against the shared runtime;
- the wheels path: `--for build --source wheels` with no system CUDA on PATH and CUDA_HOME
  unset; examples/cuda_ext builds with it (CMake finds nvcc through the printed env only)
  and `cuwheel check` passes on the result;
- the Windows target from Linux: the assembled win-amd64 runtime has cudart64_13.dll (a
  mingw cross-build links against it; linked for real where mingw-w64 is installed), the
  headers (with crt/) and MSVC's import libraries.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

import _absent
from cuwheel.cli import main
from cuwheel.knowledge.toolkits import load_toolkits
from redistserver import Served, manifest_with, serve

pytestmark = [
    pytest.mark.network,
    _absent.skip_without("network", os.environ.get("CUWHEEL_SKIP_NETWORK") == "1"),
    _absent.skip_without("linux", not sys.platform.startswith("linux"), "Linux host"),
]

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "cuda_ext"
LINUX_TAGS = load_toolkits().platform("linux-x86_64").pip_platforms
BUILD = ["cuda_nvcc", "cuda_crt", "libnvvm", "cuda_cudart", "cuda_cccl"]
WHEEL_OF = {c.redist: c.wheel(13) for c in load_toolkits().components}
# CUDA 13.0.2's component versions, from NVIDIA's manifest (its wheels carry the same ones)
MANIFEST = Path(__file__).parent / "data" / "redist" / "redistrib_13.0.2.json"
VERSION = {k: v["version"] for k, v in json.loads(MANIFEST.read_bytes()).items()
           if isinstance(v, dict)}  # fmt: skip


def cuwheel(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def pip_download(dest: Path, tags: tuple[str, ...], *pins: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
           "-d", str(dest)]  # fmt: skip
    for t in tags:
        cmd += ["--platform", t]
    return subprocess.run(cmd + list(pins), capture_output=True, text=True, timeout=900)


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Skip unless the package index serves NVIDIA's wheels (probed with plain pip)."""
    if importlib.util.find_spec("pip") is None:
        _absent.skip("pip")
    probe = tmp_path_factory.mktemp("probe")
    result = pip_download(probe, LINUX_TAGS, f"nvidia-cuda-crt=={VERSION['cuda_crt']}")
    if result.returncode != 0:
        _absent.skip("network", result.stderr.strip()[-200:])


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("cache")


def no_cuda_env() -> dict[str, str]:
    """This environment without any CUDA: no CUDA_HOME / CUDA_PATH / CUDACXX, and no PATH
    entry that is a CUDA install or holds an nvcc."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("CUDA_HOME", "CUDA_PATH", "CUDACXX", "CUDAARCHS", "CUDA_ROOT")}  # fmt: skip
    keep = [
        d for d in env.get("PATH", "").split(os.pathsep)
        if d and "cuda" not in d.lower() and not (Path(d) / "nvcc").exists()
    ]  # fmt: skip
    env["PATH"] = os.pathsep.join(keep)
    env.pop("LD_LIBRARY_PATH", None)
    return env


def with_toolkit_env(base: dict[str, str], printed: str) -> dict[str, str]:
    """``base`` plus the toolkit's printed env, read as a CI job reads $GITHUB_ENV (the
    printed PATH carries this process's PATH: replace it with the stripped one)."""
    env = dict(base)
    for line in printed.splitlines():
        key, _, value = line.partition("=")
        if key == "PATH":
            value = os.pathsep.join([value.split(os.pathsep)[0], base["PATH"]])
        elif key == "LD_LIBRARY_PATH":
            value = value.split(os.pathsep)[0]
        env[key] = value
    return env


# ---------------------------------------------------------------------- redist path


def repack(wheel: Path, top: str, out: Path) -> bytes:
    """A wheel's nvidia/cu13/* as NVIDIA's redist archive ``top``.tar.xz (xz preset 0:
    the test pays for compression; the bytes inside are NVIDIA's)."""
    with zipfile.ZipFile(wheel) as zf, tarfile.open(out, "w:xz", preset=0) as tar:
        for info in zf.infolist():
            parts = info.filename.split("/")
            if info.is_dir() or len(parts) < 3 or parts[:2] != ["nvidia", "cu13"]:
                continue
            ti = tarfile.TarInfo(f"{top}/{'/'.join(parts[2:])}")
            ti.size = info.file_size
            ti.mode = 0o755 if (info.external_attr >> 16) & 0o111 else 0o644
            with zf.open(info) as fh:
                tar.addfile(ti, fh)
    return out.read_bytes()


@pytest.fixture(scope="module")
def redist_mirror(index: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    wheels = tmp_path_factory.mktemp("wheels")
    pins = [f"{WHEEL_OF[k]}=={VERSION[k]}" for k in BUILD]
    result = pip_download(wheels, LINUX_TAGS, *pins)
    assert result.returncode == 0, result.stderr[-2000:]
    archives = tmp_path_factory.mktemp("archives")
    served = Served()
    entries = {}
    for key in BUILD:
        dist = (WHEEL_OF[key] or "").replace("-", "_")
        (whl,) = wheels.glob(f"{dist}-{VERSION[key]}-*.whl")
        top = f"{key}-linux-x86_64-{VERSION[key]}-archive"
        rel = f"{key}/linux-x86_64/{top}.tar.xz"
        data = repack(whl, top, archives / f"{top}.tar.xz")
        served.files[f"/redist/{rel}"] = data
        entries[(key, "linux-x86_64")] = (rel, data)
    served.files["/redist/redistrib_13.0.2.json"] = manifest_with(entries)
    with serve(served):
        yield served


def test_redist_path_with_nvidias_bytes_builds_a_program(
    redist_mirror: Served, tmp_path: Path
) -> None:
    prefix = tmp_path / "cuda-13.0"
    base = f"{redist_mirror.url}/redist/"
    code, out, err = cuwheel("toolkit", "--train", "13.0.2", "--for", "build", "--platform",
                             "linux-x86_64", "--prefix", str(prefix), "--base-url", base,
                             "--cache", str(tmp_path / "c"))  # fmt: skip
    assert code == 0, err
    assert len(redist_mirror.archive_requests()) == len(BUILD)
    env = with_toolkit_env(no_cuda_env(), out)
    assert env["CUDACXX"] == str(prefix / "bin" / "nvcc")
    src = tmp_path / "k.cu"
    src.write_text(
        "#include <thrust/device_vector.h>\n#include <cstdio>\n"
        "__global__ void k(int *x) { x[threadIdx.x] += 1; }\n"
        "int main() { thrust::device_vector<int> v(4, 1); "
        "k<<<1, 4>>>(thrust::raw_pointer_cast(v.data())); std::printf(\"built\\n\"); }\n"
    )
    exe = tmp_path / "k"
    cmd = [env["CUDACXX"], "-arch=sm_80", "-cudart", "shared", str(src), "-o", str(exe)]
    build = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    assert build.returncode == 0, build.stderr[-3000:]
    needed = subprocess.run(["readelf", "-d", str(exe)], capture_output=True, text=True).stdout
    assert "libcudart.so.13" in needed
    # the cubin records the toolkit that built it: this release's nvcc
    code, js, err = cuwheel("inspect", str(exe), "--json")
    assert code == 0, err
    (binary,) = json.loads(js)["sources"][0]["binaries"]
    assert binary["summary"]["toolkits"] == [VERSION["cuda_nvcc"]]


# ---------------------------------------------------------------------- wheels path


@pytest.fixture(scope="module")
def build_toolkit(
    index: None, cache: Path, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, str]:
    prefix = tmp_path_factory.mktemp("tk") / "cuda-13.0"
    code, out, err = cuwheel("toolkit", "--train", "cu130", "--for", "build", "--source",
                             "wheels", "--platform", "linux-x86_64", "--prefix", str(prefix),
                             "--cache", str(cache))  # fmt: skip
    assert code == 0, err
    return prefix, out


def test_wheels_toolkit_is_a_normal_cuda_tree(build_toolkit: tuple[Path, str]) -> None:
    prefix, _ = build_toolkit
    for rel in ("bin/nvcc", "bin/ptxas", "nvvm/bin/cicc", "nvvm/libdevice/libdevice.10.bc",
                "include/cuda_runtime.h", "include/crt/host_defines.h",
                "include/cccl/thrust/version.h", "lib64/libcudart.so", "lib64/libcudart_static.a",
                "nvvm/lib64/libnvvm.so"):  # fmt: skip
        assert (prefix / rel).exists(), rel
    version = subprocess.run([str(prefix / "bin" / "nvcc"), "--version"], capture_output=True,
                             text=True, env=no_cuda_env())  # fmt: skip
    lock = json.loads((prefix / "cuwheel-toolkit.lock").read_text())
    nvcc = next(c["version"] for c in lock["components"] if c["component"] == "nvcc")
    assert f"V{nvcc}" in version.stdout
    # --train cu130 is 13.0's newest release on the index
    release = tuple(int(x) for x in lock["cuda"].split("."))
    assert release[:2] == (13, 0) and release >= (13, 0, 3)


@pytest.fixture(scope="module")
def backend() -> None:
    _absent.has_extra("scikit-build-core")
    if _absent.no_tool("cmake"):
        _absent.skip("cmake")


def test_cuda_ext_builds_with_the_wheels_toolkit_and_passes_check(
    build_toolkit: tuple[Path, str], backend: None, tmp_path: Path
) -> None:
    prefix, printed = build_toolkit
    code, plan, err = cuwheel("plan", "--train", "cu130", "--platform", "linux-x86_64",
                              "--config", str(EXAMPLE / "pyproject.toml"))  # fmt: skip
    assert code == 0, err
    env = with_toolkit_env(no_cuda_env(), printed)
    env.update(line.split("=", 1) for line in plan.splitlines() if "=" in line)
    env["PIP_NO_INPUT"] = "1"
    assert shutil.which("nvcc", path=env["PATH"]) == str(prefix / "bin" / "nvcc")
    build_dir = tmp_path / "build"
    cmd = [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
           f"--config-settings=build-dir={build_dir}", "-w", str(tmp_path / "dist"),
           str(EXAMPLE)]  # fmt: skip
    result = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    cache_txt = (build_dir / "CMakeCache.txt").read_text()
    assert f"CMAKE_CUDA_COMPILER:FILEPATH={prefix}/bin/nvcc" in cache_txt
    assert "/usr/local/cuda" not in cache_txt
    (wheel,) = (tmp_path / "dist").glob("cuda_ext-0.1.0+cu130-*.whl")
    code, out, err = cuwheel("check", str(wheel), "--config", str(EXAMPLE / "pyproject.toml"))
    assert code == 0, out + err
    assert "PASS" in out + err


def test_cmake_finds_the_toolkit_and_the_driver_stub(
    build_toolkit: tuple[Path, str], tmp_path: Path
) -> None:
    if shutil.which("cmake") is None:
        _absent.skip("cmake")
    prefix, printed = build_toolkit
    # a driver API call, so that the linker (--as-needed) keeps libcuda
    (tmp_path / "k.cu").write_text("#include <cuda.h>\n__global__ void k() {}\n"
                                   "int main() { k<<<1, 1>>>(); return cuInit(0); }\n")  # fmt: skip
    (tmp_path / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.24)\nproject(p LANGUAGES CXX CUDA)\n"
        "find_package(CUDAToolkit REQUIRED)\nadd_executable(p k.cu)\n"
        "set_target_properties(p PROPERTIES CUDA_ARCHITECTURES 80)\n"
        "target_link_libraries(p PRIVATE CUDA::cudart CUDA::cuda_driver)\n"
    )
    env = with_toolkit_env(no_cuda_env(), printed)
    b = tmp_path / "b"
    for cmd in (["cmake", "-S", str(tmp_path), "-B", str(b)], ["cmake", "--build", str(b)]):
        result = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900)
        assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    cache_txt = (b / "CMakeCache.txt").read_text()
    (driver,) = [ln.split("=", 1)[1] for ln in cache_txt.splitlines()
                 if ln.startswith("CUDA_cuda_driver_LIBRARY:")]  # fmt: skip
    assert Path(driver).resolve() == (prefix / "lib" / "stubs" / "libcuda.so").resolve()
    needed = subprocess.run(["readelf", "-d", str(b / "p")], capture_output=True, text=True)
    assert "libcuda.so.1" in needed.stdout


def test_second_run_with_a_warm_cache_needs_no_download(
    build_toolkit: tuple[Path, str], cache: Path, tmp_path: Path
) -> None:
    code, _, err = cuwheel("toolkit", "--train", "cu130", "--for", "build", "--source", "wheels",
                           "--platform", "linux-x86_64", "--prefix", str(tmp_path / "again"),
                           "--cache", str(cache))  # fmt: skip
    assert code == 0, err
    assert "0.0 MB downloaded, 5 archives from the cache" in err


# ---------------------------------------------------------------------- Windows target


def test_windows_runtime_for_a_mingw_cross_build(
    index: None, cache: Path, tmp_path: Path
) -> None:
    pefile = _absent.extra("pefile")
    prefix = tmp_path / "cuda-win"
    code, out, err = cuwheel("toolkit", "--train", "cu130", "--for", "runtime", "--source",
                             "wheels", "--platform", "win-amd64", "--prefix", str(prefix),
                             "--cache", str(cache))  # fmt: skip
    assert code == 0, err
    assert [line.split("=", 1)[0] for line in out.splitlines()] == ["CUDA_HOME", "CUDA_PATH"]
    dll = prefix / "bin" / "x86_64" / "cudart64_13.dll"
    pe = pefile.PE(str(dll))
    assert pe.FILE_HEADER.Machine == 0x8664
    exports = {e.name for e in pe.DIRECTORY_ENTRY_EXPORT.symbols}
    assert b"cudaMalloc" in exports and b"cudaGetDeviceCount" in exports
    # MSVC links cudart.lib (in CUDA 13 a static loader built with MSVC's /GS runtime, which
    # mingw's ld cannot resolve); GNU ld links against the DLL itself, through its exports.
    assert (prefix / "lib" / "x64" / "cudart.lib").read_bytes().startswith(b"!<arch>\n")
    # the runtime's headers include crt/host_defines.h: the runtime set carries crt
    assert (prefix / "include" / "cuda_runtime_api.h").is_file()
    assert (prefix / "include" / "crt" / "host_defines.h").is_file()
    src = tmp_path / "probe.c"
    src.write_text(
        "#include <cuda_runtime_api.h>\n#include <stdio.h>\n"
        "int main(void) { int n = 0; cudaGetDeviceCount(&n); printf(\"%d\\n\", n); return 0; }\n"
    )
    exe = tmp_path / "probe.exe"
    gcc = shutil.which("x86_64-w64-mingw32-gcc")
    if gcc is not None:
        cmd = [gcc, str(src), f"-I{prefix / 'include'}", f"-L{dll.parent}", "-lcudart64_13",
               "-o", str(exe)]  # fmt: skip
    else:
        # zig's clang + lld from PyPI (`pip install ziglang`) as the mingw toolchain: lld
        # links through an import library, written here from the DLL's exports
        if importlib.util.find_spec("ziglang") is None:
            _absent.skip("mingw")
        zig = [sys.executable, "-m", "ziglang"]
        names = sorted(e.name.decode() for e in pe.DIRECTORY_ENTRY_EXPORT.symbols if e.name)
        deffile = tmp_path / "cudart64_13.def"
        deffile.write_text("LIBRARY cudart64_13.dll\nEXPORTS\n" + "".join(f"{n}\n" for n in names))
        implib = tmp_path / "cudart64_13.lib"
        made = subprocess.run([*zig, "dlltool", "-d", str(deffile), "-l", str(implib),
                               "-m", "i386:x86-64"], capture_output=True, text=True, timeout=300)
        assert made.returncode == 0, made.stderr[-3000:]
        cmd = [*zig, "cc", "-target", "x86_64-windows-gnu", str(src), f"-I{prefix / 'include'}",
               f"-L{tmp_path}", "-lcudart64_13", "-o", str(exe)]  # fmt: skip
    link = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert link.returncode == 0, link.stderr[-3000:]
    imports = {e.dll.lower() for e in pefile.PE(str(exe)).DIRECTORY_ENTRY_IMPORT}
    assert b"cudart64_13.dll" in imports
