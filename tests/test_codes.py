"""data/codes.toml: validated when loaded, the source of CODES and of docs/checks.md's
per-code sections (tools/gen_checks_doc.py)."""

from __future__ import annotations

import importlib.util
import sys
from dataclasses import replace
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from cuwheel.checks.codes import CODES, FAMILIES, Severity, _parse, known_prefix
from cuwheel.errors import CatalogError

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "checks.md"


def _gen() -> ModuleType:
    path = ROOT / "tools" / "gen_checks_doc.py"
    spec = importlib.util.spec_from_file_location("gen_checks_doc", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["gen_checks_doc"] = mod
    spec.loader.exec_module(mod)
    return mod


META = {"title": "t", "compiled": "2026-12-01", "sources": ["s"]}


def _data(*codes: dict[str, Any]) -> dict[str, Any]:
    return {"meta": META, "family": [{"prefix": "XY", "title": "xy things"}],
            "code": list(codes)}  # fmt: skip


def test_codes_as_before() -> None:
    # a few codes the checks and the policy rely on, written out here
    assert CODES["DC001"].severity is Severity.ERROR
    assert CODES["DC005"].severity is Severity.WARNING
    assert CODES["DC006"].severity is Severity.INFO
    assert CODES["IN001"].title == "nothing was inspected"
    assert len(CODES) == 76 and len(FAMILIES) == 13
    assert known_prefix("dep0") and known_prefix("RP002") and not known_prefix("XYZ")
    assert CODES["TAG010"].family == "TAG"


def test_every_code_is_explained_in_its_own_words() -> None:
    for code in CODES.values():
        assert code.explanation.strip(), code.code
        assert code.explanation == code.explanation.strip()
        assert code.family in FAMILIES
    # same-as shares the text; other codes have their own
    assert CODES["CPU002"].explanation == CODES["CPU001"].explanation
    assert CODES["MOD002"].explanation == CODES["MOD001"].explanation
    assert CODES["DC001"].explanation != CODES["DC002"].explanation


def test_a_valid_file_parses() -> None:
    families, codes, _ = _parse(_data(
        {"code": "XY001", "severity": "warning", "title": "one", "explain": "why\n"},
        {"code": "XY002", "severity": "info", "title": "two", "same-as": "XY001"},
    ))  # fmt: skip
    assert families == {"XY": "xy things"}
    assert codes["XY002"].explanation == "why"
    assert codes["XY002"].severity is Severity.INFO


def test_every_problem_of_the_file_is_listed() -> None:
    with pytest.raises(CatalogError) as exc:
        _parse(_data(
            {"code": "XY001", "severity": "fatal", "title": "a", "explain": "x"},
            {"code": "XY001", "severity": "error", "title": "b", "explain": "x"},
            {"code": "ZZ001", "severity": "error", "title": "c", "explain": "x"},
            {"code": "XY02", "severity": "error", "title": "d", "explain": "x"},
            {"code": "XY003", "severity": "error", "title": "e"},
            {"code": "XY004", "severity": "error", "title": "f", "same-as": "XY009"},
            {"code": "XY005", "severity": "error", "title": "g", "explain": "x", "colour": 1},
        ))  # fmt: skip
    text = str(exc.value)
    for expected in ("unknown severity 'fatal'", "XY001: defined twice",
                     "no [[family]] with prefix 'ZZ'", "XY02: a code is capital letters",
                     "XY003: needs exactly one of", "same-as 'XY009'", "unknown key 'colour'"):
        assert expected in text, expected


def test_a_family_without_codes_is_a_problem() -> None:
    data = _data({"code": "XY001", "severity": "error", "title": "a", "explain": "x"})
    data["family"].append({"prefix": "EMPTY", "title": "nothing"})
    with pytest.raises(CatalogError, match="EMPTY: no code of this family"):
        _parse(data)


def test_docs_sections_match_the_data() -> None:
    gen = _gen()
    doc = DOC.read_text(encoding="utf-8")
    assert gen.render(doc, CODES) == doc, "run: python tools/gen_checks_doc.py"
    assert sorted(gen.covered(doc, CODES)) == sorted(CODES)  # each code in exactly one block
    for code in CODES:
        assert f'<a id="{code.lower()}"></a>\n\n### {code} ' in doc, code


def test_docs_drift_is_caught() -> None:
    gen = _gen()
    doc = DOC.read_text(encoding="utf-8")
    changed = dict(CODES)
    changed["RP002"] = replace(CODES["RP002"], title="an absolute path")
    assert gen.render(doc, changed) != doc
    edited = doc.replace("### RP002 (error) an absolute run path entry",
                         "### RP002 (error) an absolute run path entry, edited by hand")
    assert gen.render(edited, CODES) == doc  # a hand edit is overwritten
    with pytest.raises(ValueError, match="no range"):
        gen.render("<!-- codes RP003-RP001: x -->\n<!-- end codes -->", CODES)
    with pytest.raises(ValueError, match="no <!-- end codes -->"):
        gen.render("<!-- codes RP001-RP003: x -->\n", CODES)
