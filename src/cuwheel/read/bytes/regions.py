"""Sections of a host file as the container search sees them (ELF sections, PE
sections): where each lies, whether it is one of the named device-code sections, whether
it is worth a signature search, and the alignment that makes a zero run padding
(docs/formats.md#padding-between-containers)."""

from __future__ import annotations

from dataclasses import dataclass

from cuwheel.read.bytes.tables import Anomalies

__all__ = ["PAD_LIMIT", "TAIL_PAD", "Region", "merge_ranges", "section_region"]

# Zero bytes between containers are alignment padding when the run is shorter than the
# section's alignment (Region.pad): nvcc's own objects align .nv_fatbin to 8 (pads under
# 16 bytes), NVIDIA's aarch64 libraries to 256 (libcurand.so.10 10.4.0.35: 10 pads of 8 to
# 240 bytes).  No alignment above PAD_LIMIT is believed.  After a section's last container
# only a pad under TAIL_PAD bytes is allowed: the linker ends a section with its last
# input, so a longer tail is not padding.
PAD_LIMIT = 4096
TAIL_PAD = 16


@dataclass(frozen=True)
class Region:
    """A section of the host file (absolute offsets)."""

    name: str
    start: int
    end: int
    device_code: bool  # one of the named fatbin sections
    relocatable: bool  # __nv_relfatbin / __nv_rel
    # Worth a signature search: allocated, initialised, non-executable data.
    searchable: bool = False
    # A zero run between two containers shorter than this is alignment padding (ELF:
    # sh_addralign, at least 16, at most PAD_LIMIT).
    pad: int = 16


def merge_ranges(ranges: list[tuple[int, int]]) -> tuple[list[int], list[int]]:
    """The starts and ends of ``ranges`` merged where they overlap or touch, sorted (for
    bisection: thousands of segments times thousands of sections would be quadratic)."""
    merged: list[list[int]] = []
    for a, b in sorted(r for r in ranges if r[1] > r[0]):
        if merged and a <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    return [a for a, _ in merged], [b for _, b in merged]


def section_region(
    name: str,
    shown: str,
    at: int,
    length: int,
    limit: int,
    base: int,
    unit: str,
    anomalies: Anomalies,
    *,
    device: dict[str, bool],
    searchable: bool,
    pad: int,
) -> Region | None:
    """The Region of a section at [at, at + length) of an image of ``limit`` bytes that
    starts at ``base``; one that runs past the image's end is an anomaly, cut to what the
    image holds (None when nothing of it is there).  ``device`` names the format's
    device-code sections (name -> relocatable); ``searchable`` is the format's own test
    for loadable, initialised, non-executable data (not asked of device-code sections)."""
    if at + length > limit:
        anomalies.add(f"section {shown} at 0x{at:x}+0x{length:x} runs past the end of the "
                      f"{unit}")
        if at >= limit:
            return None
        length = limit - at  # keep what the file holds of it
    relocatable = device.get(name)
    return Region(name=name, start=base + at, end=base + at + length,
                  device_code=relocatable is not None, relocatable=bool(relocatable),
                  searchable=relocatable is None and searchable, pad=pad)
