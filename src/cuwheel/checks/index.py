"""What a package index says about a wheel's requirements (PEP 691 JSON simple API): the
files of each project it requires.  Read only when asked (``--index URL``): cuwheel stays
offline otherwise.  The check that uses these facts is pure (:func:`check_placeholders`).

Pages are read under :class:`cuwheel._remote.IndexPolicy` (http(s) only, budgets) and
parsed by the bounded JSON loader; at most MAX_PROJECTS pages are asked for one wheel, so a
METADATA listing 50,000 requirements costs MAX_PROJECTS requests, not 50,000 (the rest are
reported as not read)."""

from __future__ import annotations

import urllib.error
import urllib.parse
from collections.abc import Sequence
from dataclasses import dataclass

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name, parse_sdist_filename, parse_wheel_filename
from packaging.version import InvalidVersion, Version

from cuwheel._json import load_json
from cuwheel._remote import IndexPolicy
from cuwheel.checks.findings import Finding
from cuwheel.errors import IndexUnusable, InputError, JsonError

__all__ = ["IndexProject", "check_placeholders", "read_projects"]

# A release of nothing but small sdists holds no library: a placeholder whose setup tells
# pip users to install from elsewhere (NVIDIA's names reserved before their wheels came).
# A small *wheel* is a metapackage (cuda-toolkit is one: extras only) and is real.
PLACEHOLDER_BYTES = 16 << 10
_ACCEPT = "application/vnd.pypi.simple.v1+json"
MAX_PAGE = 32 << 20
MAX_PROJECTS = 100


@dataclass(frozen=True)
class IndexProject:
    name: str  # canonical
    files: tuple[tuple[str, int | None], ...]  # (file name, size where the index gives it)
    error: str | None = None  # why it could not be read

    def versions(self) -> dict[Version, list[int | None]]:
        """Version -> file sizes; a wheel counts as large whatever its size."""
        out: dict[Version, list[int | None]] = {}
        for fn, size in self.files:
            try:
                if fn.endswith(".whl"):
                    v = parse_wheel_filename(fn)[1]
                    size = None  # a wheel is never a placeholder
                else:
                    v = parse_sdist_filename(fn)[1]
            except (ValueError, InvalidVersion):
                continue
            out.setdefault(v, []).append(size)
        return out


def read_projects(index_url: str, requires: Sequence[str], timeout: float = 20.0,
                  *, policy: IndexPolicy | None = None) -> dict[str, IndexProject]:
    """The index's files for every project ``requires`` names (one request each, at most
    MAX_PROJECTS: the first one past them gets an error saying so, the rest nothing).

    An index that cannot be used is an unreachable service, not a finding: a URL that is
    no http(s) index, a connection that fails (refused, DNS, TLS, the time budget), an
    answer other than 200 or 404, or a page that is no PEP 691 project page raise
    InputError naming ``--index URL`` and the problem (exit 2; docs/checks.md)."""
    out: dict[str, IndexProject] = {}
    base = index_url.rstrip("/") + "/"
    try:
        policy = policy or IndexPolicy(base, max_requests=MAX_PROJECTS, max_page=MAX_PAGE,
                                       seconds=max(timeout, 1.0) * 3)
    except InputError as exc:
        raise _unusable(index_url, exc.problem) from None
    for text in requires:
        try:
            name = canonicalize_name(Requirement(text).name)
        except InvalidRequirement:
            continue
        if name in out:
            continue
        url = base + urllib.parse.quote(name) + "/"
        try:
            _, body = policy.get(url, _ACCEPT, "cuwheel")
            data = load_json(body, max_bytes=MAX_PAGE)
        except urllib.error.HTTPError as exc:
            exc.close()  # its body holds the connection's socket
            if exc.code != 404:
                raise _unusable(index_url, f"HTTP {exc.code} for {url}") from None
            # 404: the index has no such project, so no release satisfies the requirement
            out[name] = IndexProject(name, ())
            continue
        except InputError as exc:
            if policy.requests > policy.max_requests:
                out[name] = IndexProject(name, (), exc.problem)
                break  # one finding says so; the other requirements are not asked about
            raise _unusable(index_url, exc.problem) from None
        except JsonError as exc:
            raise _unusable(index_url, f"{url} is no PEP 691 JSON page ({exc})") from None
        raw = data.get("files") if isinstance(data, dict) else None
        if not isinstance(raw, list):
            raise _unusable(index_url, f"{url} is no PEP 691 project page (no 'files' list)")
        files = tuple(
            (str(f["filename"]), f.get("size") if isinstance(f.get("size"), int) else None)
            for f in raw
            if isinstance(f, dict) and isinstance(f.get("filename"), str)
        )
        out[name] = IndexProject(name, files)
    return out


def _unusable(index_url: str, problem: str) -> IndexUnusable:
    return IndexUnusable(f"--index {index_url}", f"index unusable: {problem}")


def check_placeholders(
    requires: Sequence[str], projects: dict[str, IndexProject], index_url: str
) -> list[Finding]:
    """DEP007: a requirement whose project has no release satisfying it on the index, or
    whose satisfying releases are all placeholders (no file over PLACEHOLDER_BYTES)."""
    from cuwheel.checks.codes import CODES

    out: list[Finding] = []
    for text in requires:
        try:
            req = Requirement(text)
        except InvalidRequirement:
            continue
        p = projects.get(canonicalize_name(req.name))
        if p is None:
            continue
        label = text.split(";")[0].strip()
        if p.error is not None:
            why = f"{p.name} could not be read from {index_url}: {p.error}"
        else:
            matching = {
                v: sizes for v, sizes in p.versions().items()
                if req.specifier.contains(v, prereleases=True)
            }  # fmt: skip
            if not matching:
                why = f"no release of {p.name} on {index_url} satisfies it"
            elif all(s is not None and s < PLACEHOLDER_BYTES for ss in matching.values()
                     for s in ss):
                versions = ", ".join(str(v) for v in sorted(matching)[-3:])
                why = (f"every release of {p.name} that satisfies it ({versions}) is a "
                       f"placeholder: sdists under {PLACEHOLDER_BYTES // 1024} KiB, no wheel")
            else:
                continue
        out.append(Finding("DEP007", CODES["DEP007"].severity, f"requirement {label}: {why}"))
    return out
