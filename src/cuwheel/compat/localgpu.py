"""Find this machine's GPUs and driver: NVML (nvidia-ml-py) first, the driver library second.

NVML gives each GPU's name and compute capability, the driver version ("580.65.06") and the
CUDA version the driver supports.  Without nvidia-ml-py, ``libcuda.so.1`` / ``nvcuda.dll`` is
opened with ctypes (``cuInit``, ``cuDriverGetVersion``, ``cuDeviceGetAttribute``); the
driver version then comes from ``/proc/driver/nvidia/version`` where Linux has it.
"""

from __future__ import annotations

import ctypes
import importlib
import re
import sys
from dataclasses import dataclass
from typing import Any

from cuwheel._paths import read_untrusted
from cuwheel.compat.targets import Target
from cuwheel.errors import NoGpuError
from cuwheel.model.arch import Arch
from cuwheel.rules.runtime import Driver

__all__ = ["LocalGpu", "LocalMachine", "NoGpuError", "detect"]

# CUdevice_attribute values (cuda.h): CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR / _MINOR.
_CC_MAJOR = 75
_CC_MINOR = 76


@dataclass(frozen=True)
class LocalGpu:
    index: int
    name: str
    arch: Arch


@dataclass(frozen=True)
class LocalMachine:
    gpus: tuple[LocalGpu, ...]
    driver: Driver
    via: str  # "nvml" or "libcuda"

    def targets(self) -> tuple[Target, ...]:
        return tuple(
            Target(g.arch, f"GPU {g.index}: {g.name} (CC {g.arch.cc})", self.driver)
            for g in self.gpus
        )


def _text(value: object) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _via_nvml() -> LocalMachine:
    nvml: Any = importlib.import_module("pynvml")  # from nvidia-ml-py, untyped
    try:
        nvml.nvmlInit()
    except nvml.NVMLError as exc:
        raise _NvmlFailed(str(exc)) from exc
    try:
        version = _text(nvml.nvmlSystemGetDriverVersion())
        cuda_int = int(nvml.nvmlSystemGetCudaDriverVersion())
        gpus = []
        for i in range(int(nvml.nvmlDeviceGetCount())):
            h = nvml.nvmlDeviceGetHandleByIndex(i)
            major, minor = nvml.nvmlDeviceGetCudaComputeCapability(h)
            gpus.append(LocalGpu(i, _text(nvml.nvmlDeviceGetName(h)), Arch(major * 10 + minor)))
    except nvml.NVMLError as exc:
        raise _NvmlFailed(str(exc)) from exc
    finally:
        nvml.nvmlShutdown()
    return LocalMachine(
        tuple(gpus), Driver(version, (cuda_int // 1000, cuda_int % 1000 // 10)), "nvml"
    )


def _proc_driver_version() -> str | None:
    try:  # a /proc file: regular, of size 0 until read
        data = read_untrusted("/proc/driver/nvidia/version", 1 << 16)
    except OSError:
        return None
    text = data.decode("utf-8", "replace") if data is not None else ""
    m = re.search(r"Kernel Module\s+(?:for \S+\s+)?(\d+\.\d+(?:\.\d+)?)", text)
    return m[1] if m else None


def _via_libcuda() -> LocalMachine:
    name = "nvcuda.dll" if sys.platform == "win32" else "libcuda.so.1"
    try:
        cuda = ctypes.CDLL(name)
    except OSError as exc:
        raise NoGpuError(
            f"no NVIDIA driver found: {name} cannot be loaded ({exc}); install the driver, "
            f"or ask about a GPU with --gpu NAME / --cc X.Y"
        ) from exc
    rc = cuda.cuInit(0)
    if rc != 0:
        raise NoGpuError(f"the NVIDIA driver is present but cuInit failed (CUresult {rc}): no GPU?")
    v = ctypes.c_int()
    cuda.cuDriverGetVersion(ctypes.byref(v))
    count = ctypes.c_int()
    cuda.cuDeviceGetCount(ctypes.byref(count))
    gpus = []
    for i in range(count.value):
        dev = ctypes.c_int()
        if cuda.cuDeviceGet(ctypes.byref(dev), i) != 0:
            continue
        major, minor = ctypes.c_int(), ctypes.c_int()
        cuda.cuDeviceGetAttribute(ctypes.byref(major), _CC_MAJOR, dev)
        cuda.cuDeviceGetAttribute(ctypes.byref(minor), _CC_MINOR, dev)
        buf = ctypes.create_string_buffer(256)
        cuda.cuDeviceGetName(buf, 256, dev)
        gpus.append(
            LocalGpu(i, buf.value.decode(errors="replace"), Arch(major.value * 10 + minor.value))
        )
    driver = Driver(_proc_driver_version(), (v.value // 1000, v.value % 1000 // 10))
    return LocalMachine(tuple(gpus), driver, "libcuda")


class _NvmlFailed(Exception):
    """NVML is installed but cannot be initialised (no driver, no permission)."""


def detect() -> LocalMachine:
    """This machine's GPUs and driver; raises NoGpuError with the reason when there are none."""
    why = ""
    try:
        machine = _via_nvml()
    except ImportError:
        machine = None
        why = "nvidia-ml-py is not installed (pip install 'cuwheel[nvml]')"
    except _NvmlFailed as exc:  # no usable NVML: fall back to the driver library
        machine = None
        why = f"NVML failed: {exc}"
    if machine is None:
        try:
            machine = _via_libcuda()
        except NoGpuError as exc:
            raise NoGpuError(f"{exc}" + (f" [{why}]" if why else "")) from exc
    if not machine.gpus:
        raise NoGpuError(f"the NVIDIA driver ({machine.driver}) reports no GPU on this machine")
    return machine
