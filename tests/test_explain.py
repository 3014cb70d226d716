"""``cuwheel explain``: every code explains itself, families list, unknown codes exit 2."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from cuwheel.checks.codes import CODES, FAMILIES, find_codes
from cuwheel.cli import main
from cuwheel.errors import UnknownCode
from cuwheel.render.envelope import load_schema

DOCS = "https://github.com/cuwheel/cuwheel/blob/main/docs/checks.md#"


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["explain", *argv, "--color", "never"])
    out, err = capsys.readouterr()
    return code, out, err


def _documented() -> dict[str, tuple[str, str]]:
    """Code -> (heading line, explanation) as docs/checks.md, the published reference,
    states them: ``### DC006 (info) title`` then the paragraph up to the next anchor."""
    text = (Path(__file__).parent.parent / "docs" / "checks.md").read_text("utf-8")
    found = []
    heading = r"^### ([A-Z]+\d+) \((\w+)\) ([^\n]+)\n(.*?)(?=\n<a id=|\n<!-- end|\n## |\Z)"
    for m in re.finditer(heading, text, re.M | re.S):
        code, severity, title, body = m.groups()
        found.append((code, f"{code} ({severity}): {title}", body.strip()))
    out: dict[str, tuple[str, str]] = {}
    shared = ""
    for code, line, body in reversed(found):  # a heading without text shares the next's
        shared = body or shared
        out[code] = (line, shared)
    return out


DOCUMENTED = _documented()


def test_every_documented_code_exists() -> None:
    assert len(DOCUMENTED) >= 70
    assert sorted(DOCUMENTED) == sorted(CODES)


@pytest.mark.parametrize("code", sorted(DOCUMENTED))
def test_every_code_explains_as_documented(capsys: pytest.CaptureFixture[str], code: str) -> None:
    rc, out, err = _run(capsys, code.lower())  # case-insensitive
    assert (rc, err) == (0, "")
    lines = out.splitlines()
    heading, body = DOCUMENTED[code]
    assert lines[0] == heading
    assert lines[-1] == f"docs: {DOCS}{code.lower()}"
    assert "\n".join(lines[1:-1]).strip() == body


@pytest.mark.parametrize(
    ("code", "first"),
    [
        # written out from docs/checks.md by hand
        ("DC001", "DC001 (error): a claimed GPU or architecture gets no code from a library"),
        ("DC002", "DC002 (error): SASS for an architecture the row does not claim"),
        ("DC005", "DC005 (warning): PTX for an architecture the row does not list"),
        ("DC006", "DC006 (info): a module of arch- or family-specific code only"),
    ],
)
def test_hand_stated_headings(capsys: pytest.CaptureFixture[str], code: str, first: str) -> None:
    rc, out, _ = _run(capsys, code)
    assert rc == 0 and out.splitlines()[0] == first


def test_json_validates(capsys: pytest.CaptureFixture[str]) -> None:
    schema = load_schema("explain")
    jsonschema.Draft202012Validator.check_schema(schema)
    rc, out, _ = _run(capsys, "RP002", "--format", "json")
    assert rc == 0
    data = json.loads(out)
    jsonschema.validate(data, schema)
    assert (data["schema"], data["version"], data["config"], data["row"]) == (
        "cuwheel-explain", 2, None, None)
    (rp,) = data["codes"]
    assert rp["code"] == "RP002" and rp["family"] == "RP" and rp["severity"] == "error"
    assert rp["help_url"] == DOCS + "rp002"
    assert "$ORIGIN" in rp["explanation"]
    rc, out, _ = _run(capsys, "--list", "--json")
    assert rc == 0
    data = json.loads(out)
    jsonschema.validate(data, schema)
    assert [c["code"] for c in data["codes"]] == list(CODES)
    wrong: dict[str, Any] = {**data, "codes": [{**data["codes"][0], "extra": 1}]}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(wrong, schema)


def test_family_lists_only_its_codes(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = _run(capsys, "DC")
    assert rc == 0
    lines = out.splitlines()
    assert lines[0] == f"DC: {FAMILIES['DC']}" and lines[0].startswith("DC: ")
    listed = [line.split()[0] for line in lines[1:]]
    assert listed == ["DC001", "DC002", "DC003", "DC004", "DC005", "DC006", "DC007", "DC008",
                      "DC009"]
    assert lines[5].split() == ["DC005", "warning", "PTX", "for", "an", "architecture", "the",
                                "row", "does", "not", "list"]
    assert "docs:" not in out  # a listing, not the explanations


def test_everything_one_line_each(capsys: pytest.CaptureFixture[str]) -> None:
    for argv in ((), ("--list",)):
        rc, out, _ = _run(capsys, *argv)
        assert rc == 0
        listed = [line.split()[0] for line in out.splitlines()]
        assert sorted(listed) == sorted(DOCUMENTED) and len(listed) == len(set(listed))


def test_unknown_code_exits_2_with_a_suggestion(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = _run(capsys, "dc01")
    assert (rc, out) == (2, "")
    assert err == "cuwheel: error: no check code 'dc01'; did you mean 'DC001'?\n"
    rc, out, err = _run(capsys, "DC001", "TAG999X")  # nothing written when one is unknown
    assert (rc, out) == (2, "")
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    with pytest.raises(UnknownCode):
        find_codes("")


def test_library_lookup() -> None:
    assert [c.code for c in find_codes(" dep00 ")][:2] == ["DEP001", "DEP002"]
    assert find_codes("tag010") == [CODES["TAG010"]]
