"""Where cuwheel lives on the web: the one place its addresses are written.

pyproject.toml's ``[project.urls]`` says the same (tests/test_urls.py compares them); a
finding links to its code's section of docs/checks.md (each has an explicit anchor).
"""

from __future__ import annotations

__all__ = ["CHANGELOG", "DOCS", "HOMEPAGE", "ISSUES", "code_url", "config_schema_url"]

HOMEPAGE = "https://github.com/cuwheel/cuwheel"
DOCS = HOMEPAGE + "/blob/main/docs"
CHANGELOG = HOMEPAGE + "/blob/main/CHANGELOG.md"
ISSUES = HOMEPAGE + "/issues"


def config_schema_url(version: str) -> str:
    """The configuration's JSON schema as shipped in release ``version`` (its git tag)."""
    raw = HOMEPAGE.replace("https://github.com/", "https://raw.githubusercontent.com/")
    return f"{raw}/v{version}/src/cuwheel/data/config.schema.json"


def code_url(code: str) -> str:
    """The section of docs/checks.md that explains ``code`` (``DC001`` -> ``...#dc001``)."""
    return f"{DOCS}/checks.md#{code.lower()}"
