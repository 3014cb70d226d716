"""Where cuwheel lives on the web: the one place its addresses are written.

pyproject.toml's ``[project.urls]`` says the same (tests/test_urls.py compares them); a
finding links to its code's section of docs/checks.md (each has an explicit anchor).
"""

from __future__ import annotations

__all__ = ["CHANGELOG", "DOCS", "HOMEPAGE", "ISSUES", "code_url"]

HOMEPAGE = "https://github.com/cuwheel/cuwheel"
DOCS = HOMEPAGE + "/blob/main/docs"
CHANGELOG = HOMEPAGE + "/blob/main/CHANGELOG.md"
ISSUES = HOMEPAGE + "/issues"


def code_url(code: str) -> str:
    """The section of docs/checks.md that explains ``code`` (``DC001`` -> ``...#dc001``)."""
    return f"{DOCS}/checks.md#{code.lower()}"
