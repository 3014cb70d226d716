"""data/codes.toml: validated when loaded, the source of CODES and of docs/checks.md's
per-code sections (tools/gen_checks_doc.py)."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import re
import sys
from dataclasses import replace
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from cuwheel._toml import tomllib
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
    assert len(CODES) == 77 and len(FAMILIES) == 13
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


# -- which check emits which code (issue 35) ------------------------------------------------

SRC = ROOT / "src" / "cuwheel"
_CODE_TEXT = re.compile(r"[A-Z]{2,4}[0-9]{3}")


def emitted_by_module() -> dict[str, set[str]]:
    """module (dotted) -> the codes it emits: a code literal as a call's first argument
    (``Finding("DC001", ...)``, ``ctx.finding(...)``, ``add(...)``), read with ast."""
    out: dict[str, set[str]] = {}
    for path in SRC.rglob("*.py"):
        name = ".".join(path.relative_to(SRC.parent).with_suffix("").parts)
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if (isinstance(node, ast.Call) and node.args
                    and isinstance(node.args[0], ast.Constant)
                    and isinstance(node.args[0].value, str)
                    and _CODE_TEXT.fullmatch(node.args[0].value)):
                out.setdefault(name, set()).add(node.args[0].value)
    return out


def _reach(module: str) -> set[str]:
    """``module`` and every cuwheel module it imports, transitively (lazy imports too)."""
    seen, todo = set(), [module]
    while todo:
        m = todo.pop()
        if m in seen:
            continue
        seen.add(m)
        path = SRC.parent / (m.replace(".", "/") + ".py")
        if not path.is_file():
            path = SRC.parent / m.replace(".", "/") / "__init__.py"
            if not path.is_file():
                continue
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(
                    "cuwheel."):
                todo.append(node.module)
    return seen


def declared() -> dict[str, tuple[str, tuple[str, ...]]]:
    """emitter -> (its module, the codes it declares)."""
    # by module name: cuwheel.doctor.diagnose is also the function of that name
    artifact, runner, diagnose, properties = (importlib.import_module(f"cuwheel.{m}") for m in (
        "checks.artifact", "checks.runner", "doctor.diagnose", "variant.properties"))

    out = {f"check {c.name}": (c.run.__module__, c.codes) for c in runner.CHECKS}
    out["check index"] = ("cuwheel.checks.index", runner.INDEX_CODES)
    out["check --artifact"] = (artifact.__name__, artifact.CODES_EMITTED)
    out["doctor"] = (diagnose.__name__, diagnose.CODES_EMITTED)
    out["variant"] = (properties.__name__, properties.CODES_EMITTED)
    return out


def test_every_code_has_an_emitter_and_every_emitted_code_is_known() -> None:
    emitted = set().union(*emitted_by_module().values())
    assert emitted == set(CODES), (sorted(emitted - set(CODES)), sorted(set(CODES) - emitted))
    decl = set().union(*(codes for _, codes in declared().values()))
    assert decl == set(CODES), (sorted(decl - set(CODES)), sorted(set(CODES) - decl))


def test_each_emitter_declares_what_it_emits() -> None:
    by_module = emitted_by_module()
    problems = []
    covered: set[tuple[str, str]] = set()
    for who, (module, codes) in declared().items():
        reach = _reach(module)
        can = set().union(*(by_module.get(m, set()) for m in reach))
        problems += [f"{who} declares {c}, which nothing it reaches emits"
                     for c in codes if c not in can]
        covered |= {(m, c) for m in reach for c in by_module.get(m, ()) if c in codes}
    # every emission site is declared by an emitter that reaches its module
    problems += [f"{m} emits {c}, declared by no emitter that reaches it"
                 for m, cs in by_module.items() for c in sorted(cs) if (m, c) not in covered]
    assert problems == []


# -- renamed codes keep working (issue 35) --------------------------------------------------

def test_the_renamed_table_is_validated() -> None:
    data = tomllib.loads((ROOT / "src" / "cuwheel" / "data" / "codes.toml").read_text("utf-8"))
    data["renamed"] = [{"old": "DEP099", "new": "DEP013", "since": "0.2"}]
    _, _, renamed = _parse(data)
    assert renamed["DEP099"].new == "DEP013"
    for bad, words in ([{"old": "DEP011", "new": "DEP013", "since": "0.2"}, "in use"],
                       [{"old": "DEP099", "new": "DEP098", "since": "0.2"}, "no code"]):
        data["renamed"] = [bad]
        with pytest.raises(CatalogError, match=words):
            _parse(data)


@pytest.fixture()
def renamed(monkeypatch: pytest.MonkeyPatch) -> str:
    """DEP099, an old name of DEP013 (the shipped table has no entry yet)."""
    from cuwheel.checks import codes

    monkeypatch.setitem(codes.RENAMED, "DEP099", codes.Renamed("DEP099", "DEP013", "0.2"))
    return "DEP099"


def test_ignore_waiver_and_explain_take_an_old_code(renamed: str,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    from cuwheel.checks.codes import find_codes
    from cuwheel.checks.policy import parse_check_table
    from cuwheel.cli import main
    from cuwheel.errors import CodeRenamed

    with pytest.warns(CodeRenamed, match="DEP099 was renamed DEP013"):
        assert [c.code for c in find_codes(renamed)] == ["DEP013"]
    problems: list[str] = []
    with pytest.warns(CodeRenamed):
        policy = parse_check_table(
            {"ignore": [renamed.lower()],
             "waivers": [{"code": renamed, "path": "a.so", "reason": "known"}]}, "t", problems)
    assert problems == []
    assert not policy.enabled("DEP013") and policy.enabled("DEP001")
    w = policy.waiver_for("DEP013", "a.so")
    assert w is not None and w.code == "DEP013"
    assert main(["explain", renamed]) == 0
    out, err = capsys.readouterr()
    assert "DEP013" in out
    assert "warning: check code DEP099 was renamed DEP013" in err
