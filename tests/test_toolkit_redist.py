"""`cuwheel toolkit --source redist` end to end against a local HTTP server, on tiny
hand-made archives in NVIDIA's redist layout: what installs, what the lockfile records, the
warm cache, --locked, and every refusal (wrong sha256, truncated or interrupted download,
traversal, escaping links, device files, unknown trains): a one-line error, exit 2, and no
prefix."""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import tarfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from cuwheel.cli import main
from cuwheel.knowledge.toolkits import load_toolkits
from redistserver import (
    Served,
    manifest_with,
    serve,
    tar_device,
    tar_file,
    tar_link,
    tar_xz,
    zip_bytes,
)

TOP = "cuda_cudart-linux-x86_64-13.0.96-archive"
REL = f"cuda_cudart/linux-x86_64/{TOP}.tar.xz"
WIN_TOP = "cuda_cudart-windows-x86_64-13.0.96-archive"
WIN_REL = f"cuda_cudart/windows-x86_64/{WIN_TOP}.zip"
LIB = b"\x7fELF not really a runtime, but bytes the test can recognise"
HEADER = b"/* cuda_runtime.h of the test archive */\n"


def good_members() -> list[tuple[tarfile.TarInfo, bytes | None]]:
    return [
        tar_file(f"{TOP}/include/cuda_runtime.h", HEADER),
        tar_file(f"{TOP}/lib/libcudart.so.13.0.96", LIB, 0o755),
        tar_link(f"{TOP}/lib/libcudart.so.13", "libcudart.so.13.0.96"),
        tar_file(f"{TOP}/LICENSE", b"license text\n"),
    ]


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def served() -> Iterator[Served]:
    s = Served()
    with serve(s):
        yield s


def publish(served: Served, archive: bytes, *, rel: str = REL, platform: str = "linux-x86_64",
            claimed: bytes | None = None) -> None:  # fmt: skip
    """Serve ``archive`` as cudart 13.0.96 of the 13.0.2 manifest (which claims the
    sha256 and size of ``claimed``, by default of the archive itself)."""
    served.files[f"/redist/{rel}"] = archive
    served.files["/redist/redistrib_13.0.2.json"] = manifest_with(
        {("cuda_cudart", platform): (rel, claimed if claimed is not None else archive)}
    )


def toolkit(served: Served, tmp: Path, *extra: str, prefix: str = "cuda") -> tuple[int, str, str]:
    return run("toolkit", "--train", "13.0.2", "--platform", "linux-x86_64",
               "--components", "cudart", "--prefix", str(tmp / prefix),
               "--base-url", f"{served.url}/redist/", "--cache", str(tmp / "cache"),
               "--no-progress", *extra)  # fmt: skip


def assert_refused(result: tuple[int, str, str], tmp: Path, *words: str) -> str:
    code, out, err = result
    assert code == 2, (out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("cuwheel: error: ")
    assert "Traceback" not in err
    for w in words:
        assert w in lines[0], lines[0]
    assert out == ""
    assert not (tmp / "cuda").exists()
    leftovers = [p for p in tmp.iterdir() if p.name.startswith(".cuda.cuwheel-")]
    assert leftovers == []
    return lines[0]


# ---------------------------------------------------------------------- installs


def test_installs_verifies_and_locks(served: Served, tmp_path: Path) -> None:
    archive = tar_xz(good_members())
    publish(served, archive)
    code, out, err = toolkit(served, tmp_path)
    assert code == 0, err
    prefix = tmp_path / "cuda"
    assert (prefix / "include" / "cuda_runtime.h").read_bytes() == HEADER
    lib = prefix / "lib" / "libcudart.so.13.0.96"
    assert lib.read_bytes() == LIB and os.access(lib, os.X_OK)
    assert os.readlink(prefix / "lib" / "libcudart.so.13") == "libcudart.so.13.0.96"
    # the normal tree: lib64 and the unversioned link a linker's -lcudart needs
    assert (prefix / "lib64" / "libcudart.so.13.0.96").read_bytes() == LIB
    assert (prefix / "lib" / "libcudart.so").resolve() == lib.resolve()
    lock = json.loads((prefix / "cuwheel-toolkit.lock").read_text())
    assert (lock["train"], lock["cuda"], lock["platform"], lock["source"]) == (
        "cu130", "13.0.2", "linux-x86_64", "redist")  # fmt: skip
    (entry,) = lock["components"]
    assert entry["component"] == "cudart" and entry["version"] == "13.0.96"
    assert entry["sha256"] == hashlib.sha256(archive).hexdigest()
    assert entry["size"] == len(archive)
    assert entry["url"] == f"{served.url}/redist/{REL}"
    env = dict(line.split("=", 1) for line in out.splitlines())
    assert env["CUDA_HOME"] == env["CUDA_PATH"] == str(prefix)
    assert env["LD_LIBRARY_PATH"].split(":")[0] == str(prefix / "lib64")
    assert env["PATH"].split(":")[0] == str(prefix / "bin")
    assert "CUDACXX" not in env  # no nvcc in a cudart-only toolkit


def test_second_run_is_up_to_date_and_warm_cache_needs_no_network(
    served: Served, tmp_path: Path
) -> None:
    publish(served, tar_xz(good_members()))
    assert toolkit(served, tmp_path)[0] == 0
    first = list(served.requests)
    assert [r[0] for r in served.archive_requests()] == [f"/redist/{REL}"]
    code, _, err = toolkit(served, tmp_path)
    assert code == 0 and "up to date" in err
    # another prefix: the manifest and the archive both come from the cache
    code, _, err = toolkit(served, tmp_path, prefix="other")
    assert code == 0, err
    assert served.requests == first
    assert (tmp_path / "other" / "include" / "cuda_runtime.h").read_bytes() == HEADER


def test_locked_reproduces_the_lock_without_resolving(served: Served, tmp_path: Path) -> None:
    publish(served, tar_xz(good_members()))
    lockfile = tmp_path / "toolkit.lock"
    assert toolkit(served, tmp_path, "--lock", str(lockfile))[0] == 0
    # the manifest is gone (and the cache too): --locked needs only the lockfile's URLs
    del served.files["/redist/redistrib_13.0.2.json"]
    code, _, err = run("toolkit", "--locked", "--lock", str(lockfile), "--prefix",
                       str(tmp_path / "again"), "--cache", str(tmp_path / "cache2"),
                       "--no-progress")  # fmt: skip
    assert code == 0, err
    a, b = tmp_path / "cuda", tmp_path / "again"
    files = sorted(str(p.relative_to(a)) for p in a.rglob("*"))
    assert files == sorted(str(p.relative_to(b)) for p in b.rglob("*"))
    assert (a / "cuwheel-toolkit.lock").read_text() == (b / "cuwheel-toolkit.lock").read_text()
    assert [r for r in served.requests if r[0].endswith(".json")][-1:] == [
        ("/redist/redistrib_13.0.2.json", None)
    ]  # the one manifest request was the first run's


def test_locked_refuses_a_contradicting_flag(served: Served, tmp_path: Path) -> None:
    publish(served, tar_xz(good_members()))
    lockfile = tmp_path / "toolkit.lock"
    assert toolkit(served, tmp_path, "--lock", str(lockfile))[0] == 0
    code, _, err = run("toolkit", "--locked", "--lock", str(lockfile), "--train", "cu129",
                       "--prefix", str(tmp_path / "x"))  # fmt: skip
    assert code == 2 and "contradicts the lockfile's cu130" in err


def test_windows_zip_installs_on_any_host(served: Served, tmp_path: Path) -> None:
    archive = zip_bytes([
        (f"{WIN_TOP}/bin/cudart64_13.dll", b"MZ a dll"),
        (f"{WIN_TOP}/lib/x64/cudart.lib", b"!<arch>\n"),
        (f"{WIN_TOP}/include/cuda_runtime.h", HEADER),
    ])  # fmt: skip
    publish(served, archive, rel=WIN_REL, platform="windows-x86_64")
    code, out, err = run("toolkit", "--train", "13.0.2", "--platform", "win-amd64", "--components",
                         "cudart", "--prefix", str(tmp_path / "win"), "--base-url",
                         f"{served.url}/redist", "--cache", str(tmp_path / "c"),
                         "--format", "sh")  # fmt: skip
    assert code == 0, err
    assert (tmp_path / "win" / "bin" / "cudart64_13.dll").read_bytes() == b"MZ a dll"
    assert (tmp_path / "win" / "lib" / "x64" / "cudart.lib").is_file()
    assert not (tmp_path / "win" / "lib64").exists()  # no Linux layout for a Windows tree
    # a cross toolkit is linked against, not run: no PATH / LD_LIBRARY_PATH from Linux
    keys = [line.split("=", 1)[0] for line in out.splitlines()]
    assert keys == ["export CUDA_HOME", "export CUDA_PATH"]


def test_local_directory_mirror(tmp_path: Path) -> None:
    archive = tar_xz(good_members())
    mirror = tmp_path / "mirror"
    (mirror / "cuda_cudart" / "linux-x86_64").mkdir(parents=True)
    (mirror / REL).write_bytes(archive)
    (mirror / "redistrib_13.0.2.json").write_bytes(
        manifest_with({("cuda_cudart", "linux-x86_64"): (REL, archive)})
    )
    for base in (str(mirror), mirror.as_uri()):
        prefix = tmp_path / f"p{len(base)}"
        code, _, err = run("toolkit", "--train", "13.0.2", "--platform", "linux-x86_64",
                           "--components", "cudart", "--prefix", str(prefix), "--base-url",
                           base, "--cache", str(tmp_path / "c"))  # fmt: skip
        assert code == 0, err
        assert (prefix / "include" / "cuda_runtime.h").read_bytes() == HEADER


def test_json_format(served: Served, tmp_path: Path) -> None:
    publish(served, tar_xz(good_members()))
    code, out, _ = toolkit(served, tmp_path, "--format", "json")
    doc = json.loads(out)
    assert code == 0 and doc["changed"] is True and doc["prefix"] == str(tmp_path / "cuda")
    assert doc["env"]["CUDA_HOME"] == str(tmp_path / "cuda")
    assert doc["components"][0]["component"] == "cudart"
    import jsonschema

    from cuwheel.render.envelope import load_schema

    assert (doc["schema"], doc["version"]) == ("cuwheel-toolkit", 1)
    jsonschema.Draft202012Validator(load_schema("toolkit")).validate(doc)
    # -o FILE and -q as on every command: the same document in the file, nothing on stdout
    code, out, _ = toolkit(served, tmp_path, "--format", "json", "-o", str(tmp_path / "t.json"))
    again = json.loads((tmp_path / "t.json").read_text())
    assert (code, out) == (0, "") and again["prefix"] == doc["prefix"]
    assert again["changed"] is False  # already assembled: up to date
    code, out, _ = toolkit(served, tmp_path, "-q")
    assert (code, out) == (0, "")


# ---------------------------------------------------------------------- refusals


def test_wrong_sha256(served: Served, tmp_path: Path) -> None:
    archive = tar_xz(good_members())
    tampered = archive[:-8] + bytes(8)
    publish(served, tampered, claimed=archive)  # same size, other bytes
    line = assert_refused(toolkit(served, tmp_path), tmp_path, REL.rsplit("/", 1)[-1], "sha256",
                          hashlib.sha256(archive).hexdigest())  # fmt: skip
    assert hashlib.sha256(tampered).hexdigest() in line
    assert not list((tmp_path / "cache").rglob("blobs/sha256/*/*"))


def test_truncated_archive(served: Served, tmp_path: Path) -> None:
    archive = tar_xz(good_members())
    publish(served, archive[: len(archive) // 2], claimed=archive)
    assert_refused(toolkit(served, tmp_path), tmp_path, "truncated", str(len(archive)))


def test_interrupted_download_then_resume(served: Served, tmp_path: Path) -> None:
    archive = tar_xz(good_members())
    publish(served, archive)
    served.cut_after[f"/redist/{REL}"] = 100
    assert_refused(toolkit(served, tmp_path), tmp_path, "interrupted after 100", "resume")
    parts = list((tmp_path / "cache").rglob("partial/*.part"))
    assert [p.stat().st_size for p in parts] == [100]
    del served.cut_after[f"/redist/{REL}"]
    code, _, err = toolkit(served, tmp_path)
    assert code == 0, err
    assert served.archive_requests()[-1] == (f"/redist/{REL}", "bytes=100-")
    assert (tmp_path / "cuda" / "lib" / "libcudart.so.13.0.96").read_bytes() == LIB


@pytest.mark.parametrize(
    ("member", "words"),
    [
        (tar_file(f"{TOP}/../../evil", b"x"), ["leaves the prefix", "evil"]),
        (tar_file("/tmp/evil", b"x"), ["absolute path", "/tmp/evil"]),
        (tar_file("elsewhere/evil", b"x"), ["outside the archive's directory"]),
        (tar_link(f"{TOP}/lib/escape", "../../../etc/passwd"), ["points outside the prefix"]),
        (tar_link(f"{TOP}/lib/abs", "/etc/passwd"), ["points outside the prefix"]),
        (tar_link(f"{TOP}/lib/hard", "/etc/passwd", tarfile.LNKTYPE), ["hard link"]),
        (tar_device(f"{TOP}/dev/null"), ["device file"]),
    ],
    ids=["dotdot", "absolute", "outside-top", "symlink-escape", "symlink-absolute",
         "hardlink-outside", "device"],
)
def test_hostile_members(served: Served, tmp_path: Path, member, words: list[str]) -> None:  # type: ignore[no-untyped-def]
    publish(served, tar_xz([*good_members(), member]))
    assert_refused(toolkit(served, tmp_path), tmp_path, TOP, *words)


def test_write_through_an_inner_link_that_escapes_is_refused(
    served: Served, tmp_path: Path
) -> None:
    # a link that stays inside, then a file written through a chain that leaves
    members = [
        tar_link(f"{TOP}/a", "."),
        tar_link(f"{TOP}/a/b", ".."),
        tar_file(f"{TOP}/a/b/c/evil", b"x"),
    ]
    publish(served, tar_xz(members))
    assert_refused(toolkit(served, tmp_path), tmp_path, TOP)
    assert not (tmp_path / "c").exists()


def test_hostile_zip_member(served: Served, tmp_path: Path) -> None:
    archive = zip_bytes([(f"{WIN_TOP}/bin/ok.dll", b"MZ"), (f"{WIN_TOP}/../../evil.dll", b"MZ")])
    publish(served, archive, rel=WIN_REL, platform="windows-x86_64")
    code, _, err = run("toolkit", "--train", "13.0.2", "--platform", "win-amd64", "--components",
                       "cudart", "--prefix", str(tmp_path / "cuda"), "--base-url",
                       f"{served.url}/redist/", "--cache", str(tmp_path / "c"))  # fmt: skip
    # the zip reader refuses the name before extraction would see it leave the prefix
    assert_refused((code, "", err), tmp_path, "'..' in member path")


def test_unknown_train_fails_before_any_download(served: Served, tmp_path: Path) -> None:
    publish(served, tar_xz(good_members()))
    code, out, err = run("toolkit", "--train", "cu127", "--prefix", str(tmp_path / "cuda"),
                         "--base-url", f"{served.url}/redist/", "--cache",
                         str(tmp_path / "c"))  # fmt: skip
    line = assert_refused((code, out, err), tmp_path, "cu127")
    for t in load_toolkits().trains:
        assert t.train in line
    assert served.requests == []


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--train", "cu13"], ["not a CUDA train"]),
        (["--train", "cu129", "--components", "crt"], ["no component crt", "part of nvcc"]),
        (["--train", "cu130", "--components", "nvccc"], ["unknown toolkit component", "nvcc"]),
        (["--train", "cu130", "--platform", "win-arm64"], ["unknown toolkit platform"]),
        (["--train", "cu129", "--platform", "linux-aarch64", "--source", "wheels"],
         ["no wheels of cu129 for linux-aarch64"]),
    ],
)  # fmt: skip
def test_bad_requests_fail_before_any_download(
    served: Served, tmp_path: Path, args: list[str], words: list[str]
) -> None:
    code, out, err = run("toolkit", *args, "--prefix", str(tmp_path / "cuda"), "--base-url",
                         f"{served.url}/redist/", "--cache", str(tmp_path / "c"))  # fmt: skip
    assert_refused((code, out, err), tmp_path, *words)
    assert served.requests == []


def test_missing_manifest_names_its_url(served: Served, tmp_path: Path) -> None:
    line = assert_refused(toolkit(served, tmp_path), tmp_path, "HTTP 404")
    assert f"{served.url}/redist/redistrib_13.0.2.json" in line


def test_manifest_of_another_release(served: Served, tmp_path: Path) -> None:
    served.files["/redist/redistrib_13.0.2.json"] = (
        Path(__file__).parent / "data" / "redist" / "redistrib_12.9.1.json"
    ).read_bytes()
    assert_refused(toolkit(served, tmp_path), tmp_path, "release_label is '12.9.1'")


def test_a_directory_that_is_no_toolkit_is_left_alone(served: Served, tmp_path: Path) -> None:
    publish(served, tar_xz(good_members()))
    (tmp_path / "cuda").mkdir()
    (tmp_path / "cuda" / "mine.txt").write_text("keep")
    code, _, err = toolkit(served, tmp_path)
    assert code == 2 and "not a cuwheel toolkit" in err
    assert [p.name for p in (tmp_path / "cuda").iterdir()] == ["mine.txt"]


def test_a_failed_update_keeps_the_installed_toolkit(served: Served, tmp_path: Path) -> None:
    publish(served, tar_xz(good_members()))
    assert toolkit(served, tmp_path)[0] == 0
    before = (tmp_path / "cuda" / "cuwheel-toolkit.lock").read_text()
    publish(served, tar_xz([*good_members(), tar_device(f"{TOP}/dev/zero")]))
    # a new manifest at the same URL: drop the cached one so it is read again
    for cached in (tmp_path / "cache").rglob("manifests/*.json"):
        cached.unlink()
    code, _, err = toolkit(served, tmp_path)
    assert code == 2 and "device file" in err
    assert (tmp_path / "cuda" / "cuwheel-toolkit.lock").read_text() == before
    assert (tmp_path / "cuda" / "include" / "cuda_runtime.h").read_bytes() == HEADER
    assert [p for p in tmp_path.iterdir() if p.name.startswith(".cuda.")] == []


# ---------------------------------------------------------------------- releases


def test_a_train_resolves_to_its_newest_release_and_the_lock_records_it(
    served: Served, tmp_path: Path
) -> None:
    from cuwheel.knowledge._load import read_data_file
    from cuwheel.knowledge.toolkits import build_toolkits
    from cuwheel.toolkit import Cache, install, resolve

    data = read_data_file("toolkits.toml")
    for t in data["train"]:
        if t["train"] == "cu130":
            t["releases"] = ["13.0.0", "13.0.1", "13.0.2"]
    catalog = build_toolkits(data)
    publish(served, tar_xz(good_members()))
    lock = resolve("cu130", "linux-x86_64", ["cudart"], base_url=f"{served.url}/redist/",
                   cache=Cache.at(tmp_path / "c"), catalog=catalog)  # fmt: skip
    assert lock.cuda == "13.0.2"
    assert [r[0] for r in served.requests] == ["/redist/redistrib_13.0.2.json"]
    # the version is the manifest's, not the catalog's
    assert [(p.package, p.version) for p in lock.parts] == [("cuda_cudart", "13.0.96")]
    install(tmp_path / "cuda", lock, cache=Cache.at(tmp_path / "c"))
    assert json.loads((tmp_path / "cuda" / "cuwheel-toolkit.lock").read_text())["cuda"] == "13.0.2"


def test_a_named_release_is_asked_for_and_checked(served: Served, tmp_path: Path) -> None:
    publish(served, tar_xz(good_members()))
    # the shipped catalog's newest 13.0 is 13.0.3, whose manifest this mirror lacks
    code, _, err = run("toolkit", "--train", "cu130", "--components", "cudart", "--platform",
                       "linux-x86_64", "--prefix", str(tmp_path / "cuda"), "--base-url",
                       f"{served.url}/redist/", "--cache", str(tmp_path / "c"))  # fmt: skip
    assert code == 2 and "redistrib_13.0.3.json: HTTP 404" in err
    # a release served under another release's name is refused
    served.files["/redist/redistrib_13.0.1.json"] = served.files["/redist/redistrib_13.0.2.json"]
    code, _, err = run("toolkit", "--train", "13.0.1", "--components", "cudart", "--platform",
                       "linux-x86_64", "--prefix", str(tmp_path / "cuda"), "--base-url",
                       f"{served.url}/redist/", "--cache", str(tmp_path / "c"))  # fmt: skip
    assert code == 2 and "release_label is '13.0.2', not 13.0.1" in err


# ---------------------------------------------------------------------- verification


def installed(served: Served, tmp_path: Path) -> Path:
    publish(served, tar_xz(good_members()))
    assert toolkit(served, tmp_path)[0] == 0
    return tmp_path / "cuda"


def test_an_edited_file_is_repaired_before_up_to_date(served: Served, tmp_path: Path) -> None:
    prefix = installed(served, tmp_path)
    header = prefix / "include" / "cuda_runtime.h"
    header.write_bytes(b"/* someone's edit */\n")
    (prefix / "lib" / "libcudart.so.13.0.96").unlink()
    # a file someone added: the prefix is no longer cuwheel's alone, and nothing is replaced
    # (the trust rule: docs/toolkit.md#safety-the-trust-boundaries)
    (prefix / "include" / "extra.h").write_text("not from an archive")
    code, _, err = toolkit(served, tmp_path)
    assert code == 2 and "extra.h" in err and "nothing is replaced" in err, err
    assert (prefix / "include" / "extra.h").exists()
    (prefix / "include" / "extra.h").unlink()
    code, _, err = toolkit(served, tmp_path)
    assert code == 0, err
    assert "damaged" in err and "include/cuda_runtime.h" in err
    assert header.read_bytes() == HEADER
    assert (prefix / "lib" / "libcudart.so.13.0.96").read_bytes() == LIB
    # from the cache: the archive was downloaded once
    assert len(served.archive_requests()) == 1
    code, _, err = toolkit(served, tmp_path)
    assert code == 0 and "up to date" in err


def test_verify_rehashes_what_size_and_mtime_do_not_show(served: Served, tmp_path: Path) -> None:
    prefix = installed(served, tmp_path)
    lib = prefix / "lib" / "libcudart.so.13.0.96"
    st = lib.stat()
    lib.write_bytes(LIB[:-1] + b"!")  # same size, then the old mtime back
    os.utime(lib, ns=(st.st_atime_ns, st.st_mtime_ns))
    code, _, err = toolkit(served, tmp_path)
    assert code == 0 and "up to date (files checked)" in err
    code, _, err = run("toolkit", "--prefix", str(prefix), "--verify", "--no-repair",
                       "--cache", str(tmp_path / "cache"))  # fmt: skip
    assert code == 2 and "1 changed (lib/libcudart.so.13.0.96)" in err and "not repaired" in err
    assert lib.read_bytes() != LIB
    code, _, err = run("toolkit", "--prefix", str(prefix), "--verify",
                       "--cache", str(tmp_path / "cache"))  # fmt: skip
    assert code == 0 and "assembled again" in err, err
    assert lib.read_bytes() == LIB
    code, _, err = run("toolkit", "--prefix", str(prefix), "--verify",
                       "--cache", str(tmp_path / "cache"))  # fmt: skip
    assert code == 0 and "up to date (every file re-hashed)" in err


def test_a_changed_link_and_a_lost_record_are_damage(served: Served, tmp_path: Path) -> None:
    prefix = installed(served, tmp_path)
    link = prefix / "lib" / "libcudart.so.13"
    link.unlink()
    link.symlink_to("/etc/passwd")
    code, _, err = toolkit(served, tmp_path, "--no-repair")
    assert code == 2 and "lib/libcudart.so.13" in err
    (prefix / "cuwheel-toolkit.files").unlink()
    # without its record nothing shows which files cuwheel installed: not replaced
    code, _, err = toolkit(served, tmp_path)
    assert code == 2 and "no record of the assembled files" in err
    assert os.readlink(link) == "/etc/passwd"
