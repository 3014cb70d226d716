"""check follows the dynamic loader: NEEDED entries are found by file name, and every
run-path entry counts, the empty one included (ld.so reads it as the working directory).

The wheels are the seed x86_64 wheel (checkwheels.py) with one thing changed; expected codes
are written by hand from what ld.so does (ld.so(8): DT_NEEDED names a file to search for;
an empty DT_RUNPATH component is the current directory).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import checkwheels as cw
from cuwheel.checks import check_wheel
from cuwheel.config import parse_config

X86 = cw.linux_x86_cu13()
LIB = "pkg/lib/libpkg_cuda.so"


def _check(tmp_path: Path, spec: cw.Spec) -> list[tuple[str, str | None, str]]:
    cfg = parse_config({}, "test")
    report = check_wheel(spec.build(tmp_path), cfg.rows, cfg.check, environ={})
    return [(f.code, f.library, f.message) for f in report.findings if f.code != "TAG002"]


def _bundling(name: str) -> cw.Spec:
    """The library finds libcudart next to itself ($ORIGIN) and declares nothing."""
    lib = cw.patch(cw.fixture("row_x86_cu13.so"), cw.X86_RPATH, b"$ORIGIN")
    return replace(
        X86.with_member(LIB, lib).with_member(f"pkg/lib/{name}", cw.fixture("renamed_cudart.so")),
        requires=(),
    )


def test_a_bundled_library_is_found_by_file_name(tmp_path: Path) -> None:
    assert [c for c, _, _ in _check(tmp_path, _bundling("libcudart.so.13"))] == []


def test_a_renamed_copy_does_not_satisfy_needed(tmp_path: Path) -> None:
    """An auditwheel-renamed libcudart-45e7f3ed.so.13 (SONAME libcudart.so.13) is not what
    the loader opens for NEEDED libcudart.so.13: DEP001, naming the copy."""
    found = _check(tmp_path, _bundling("libcudart-45e7f3ed.so.13"))
    assert [(c, lib) for c, lib, _ in found] == [("DEP001", LIB)]
    assert "ships pkg/lib/libcudart-45e7f3ed.so.13 with SONAME libcudart.so.13" in found[0][2]


def test_an_empty_run_path_entry_is_the_working_directory(tmp_path: Path) -> None:
    """RUNPATH "$ORIGIN:" ends in an empty entry, which ld.so searches as the current
    directory: RP003 (it could never fire while the reader dropped empty entries)."""
    spec = _bundling("libcudart.so.13")
    lib = cw.patch(cw.fixture("row_x86_cu13.so"), cw.X86_RPATH, b"$ORIGIN:")
    found = _check(tmp_path, spec.with_member(LIB, lib))
    assert [(c, lib_) for c, lib_, _ in found] == [("RP003", LIB)]
    assert "''" in found[0][2]


def test_a_grafted_driver_is_a_driver_whatever_its_name(tmp_path: Path) -> None:
    """auditwheel renames what it grafts: libcuda-3e1a2b4c.so.580.65.06 (file name and
    SONAME) is the driver all the same (its name minus the hash, and its driver API
    exports), and the plugin that NEEDs it would load that copy instead of the machine's."""
    spec = (X86.with_member("pkg/lib/libcuda-3e1a2b4c.so.580.65.06",
                            cw.fixture("grafted_libcuda.so"))
            .with_member("pkg/lib/plugin.so", cw.fixture("needs_grafted_cuda.so")))
    found = _check(tmp_path, spec)
    assert sorted((c, lib) for c, lib, _ in found) == [
        ("DRV001", "pkg/lib/libcuda-3e1a2b4c.so.580.65.06"),
        ("DRV004", "pkg/lib/plugin.so"),
    ]
    assert "libcuda.so.580.65.06 (renamed" in next(m for c, _, m in found if c == "DRV001")
