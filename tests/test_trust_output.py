"""Output across the trust boundary: a SARIF artifact URI made from a hostile wheel path
stays a relative reference (never a ``javascript:`` or other scheme)."""

from __future__ import annotations

import urllib.parse

import pytest

from cuwheel.render.check import _artifact_uri


@pytest.mark.parametrize(
    "path", ["javascript:alert(1)", "javascript:alert(1).whl", "data:text/html,x.whl",
             "C:evil.whl", "a:b/c.whl"],
)
def test_sarif_uri_never_has_a_scheme_from_a_path(path: str) -> None:
    uri = _artifact_uri(path)
    assert urllib.parse.urlsplit(uri).scheme == ""
    assert urllib.parse.unquote(uri).endswith(path.split("/")[-1])


def test_plain_relative_paths_are_unchanged() -> None:
    assert _artifact_uri("dist/a b.whl") == "dist/a%20b.whl"
    assert _artifact_uri("dist/x/javascript:1.whl") == "dist/x/javascript:1.whl"
