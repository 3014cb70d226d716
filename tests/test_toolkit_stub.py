"""The driver stub a wheels-built tree gets (toolkit/stubs.py) and the build-tool check
(toolkit/assemble.check_build_tools).  The stub is judged by the tools that consume it:
GNU ld links a program against it through -lcuda, the dynamic loader loads it (ctypes) and
its functions return CUDA_ERROR_STUB_LIBRARY, and readelf reads its SONAME."""

from __future__ import annotations

import ctypes
import platform
import shutil
import subprocess
from pathlib import Path

import pytest

import _absent
from cuwheel.errors import ToolkitError
from cuwheel.toolkit import Lock, Part, check_build_tools
from cuwheel.toolkit.stubs import driver_symbols, write_driver_stub

# the shapes cuda.h declares and maps its functions in (CUDA 13.2's header, abridged)
HEADER = """
#if defined(_WIN32)
#define CUDAAPI __stdcall
#else
#define CUDAAPI
#endif
#define __CUDA_API_PTDS(api) api ## _ptds
#define cuMemAlloc                          cuMemAlloc_v2
#define cuMemcpy                            __CUDA_API_PTDS(cuMemcpy)
#define cuMemPrefetchAsync                  __CUDA_API_PTSZ(cuMemPrefetchAsync_v2)
CUresult CUDAAPI cuInit(unsigned int Flags);
CUresult CUDAAPI cuDriverGetVersion(int *driverVersion);
__CUDA_DEPRECATED CUresult CUDAAPI cuCtxDetach(CUcontext ctx);
CUresult CUDAAPI cuMemAlloc(CUdeviceptr *dptr, size_t bytesize);
"""

MACHINE = {"x86_64": "x86_64", "amd64": "x86_64", "aarch64": "aarch64", "arm64": "aarch64"}.get(
    platform.machine().lower()
)


def test_symbols_come_from_declarations_and_mappings() -> None:
    names = driver_symbols(HEADER)
    for n in ("cuInit", "cuDriverGetVersion", "cuCtxDetach", "cuMemAlloc", "cuMemAlloc_v2",
              "cuMemcpy", "cuMemcpy_ptds", "cuMemPrefetchAsync_v2",
              "cuMemPrefetchAsync_v2_ptsz"):  # fmt: skip
        assert n in names, n
    assert not any(n.startswith("__") or n == "CUDAAPI" for n in names)


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / "include").mkdir()
    (tmp_path / "include" / "cuda.h").write_text(HEADER)
    return tmp_path


@_absent.skip_without("gcc", MACHINE is None or not shutil.which("gcc"), "on x86_64/aarch64")
def test_ld_links_against_the_stub_and_the_loader_loads_it(tree: Path, tmp_path: Path) -> None:
    assert MACHINE is not None
    stub = write_driver_stub(tree, MACHINE)
    assert stub == tree / "lib" / "stubs" / "libcuda.so"
    dyn = subprocess.run(["readelf", "-d", "--dyn-syms", str(stub)], capture_output=True,
                         text=True, check=True).stdout  # fmt: skip
    assert "Library soname: [libcuda.so.1]" in dyn
    src = tmp_path / "probe.c"
    src.write_text(
        "int cuInit(unsigned); int cuMemAlloc_v2(void *, unsigned long);\n"
        "int main(void) { return cuInit(0) + cuMemAlloc_v2(0, 0); }\n"
    )
    exe = tmp_path / "probe"
    link = subprocess.run(["gcc", str(src), f"-L{stub.parent}", "-lcuda", "-o", str(exe)],
                          capture_output=True, text=True)  # fmt: skip
    assert link.returncode == 0, link.stderr
    needed = subprocess.run(["readelf", "-d", str(exe)], capture_output=True, text=True).stdout
    assert "Shared library: [libcuda.so.1]" in needed
    # a symbol cuda.h does not have is not defined: the link fails as with NVIDIA's stub
    src.write_text("int cuNoSuchCall(void); int main(void) { return cuNoSuchCall(); }\n")
    link = subprocess.run(["gcc", str(src), f"-L{stub.parent}", "-lcuda", "-o", str(exe)],
                          capture_output=True, text=True)  # fmt: skip
    assert link.returncode != 0 and "cuNoSuchCall" in link.stderr
    lib = ctypes.CDLL(str(stub))
    assert lib.cuInit(0) == 34  # CUDA_ERROR_STUB_LIBRARY
    assert lib.cuMemcpy_ptds(0, 0, 0) == 34


def test_an_existing_stub_is_kept(tree: Path) -> None:
    stub = tree / "lib" / "stubs" / "libcuda.so"
    stub.parent.mkdir(parents=True)
    stub.write_bytes(b"NVIDIA's own")
    assert write_driver_stub(tree, "x86_64") is None
    assert stub.read_bytes() == b"NVIDIA's own"


def lock(source: str, platform_: str = "linux-x86_64") -> Lock:
    part = Part("nvcc", "nvidia-cuda-nvcc-cu12", "12.9.86", "https://x/n.whl", "0" * 64, None,
                "wheel")  # fmt: skip
    os_ = "windows" if platform_.startswith("win") else "linux"
    return Lock("cu129", "12.9.1", platform_, os_, source, (part,))


def test_a_build_toolkit_without_nvcc_is_an_error_naming_the_fix(tmp_path: Path) -> None:
    # what NVIDIA's nvidia-cuda-nvcc-cu12 12.9.86 wheel holds (docs/toolkit.md)
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "ptxas").write_bytes(b"\x7fELF")
    with pytest.raises(ToolkitError) as exc:
        check_build_tools(tmp_path, lock("wheels"))
    text = str(exc.value)
    assert "cu129 (CUDA 12.9.1) for linux-x86_64 from wheels has no working nvcc" in text
    assert "bin/nvcc, nvvm/bin/cicc, bin/nvlink, bin/fatbinary missing" in text
    assert "use --source redist" in text and "\n" not in text
    with pytest.raises(ToolkitError, match=r"bin/nvcc\.exe"):
        check_build_tools(tmp_path, lock("wheels", "win-amd64"))


@_absent.skip_without("linux", MACHINE is None or platform.system() != "Linux", "Linux host")
def test_an_nvcc_that_does_not_run_is_an_error(tmp_path: Path) -> None:
    for tool in ("bin/nvcc", "nvvm/bin/cicc", "bin/ptxas", "bin/nvlink", "bin/fatbinary"):
        (tmp_path / tool).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / tool).write_text("#!/bin/sh\necho 'Cuda compilation tools, release 12.8'\n")
        (tmp_path / tool).chmod(0o755)
    target = "linux-x86_64" if MACHINE == "x86_64" else "linux-sbsa"
    with pytest.raises(ToolkitError, match=r"did not name release 12\.9: Cuda compilation"):
        check_build_tools(tmp_path, lock("wheels", target))
    said = "#!/bin/sh\necho 'Cuda compilation tools, release 12.9'\n"
    (tmp_path / "bin" / "nvcc").write_text(said)
    check_build_tools(tmp_path, lock("wheels", target))
