"""Trust boundaries of doctor's environment (issue 31): a hostile site-packages is read by
the one reader of installed distributions (read/sources/installed.py) and every file of it through
the one opener (cuwheel._paths.open_untrusted), so a FIFO, a 3 GiB sparse METADATA, a
3M-row RECORD, Latin-1 bytes, a link loop or a RECORD row that leads out is a problem of
that distribution, never a hang, a MemoryError, a traceback or a library outside the site
blamed on it.  The ld.so cache and LD_LIBRARY_PATH are bounded by operations, not time.

Each hostile read runs in a child process under RLIMIT_AS = 1 GiB and RLIMIT_CPU; the child
reports its CPU time.  Against the code before issue 31 (importlib.metadata) each of them
fails: a FIFO blocks (the child is killed at its timeout), the sparse METADATA and the big
RECORD run out of memory, Latin-1 and the loop are tracebacks, the outside row is read.
"""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from cuwheel.doctor import SearchContext, loader, parse_ld_cache, read_environment

SRC = Path(os.environ.get("CW_TEST_SRC") or Path(__file__).resolve().parent.parent / "src")
BIN = Path(__file__).parent / "data" / "bin"
LIMIT_AS = 1 << 30
CPU_SECONDS = 20  # RLIMIT_CPU of the child: a read past it is killed, and fails

_CHILD = r"""
import json, resource, sys, time
limit, cpu = int(sys.argv[1]), int(sys.argv[2])
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))
from cuwheel.doctor import read_environment
t0 = time.process_time()
env = read_environment(sys.argv[3:], workers=1)
print(json.dumps({
    "seconds": time.process_time() - t0,
    "torch": env.torch_version,
    "dists": [{"name": d.name, "files": list(d.files),
               "binaries": [b.path for b in d.binaries],
               "problems": [p.path + ": " + p.message for p in d.problems]}
              for d in env.distributions],
}))
"""


def doctor_isolated(*sites: Path, timeout: int = 120) -> dict:
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    # the timeout only ends a child that would wait on a FIFO for ever; nothing is timed
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, str(LIMIT_AS), str(CPU_SECONDS), *map(str, sites)],
        capture_output=True, text=True, timeout=timeout, env=env, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr
    out: dict = json.loads(proc.stdout)
    for d in out["dists"]:
        assert all("\n" not in p for p in d["problems"])
    return out


def install(site: Path, name: str, rows: list[str], files: dict[str, bytes] | None = None,
            metadata: bytes | None = None) -> Path:  # fmt: skip
    info = site / f"{name}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_bytes(
        metadata or f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n".encode())
    for rel, data in (files or {}).items():
        (site / rel).parent.mkdir(parents=True, exist_ok=True)
        (site / rel).write_bytes(data)
    (info / "RECORD").write_text(
        "\n".join([*rows, *(f"{r},," for r in files or {})]) + "\n")
    return info


def _dist(out: dict, name: str) -> dict:
    return next(d for d in out["dists"] if d["name"] == name)


@pytest.mark.parametrize("which", ["METADATA", "RECORD", "torch"])
def test_a_fifo_in_the_site_is_refused_never_waited_on(tmp_path: Path, which: str) -> None:
    site = tmp_path / "site"
    info = install(site, "cwfifo", [], {"pkg/k.so": (BIN / "sm80.so").read_bytes()})
    if which == "torch":
        install(site, "torch", [])
        (site / "torch").mkdir()
        os.mkfifo(site / "torch" / "version.py")
    else:
        os.unlink(info / which)
        os.mkfifo(info / which)
    out = doctor_isolated(site, timeout=60)
    if which != "torch":
        probs = [p for d in out["dists"] for p in d["problems"]]
        assert any(which in p and "not a regular file" in p for p in probs), probs
    else:
        assert out["torch"] is None


def test_a_3_gib_sparse_metadata_is_a_problem_not_memory(tmp_path: Path) -> None:
    site = tmp_path / "site"
    info = install(site, "cwsparse", [], {"pkg/k.so": (BIN / "sm80.so").read_bytes()})
    with open(info / "METADATA", "ab") as f:
        f.truncate(3 << 30)
    out = doctor_isolated(site)
    probs = [p for d in out["dists"] for p in d["problems"]]
    assert any("METADATA larger than 16777216 bytes" in p for p in probs), probs
    assert out["seconds"] < 5


def test_a_3m_row_record_is_cut_at_its_bound(tmp_path: Path) -> None:
    site = tmp_path / "site"
    install(site, "cwrows", ["a"] * 3_000_000,  # 6 MB, under MAX_DIST_FILE
            {"pkg/k.so": (BIN / "sm80.so").read_bytes()})
    out = doctor_isolated(site)
    d = _dist(out, "cwrows")
    assert any("more than 1000000 rows" in p for p in d["problems"]), d["problems"]


def test_latin1_metadata_and_a_link_loop_are_read_without_a_traceback(tmp_path: Path) -> None:
    site = tmp_path / "site"
    install(site, "cwlatin", [], {"pkg/k.so": (BIN / "sm80.so").read_bytes()},
            metadata=b"Metadata-Version: 2.1\nName: cwlatin\nVersion: 1.0\nSummary: caf\xe9\n")
    loop = install(site, "cwloop", [])
    os.unlink(loop / "METADATA")
    os.symlink("METADATA", loop / "METADATA")  # a link to itself
    out = doctor_isolated(site)
    assert _dist(out, "cwlatin")["binaries"]
    assert any("METADATA" in p for p in _dist(out, "cwloop")["problems"])


def test_record_rows_that_lead_out_of_the_site_are_not_the_distribution(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "lib.so").write_bytes((BIN / "sm80.so").read_bytes())
    site = tmp_path / "site"
    site.mkdir()
    os.symlink(outside, site / "door")  # a folder of the site that leads out
    install(site, "cwout", ["../outside/lib.so,,", f"{outside}/lib.so,,", "door/lib.so,,"],
            {"pkg/k.so": (BIN / "sm80.so").read_bytes()})
    out = doctor_isolated(site)
    d = _dist(out, "cwout")
    assert [os.path.basename(f) for f in d["files"]] == ["k.so"], d["files"]
    assert all("outside" not in b for b in d["binaries"]) and d["binaries"]


def test_a_dist_info_link_out_of_the_site_is_not_read(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    install(elsewhere, "cwlinked", [])
    site = tmp_path / "site"
    site.mkdir()
    os.symlink(elsewhere / "cwlinked-1.0.dist-info", site / "cwlinked-1.0.dist-info")
    env = read_environment([str(site)], workers=1)
    assert env.distribution("cwlinked") is None


# -- LD_LIBRARY_PATH and the ld.so cache: operations, not seconds --------------------------


def test_131000_empty_ld_library_path_entries_are_searched_once() -> None:
    ctx = SearchContext.from_environ({"LD_LIBRARY_PATH": ":" * 131_000}, None)
    assert ctx.ld_library_path == ("",)


@pytest.mark.parametrize("n,kept", [(4096, 4096), (4097, 4096)])
def test_ld_library_path_directories_at_and_past_the_bound(n: int, kept: int) -> None:
    value = ":".join(f"/d{i}" for i in range(n))
    assert len(SearchContext.from_environ({"LD_LIBRARY_PATH": value}, None).ld_library_path) \
        == kept == min(n, loader.MAX_SEARCH_DIRS)  # the bound: 4096


def _ld_cache(n: int, string: bytes) -> bytes:
    """A new-format cache (glibc dl-cache.h) of ``n`` entries whose key and value are the
    one string after the table."""
    at = 48 + 24 * n
    head = b"glibc-ld.so.cache1.1" + struct.pack("<IIB3xI12x", n, len(string) + 1, 0, 0)
    entry = struct.pack("<iIIIQ", 0x0303, at, at, 0, 0)
    return head + entry * n + string + b"\0"


def test_an_ld_cache_string_shared_by_every_entry_is_decoded_once() -> None:
    cache = parse_ld_cache(_ld_cache(1000, b"/usr/lib/libshared.so"))
    first = cache.entries[0].soname
    assert all(e.soname is first and e.path is first for e in cache.entries)


_LDCHILD = r"""
import resource, sys, time
resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
resource.setrlimit(resource.RLIMIT_CPU, (20, 20))
from cuwheel.doctor import read_ld_cache
t0 = time.process_time()
c = read_ld_cache(sys.argv[1])
print(len(c.entries), time.process_time() - t0)
"""


def test_two_million_entries_of_one_long_string_fit_in_memory(tmp_path: Path) -> None:
    path = tmp_path / "ld.so.cache"
    path.write_bytes(_ld_cache(2_000_000, b"/" + b"x" * 4000))  # 48 MB, under MAX_CACHE
    proc = subprocess.run([sys.executable, "-c", _LDCHILD, str(path)], capture_output=True,
                          text=True, timeout=120, check=False,
                          env={**os.environ, "PYTHONPATH": str(SRC)})  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split()[0] == "2000000"


@pytest.mark.parametrize("length,ok", [(4096, True), (4097, False)])
def test_ld_cache_string_length_at_and_past_the_bound(length: int, ok: bool) -> None:
    data = _ld_cache(1, b"/" + b"x" * (length - 1))
    if ok:
        assert len(parse_ld_cache(data).entries[0].path) == length
    else:
        from cuwheel.errors import InputError

        with pytest.raises(InputError, match="no NUL within 4096 bytes"):
            parse_ld_cache(data)


def test_an_ld_cache_fifo_is_refused(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "cache")
    code = ("import sys; from cuwheel.doctor import read_ld_cache; from cuwheel.errors import "
            "InputError\ntry: read_ld_cache(sys.argv[1])\nexcept InputError as e: print(e)")
    proc = subprocess.run([sys.executable, "-c", code, str(tmp_path / "cache")],
                          capture_output=True, text=True, timeout=60, check=False,
                          env={**os.environ, "PYTHONPATH": str(SRC)})  # fmt: skip
    assert "not a regular file" in proc.stdout, proc.stderr


# -- check --env, the second round's remainder ---------------------------------------------


def test_check_env_with_a_3_gib_metadata_is_not_a_traceback(tmp_path: Path) -> None:
    site = tmp_path / "site"
    info = install(site, "cwenvbig", [], {"pkg/k.so": (BIN / "sm80.so").read_bytes()})
    with open(info / "METADATA", "ab") as f:
        f.truncate(3 << 30)
    code = ("import resource, sys; resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30));"
            "sys.path.insert(0, sys.argv.pop()); from cuwheel.cli import main;"
            "sys.exit(main(['check', '--env', '--format', 'json']))")
    proc = subprocess.run([sys.executable, "-c", code, str(site)], capture_output=True,
                          text=True, timeout=300, check=False,
                          env={**os.environ, "PYTHONPATH": str(SRC)})  # fmt: skip
    assert "Traceback" not in proc.stderr and "MemoryError" not in proc.stderr, proc.stderr[-2000:]
    assert proc.returncode in (0, 1), proc.stderr[-2000:]


def test_a_record_field_past_csvs_limit_is_a_problem(tmp_path: Path) -> None:
    site = tmp_path / "site"
    install(site, "cwfield", ["x" * 200_000 + ",,"], {"pkg/k.so": (BIN / "sm80.so").read_bytes()})
    env = read_environment([str(site)], workers=1)
    d = env.distribution("cwfield")
    assert d is not None and any("RECORD: not CSV" in p.message for p in d.problems)


def test_a_record_row_with_a_nul_names_no_file(tmp_path: Path) -> None:
    site = tmp_path / "site"
    install(site, "cwnul", ["pkg/\0.so,,"], {"pkg/k.so": (BIN / "sm80.so").read_bytes()})
    d = read_environment([str(site)], workers=1).distribution("cwnul")
    assert d is not None and [os.path.basename(f) for f in d.files] == ["k.so"]
