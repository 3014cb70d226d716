"""Trust boundaries of `cuwheel toolkit` (docs/toolkit.md): each hostile input is built here,
small, and each refusal is a one-line error that leaves nothing outside the prefix, never
replaces what is not cuwheel's, and holds bytes and memory to the declared sizes."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tarfile
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import pytest

from cuwheel._json import load_json
from cuwheel._paths import resolve_inside
from cuwheel.errors import JsonError, ToolkitError
from cuwheel.toolkit import extract
from cuwheel.toolkit.cache import Cache
from cuwheel.toolkit.extract import Tree, extract_redist
from cuwheel.toolkit.lock import OWNER_NAME, not_owned, read_lock
from cuwheel.toolkit.manifest import parse_manifest
from redistserver import Served, manifest_with, serve, tar_file, tar_link, tar_xz
from test_toolkit_redist import (
    HEADER,
    LIB,
    REL,
    TOP,
    assert_refused,
    good_members,
    publish,
    run,
    toolkit,
)


@pytest.fixture
def served() -> Iterator[Served]:
    s = Served()
    with serve(s):
        yield s


def _outside(tmp: Path) -> set[str]:
    """What exists in the test's directory besides the prefix and the cache."""
    return {p.name for p in tmp.iterdir()} - {"cuda", "cache", "archive.tar.xz"}


# ------------------------------------------------------------------ escaping the prefix


@pytest.mark.parametrize(
    "members",
    [
        # a chain: a -> .. is the tree's root, so a/.. would be above it
        [tar_link(f"{TOP}/x/a", ".."), tar_link(f"{TOP}/x/b", "a/.."),
         tar_file(f"{TOP}/x/b/evil", b"x")],
        # the second link's real directory is the root: its .. leaves
        [tar_link(f"{TOP}/d/a", ".."), tar_link(f"{TOP}/d/a/b", ".."),
         tar_file(f"{TOP}/d/a/b/evil", b"x")],
        # a link written before the link it goes through
        [tar_link(f"{TOP}/p/b", "c/../../.."), tar_link(f"{TOP}/p/c", "..")],
    ],
    ids=["dotdot-after-link", "link-through-link", "order"],
)
def test_link_chains_are_refused(served: Served, tmp_path: Path, members: list) -> None:  # type: ignore[type-arg]
    publish(served, tar_xz([*good_members(), *members]))
    assert_refused(toolkit(served, tmp_path), tmp_path, TOP, "link")
    assert _outside(tmp_path) == set()


def test_nothing_is_created_outside_before_a_member_is_refused(tmp_path: Path) -> None:
    # a tree that already holds a link out (as a damaged or older tree might): a member
    # under it is refused before any of its directories is made
    root = tmp_path / "tree"
    (root / "lib").mkdir(parents=True)
    (tmp_path / "outside").mkdir()
    os.symlink("../../outside", root / "lib" / "out")
    archive = tmp_path / "a.tar.xz"
    archive.write_bytes(tar_xz([tar_file(f"{TOP}/lib/out/new/deeper/f", b"x")]))
    with pytest.raises(ToolkitError, match="leaves the prefix"):
        extract_redist(archive, "tar.xz", TOP, Tree(root), "a.tar.xz", "cudart")
    assert list((tmp_path / "outside").iterdir()) == []


def test_resolve_inside_follows_the_whole_chain(tmp_path: Path) -> None:
    root = tmp_path / "r"
    (root / "x").mkdir(parents=True)
    os.symlink("..", root / "x" / "a")  # the root itself
    os.symlink("a/..", root / "x" / "b")  # above it
    os.symlink("loop2", root / "loop1")
    os.symlink("loop1", root / "loop2")
    real = os.path.realpath(root)
    assert resolve_inside(real, str(root / "x" / "a" / "new")) == os.path.join(real, "new")
    assert resolve_inside(real, str(root / "x" / "b" / "new")) is None
    assert resolve_inside(real, str(root / "loop1" / "f")) is None
    assert not (root / "new").exists()


def test_percent_encoded_manifest_path_is_never_decoded(tmp_path: Path) -> None:
    archive = tar_xz(good_members())
    mirror = tmp_path / "mirror"
    (mirror / "cuda_cudart").mkdir(parents=True)
    secret = tmp_path / "secret.tar.xz"  # outside the mirror, with the claimed bytes
    secret.write_bytes(archive)
    rel = "cuda_cudart/%2e%2e/%2e%2e/secret.tar.xz"
    (mirror / "redistrib_13.0.2.json").write_bytes(
        manifest_with({("cuda_cudart", "linux-x86_64"): (rel, archive)})
    )
    # the exact release the mirror's manifest is for (cu130 alone means the newest 13.0.x)
    code, _, err = run("toolkit", "--train", "13.0.2", "--platform", "linux-x86_64",
                       "--components", "cudart", "--prefix", str(tmp_path / "cuda"),
                       "--base-url", str(mirror), "--cache", str(tmp_path / "c"))  # fmt: skip
    assert code == 2 and "never decoded" in err and len(err.splitlines()) == 1
    assert not (tmp_path / "cuda").exists()
    for bad in ("a/%2E%2E/b.tar.xz", "a/b.tar.xz?x=1.tar.xz", "a/b#.tar.xz", "a b.tar.xz"):
        doc = {"release_label": "1", "c": {"version": "1", "linux-x86_64": {
            "relative_path": bad, "sha256": "0" * 64, "size": "1"}}}  # fmt: skip
        with pytest.raises(ToolkitError, match="never decoded"):
            parse_manifest(json.dumps(doc).encode(), "m.json")


# ------------------------------------------------------------------ trusting the cache


def _blob(tmp: Path) -> Path:
    (blob,) = list((tmp / "cache").rglob("blobs/sha256/*/*"))
    return blob


def test_a_poisoned_cache_blob_is_evicted_and_fetched_again(
    served: Served, tmp_path: Path
) -> None:
    archive = tar_xz(good_members())
    publish(served, archive)
    assert toolkit(served, tmp_path)[0] == 0
    # another archive of the same size in the blob's place (a poisoned shared CI cache)
    evil = tar_xz([tar_file(f"{TOP}/lib/libcudart.so.13.0.96", b"E" * len(LIB), 0o755),
                   tar_file(f"{TOP}/include/cuda_runtime.h", HEADER)])
    evil = (evil + bytes(len(archive)))[: len(archive)]
    blob = _blob(tmp_path)
    blob.write_bytes(evil)
    before = len(served.archive_requests())
    code, _, err = toolkit(served, tmp_path, prefix="again")
    assert code == 0, err
    assert (tmp_path / "again" / "lib" / "libcudart.so.13.0.96").read_bytes() == LIB
    assert len(served.archive_requests()) == before + 1  # downloaded again
    assert hashlib.sha256(blob.read_bytes()).hexdigest() == hashlib.sha256(archive).hexdigest()


def test_a_corrupt_cache_entry_does_not_fail_later_runs(served: Served, tmp_path: Path) -> None:
    publish(served, tar_xz(good_members()))
    assert toolkit(served, tmp_path)[0] == 0
    blob = _blob(tmp_path)
    blob.write_bytes(blob.read_bytes()[:10])  # truncated by a full disk
    for prefix in ("p1", "p2"):
        code, _, err = toolkit(served, tmp_path, prefix=prefix)
        assert code == 0, err
    # a link or a FIFO in the blob's place is not a blob either
    blob.unlink()
    os.mkfifo(blob)
    assert Cache(tmp_path / "cache" / "toolkit").verified_blob(blob.name) is None
    assert not blob.exists()


# ------------------------------------------------------------------ taking a file as proof


def test_an_empty_lockfile_is_no_proof_of_ownership(served: Served, tmp_path: Path) -> None:
    publish(served, tar_xz(good_members()))
    mine = tmp_path / "cuda"
    mine.mkdir()
    (mine / "cuwheel-toolkit.lock").write_text("")
    (mine / "thesis.tex").write_text("years of work")
    code, _, err = toolkit(served, tmp_path)
    assert code == 2 and "not a cuwheel toolkit" in err
    assert (mine / "thesis.tex").read_text() == "years of work"


def test_a_copied_lock_and_marker_are_no_proof_either(served: Served, tmp_path: Path) -> None:
    publish(served, tar_xz(good_members()))
    assert toolkit(served, tmp_path, prefix="real")[0] == 0
    mine = tmp_path / "cuda"
    mine.mkdir()
    for name in ("cuwheel-toolkit.lock", OWNER_NAME):
        shutil.copy(tmp_path / "real" / name, mine / name)
    (mine / "notes.txt").write_text("mine")
    assert not_owned(mine) is not None
    code, _, err = toolkit(served, tmp_path, "--components", "cudart,nvrtc")
    assert code == 2 and "not a cuwheel toolkit" in err
    assert (mine / "notes.txt").read_text() == "mine"


def test_a_toolkit_the_user_changed_is_not_replaced(served: Served, tmp_path: Path) -> None:
    publish(served, tar_xz(good_members()))
    assert toolkit(served, tmp_path)[0] == 0
    prefix = tmp_path / "cuda"
    assert not_owned(prefix) is None
    (prefix / "include" / "my_patch.h").write_text("// mine")
    assert "added, removed or changed" in (not_owned(prefix) or "")
    for cached in (tmp_path / "cache").rglob("manifests/*.json"):
        cached.unlink()
    publish(served, tar_xz([*good_members(), tar_file(f"{TOP}/NEW", b"new")]))
    code, _, err = toolkit(served, tmp_path)
    assert code == 2 and "not a cuwheel toolkit" in err
    assert (prefix / "include" / "my_patch.h").read_text() == "// mine"


# ------------------------------------------------------------------ declared sizes


def test_a_body_longer_than_declared_is_cut(served: Served, tmp_path: Path) -> None:
    archive = tar_xz(good_members())
    # the server appends 8 MiB to the archive the manifest describes
    publish(served, archive + bytes(8 << 20), claimed=archive)
    code, _, err = toolkit(served, tmp_path)
    # (the server thread may complain on stderr that the client hung up early)
    last = err.strip().splitlines()[-1]
    assert code == 2 and last.startswith("cuwheel: error: ") and "Traceback" not in last
    assert f"longer than the {len(archive)} bytes declared" in last
    assert not (tmp_path / "cuda").exists()
    parts = list((tmp_path / "cache").rglob("partial/*.part"))
    assert all(p.stat().st_size == 0 for p in parts)


def test_a_decompression_bomb_is_cut_at_the_ceiling(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(extract, "FLOOR", 1 << 20)
    monkeypatch.setattr(extract, "RATIO", 4)
    archive = tmp_path / "archive.tar.xz"
    archive.write_bytes(tar_xz([tar_file(f"{TOP}/zeros", bytes(16 << 20))]))
    assert archive.stat().st_size < 64 << 10
    root = tmp_path / "tree"
    root.mkdir()
    with pytest.raises(ToolkitError, match="decompression bomb"):
        extract_redist(archive, "tar.xz", TOP, Tree(root), "a", "cudart")
    written = sum(p.stat().st_size for p in root.rglob("*") if p.is_file())
    assert written <= (1 << 20) + 4 * archive.stat().st_size


def test_member_limit_is_documented() -> None:
    assert extract.MAX_MEMBERS == 200_000  # docs/toolkit.md: "at 200,000 members"


@pytest.mark.parametrize(("members", "refused"), [(50, False), (51, True)])
def test_too_many_members_are_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, members: int, refused: bool
) -> None:
    # the limit lowered to 50: at it the archive installs, one more and nothing does
    monkeypatch.setattr(extract, "MAX_MEMBERS", 50)
    archive = tmp_path / "archive.tar.xz"
    archive.write_bytes(tar_xz([tar_file(f"{TOP}/f{i}", b"") for i in range(members)]))
    root = tmp_path / "tree"
    root.mkdir()
    if refused:
        with pytest.raises(ToolkitError, match="more than 50 members"):
            extract_redist(archive, "tar.xz", TOP, Tree(root), "a", "cudart")
        assert len(list(root.rglob("f*"))) <= 50
    else:
        extract_redist(archive, "tar.xz", TOP, Tree(root), "a", "cudart")
        assert len(list(root.rglob("f*"))) == 50


def test_hard_links_and_duplicates_are_not_held_in_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(extract, "FLOOR", 256 << 20)  # 6 x 16 MiB from a small archive
    big = os.urandom(1 << 16) * 256  # 16 MiB, compressible to little
    members = [tar_file(f"{TOP}/lib/big", big)]
    members += [tar_link(f"{TOP}/lib/h{i}", f"{TOP}/lib/big", tarfile.LNKTYPE) for i in range(4)]
    members += [tar_file(f"{TOP}/lib/big", big)]  # the same member again, same bytes
    archive = tmp_path / "archive.tar.xz"
    archive.write_bytes(tar_xz(members))
    root = tmp_path / "tree"
    root.mkdir()
    tracemalloc.start()
    try:
        extract_redist(archive, "tar.xz", TOP, Tree(root), "a", "cudart")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert (root / "lib" / "h3").read_bytes() == big
    assert peak < 8 << 20, peak  # pieces of 1 MiB, never the 16 MiB file


def test_a_duplicate_with_other_bytes_is_refused(tmp_path: Path) -> None:
    archive = tmp_path / "archive.tar.xz"
    archive.write_bytes(tar_xz([tar_file(f"{TOP}/f", b"one"), tar_file(f"{TOP}/f", b"two")]))
    root = tmp_path / "tree"
    root.mkdir()
    with pytest.raises(ToolkitError, match="other content"):
        extract_redist(archive, "tar.xz", TOP, Tree(root), "a", "cudart")


def test_a_fifo_in_a_mirror_is_refused_not_waited_on(tmp_path: Path) -> None:
    archive = tar_xz(good_members())
    mirror = tmp_path / "mirror"
    (mirror / "cuda_cudart" / "linux-x86_64").mkdir(parents=True)
    os.mkfifo(mirror / REL)  # nobody ever writes to it: a read would block forever
    (mirror / "redistrib_13.0.2.json").write_bytes(
        manifest_with({("cuda_cudart", "linux-x86_64"): (REL, archive)})
    )
    args = ["toolkit", "--train", "13.0.2", "--platform", "linux-x86_64", "--components",
            "cudart", "--prefix", str(tmp_path / "cuda"), "--base-url", str(mirror),
            "--cache", str(tmp_path / "c")]  # fmt: skip
    code, _, err = run(*args)
    assert code == 2 and "not a regular file" in err and len(err.splitlines()) == 1
    # the manifest itself a FIFO
    os.unlink(mirror / "redistrib_13.0.2.json")
    os.mkfifo(mirror / "redistrib_13.0.2.json")
    code, _, err = run(*args)
    assert code == 2 and "not a regular file" in err


# ------------------------------------------------------------------ JSON documents


def _deep(n: int) -> str:
    return "[" * n + "]" * n


@pytest.mark.parametrize(
    "text,why",
    [
        (_deep(100_000), "nested more than"),
        ('{"cuwheel_toolkit_lock": 1' + ', "x": ' + "9" * 100_000 + "}", "digits"),
        ('{"cuwheel_toolkit_lock": NaN}', "not a JSON number"),
        ('{"cuwheel_toolkit_lock": 1e99999}', "out of range"),
        ("\udcff", "not UTF-8"),
    ],
    ids=["deep", "huge-int", "nan", "huge-float", "undecodable"],
)
def test_hostile_lockfiles_are_one_line_errors(tmp_path: Path, text: str, why: str) -> None:
    lock = tmp_path / "x.lock"
    lock.write_bytes(text.encode("utf-8", "surrogateescape"))
    with pytest.raises(ToolkitError, match=why) as info:
        read_lock(lock)
    assert "\n" not in str(info.value) and str(lock) in str(info.value)
    code, _, err = run("toolkit", "--locked", "--lock", str(lock), "--prefix",
                       str(tmp_path / "p"), "--cache", str(tmp_path / "c"))  # fmt: skip
    assert code == 2 and len(err.splitlines()) == 1 and "Traceback" not in err


def test_hostile_manifests_are_one_line_errors() -> None:
    for text, why in [(_deep(5000), "nested"), ('{"a": ' + "1" * 5000 + "}", "digits")]:
        with pytest.raises(ToolkitError, match=why):
            parse_manifest(text.encode(), "m.json")


def test_the_json_loader_bounds() -> None:
    assert load_json(_deep(64)) == load_json(_deep(64))
    with pytest.raises(JsonError):
        load_json(_deep(65))
    with pytest.raises(JsonError, match="larger than"):
        load_json(b"[" + b"1," * 100 + b"1]", max_bytes=100)
    assert load_json("\ufeff[1]") == [1]
    assert load_json('[1.5, -2, "x"]') == [1.5, -2, "x"]


def test_a_lock_url_to_a_fifo_or_device_is_bounded(tmp_path: Path) -> None:
    # a lockfile naming /dev/zero: the copy stops one byte after the declared size
    doc = {"cuwheel_toolkit_lock": 1, "train": "cu130", "cuda": "13.0.2",
           "platform": "linux-x86_64", "os": "linux", "source": "redist",
           "components": [{"component": "cudart", "package": "cuda_cudart",
                           "version": "13.0.96", "url": "file:///dev/zero",
                           "sha256": "0" * 64, "size": 1000, "kind": "tar.xz",
                           "top": "x"}]}  # fmt: skip
    lock = tmp_path / "l.lock"
    lock.write_text(json.dumps(doc))
    code, _, err = run("toolkit", "--locked", "--lock", str(lock), "--prefix",
                       str(tmp_path / "p"), "--cache", str(tmp_path / "c"))  # fmt: skip
    assert code == 2 and "not a regular file" in err




def test_a_cache_name_that_is_no_sha256_never_leaves_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cuwheel.toolkit import wheels

    victim = tmp_path / "victim"
    victim.write_text("precious")
    cache = Cache(tmp_path / "cache" / "toolkit")
    bad = "../../../../victim"
    with pytest.raises(ToolkitError, match="not a sha256"):
        cache.verified_blob(bad)
    with pytest.raises(ToolkitError, match="not a sha256"):
        cache.partial(bad)
    # a poisoned resolved/ entry naming that "sha256": taken as missing, pip asked again
    entry = cache.keyed("resolved", wheels._key("nvidia-x", "1.0", ["manylinux_2_28_x86_64"]))
    entry.parent.mkdir(parents=True)
    entry.write_text(json.dumps({"url": "https://x/y.whl", "sha256": bad}))
    asked: list[object] = []

    def pip(missing: object, *a: object) -> list[wheels.ResolvedWheel]:
        asked.append(missing)
        return [wheels.ResolvedWheel("nvidia-x", "1.0", "https://x/y.whl", "a" * 64)]

    monkeypatch.setattr(wheels, "_pip_resolve", pip)
    (got,) = wheels.resolve_wheels([("nvidia-x", "1.0")], ["manylinux_2_28_x86_64"], cache)
    assert asked and got.sha256 == "a" * 64
    assert victim.read_text() == "precious"


def test_a_prefix_restored_from_a_tar_cache_is_still_ours(served: Served, tmp_path: Path) -> None:
    publish(served, tar_xz(good_members()))
    assert toolkit(served, tmp_path)[0] == 0
    prefix = tmp_path / "cuda"
    saved = tmp_path / "ci-cache.tar"
    with tarfile.open(saved, "w") as tar:  # what actions/cache does: tar keeps whole seconds
        tar.add(prefix, arcname="cuda")
    shutil.rmtree(prefix)
    with tarfile.open(saved) as tar:
        if hasattr(tarfile, "tar_filter"):  # 3.10.12+: say which filter
            tar.extractall(tmp_path, filter="tar")
        else:
            tar.extractall(tmp_path)
    assert not_owned(prefix) is None
    code, _, err = toolkit(served, tmp_path)
    assert code == 0 and "up to date" in err


@pytest.mark.parametrize("field,value", [
    ("component", "[bold red]nvcc\x1b[2J"), ("version", "1.0\n2.0"), ("top", "../.."),
    ("train", "cu130\u202e"), ("url", "https://x/\x1b[31m.tar.xz"),
])
def test_lock_fields_cannot_carry_markup_controls_or_paths(field: str, value: str) -> None:
    from cuwheel.toolkit.lock import parse_lock

    part = {"component": "cudart", "package": "cuda_cudart", "version": "13.0.96",
            "url": "https://x/a.tar.xz", "sha256": "0" * 64, "size": 1, "kind": "tar.xz",
            "top": "a"}  # fmt: skip
    doc = {"cuwheel_toolkit_lock": 1, "train": "cu130", "cuda": "13.0.2",
           "platform": "linux-x86_64", "os": "linux", "source": "redist",
           "components": [part]}  # fmt: skip
    parse_lock(doc, "ok.lock")
    (doc if field == "train" else part)[field] = value
    with pytest.raises(ToolkitError, match=field) as info:
        parse_lock(doc, "l.lock")
    assert "\n" not in str(info.value) and "\x1b" not in str(info.value)


@pytest.mark.parametrize(
    "train", ["cu\u0661\u0663\u0660", "cu" + "1" * 5000, "1\u0663.0", "13.0." + "9" * 50]
)
def test_a_train_is_ascii_and_bounded(train: str) -> None:
    from cuwheel.errors import ToolkitError
    from cuwheel.toolkit import parse_train

    with pytest.raises(ToolkitError):
        parse_train(train)
