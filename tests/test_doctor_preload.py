"""A package's own preload list read as untrusted input (doctor/preload.py): its
expressions matched as ``re.search`` would (``re`` is the oracle), in bounded time however
they are crafted, and the list itself opened by the one opener and parsed by the bounded
JSON loader."""

from __future__ import annotations

import os
import re
import resource
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cuwheel.doctor import read_environment
from cuwheel.doctor.preload import compile_pattern, preload_list, search

LIST = "faiss/PRELOAD_SHARED_LIBRARIES.json"
ATOMS = ["a", "b", ".", "\\.", "[ab]", "[^a]", "[0-9]", "\\d", "l", "s", "o", "1", "2"]


@st.composite
def patterns(draw: st.DrawFn) -> str:
    parts = [draw(st.sampled_from(ATOMS)) + draw(st.sampled_from(["", "", "*", "+", "?"]))
             for _ in range(draw(st.integers(0, 6)))]
    return (draw(st.sampled_from(["", "^"])) + "".join(parts)
            + draw(st.sampled_from(["", "$"])))


@settings(max_examples=400, deadline=None)
@given(pattern=patterns(), name=st.text(alphabet="ab.lso12x", max_size=12))
def test_the_subset_matches_as_re_search(pattern: str, name: str) -> None:
    compiled = compile_pattern(pattern)
    assert compiled is not None, pattern
    assert search(compiled, name) == bool(re.search(pattern, name)), (pattern, name)


def test_real_lists_expressions_and_what_is_left_out() -> None:
    """faiss-gpu-cu12 1.9.0.0's expressions are in the subset; groups, alternation,
    repeat counts and back-references are not (they name nothing)."""
    for real in ("libcudart.so.12*", "libcublas.so.12*"):
        compiled = compile_pattern(real)
        assert compiled is not None and search(compiled, "libcudart.so.12") == bool(
            re.search(real, "libcudart.so.12"))
    for outside in ("(a+)+$", "a|b", "a{2,}", "(a)\\1", "**", "\\bx", "[ab"):
        assert compile_pattern(outside) is None, outside


def test_a_crafted_expression_costs_bounded_cpu() -> None:
    """``a*`` twelve times then ``b`` against 4,000 ``a``: exponential for a backtracking
    engine in the number of stars, here name length x pattern length steps."""
    compiled = compile_pattern("a*" * 12 + "b")
    assert compiled is not None
    before = resource.getrusage(resource.RUSAGE_SELF).ru_utime
    assert not search(compiled, "a" * 4000)
    assert resource.getrusage(resource.RUSAGE_SELF).ru_utime - before < 5


def _site(tmp_path: Path, listing: bytes | None) -> Path:
    site = tmp_path / "site"
    for name, rel in (("faiss-gpu-cu12", "faiss/x.so"),
                      ("nvidia-cuda-runtime-cu12", "nvidia/cuda_runtime/lib/libcudart.so.12")):
        info = site / f"{name.replace('-', '_')}-1.0.dist-info"
        info.mkdir(parents=True)
        (site / rel).parent.mkdir(parents=True, exist_ok=True)
        (site / rel).write_bytes(b"\x7fELF")
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
        (info / "RECORD").write_text(f"{rel},,\n{info.name}/METADATA,,\n")
    if listing is not None:
        (site / LIST).write_bytes(listing)
    return site


GOOD = b'[{"package_name": "nvidia-cuda-runtime-cu12", "filename_regex": "libcudart.so.12*"}]'


def test_a_good_list_names_the_library(tmp_path: Path) -> None:
    site = _site(tmp_path, GOOD)
    env = read_environment([str(site)], workers=1)
    assert [os.path.basename(p) for p in preload_list(env, LIST)] == ["libcudart.so.12"]


@pytest.mark.parametrize("hostile", ["fifo", "outside", "deep", "large"])
def test_a_hostile_list_names_nothing(tmp_path: Path, hostile: str) -> None:
    site = _site(tmp_path, None)
    path = site / LIST
    if hostile == "fifo":  # a blocking open() would wait here for ever
        os.mkfifo(path)
    elif hostile == "outside":  # a link out of the site
        (tmp_path / "elsewhere.json").write_bytes(GOOD)
        path.symlink_to(tmp_path / "elsewhere.json")
    elif hostile == "deep":  # json.loads: RecursionError
        path.write_bytes(b"[" * 100_000 + b"]" * 100_000)
    else:
        path.write_bytes(GOOD[:-1] + b"," + b" " * (1 << 17) + b"]")
    env = read_environment([str(site)], workers=1)
    assert preload_list(env, LIST) == []
