"""cuwheel._urls and pyproject.toml's [project.urls] name the same addresses."""

from __future__ import annotations

import sys
from pathlib import Path

from cuwheel import _urls

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

PYPROJECT = Path(__file__).resolve().parent.parent / "pyproject.toml"


def test_project_urls_agree_with_the_constants() -> None:
    urls = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]["urls"]
    assert urls == {
        "Homepage": _urls.HOMEPAGE,
        "Documentation": _urls.DOCS,
        "Source": _urls.HOMEPAGE,
        "Changelog": _urls.CHANGELOG,
        "Issues": _urls.ISSUES,
    }
    assert _urls.HOMEPAGE == "https://github.com/cuwheel/cuwheel"


def test_code_url_names_the_anchor() -> None:
    assert _urls.code_url("DC001") == (
        "https://github.com/cuwheel/cuwheel/blob/main/docs/checks.md#dc001")
    assert _urls.code_url("TAG010").endswith("/docs/checks.md#tag010")
