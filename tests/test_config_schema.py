"""data/config.schema.json against the loader: what one refuses the other refuses too."""

from __future__ import annotations

import json
import sys
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from cuwheel.checks.profiles import load_profiles
from cuwheel.config import load_config
from cuwheel.errors import ConfigError
from cuwheel.knowledge import catalog

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent


def _schema() -> dict[str, Any]:
    text = resources.files("cuwheel").joinpath("data/config.schema.json").read_text("utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


def _validator() -> jsonschema.Draft202012Validator:
    schema = _schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def _schema_ok(table: dict[str, Any]) -> bool:
    return not list(_validator().iter_errors(table))


def _loader_ok(tmp_path: Path, text: str) -> bool:
    path = tmp_path / "cuwheel.toml"
    path.write_text(text, encoding="utf-8")
    try:
        load_config(path)
    except ConfigError:
        return False
    return True


def test_default_rows_validate() -> None:
    text = resources.files("cuwheel").joinpath("data/default_rows.toml").read_text("utf-8")
    errors = [e.message for e in _validator().iter_errors(tomllib.loads(text))]
    assert errors == []


def test_example_projects_validate() -> None:
    found = sorted(ROOT.glob("examples/**/pyproject.toml"))
    assert found, "no example project"
    for path in found:
        table = tomllib.loads(path.read_text(encoding="utf-8")).get("tool", {}).get("cuwheel")
        if table is None:
            continue
        errors = [e.message for e in _validator().iter_errors(table)]
        assert errors == [], path


def test_enums_follow_the_catalog() -> None:
    """Platforms and profiles are data; the schema's lists must name the same ones."""
    row = _schema()["$defs"]["row"]["properties"]
    assert set(row["platform"]["enum"]) == {p.name for p in catalog.load_catalog().platforms}
    assert set(row["profile"]["enum"]) == set(load_profiles())
    check = _schema()["$defs"]["check"]["properties"]
    assert set(check["profile"]["enum"]) == set(load_profiles())


GOOD_ROW = '[[rows]]\nplatform = "linux-x86_64"\ncuda = "13"\nsass = ["sm_80", "sm_90"]\n'

VALID = {
    "empty file": "",
    "one row": GOOD_ROW,
    "row with every key": (
        '[[rows]]\nname = "x86-cu12"\nplatform = "linux-x86_64"\ncuda = ["12.6", "12.8"]\n'
        'sass = ["8.0", "sm_86", "90a"]\nptx = ["compute_90"]\ndependencies = "none"\n'
        'note = "n"\nprofile = "release"\nlibrary-trains = {"pkg/lib*118.so" = "cu118", '
        '"pkg/x*.so" = "infer"}\noptional = "pkg/plugins/*.so"\n'
    ),
    "cuda major spelled 13.x and a string sass": (
        '[[rows]]\nplatform = "linux-aarch64"\ncuda = "13.x"\nsass = "sm_110"\nptx = "none"\n'
    ),
    "cpu row": 'trains = ["cpu"]\n[[rows]]\ncuda = "cpu"\n',
    "upper-case train and arch": 'trains = ["CU130"]\n' + GOOD_ROW.replace("sm_80", "SM_80"),
    "trains as a string and X.Y": 'trains = "13.0"\n' + GOOD_ROW,
    "versions": 'python = ["3.12"]\ntorch-version = "2.9.1"\ncmake-version = "3.31.6"\n',
    "check table": (
        '[check]\nprofile = "audit"\nselect = ["DC", "dep0"]\nignore = "DEP002, RP"\n'
        'fail-on = "warning"\ndevice-code = "warn"\naccept-ptx-for-sass = true\n'
        'accept-missing-ptx = false\nallow-variants = false\nallow-extra = ["sm_103"]\n'
        'owned-symbols = ["cw_*"]\nno-cuda = "pkg/_C*.so"\n'
        '[[check.waivers]]\ncode = "DC002"\npath = "pkg/lib/*"\nreason = "vendored"\n'
    ),
    "meta of a rows file": '[meta]\ntitle = "t"\n',
}

BROKEN = {
    "unknown top-level key": 'trian = ["cu130"]\n',
    "a $schema key": '"$schema" = "x.json"\n',
    "unknown row key": GOOD_ROW + 'depends = "none"\n',
    "row without cuda": '[[rows]]\nplatform = "linux-x86_64"\nsass = ["sm_80"]\n',
    "CUDA row without platform": '[[rows]]\ncuda = "13"\nsass = ["sm_80"]\n',
    "CUDA row without sass": '[[rows]]\nplatform = "linux-x86_64"\ncuda = "13"\n',
    "CUDA row with empty sass": '[[rows]]\nplatform = "linux-x86_64"\ncuda = "13"\nsass = []\n',
    "train cu13": 'trains = ["cu13"]\n' + GOOD_ROW,
    "train cuda13": 'trains = ["cuda130"]\n' + GOOD_ROW,
    "arch sm_9x": GOOD_ROW.replace("sm_90", "sm_9x"),
    "arch with a leading zero": GOOD_ROW.replace("sm_90", "sm_090"),
    "cuda item not a version": GOOD_ROW.replace('cuda = "13"', 'cuda = "thirteen"'),
    "unknown platform": GOOD_ROW.replace("linux-x86_64", "solaris-sparc"),
    "ptx policy oldest": GOOD_ROW + 'ptx = "oldest"\n',
    "ptx a single arch string": GOOD_ROW + 'ptx = "compute_90"\n',
    "dependencies wrong": GOOD_ROW + 'dependencies = "all"\n',
    "sass wrong type": GOOD_ROW.replace('sass = ["sm_80", "sm_90"]', "sass = 80"),
    "note wrong type": GOOD_ROW + "note = 1\n",
    "unknown row profile": GOOD_ROW + 'profile = "strictest"\n',
    "bad row name": GOOD_ROW + 'name = "a b"\n',
    "library-trains not a table": GOOD_ROW + 'library-trains = "cu118"\n',
    "library-trains bad train": GOOD_ROW + 'library-trains = {"*" = "cuda118"}\n',
    "cpu row with sass": '[[rows]]\ncuda = "cpu"\nsass = ["sm_80"]\n',
    "cpu row that declares": '[[rows]]\ncuda = "cpu"\ndependencies = "declare"\n',
    "rows a table": '[rows]\ncuda = "13"\n',
    "torch-version wrong type": "torch-version = 2.14\n",
    "cmake-version not a version": 'cmake-version = "latest"\n',
    "python wrong type": "python = 3.12\n",
    "unknown check key": '[check]\nfail_on = "error"\n',
    "check fail-on info": '[check]\nfail-on = "info"\n',
    "check device-code loose": '[check]\ndevice-code = "loose"\n',
    "check boolean as string": '[check]\nallow-variants = "yes"\n',
    "check unknown code prefix": '[check]\nignore = ["XYZ001"]\n',
    "check allow-extra bad arch": '[check]\nallow-extra = ["hopper"]\n',
    "waiver without reason": '[[check.waivers]]\ncode = "DC002"\npath = "*"\n',
    "waiver blank reason": '[[check.waivers]]\ncode = "DC002"\npath = "*"\nreason = " "\n',
    "waiver unknown key": (
        '[[check.waivers]]\ncode = "DC002"\npath = "*"\nreason = "r"\nuntil = "2027"\n'
    ),
    "waiver bad code": '[[check.waivers]]\ncode = "ZZ"\npath = "*"\nreason = "r"\n',
}


@pytest.mark.parametrize("name", sorted(VALID))
def test_valid_variants_pass_both(name: str, tmp_path: Path) -> None:
    text = VALID[name]
    assert _loader_ok(tmp_path, text), name
    assert _schema_ok(tomllib.loads(text)), [e.message for e in _validator().iter_errors(
        tomllib.loads(text))]


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_broken_configs_fail_both(name: str, tmp_path: Path) -> None:
    text = BROKEN[name]
    assert not _loader_ok(tmp_path, text), f"the loader accepts {name!r}"
    assert not _schema_ok(tomllib.loads(text)), f"the schema accepts {name!r}"


def test_pyproject_table_refuses_meta(tmp_path: Path) -> None:
    """meta belongs to a standalone rows file only; in [tool.cuwheel] it is an error."""
    path = tmp_path / "pyproject.toml"
    path.write_text('[tool.cuwheel.meta]\ntitle = "t"\n', encoding="utf-8")
    with pytest.raises(ConfigError, match="meta"):
        load_config(path)


def test_schema_names_the_keys_the_loader_reads() -> None:
    from cuwheel.checks.policy import CHECK_KEYS, WAIVER_KEYS
    from cuwheel.config import ROW_KEYS, TOP_KEYS

    s = _schema()
    assert set(s["properties"]) == {*TOP_KEYS, "meta"}
    assert set(s["$defs"]["row"]["properties"]) == set(ROW_KEYS)
    assert set(s["$defs"]["check"]["properties"]) == set(CHECK_KEYS)
    assert set(s["$defs"]["waiver"]["properties"]) == set(WAIVER_KEYS)


def test_docs_describe_every_key() -> None:
    doc = (ROOT / "docs" / "config.md").read_text(encoding="utf-8")
    reference = doc[doc.index("## Reference"):]
    s = _schema()
    keys = [*s["properties"], *s["$defs"]["row"]["properties"],
            *s["$defs"]["check"]["properties"]]
    missing = [k for k in keys if f"| `{k}` |" not in reference]
    assert missing == []
    assert "config.schema.json" in reference and "#:schema" in doc
