"""What a scan reads: wheels from directories, files, lists of files or URLs, and
simple package indexes (PEP 503 HTML or PEP 691 JSON, the index URL given), filtered by
project name, version range and platform tag.

A remote index is read under :class:`cuwheel._remote.IndexPolicy` (http(s) only, the
index's own host or allowed ones, request / size / time / link budgets) and its JSON
through the bounded loader: what a page can and cannot make a scan do is in docs/scan.md.
"""

from __future__ import annotations

import fnmatch
import html
import os
import re
import urllib.parse
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from cuwheel._json import load_json
from cuwheel._paths import open_untrusted
from cuwheel._remote import IndexPolicy
from cuwheel.errors import InputError, JsonError

__all__ = ["Filters", "WheelRef", "expand", "from_index", "is_url", "read_list"]

USER_AGENT = "cuwheel-scan"
_JSON = "application/vnd.pypi.simple.v1+json"
_ACCEPT = f"{_JSON}, application/vnd.pypi.simple.v1+html;q=0.2, text/html;q=0.01"


def is_url(text: str) -> bool:
    return text.startswith(("http://", "https://", "file://"))


@dataclass(frozen=True)
class WheelRef:
    """One wheel to scan: ``input`` is what the record names (the path or URL as found);
    ``sha256`` and ``size`` where the index (or the file system) says them."""

    input: str
    filename: str
    sha256: str | None = None
    size: int | None = None

    @property
    def remote(self) -> bool:
        return is_url(self.input)


@dataclass(frozen=True)
class Filters:
    """Which wheels to keep, by their file names (PEP 427): project names or globs
    (compared in canonical form), a version specifier set (PEP 440: ``>=2.4,<3``; with
    ``prereleases`` pre-releases too) and platform tag globs (``manylinux*_x86_64``,
    ``win_amd64``)."""

    projects: tuple[str, ...] = ()
    versions: str | None = None
    platforms: tuple[str, ...] = ()
    prereleases: bool = False
    _spec: Any = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.versions:
            from packaging.specifiers import InvalidSpecifier, SpecifierSet

            try:
                spec = SpecifierSet(self.versions)
            except InvalidSpecifier:
                raise InputError(self.versions, "not a version specifier set "
                                 "(PEP 440: '>=2.4,<3')") from None
            object.__setattr__(self, "_spec", spec)

    @property
    def active(self) -> bool:
        return bool(self.projects or self.versions or self.platforms)

    def accepts(self, filename: str) -> bool:
        if not self.active:
            return True
        from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename

        try:
            name, version, _build, tags = parse_wheel_filename(filename)
        except InvalidWheelFilename:
            return False
        if self.projects and not any(
            fnmatch.fnmatchcase(name, canonicalize_name(p)) if _globby(p)
            else name == canonicalize_name(p)
            for p in self.projects
        ):
            return False
        if self._spec is not None and not self._spec.contains(
            version, prereleases=self.prereleases
        ):
            return False
        plats = {t.platform for t in tags}
        return not self.platforms or any(
            fnmatch.fnmatchcase(p, g) for p in plats for g in self.platforms
        )


def _globby(text: str) -> bool:
    return any(c in text for c in "*?[")


def read_list(path: str) -> list[str]:
    """Paths or URLs, one a line; blank lines and ``#`` comments are skipped; ``-`` is
    standard input."""
    import sys

    try:
        if path == "-":
            text = sys.stdin.read()
        else:
            with open_untrusted(path) as f:
                text = f.read().decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(path, f"cannot read the list: {exc}") from None
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            out.append(line)
    return out


def expand(inputs: Iterable[str], filters: Filters = Filters()) -> tuple[list[WheelRef],
                                                                       list[str]]:
    """Wheel references for paths and URLs: a directory gives every ``*.whl`` under it
    (walked without following directory links, in name order).  Returns (refs, problems:
    inputs that do not exist); the same input found twice is scanned once."""
    refs: list[WheelRef] = []
    problems: list[str] = []
    seen: set[str] = set()

    def add(ref: WheelRef) -> None:
        if ref.input not in seen and filters.accepts(ref.filename):
            seen.add(ref.input)
            refs.append(ref)

    for item in inputs:
        if item.startswith("file://"):  # the user's own file, read as a path
            import urllib.request

            item = urllib.request.url2pathname(urllib.parse.urlsplit(item).path)
        if is_url(item):
            add(WheelRef(item, _url_filename(item)))
        elif os.path.isdir(item):
            for path in _walk_wheels(item):
                add(WheelRef(path, os.path.basename(path)))
        elif os.path.exists(item):
            add(WheelRef(item, os.path.basename(item)))
        else:
            problems.append(f"{item}: no such file or directory")
    return refs, problems


def _walk_wheels(root: str) -> list[str]:
    from cuwheel.read.sources.source import walk  # read/'s one directory walk

    return walk(root, [], lambda e: e.name.endswith(".whl") and e.is_file())


def _url_filename(url: str) -> str:
    path = urllib.parse.urlsplit(url).path
    return urllib.parse.unquote(path.rsplit("/", 1)[-1])


# -- simple indexes -------------------------------------------------------------------------
def _get(url: str, policy: IndexPolicy) -> tuple[str, str]:
    """(content type, text) of an index page, within the policy's budgets."""
    import urllib.error

    try:
        ctype, body = policy.get(url, _ACCEPT, USER_AGENT)
    except urllib.error.HTTPError as exc:
        exc.close()  # its body holds the connection's socket
        raise InputError(url, f"cannot read the index page: HTTP {exc.code}") from None
    return ctype, body.decode("utf-8", "replace")


# PEP 503 anchors, found in one linear pass: an attribute list or a label never runs past
# the next "<" or ">", so no stretch of text is scanned twice (a page of a million "<a " with
# no ">" costs one pass, where a parser that rescans its buffer is quadratic), and at most
# max_links anchors are kept (a flood stops at the first past the bound, not after all of
# them are held).  Names and values are HTML-unescaped, as a parser would give them.
_ANCHOR = re.compile(r"<a(?=[\s>/])([^<>]*)>([^<]*)", re.IGNORECASE)
_ATTR = re.compile(r"""([^\s"'<>/=]+)(?:\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'=<>`]+)))?""")
MAX_ATTRS = 16  # attributes of one anchor kept (PEP 503 uses at most four)


def _attrs(raw: str) -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for m in _ATTR.finditer(raw):
        if len(out) >= MAX_ATTRS:
            break
        name = m[1].lower()
        value = m[2] if m[2] is not None else m[3] if m[3] is not None else m[4]
        out.setdefault(name, html.unescape(value) if value is not None else None)
    return out


def _json_page(url: str, text: str, what: str) -> Any:
    try:
        return load_json(text)
    except JsonError as exc:
        raise InputError(url, f"{what} is not valid JSON: {exc}") from None


def _anchors(url: str, text: str, policy: IndexPolicy) -> list[tuple[str, str, dict[str,
                                                                                str | None]]]:
    links: list[tuple[str, str, dict[str, str | None]]] = []
    for m in _ANCHOR.finditer(text):
        if len(links) >= policy.max_links:
            raise InputError(url, f"more than {policy.max_links} links on one index page")
        attrs = _attrs(m[1])
        links.append((attrs.get("href") or "", html.unescape(m[2]).strip(), attrs))
    return links


def _project_files(page_url: str, ctype: str, text: str,
                   policy: IndexPolicy) -> list[dict[str, Any]]:
    """The files of a project page as PEP 691 dicts (filename, url, hashes, size, yanked)."""
    if ctype == _JSON or text.lstrip().startswith("{"):
        doc = _json_page(page_url, text, "index page")
        files = doc.get("files") if isinstance(doc, dict) else None
        if not isinstance(files, list):
            raise InputError(page_url, "index page has no 'files' list (PEP 691)")
        if len(files) > policy.max_links:
            raise InputError(page_url, f"more than {policy.max_links} files on one index page")
        out = []
        for f in files:
            if isinstance(f, dict) and isinstance(f.get("filename"), str) and \
                    isinstance(f.get("url"), str):
                out.append({**f, "url": urllib.parse.urljoin(page_url, f["url"])})
        return out
    out = []
    for href, label, attrs in _anchors(page_url, text, policy):
        url = urllib.parse.urljoin(page_url, href)
        base, _, frag = url.partition("#")
        hashes = {}
        if "=" in frag:
            algo, _, value = frag.partition("=")
            hashes[algo] = value
        name = label or _url_filename(base)
        yanked = attrs.get("data-yanked")
        out.append({"filename": name, "url": base, "hashes": hashes,
                    "yanked": yanked if yanked else (yanked is not None)})
    return out


def _root_projects(index_url: str, ctype: str, text: str, policy: IndexPolicy) -> list[str]:
    if ctype == _JSON or text.lstrip().startswith("{"):
        doc = _json_page(index_url, text, "index root")
        projects = doc.get("projects") if isinstance(doc, dict) else None
        if not isinstance(projects, list):
            raise InputError(index_url, "index root has no 'projects' list (PEP 691)")
        return [p["name"] for p in projects if isinstance(p, dict) and
                isinstance(p.get("name"), str)]
    return [label for _, label, _ in _anchors(index_url, text, policy) if label]


def from_index(
    index_url: str, filters: Filters, *, yanked: bool = False,
    problems: list[str] | None = None, policy: IndexPolicy | None = None,
) -> list[WheelRef]:
    """The wheels of the projects ``filters`` names on a simple index, filtered.  A name
    with glob characters is matched against the index's project list (its root page);
    plain names are fetched directly.  Yanked files (PEP 592) are left out unless
    ``yanked``.  A project page that cannot be read raises InputError, or with
    ``problems`` is a line there and the other projects are still listed.  A file link
    the policy refuses (another host, a ``file:`` URL) is a line in ``problems`` (or an
    InputError without it), never read."""
    from packaging.utils import canonicalize_name

    if not filters.projects:
        raise InputError(index_url, "name the projects to scan on the index (--project)")
    base = index_url if index_url.endswith("/") else index_url + "/"
    policy = policy or IndexPolicy(base)
    names: list[str] = []
    if any(_globby(p) for p in filters.projects):
        ctype, text = _get(base, policy)
        listed = sorted({canonicalize_name(n) for n in _root_projects(base, ctype, text,
                                                                     policy)})
        for pat in filters.projects:
            if _globby(pat):
                names += [n for n in listed if fnmatch.fnmatchcase(n, canonicalize_name(pat))]
    names += [canonicalize_name(p) for p in filters.projects if not _globby(p)]
    refs: list[WheelRef] = []
    seen: set[str] = set()
    for name in dict.fromkeys(names):
        page = urllib.parse.urljoin(base, f"{urllib.parse.quote(name, safe='')}/")
        try:
            ctype, text = _get(page, policy)
            files = _project_files(page, ctype, text, policy)
        except InputError as exc:
            if problems is None:
                raise
            problems.append(f"{exc.path}: {exc.problem}")
            continue
        for f in files:
            fn = f["filename"]
            if not fn.endswith(".whl") or f["url"] in seen or not filters.accepts(fn):
                continue
            if f.get("yanked") and not yanked:
                continue
            why = policy.refusal(f["url"])
            if why is not None:
                if problems is None:
                    raise InputError(f["url"], f"refused: {why}")
                problems.append(f"{f['url']}: refused: {why}")
                continue
            hashes = f.get("hashes")
            sha = hashes.get("sha256") if isinstance(hashes, dict) else None
            sha = sha if isinstance(sha, str) else None
            size = f.get("size")
            size = size if isinstance(size, int) and not isinstance(size, bool) \
                and size >= 0 else None
            seen.add(f["url"])
            refs.append(WheelRef(f["url"], fn, sha.lower() if sha else None, size))
    return refs

