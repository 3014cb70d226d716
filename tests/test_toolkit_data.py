"""The toolkit catalog (data/toolkits.toml) against NVIDIA's real redistrib manifests
(tests/data/redist/, see its README for where each copy comes from)."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest

from cuwheel.errors import CatalogError, ToolkitError
from cuwheel.knowledge._load import read_data_file
from cuwheel.knowledge.toolkits import build_toolkits, load_toolkits
from cuwheel.toolkit.manifest import parse_manifest

REDIST = Path(__file__).parent / "data" / "redist"
MANIFESTS = sorted(REDIST.glob("redistrib_*.json"))


def manifest(label: str):  # type: ignore[no-untyped-def]
    path = REDIST / f"redistrib_{label}.json"
    return parse_manifest(path.read_bytes(), str(path))


def test_there_are_real_manifests() -> None:
    assert len(MANIFESTS) >= 2


@pytest.mark.parametrize("path", MANIFESTS, ids=lambda p: p.name)
def test_every_real_manifest_parses(path: Path) -> None:
    m = parse_manifest(path.read_bytes(), str(path))
    label = path.name.removeprefix("redistrib_").removesuffix(".json")
    assert m.release_label == label
    raw = json.loads(path.read_bytes())
    components = {k for k, v in raw.items() if isinstance(v, dict)}
    assert {c.key for c in m.components} == components
    for c in m.components:
        assert c.archives, c.key
        for key, archive in c.archives:
            # NVIDIA's layout: <component>/<platform dir>/<file>; the archive's top directory
            # is its file name without the suffix.
            assert archive.relative_path.split("/")[0] == c.key
            assert archive.file_name.startswith(archive.top_dir)
            assert archive.size == int(raw[c.key][key]["size"])
            assert archive.sha256 == raw[c.key][key]["sha256"]


def test_known_facts_of_13_0_2() -> None:
    m = manifest("13.0.2")
    nvcc = m.component("cuda_nvcc")
    assert nvcc is not None and nvcc.version == "13.0.88"
    a = nvcc.archive("linux-x86_64")
    assert a is not None
    assert a.size == 26657716
    assert a.sha256 == "48e35be3cfbf4b4fbc16828eaec8a7048ee789403049dc409f7b643d6259cf7a"
    assert a.top_dir == "cuda_nvcc-linux-x86_64-13.0.88-archive"
    win = m.component("cuda_cudart")
    assert win is not None
    w = win.archive("windows-x86_64")
    assert w is not None and w.kind == "zip" and w.size == 2873447
    # CUDA 13 splits the CRT headers and NVVM out of nvcc; CUDA 12.9 has them inside.
    assert m.component("cuda_crt") is not None and m.component("libnvvm") is not None
    m12 = manifest("12.9.1")
    assert m12.component("cuda_crt") is None and m12.component("libnvvm") is None


def train_of(label: str):  # type: ignore[no-untyped-def]
    major, minor, _ = label.split(".")
    return load_toolkits().train(f"cu{major}{minor}")


@pytest.mark.parametrize("path", MANIFESTS, ids=lambda p: p.name)
def test_every_committed_release_is_listed_under_its_train(path: Path) -> None:
    label = path.name.removeprefix("redistrib_").removesuffix(".json")
    assert label in train_of(label).releases


def test_releases_and_newest() -> None:
    cat = load_toolkits()
    # the seed's trains and the 12.x trains projects ship
    for name in ("cu126", "cu128", "cu129", "cu130", "cu132", "cu134"):
        assert cat.train(name).releases
    assert cat.train("cu132").latest == "13.2.2"
    assert cat.train("cu134").latest == "13.4.3"  # sorted as versions
    assert cat.train("cu129").major == 12 and cat.train("cu135").major == 13


@pytest.mark.parametrize("path", MANIFESTS, ids=lambda p: p.name)
def test_build_and_runtime_sets_have_archives_for_every_platform(path: Path) -> None:
    label = path.name.removeprefix("redistrib_").removesuffix(".json")
    train = train_of(label)
    cat = load_toolkits()
    m = manifest(label)
    for set_name in ("build", "runtime"):
        for comp in cat.set_members(set_name):
            if train.major not in comp.majors:
                assert m.component(comp.redist) is None, comp.redist
                continue
            entry = m.component(comp.redist)
            assert entry is not None, comp.redist
            for platform, key in train.redist_platforms:
                assert entry.archive(key) is not None, (comp.redist, platform, key)


@pytest.mark.parametrize("label", ["13.0.2", "12.9.1"])
def test_the_meta_package_pins_the_manifests_versions(label: str) -> None:
    """Two NVIDIA documents of one release agree through the catalog's component names:
    cuda-toolkit's Requires-Dist (what --source wheels installs) and redistrib_X.json (what
    --source redist installs)."""
    from email.parser import Parser

    from cuwheel.toolkit import meta_pins

    meta = Parser().parsestr((REDIST / f"cuda_toolkit-{label}.METADATA").read_text())
    assert meta["Version"] == label
    m = manifest(label)
    cat = load_toolkits()
    major = int(label.split(".")[0])
    for platform in ("linux-x86_64", "linux-sbsa", "win-amd64"):
        pins = meta_pins(meta.get_all("Requires-Dist"), platform)
        checked = 0
        for comp in cat.components:
            dist = comp.wheel(major)
            entry = m.component(comp.redist)
            if dist is None or entry is None or dist not in pins:
                continue
            assert pins[dist] == f"=={entry.version}.*", (platform, dist)
            checked += 1
        assert checked >= 10, platform
        for comp in cat.set_members("build"):
            if major in comp.majors:
                assert comp.wheel(major) in pins, (platform, comp.name)


def test_sources_name_every_committed_manifest() -> None:
    sources = " ".join(load_toolkits().meta.sources)  # type: ignore[union-attr]
    for path in MANIFESTS:
        assert path.name in sources


def test_unknown_train_names_the_known_ones() -> None:
    with pytest.raises(LookupError) as exc:
        load_toolkits().train("cu127")
    assert "cu127" in str(exc.value)
    for t in load_toolkits().trains:
        assert t.train in str(exc.value)


def test_bad_catalog_data_reports_every_problem() -> None:
    data = copy.deepcopy(read_data_file("toolkits.toml"))
    data["component"][0]["sets"] = ["bulid"]
    data["train"][0]["releases"] = ["12.0.1", "12.0.0"]
    data["train"][1]["releases"] = ["13.1.0"]
    data["train"].append({"train": "cu990", "releases": ["99.0.0"]})  # no archives anywhere
    data["train"].append({"train": "13.0", "releases": ["13.0.0"]})  # not spelled cuXYZ
    with pytest.raises(CatalogError) as exc:
        build_toolkits(data)
    text = str(exc.value)
    assert "bulid" in text and "no platform of platforms.toml has CUDA 99 archives" in text
    assert "train 13.0: train must be spelled cuXYZ" in text
    assert "oldest first" in text and "'13.1.0' is no release of this train" in text


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"relative_path": "../../etc/passwd.tar.xz"}, "leaves the manifest's tree"),
        ({"relative_path": "/abs/x.tar.xz"}, "bad relative_path"),
        ({"sha256": "abc"}, "64 hex digits"),
        ({"size": "12 MB"}, "number of bytes"),
        ({"relative_path": "cuda_x/linux-x86_64/x.rpm"}, "neither .tar.xz nor .zip"),
    ],
)
def test_bad_manifest_entries_are_one_line_errors(change: dict[str, str], problem: str) -> None:
    raw = json.loads((REDIST / "redistrib_13.0.2.json").read_bytes())
    raw["cuda_cudart"]["linux-x86_64"].update(change)
    with pytest.raises(ToolkitError) as exc:
        parse_manifest(json.dumps(raw).encode(), "https://mirror.example/redistrib_13.0.2.json")
    message = str(exc.value)
    assert "\n" not in message
    assert message.startswith("https://mirror.example/redistrib_13.0.2.json: cuda_cudart")
    assert problem in message


def test_not_json_is_an_error_naming_the_source() -> None:
    with pytest.raises(ToolkitError, match=r"^x/redistrib\.json: not a JSON manifest"):
        parse_manifest(b"<html>404</html>", "x/redistrib.json")
    assert re.search(r"no components", _err(b"{}"))


def _err(data: bytes) -> str:
    with pytest.raises(ToolkitError) as exc:
        parse_manifest(data, "m.json")
    return str(exc.value)
