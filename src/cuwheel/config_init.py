"""A starting configuration (``cuwheel init``): the TOML text of a ``cuwheel.toml`` or of a
``[tool.cuwheel]`` table to append to ``pyproject.toml``.

Two sources of rows:

* the template: the built-in rows (``data/default_rows.toml``) for the trains and platforms
  asked for, a row made up for a train no built-in row of that platform covers;
* existing wheels (``--from``): one row per (platform, train) of the wheels, holding the SASS
  that *every* library with device code ships natively (the intersection, not the union:
  the row is a claim each library is checked against on its own, so an architecture that
  one library lacks would be a DC001 "no kernel image" for it; docs/config.md#init).

Every text returned here is read back by the loader before it is handed out, so what
``init`` writes is a configuration ``plan`` and ``check`` accept.
"""

from __future__ import annotations

import glob
import os
import re
import sys
import textwrap
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from importlib import resources

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from cuwheel._version import __version__
from cuwheel.errors import ConfigError, InputError, shown
from cuwheel.knowledge import catalog
from cuwheel.model.arch import Arch
from cuwheel.model.inventory import Binary, CodeKind, Source
from cuwheel.plan.rows import CPU_TRAIN, Row, Train, parse_train

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib  # type: ignore[import-not-found, unused-ignore]

__all__ = [
    "DEFAULT_PLATFORMS",
    "DerivedRow",
    "append_table",
    "derive_rows",
    "has_table",
    "init_text",
    "schema_path",
    "schema_url",
]

# The platforms of the template when none is asked for.
DEFAULT_PLATFORMS = ("linux-x86_64", "linux-aarch64", "win-amd64")


def schema_path() -> str:
    """Where the installed ``data/config.schema.json`` is."""
    return str(resources.files("cuwheel").joinpath("data").joinpath("config.schema.json"))


def schema_url() -> str:
    """The ``#:schema`` init writes: this version's schema at the project's address, the
    same on every machine (a path into one venv would not be, and a committed file holds it)."""
    from cuwheel._urls import config_schema_url

    return config_schema_url(__version__)


@dataclass(frozen=True)
class DerivedRow:
    """A row read off existing wheels, and what the comments above it say."""

    row: Row
    train: Train
    wheels: tuple[str, ...]
    comments: tuple[str, ...] = ()


# ----------------------------------------------------------------------------- TOML text


def toml_str(text: str) -> str:
    """A TOML basic string: quotes, backslashes and controls escaped; an undecodable byte
    (a lone surrogate) becomes U+FFFD."""
    out = ['"']
    for ch in text:
        o = ord(ch)
        if ch in '"\\':
            out.append("\\" + ch)
        elif o < 0x20 or o == 0x7F:
            out.append(f"\\u{o:04x}")
        elif 0xD800 <= o <= 0xDFFF:
            out.append("\ufffd")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _comment(text: str) -> str:
    """One comment line: line breaks and controls cannot end the comment early."""
    clean = "".join(
        ch if ch.isprintable() and not 0xD800 <= ord(ch) <= 0xDFFF else "?" for ch in text
    )
    return f"# {clean}".rstrip()


def _str_list(values: Iterable[str]) -> str:
    return "[" + ", ".join(toml_str(v) for v in values) + "]"


def _row_lines(row: Row, prefix: str) -> list[str]:
    lines = [f"[[{prefix}rows]]", f"name = {toml_str(row.name)}"]
    if row.is_cpu:
        lines.append('cuda = "cpu"')
        lines.append('dependencies = "none"')
        return lines
    assert row.platform is not None
    lines.append(f"platform = {toml_str(row.platform)}")
    cuda = row.cuda[0] if len(row.cuda) == 1 else list(row.cuda)
    lines.append(f"cuda = {toml_str(cuda) if isinstance(cuda, str) else _str_list(cuda)}")
    lines.append(f"sass = {_str_list(a.sass for a in row.sass)}")
    if isinstance(row.ptx, str):
        lines.append(f"ptx = {toml_str(row.ptx)}")
    else:
        lines.append(f"ptx = {_str_list(a.ptx for a in row.ptx)}")
    lines.append(f"dependencies = {toml_str(row.dependencies)}")
    if row.library_trains:
        items = ", ".join(f"{toml_str(g)} = {toml_str(t)}" for g, t in row.library_trains)
        lines.append(f"library-trains = {{ {items} }}")
    if row.profile:
        lines.append(f"profile = {toml_str(row.profile)}")
    if row.note:
        lines.append(f"note = {toml_str(row.note)}")
    return lines


_HEAD_KEYS = """\
# Trains this project releases: `cuwheel plan --format matrix` stays inside them, and each
# needs a row below.  cuXYZ names a CUDA release (cu130 = CUDA 13.0); cpu the CPU wheels.
trains = {trains}
# Python versions of the matrix.
python = {python}
# The consumer versions that read the emitted lists (TORCH_CUDA_ARCH_LIST, CMake).
torch-version = {torch}
cmake-version = {cmake}
"""

_ROWS_DOC = """\
# Release rows: a CUDA train on one platform -> the SASS architectures to build, the PTX
# to embed ("newest": PTX of the highest SASS, "none", or a list) and whether the wheel
# declares its NVIDIA packages ("declare") or bundles / needs none ("none").  A row's cuda
# is a major ("13": every 13.x release), one release ("12.6") or a list of them.  Wheels
# are checked against their row by the +cuXYZ local version and the platform tag.
# Without `profile`, a wheel is judged by what loads on each listed GPU (profile "audit");
# profile = "release" holds it to exactly these architectures, both ways (docs/checks.md).
"""


def _document(
    trains: Sequence[Train],
    blocks: Sequence[tuple[Sequence[str], Row]],
    *,
    command: str,
    schema: str | None,
    pyproject: bool,
    extra_comments: Sequence[str] = (),
) -> str:
    defaults = _defaults()
    prefix = "tool.cuwheel." if pyproject else ""
    out = [_comment(f"Written by `{command}` (cuwheel {__version__}); docs/config.md.")]
    if schema and not pyproject:
        out.append(_comment_directive(schema))
    out += [_comment(c) for c in extra_comments]
    out.append("")
    if pyproject:
        out.append("[tool.cuwheel]")
    out.append(
        _HEAD_KEYS.format(
            trains=_str_list(t.name for t in trains),
            python=_str_list(str(v) for v in _defaults_list("python")),
            torch=toml_str(str(defaults.get("torch-version", ""))),
            cmake=toml_str(str(defaults.get("cmake-version", ""))),
        )
    )
    out.append(_ROWS_DOC.rstrip("\n"))
    for comments, row in blocks:
        out.append("")
        for c in comments:  # wrapped at blanks only: a path or requirement stays whole
            out += [_comment(line) for line in textwrap.wrap(
                c, 88, break_long_words=False, break_on_hyphens=False)]
        out += _row_lines(row, prefix)
    return "\n".join(out) + "\n"


def _comment_directive(schema: str) -> str:
    # Taplo and Tombi read a "#:schema PATH-OR-URL" comment at the top of a document
    # (docs/config.md#editors).  A path with blanks in it is written as a file: URL.
    if all(ch.isprintable() and not ch.isspace() for ch in schema):
        return f"#:schema {schema}"
    if os.path.isabs(schema) and all(ch.isprintable() for ch in schema):
        from pathlib import Path

        return f"#:schema {Path(schema).as_uri()}"
    raise ConfigError(f"--schema {shown(schema)}: a #:schema line takes a URL or a path "
                      "without blanks (or an absolute path)")


def _defaults() -> dict[str, object]:
    text = resources.files("cuwheel").joinpath("data").joinpath("default_rows.toml")
    data: dict[str, object] = tomllib.loads(text.read_text(encoding="utf-8"))
    return data


def _validate(text: str, pyproject: bool) -> None:
    """What init hands out must load; a failure here is a bug of cuwheel, said plainly."""
    from cuwheel.config import parse_config

    data = tomllib.loads(text)
    table = data["tool"]["cuwheel"] if pyproject else data
    try:
        parse_config(table, "cuwheel init")
    except ConfigError as exc:
        raise ConfigError(
            ["the configuration init made does not load (a cuwheel bug):", *exc.problems]
        ) from None


# ----------------------------------------------------------------------------- template


def _parse_trains(names: Sequence[str]) -> list[Train]:
    out: list[Train] = []
    for n in names:
        t = parse_train(n)
        if t not in out:
            out.append(t)
    return out


def _check_platforms(names: Sequence[str]) -> list[str]:
    from cuwheel.plan.rows import platform_suggestion

    known = [p.name for p in catalog.load_catalog().platforms]
    out: list[str] = []
    for n in names:
        if n not in known:
            raise ConfigError(f"--platform: unknown platform {shown(n)}"
                              f"{platform_suggestion(n)}; known: {', '.join(known)}")
        if n not in out:
            out.append(n)
    return out


def _template_rows(
    trains: Sequence[Train], platforms: Sequence[str]
) -> list[tuple[Sequence[str], Row]]:
    from cuwheel.config import parse_config

    text = resources.files("cuwheel").joinpath("data").joinpath("init_rows.toml")
    data = tomllib.loads(text.read_text(encoding="utf-8"))
    data.pop("meta", None)  # where the rows come from: for readers, not a config key
    builtin = parse_config(data, "init_rows.toml").rows
    rows: list[Row] = []
    notes: dict[str, list[str]] = {}
    for platform in platforms:
        own = [r for r in builtin if r.platform == platform]
        for train in trains:
            if train.is_cpu:
                continue
            hit = next((r for r in own if r.covers(train)), None)
            if hit is not None:
                if all(r.name != hit.name for r in rows):
                    rows.append(replace(hit, profile=None))
                continue
            like = own or [r for r in builtin if r.platform == "linux-x86_64"]
            made = _made_up_row(train, platform, like)
            rows.append(made)
            notes[made.name] = [
                f"No built-in row for {train} on {platform}: the architectures of the "
                f"built-in {platform if own else 'linux-x86_64'} row that CUDA "
                f"{made.cuda[0]} builds."
            ]
    if any(t.is_cpu for t in trains):
        rows.append(Row(name="cpu", platform=None, cuda=(), ptx="none", dependencies="none"))
        notes["cpu"] = ["The CPU wheels: no device code, no CUDA requirement."]
    return [(notes.get(r.name, ()), r) for r in rows]


def _made_up_row(train: Train, platform: str, like: Sequence[Row]) -> Row:
    """A row for a train no built-in row of the platform covers: the architectures of the
    platform's newest built-in row that this train's nvcc builds."""
    release = train.release
    assert release is not None
    model = max(like, key=lambda r: max((x.version for x in r.releases()), default=(0, 0)))
    sass = tuple(a for a in model.sass if release.accepts(a))
    if not sass:
        raise ConfigError(
            f"--train {train}: CUDA {release.name} builds none of {platform}'s architectures "
            f"({' '.join(a.sass for a in model.sass)}); write its row by hand"
        )
    ptx = model.ptx if isinstance(model.ptx, str) else "newest"
    deps = "none" if platform.startswith("win-") else "declare"
    return Row(name=f"{platform}-{train}", platform=platform, cuda=(release.name,),
               sass=sass, ptx=ptx, dependencies=deps)


def _template(
    trains: Sequence[str], platforms: Sequence[str], *, command: str, schema: str | None,
    pyproject: bool,
) -> str:
    builtin_trains = [parse_train(str(t)) for t in _defaults_list("trains")]
    chosen = _parse_trains(trains) if trains else builtin_trains
    plats = _check_platforms(platforms) if platforms else list(DEFAULT_PLATFORMS)
    blocks = _template_rows(chosen, plats)
    released = [t for t in chosen if any(r.covers(t) for _, r in blocks)]
    if not blocks:
        raise ConfigError("nothing to write: no row for the trains and platforms asked for")
    return _finish(_document(released, blocks, command=command, schema=schema,
                             pyproject=pyproject), pyproject)


def _defaults_list(key: str) -> list[object]:
    value = _defaults().get(key, [])
    return list(value) if isinstance(value, list) else [value]


def _finish(text: str, pyproject: bool) -> str:
    _validate(text, pyproject)
    return text


# ----------------------------------------------------------------------------- --from


@dataclass
class _Facts:
    """What one wheel says about its row."""

    path: str
    platform: str | None
    train: Train
    train_from: str
    sass: dict[Arch, int]  # GPUs (plain archs) -> how many libraries ship them natively
    ptx: set[Arch] | None  # PTX every library carries (None: no library has device code)
    libraries: int  # libraries with device code, specialised modules left out
    union: set[Arch] = field(default_factory=set)
    ptx_union: set[Arch] = field(default_factory=set)
    declares: tuple[str, ...] = ()
    library_trains: tuple[tuple[str, str], ...] = ()
    notes: list[str] = field(default_factory=list)
    # GPU (plain arch) -> how the libraries spell its SASS: sm_90a where one ships only
    # sm_90a (arch-specific code runs on that GPU only; the row must keep the suffix)
    spelled: dict[Arch, set[Arch]] = field(default_factory=dict)


def _member(source: Source, b: Binary) -> str:
    path = b.archive or b.path
    prefix = source.path + "!"
    return path[len(prefix):] if path.startswith(prefix) else path


def _native(b: Binary, gpu: Arch) -> bool:
    """The library runs on CC ``gpu`` from its own SASS (by the loading rules check uses)."""
    from cuwheel.rules.loading import Verdict, judge_container, link_stub_index
    from cuwheel.rules.rollup import judge_library
    from cuwheel.rules.runtime import binary_os

    os_ = binary_os(b)
    stub = link_stub_index(b)
    cvs = [judge_container(c, gpu, os=os_, stub=i == stub) for i, c in enumerate(b.containers)]
    j = judge_library(b, cvs, gpu)
    return j is not None and j.verdict in (Verdict.NATIVE, Verdict.COMPATIBLE) and (
        any(e.kind is CodeKind.SASS and e.arch.base == gpu.base
            for c in b.containers for e in c.entries)
    )


def _cuda_requirements(requires: Sequence[str], platform: str | None) -> tuple[str, ...]:
    """The NVIDIA requirements that apply on the wheel's platform without an extra."""
    from cuwheel.checks.context import platform_environment

    out = []
    for text in requires:
        try:
            req = Requirement(text)
        except InvalidRequirement:
            continue
        name = canonicalize_name(req.name)
        if not (name.startswith("nvidia-") or name == "cuda-toolkit"):
            continue
        marker = req.marker
        if marker is not None and platform is not None and not marker.evaluate(
            platform_environment(platform)
        ):
            continue
        out.append(text.split(";")[0].strip())
    return tuple(out)


def _read_wheel(path: str) -> _Facts:
    from cuwheel.checks.trains import infer_train, wheel_release
    from cuwheel.plan.select import parse_wheel_name
    from cuwheel.read.inspect import inspect
    from cuwheel.rules.loading import counted_containers
    from cuwheel.rules.rollup import specialised_only
    from cuwheel.rules.runtime import runtime_majors

    if os.path.isdir(path):
        raise InputError(path, "is a directory; name the wheels (--from dist/*.whl)")
    if not os.path.isfile(path):
        raise InputError(path, "no such file")
    if not path.endswith(".whl"):
        raise InputError(path, "not a wheel (a wheel file name ends in .whl)")
    name = parse_wheel_name(path)
    source = inspect(path).sources[0]
    if source.kind != "wheel" or source.wheel is None:
        why = source.problems[0].message if source.problems else "not a wheel"
        raise InputError(path, why)
    unread = list(source.problems)
    requires = source.wheel.requires_dist
    loadable = [b for b in source.binaries if b.archive is None and b.file_type != "object"]
    device = [b for b in loadable if any(True for _ in counted_containers(b))]
    cuda_linked = any(runtime_majors(b) for b in source.binaries)
    facts_notes: list[str] = []
    if unread:
        facts_notes.append(f"{len(unread)} member(s) could not be read: {unread[0].message}")

    # the train: the +cuXYZ local version, else what the libraries say (the most common)
    train: Train
    train_from: str
    per_lib = {_member(source, b): infer_train(b, requires) for b in device}
    if name.train is not None:
        train, train_from = name.train, f"its +{name.local}"
    elif not device and not cuda_linked:
        train, train_from = CPU_TRAIN, "no device code and no CUDA library linked"
    else:
        picked = wheel_release(list(per_lib.values())) or wheel_release(
            [infer_train(b, requires) for b in loadable]
        )
        if picked is None:
            raise ConfigError(
                f"{name.filename}: no +cuXYZ local version and no library names its CUDA "
                "train; write its row by hand (or pass a wheel that names it)"
            )
        train, train_from = Train(picked[0]), "what its libraries say (no +cuXYZ)"
        if picked[1]:
            facts_notes.append(picked[1])
    if train.is_cpu:
        return _Facts(path, None, train, train_from, {}, None, 0, notes=facts_notes)
    if name.platform is None:
        known = ", ".join(p.name for p in catalog.load_catalog().platforms)
        raise ConfigError(f"{name.filename}: platform tag {', '.join(name.platform_tags)} is "
                          f"no row platform ({known})")
    release = train.release
    assert release is not None

    # arch-specific modules beside general ones are left out (loaded on their GPUs only);
    # a wheel of arch-specific code alone is built for those GPUs: its row names them
    general = [b for b in device if not specialised_only(b)] or device
    skipped = len(device) - len(general)
    if skipped:
        facts_notes.append(f"{skipped} module(s) of arch-specific code only left out")
    counts: Counter[Arch] = Counter()
    union: set[Arch] = set()
    ptx_sets: list[set[Arch]] = []
    spelled: dict[Arch, set[Arch]] = {}
    for b in general:
        shipped = {e.arch for _, c in counted_containers(b) for e in c.entries
                   if e.kind is CodeKind.SASS}
        union |= shipped
        for gpu in sorted({a.base for a in shipped}):
            if _native(b, gpu):
                counts[gpu] += 1
                own = gpu if gpu in shipped else min(a for a in shipped if a.base == gpu)
                spelled.setdefault(gpu, set()).add(own)
        ptx_sets.append({e.arch for _, c in counted_containers(b) for e in c.entries
                         if e.kind is CodeKind.PTX})
    common_ptx = set.intersection(*ptx_sets) if ptx_sets else None
    ptx_union = set().union(*ptx_sets) if ptx_sets else set()

    lib_trains: list[tuple[str, str]] = []
    for member, t in sorted(per_lib.items()):
        # another release of the same major is no other train for the checks (TAG006 is
        # information); a library of another major is (bitsandbytes' one per train)
        # "infer", not the train read now: a library that only links libcudart.so.13 names
        # its major, and the release inferred for it is a guess (the newest of the major)
        if t.release is not None and t.release.major != release.major:
            lib_trains.append((glob.escape(member), "infer"))
            facts_notes.append(f"{member}: its own train ({t.release.train} by {t.evidence})")
    return _Facts(path, name.platform, train, train_from, dict(counts), common_ptx,
                  len(general), union, ptx_union,
                  _cuda_requirements(requires, name.platform), tuple(lib_trains), facts_notes,
                  spelled)


def _arch_names(archs: Iterable[Arch], ptx: bool = False) -> str:
    return " ".join(a.ptx if ptx else a.sass for a in sorted(archs)) or "none"


def derive_rows(paths: Sequence[str]) -> list[DerivedRow]:
    """One row per (platform, train) of the wheels at ``paths``.

    SASS: the GPUs every library with device code runs on from its own SASS (modules of
    arch-specific code only, which their package loads on those GPUs alone, left out),
    across every wheel of the row.  PTX: the architectures whose PTX every such library
    carries ("newest" when that is the highest SASS's).  Dependencies: "declare" when every
    wheel of the row requires NVIDIA packages on its platform.  InputError / ConfigError
    for a file that is no readable wheel or names no row."""
    facts = [_read_wheel(p) for p in paths]
    groups: dict[tuple[str | None, str], list[_Facts]] = {}
    for f in facts:
        groups.setdefault((f.platform, f.train.name), []).append(f)
    out: list[DerivedRow] = []
    for (platform, _), group in sorted(groups.items(), key=_group_order):
        out.append(_row_of(platform, group))
    return out


def _group_order(
    item: tuple[tuple[str | None, str], list[_Facts]],
) -> tuple[int, str, tuple[int, int]]:
    (platform, _), group = item
    t = group[0].train
    return (1 if t.is_cpu else 0, platform or "", t.release.version if t.release else (0, 0))


def _row_of(platform: str | None, group: list[_Facts]) -> DerivedRow:
    train = group[0].train
    wheels = tuple(os.path.basename(f.path) for f in group)
    comments = [f"From {w}" for w in wheels]
    comments.append(f"train {train}: {group[0].train_from}")
    if train.is_cpu:
        for f in group:
            comments += f.notes
        row = Row(name="cpu", platform=None, cuda=(), ptx="none", dependencies="none")
        return DerivedRow(row, train, wheels, tuple(comments))
    release = train.release
    assert release is not None and platform is not None
    libraries = sum(f.libraries for f in group)
    shared = {gpu for gpu in set().union(*(f.sass for f in group))
              if all(f.sass.get(gpu, 0) == f.libraries for f in group)}
    union = set().union(*(f.union for f in group))
    not_built = {a for a in shared if not release.accepts(a)}
    spelled: dict[Arch, set[Arch]] = {}
    for f in group:
        for gpu, names in f.spelled.items():
            spelled.setdefault(gpu, set()).update(names)
    # one spelling for all libraries: that one (sm_90a); mixed, the plain arch
    sass = tuple(sorted(min(spelled[g]) if len(spelled.get(g, ())) == 1 else g
                        for g in shared - not_built))
    ptx_sets = [f.ptx for f in group if f.ptx is not None]
    common_ptx = set.intersection(*ptx_sets) if ptx_sets else set()
    ptx_union = set().union(*(f.ptx_union for f in group))
    ptx_ok = {a for a in common_ptx if release.accepts(a)}
    ptx: str | tuple[Arch, ...]
    if not ptx_ok:
        ptx = "none"
    elif sass and ptx_ok == {max(sass)}:
        ptx = "newest"
    else:
        ptx = tuple(sorted(ptx_ok))
    declares = [f.declares for f in group]
    deps = "declare" if all(declares) else "none"
    who = ("its one library with device code ships" if libraries == 1
           else f"all {libraries} of its libraries with device code ship")
    comments.append(f"SASS {who}: {_arch_names(sass)}")
    extra = {a for a in union if a.base not in {s.base for s in sass}} | not_built
    if extra:
        comments.append(f"shipped by some libraries only (not claimed): {_arch_names(extra)}")
    if not_built:
        comments.append(f"CUDA {release.name}'s nvcc does not build {_arch_names(not_built)}")
    comments.append(f"PTX in every library: {_arch_names(common_ptx, ptx=True)}"
                    + (f" (some: {_arch_names(ptx_union - common_ptx, ptx=True)})"
                       if ptx_union - common_ptx else ""))
    if all(declares):
        comments.append(f"NVIDIA requirements: {', '.join(sorted(set().union(*declares)))}")
    elif any(declares):
        comments.append("some wheels of this row require NVIDIA packages, others do not")
    for f in group:
        comments += f.notes
    if not any(f.train_from.startswith("its +") for f in group):
        comments.append(f"no +cuXYZ local version: check it with `cuwheel check --row "
                        f"{platform}-{train} WHEEL`")
    lib_trains: list[tuple[str, str]] = []
    for f in group:
        lib_trains += [lt for lt in f.library_trains if lt not in lib_trains]
    if not sass:
        raise ConfigError(
            f"{', '.join(wheels)}: no SASS architecture that every library ships"
            + (f" (some ship {_arch_names(union)})" if union else " (no device code)")
            + "; write its row by hand"
        )
    row = Row(name=f"{platform}-{train}", platform=platform, cuda=(release.name,), sass=sass,
              ptx=ptx, dependencies=deps, library_trains=tuple(lib_trains))
    return DerivedRow(row, train, wheels, tuple(comments))


def _from_wheels(
    paths: Sequence[str], trains: Sequence[str], platforms: Sequence[str], *, command: str,
    schema: str | None, pyproject: bool,
) -> str:
    derived = derive_rows(paths)
    if trains:
        wanted = _parse_trains(trains)
        derived = [d for d in derived if d.train in wanted]
    if platforms:
        plats = _check_platforms(platforms)
        derived = [d for d in derived if d.row.is_cpu or d.row.platform in plats]
    if not derived:
        raise ConfigError("nothing to write: no wheel of the trains and platforms asked for")
    trains_out: list[Train] = []
    for d in derived:
        if d.train not in trains_out:
            trains_out.append(d.train)
    trains_out.sort(key=lambda t: t.release.version if t.release else (0, 0))
    blocks = [(d.comments, d.row) for d in derived]
    text = _document(trains_out, blocks, command=command, schema=schema, pyproject=pyproject)
    return _finish(text, pyproject)


# ----------------------------------------------------------------------------- public


def init_text(
    *,
    wheels: Sequence[str] = (),
    trains: Sequence[str] = (),
    platforms: Sequence[str] = (),
    command: str = "cuwheel init",
    schema: str | None = None,
    pyproject: bool = False,
) -> str:
    """The TOML text of a starting configuration.

    Without ``wheels``: the template (built-in rows of ``trains`` on ``platforms``; default:
    the built-in trains on Linux x86_64 / aarch64 and Windows x64).  With ``wheels``: rows
    read off them (:func:`derive_rows`), kept to ``trains`` / ``platforms`` when given.
    ``command`` is named in the first comment; ``schema`` (a path or URL) becomes a
    ``#:schema`` line for editors; ``pyproject``: a ``[tool.cuwheel]`` table to append to a
    pyproject.toml (no ``#:schema`` line: that would apply to the whole file).
    ConfigError / InputError (exit 2) for what cannot be made into rows."""
    if wheels:
        return _from_wheels(wheels, trains, platforms, command=command, schema=schema,
                            pyproject=pyproject)
    return _template(trains, platforms, command=command, schema=schema, pyproject=pyproject)


_TABLE_RE = re.compile(r"^\s*\[\[?\s*tool\s*\.\s*cuwheel\s*[.\]]", re.MULTILINE)


def has_table(pyproject_text: str) -> bool:
    """Whether a pyproject.toml already has a ``[tool.cuwheel]`` table (parsed when it is
    valid TOML, else looked for line by line)."""
    try:
        data = tomllib.loads(pyproject_text)
    except (tomllib.TOMLDecodeError, RecursionError):
        return bool(_TABLE_RE.search(pyproject_text))
    tool = data.get("tool")
    return isinstance(tool, dict) and "cuwheel" in tool


def append_table(pyproject_text: str, table_text: str, where: str = "pyproject.toml") -> str:
    """``pyproject_text`` with ``table_text`` appended after a blank line, the user's text
    kept byte for byte; ConfigError when it has the table already or is not valid TOML."""
    try:
        tomllib.loads(pyproject_text)
    except (tomllib.TOMLDecodeError, RecursionError) as exc:
        raise ConfigError(f"{where}: not valid TOML ({exc}); fix it first") from None
    if has_table(pyproject_text):
        raise ConfigError(f"{where}: already has a [tool.cuwheel] table; edit it, or remove "
                          "it and run init again")
    eol = "\r\n" if "\r\n" in pyproject_text else "\n"  # keep the file's line ends
    if not pyproject_text or pyproject_text.endswith(eol * 2):
        sep = ""
    elif pyproject_text.endswith(eol):
        sep = eol
    else:
        sep = eol * 2
    combined = pyproject_text + sep + table_text.replace("\n", eol)
    try:
        tomllib.loads(combined)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{where}: the table would not fit in the file ({exc})") from None
    return combined
