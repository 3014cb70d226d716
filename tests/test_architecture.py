"""The package's shape: no import circle between cuwheel's units nor between its modules, no
import that runs back up the layers, no module over 450 lines.

Every ``import`` / ``from ... import`` of every module is read with :mod:`ast`, those inside
functions too (a lazy import is an arrow like any other), and those under
``TYPE_CHECKING``.  A *unit* is a subpackage (``cuwheel.rules``) or a top module
(``cuwheel.errors``); the subpackages of a package in SPLIT are units of their own
(``cuwheel.read.device``), and that package's own modules are its unit (``cuwheel.read``:
the scheduler).  ``cuwheel`` itself (its ``__init__``) is the public facade.

The layers follow the data flow of the guide -- sources -> readers -> device-code parsers ->
immutable inventory -> loading rules -> checks / compat -> findings -> renderers -> cli --
written as *import* order: a unit may import its own layer or a lower one.  Three places
differ from the reading order of that flow, because a stage names the types it hands on or
calls the stage after it: the inventory's value types (model/) sit below the readers that
build them, the facts (knowledge/ + data) sit just above the value types they are written
in, and inside read/ a stage calls the next one with its bytes, so the device-code parsers
sit lowest, under the host binary readers that find device code, under the sources that
hand them their members.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parent.parent / "src" / "cuwheel"
MAX_LINES = 450

# Packages whose subpackages are units of their own (read/: one subpackage per stage).
SPLIT = frozenset({"read"})

# Lowest first.  A unit may import units of its own layer or of a lower one.
LAYERS: tuple[tuple[str, frozenset[str]], ...] = (
    ("leaf helpers", frozenset({
        "_version", "_text", "_envelope", "_toml", "_json", "_paths", "_urls", "_validate",
        "_signals", "errors", "_lazy", "_datafiles",
    })),
    ("inventory value types", frozenset({"model"})),
    ("knowledge and data", frozenset({"knowledge"})),
    ("remote sources", frozenset({"_remote"})),
    ("the bytes under every reader", frozenset({"read.bytes"})),
    ("device-code parsers and the container walk", frozenset({"read.device"})),
    ("host binary readers", frozenset({"read.binary"})),
    ("sources, and the downloader", frozenset({"read.sources", "_download"})),
    ("exported programs", frozenset({"read.artifacts"})),
    ("the reading scheduler and entry point", frozenset({"read"})),
    ("loading rules and release rows", frozenset({"rules", "plan"})),
    ("checks, findings, compat, toolkit", frozenset({"checks", "compat", "toolkit"})),
    ("what is built on checks and compat", frozenset({
        "config", "config_init", "init_toml", "init_wheels", "size", "doctor", "variant",
    })),
    ("renderers", frozenset({"render"})),
    ("index scale", frozenset({"scan"})),
    ("public facade", frozenset({"cuwheel"})),
    ("cli", frozenset({"cli", "__main__"})),
)


def _module_name(path: Path) -> tuple[str, bool]:
    """(dotted name, is a package ``__init__``)."""
    parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        return ".".join(parts[:-1]), True
    return ".".join(parts), False


def _imports(path: Path) -> Iterable[str]:
    """Every cuwheel module or name ``path`` imports, as a dotted name."""
    name, is_pkg = _module_name(path)
    package = name.split(".") if is_pkg else name.split(".")[:-1]
    for node in ast.walk(ast.parse(path.read_text("utf-8"), str(path))):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            if module == "cuwheel" or (node.level and not node.module):
                # ``from cuwheel import x`` / ``from . import x``: x may be a submodule
                yield from (f"{module}.{a.name}" for a in node.names)
            else:
                subs = [f"{module}.{a.name}" for a in node.names]
                yield from [s for s in subs if _is_module(s)] or [module]


def _is_module(dotted: str) -> bool:
    """Whether a dotted cuwheel name is a module or package under SRC."""
    path = SRC.parent.joinpath(*dotted.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def unit_of(dotted: str) -> str | None:
    """The unit a dotted cuwheel name belongs to (``cuwheel`` for the facade's names)."""
    parts = dotted.split(".")
    if parts[0] != "cuwheel":
        return None
    if len(parts) == 1:
        return "cuwheel"
    first = parts[1]
    if first in SPLIT and len(parts) > 2 and (SRC / first / parts[2]).is_dir():
        return f"{first}.{parts[2]}"
    if (SRC / first).is_dir() or (SRC / f"{first}.py").is_file():
        return first
    return "cuwheel"  # a name the facade defines or re-exports (``__version__``)


def import_graph() -> dict[str, dict[str, list[str]]]:
    """unit -> imported unit -> the imports that make the arrow (``module -> name``)."""
    graph: dict[str, dict[str, list[str]]] = {}
    for path in sorted(SRC.rglob("*.py")):
        name, _ = _module_name(path)
        unit = unit_of(name)
        assert unit is not None
        arrows = graph.setdefault(unit, {})
        for target in _imports(path):
            to = unit_of(target)
            if to is not None and to != unit:
                arrows.setdefault(to, []).append(f"{name} -> {target}")
    return graph


def module_of(dotted: str, modules: Iterable[str]) -> str | None:
    """The module a dotted cuwheel name is in: itself, or the longest module it starts with
    (``cuwheel.read.device.fatbin.FatbinHeader`` -> ``cuwheel.read.device.fatbin``)."""
    known = set(modules)
    parts = dotted.split(".")
    while parts:
        if ".".join(parts) in known:
            return ".".join(parts)
        parts.pop()
    return None


def module_graph() -> dict[str, dict[str, list[str]]]:
    """module -> imported module -> the imported names.  Importing ``a.b.c`` runs the
    ``__init__`` of ``a`` and ``a.b`` too; those arrows are left out, or every package whose
    ``__init__`` names its modules would be a circle with each of them."""
    paths = {_module_name(p)[0]: p for p in sorted(SRC.rglob("*.py"))}
    graph: dict[str, dict[str, list[str]]] = {}
    for name, path in paths.items():
        arrows = graph.setdefault(name, {})
        for target in _imports(path):
            to = module_of(target, paths)
            if to is not None and to != name:
                arrows.setdefault(to, []).append(target)
    return graph


def circles(graph: Mapping[str, Mapping[str, object]]) -> list[list[str]]:
    """The strongly connected components of more than one unit (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, {}):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def level_of(layers: tuple[tuple[str, frozenset[str]], ...]) -> dict[str, int]:
    level: dict[str, int] = {}
    for i, (_, units) in enumerate(layers):
        for u in units:
            assert u not in level, f"{u} is in two layers"
            level[u] = i
    return level


def arrows_back_up(
    graph: Mapping[str, Mapping[str, list[str]]],
    layers: tuple[tuple[str, frozenset[str]], ...] = LAYERS,
) -> list[str]:
    """Every import from a higher layer (or of a unit no layer names), one line each."""
    level = level_of(layers)
    bad: list[str] = []
    for unit, arrows in sorted(graph.items()):
        for to, why in sorted(arrows.items()):
            if unit not in level or to not in level:
                bad.append(f"{unit} -> {to}: a unit in no layer ({why[0]})")
            elif level[to] > level[unit]:
                bad.extend(
                    f"{unit} ({layers[level[unit]][0]}) -> {to} ({layers[level[to]][0]}): {w}"
                    for w in why
                )
    return bad


def long_modules(
    lengths: Mapping[str, int], allow: Iterable[str] = (), limit: int = MAX_LINES
) -> list[str]:
    """Modules (paths relative to the package) over ``limit`` lines and not allowed."""
    allow = tuple(allow)
    return [
        f"{p}: {n} lines" for p, n in sorted(lengths.items())
        if n > limit and not any(p == a or (a.endswith("/") and p.startswith(a)) for a in allow)
    ]


def module_lengths() -> dict[str, int]:
    return {
        p.relative_to(SRC).as_posix(): len(p.read_text("utf-8").splitlines())
        for p in sorted(SRC.rglob("*.py"))
    }


# -- the package --------------------------------------------------------------------------


def test_every_unit_is_in_a_layer() -> None:
    level = level_of(LAYERS)
    units = {unit_of(_module_name(p)[0]) for p in SRC.rglob("*.py")}
    assert units - set(level) == set()


def test_no_circle() -> None:
    assert circles(import_graph()) == []


def test_no_circle_between_modules() -> None:
    assert circles(module_graph()) == []


def test_no_arrow_back_up() -> None:
    assert arrows_back_up(import_graph()) == []


def test_no_module_over_450_lines() -> None:
    assert long_modules(module_lengths()) == []


# -- the rules fail where they should (synthetic graphs) -----------------------------------

_TOY = (
    ("low", frozenset({"a"})),
    ("mid", frozenset({"b"})),
    ("high", frozenset({"c"})),
)


def test_circle_is_found() -> None:
    g = {"a": {"b": ["x"]}, "b": {"c": ["y"]}, "c": {"a": ["z"]}, "d": {"a": ["w"]}}
    assert circles(g) == [["a", "b", "c"]]
    assert circles({"a": {}, "b": {"a": ["x"]}, "c": {"a": ["y"], "b": ["z"]}}) == []


def test_arrow_back_up_is_found() -> None:
    down = {"c": {"b": ["c.m -> b.n"], "a": ["c.m -> a"]}, "b": {"a": ["b.n -> a.o"]}}
    assert arrows_back_up(down, _TOY) == []
    up = {"a": {"c": ["a.p -> c.q"]}, "b": {"a": ["b.n -> a.o"]}}
    assert arrows_back_up(up, _TOY) == ["a (low) -> c (high): a.p -> c.q"]
    stray = {"a": {"zzz": ["a.p -> zzz"]}}
    assert arrows_back_up(stray, _TOY) == ["a -> zzz: a unit in no layer (a.p -> zzz)"]


def _plant(root: Path, files: Mapping[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, "utf-8")


def test_module_circle_is_found(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # two modules of one unit that import each other (a lazy import too) are a circle the
    # unit graph cannot see; a package __init__ naming its modules is not one
    _plant(tmp_path, {
        "cuwheel/__init__.py": "",
        "cuwheel/read/__init__.py": "from cuwheel.read import a\n",
        "cuwheel/read/a.py": "from cuwheel.read.b import f\n",
        "cuwheel/read/b.py": "def f():\n    from cuwheel.read import a\n",
        "cuwheel/read/c.py": "from cuwheel.read.a import x\n",
    })
    monkeypatch.setitem(globals(), "SRC", tmp_path / "cuwheel")
    assert circles(import_graph()) == []
    assert circles(module_graph()) == [["cuwheel.read.a", "cuwheel.read.b"]]
    (tmp_path / "cuwheel/read/b.py").write_text("def f():\n    pass\n", "utf-8")
    assert circles(module_graph()) == []


def test_arrow_back_up_between_stages_is_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the subpackages of a SPLIT package are units: a device-code parser that imports a
    # host binary reader runs back up, though both are in read/
    _plant(tmp_path, {
        "cuwheel/__init__.py": "",
        "cuwheel/read/__init__.py": "",
        "cuwheel/read/inspect.py": "from cuwheel.read.binary.elf import E\n",
        "cuwheel/read/binary/__init__.py": "",
        "cuwheel/read/binary/elf.py": "from cuwheel.read.device import fatbin\n",
        "cuwheel/read/device/__init__.py": "",
        "cuwheel/read/device/fatbin.py": "",
    })
    monkeypatch.setitem(globals(), "SRC", tmp_path / "cuwheel")
    assert unit_of("cuwheel.read.device.fatbin") == "read.device"
    assert unit_of("cuwheel.read.inspect") == "read"
    assert arrows_back_up(import_graph()) == []
    (tmp_path / "cuwheel/read/device/fatbin.py").write_text(
        "from cuwheel.read.binary import elf\n", "utf-8")
    assert arrows_back_up(import_graph()) == [
        "read.device (device-code parsers and the container walk) -> read.binary "
        "(host binary readers): cuwheel.read.device.fatbin -> cuwheel.read.binary.elf"
    ]


def test_long_module_is_found() -> None:
    lengths = {"ok.py": 450, "long.py": 451, "read/big.py": 900, "readme.py": 451}
    assert long_modules(lengths, allow=("read/",)) == ["long.py: 451 lines", "readme.py: 451 lines"]
    assert long_modules(lengths, allow=()) == [
        "long.py: 451 lines", "read/big.py: 900 lines", "readme.py: 451 lines"
    ]


@pytest.mark.parametrize(
    ("module", "source", "expected"),
    [
        ("cuwheel/errors.py", "def f():\n    from cuwheel.render.escape import escape\n",
         ["cuwheel.render.escape"]),
        ("cuwheel/plan/emit.py", "from ..render import envelope\n", ["cuwheel.render"]),
        ("cuwheel/plan/emit.py", "from .. import render\n", ["cuwheel.render"]),
        ("cuwheel/plan/__init__.py", "from .rows import Row\n", ["cuwheel.plan.rows"]),
        ("cuwheel/x.py", "from cuwheel import __version__, render\n",
         ["cuwheel.__version__", "cuwheel.render"]),
        ("cuwheel/x.py", "import cuwheel.read.sources as s\n", ["cuwheel.read.sources"]),
        ("cuwheel/x.py", "from cuwheel.read.device import fatbin\n", ["cuwheel.read.device"]),
    ],
)
def test_imports_are_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, module: str,
                          source: str, expected: list[str]) -> None:
    # lazy, relative and package-relative imports are all arrows
    path = tmp_path / module
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(source, "utf-8")
    monkeypatch.setitem(globals(), "SRC", tmp_path / "cuwheel")
    assert list(_imports(path)) == expected


# One owner per rule (issue 30): each pattern is the text of one judgement, and it may
# appear in its owner's module only.  A second copy (the fails set spelled out in a
# renderer, a Windows/Linux driver ternary in a rule, a train regex in a check) fails here.
OWNERS: tuple[tuple[str, str, str], ...] = (
    ("the verdicts that fail a library (Verdict.fails)",
     # (with NO_CODE: doctor's (DEPENDS, PARTIAL, DRIVER), where names decide, is no copy)
     r"Verdict\.PARTIAL,\s*Verdict\.DRIVER,\s*Verdict\.NO_CODE", "rules/loading.py"),
    ("the unread-input downgrade (WheelState.unread)",
     r"WheelState\.RUNS,\s*WheelState\.DEPENDS,\s*WheelState\.NOTHING", "rules/rollup.py"),
    ("a release's minimum driver on an OS (Release.min_driver, MinorCompat.floor)",
     r"driver_windows if|driver_linux if", "knowledge/cuda.py"),
    ("the container shape key (FatbinContainer.shape)",
     r"e\.code_version,\s*e\.compression", "model/inventory.py"),
    ("is this a CUDA library (catalog.is_cuda_library)",
     r"def is_cuda_(library|link)\b", "knowledge/catalog.py"),
    ("a train's spelling, cuXYZ as major and minor (model/train.py)",
     r"cu\(\[0-9\]\{[0-9,]+\}\)\(\[0-9\]\)", "model/train.py"),
    ("the CPUs a process may use (read/schedule.py cpu_count)",
     r"sched_getaffinity", "read/schedule.py"),
    # every input file (not one cuwheel writes): non-blocking, S_ISREG on the descriptor
    ("opening a regular file (cuwheel._paths.open_untrusted)",
     r"O_NONBLOCK|S_ISREG\(os\.fstat", "_paths.py"),
    # issue 30's leftovers: the fix an ENV finding carries is codes.toml's `fix`, never a
    # table of texts by code in a module (doctor/diagnose.py's _FIX was the second copy)
    ("the fix texts of ENV findings (codes.toml fix, Code.fix_text)",
     r'(?m)^fix = "|"ENV0[0-9]{2}":\s*"', "data/codes.toml"),
    # answers worst first: WheelState.worst_first (doctor's Status.ORDER was a second copy)
    ("the order of answers, worst first (WheelState.worst_first)",
     r"DOES_NOT_RUN,\s*(WheelState\.)?UNKNOWN\b", "rules/rollup.py"),
    # finding severities: the IntEnum's order (render/check.py's rank table and doctor's
    # string comparison were second copies)
    ("the order of finding severities (checks/codes.py Severity)",
     r'\bERROR\s*(=|:)\s*[0-9]|severity\s*[!=]=\s*"error"', "checks/codes.py"),
)


@pytest.mark.parametrize(("rule", "pattern", "owner"), OWNERS, ids=[o[0] for o in OWNERS])
def test_one_owner_per_rule(rule: str, pattern: str, owner: str) -> None:
    import re

    files = [*SRC.rglob("*.py"), *(SRC / "data").glob("*.toml")]
    found = sorted(p.relative_to(SRC).as_posix() for p in files
                   if re.search(pattern, p.read_text("utf-8")))
    assert found == [owner], f"{rule}: {found}"


# One catalog per judgement (issue 30): the modules that judge ask the catalog of the Rules
# judging now (knowledge.active.active_catalog, rules/judge.py), never the catalog module's
# lookups of the shipped data, and keep no module-global cache of what it answers (those
# belong to the Rules object: Rules.memo).  A catalog a caller builds then reaches them.
JUDGING = ("rules", "checks", "compat", "doctor")
_ASKS = frozenset({"active_catalog", "active_memo", "active_rules"})  # what judging may call
_CACHING = frozenset({"cache", "lru_cache", "cached", "per_binary"})
_MUTATORS = frozenset({"setdefault", "clear", "update", "append", "pop", "add", "extend"})


def _asks_catalog(fn: ast.AST, consulting: set[str]) -> bool:
    """Whether ``fn`` calls the active catalog, or a function of its module that does."""
    for n in ast.walk(fn):
        if isinstance(n, ast.Call):
            name = n.func.id if isinstance(n.func, ast.Name) else None
            if name in _ASKS or name in consulting:
                return True
            f = n.func
            if (isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name)
                    and f.value.id == "catalog"):  # the catalog module's lookups
                return True
    return False


def catalog_violations(path: Path) -> list[str]:
    """Where a judging module reads the shipped catalog's lookups, or caches a catalog
    answer in module-global state."""
    tree = ast.parse(path.read_text("utf-8"))
    out: list[str] = []
    for n in ast.walk(tree):
        if isinstance(n, ast.ImportFrom) and n.module == "cuwheel.knowledge":
            out += [f"{n.lineno}: imports the catalog module" for a in n.names
                    if a.name == "catalog"]
        elif isinstance(n, ast.ImportFrom) and n.module == "cuwheel.knowledge.catalog":
            out += [f"{n.lineno}: imports the lookup {a.name}" for a in n.names
                    if a.name[:1].islower() and a.name not in _ASKS]
        elif isinstance(n, ast.Import):
            out += [f"{n.lineno}: imports the catalog module" for a in n.names
                    if a.name == "cuwheel.knowledge.catalog"]
    funcs = {f.name: f for f in tree.body
             if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))}
    consulting: set[str] = set()
    while True:  # the module's functions that ask the catalog, directly or not
        more = {name for name, f in funcs.items() if _asks_catalog(f, consulting)}
        if more <= consulting:
            break
        consulting |= more
    for name in sorted(consulting):
        for d in funcs[name].decorator_list:
            target = d.func if isinstance(d, ast.Call) else d
            dname = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
            if dname in _CACHING:
                out.append(f"{funcs[name].lineno}: {name} caches catalog answers ({dname})")
    mutable = set()
    for s in tree.body:
        value = s.value if isinstance(s, (ast.Assign, ast.AnnAssign)) else None
        if isinstance(value, (ast.Dict, ast.List, ast.Set)) or (
            isinstance(value, ast.Call) and isinstance(value.func, ast.Name)
            and value.func.id in ("dict", "list", "set", "OrderedDict", "defaultdict")
        ):
            targets = s.targets if isinstance(s, ast.Assign) else [s.target]  # type: ignore[union-attr]
            mutable |= {t.id for t in targets if isinstance(t, ast.Name)}
    for name in sorted(consulting):
        for n in ast.walk(funcs[name]):
            hit = None
            if isinstance(n, (ast.Assign, ast.AugAssign, ast.Delete)):
                for t in getattr(n, "targets", None) or [getattr(n, "target", None)]:
                    if isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name):
                        hit = hit or (t.value.id if t.value.id in mutable else None)
            elif (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                  and n.func.attr in _MUTATORS and isinstance(n.func.value, ast.Name)
                  and n.func.value.id in mutable):
                hit = n.func.value.id
            if hit:
                out.append(f"{n.lineno}: {name} keeps catalog answers in module-global {hit}")
    return out


def test_judging_modules_ask_the_active_catalog() -> None:
    # rules/judge.py alone builds the default Rules from the shipped catalog and makes a
    # Rules' catalog the active one
    paths = [p for unit in JUDGING for p in sorted((SRC / unit).rglob("*.py"))
             if p != SRC / "rules" / "judge.py"]
    assert len(paths) > 50
    bad = {str(p.relative_to(SRC)): v for p in paths if (v := catalog_violations(p))}
    assert bad == {}


@pytest.mark.parametrize(("source", "expected"), [
    ("from cuwheel.knowledge import catalog\n", "imports the catalog module"),
    ("import cuwheel.knowledge.catalog\n", "imports the catalog module"),
    ("from cuwheel.knowledge.catalog import find_library, Component\n",
     "imports the lookup find_library"),
    ("from cuwheel.knowledge.catalog import load_catalog\n", "imports the lookup load_catalog"),
    ("import functools\nfrom cuwheel.knowledge.active import active_catalog\n"
     "@functools.lru_cache(maxsize=8)\ndef tegra(a):\n    return active_catalog().is_tegra(a)\n",
     "tegra caches catalog answers (lru_cache)"),
    ("from cuwheel.knowledge.active import active_catalog\n_SEEN = {}\n"
     "def _rel(v):\n    return active_catalog().release(v)\n"
     "def first(v):\n    _SEEN[v] = _rel(v)\n    return _SEEN[v]\n",
     "first keeps catalog answers in module-global _SEEN"),
    ("from cuwheel.knowledge import catalog\nimport functools\n@functools.cache\n"
     "def first(v):\n    return catalog.release(v)\n", "first caches catalog answers (cache)"),
    ("from cuwheel.knowledge.active import active_catalog\n_SEEN: dict = {}\n"
     "def first(v):\n    return _SEEN.setdefault(v, active_catalog().release(v))\n",
     "first keeps catalog answers in module-global _SEEN"),
])
def test_a_planted_catalog_violation_is_found(tmp_path: Path, source: str, expected: str) -> None:
    path = tmp_path / "planted.py"
    path.write_text(source, "utf-8")
    found = catalog_violations(path)
    assert any(expected in v for v in found), found


def test_asking_the_active_catalog_is_no_violation(tmp_path: Path) -> None:
    path = tmp_path / "fine.py"
    path.write_text("from cuwheel.knowledge.catalog import Component\n"
                    "from cuwheel.knowledge.active import active_catalog\n"
                    "_NAMES = {'a': 1}\n"
                    "def find(n):\n    return active_catalog().find_library(n)\n", "utf-8")
    assert catalog_violations(path) == []
def test_fix_texts_have_no_second_copy() -> None:
    # each fix text of codes.toml (its words before the first field) is in no module
    from cuwheel.checks.codes import CODES

    fixes = [c.fix.split("{")[0].strip(" ,") for c in CODES.values() if c.fix]
    assert len(fixes) >= 9
    copies = [(f, p.relative_to(SRC).as_posix()) for p in SRC.rglob("*.py")
              for f in fixes if len(f) > 20 and f in p.read_text("utf-8")]
    assert copies == []


# -- one index of data files (issue 35) -----------------------------------------------------

DATA_INDEX = "_datafiles.py"


def data_file_literals(root: Path, names: Iterable[str]) -> list[str]:
    """``module:line: 'name'`` for each string (not a docstring) outside the index that is
    a data file's name, a schema's name or the data folder handed to a path join."""
    import re

    names = set(names)
    out = []
    for path in sorted(root.rglob("*.py")):
        if path.relative_to(root).as_posix() == DATA_INDEX:
            continue
        tree = ast.parse(path.read_text("utf-8"))
        docs = {id(n.body[0].value) for n in ast.walk(tree)
                if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                and n.body and isinstance(n.body[0], ast.Expr)}
        folder_args = {id(a) for n in ast.walk(tree) if isinstance(n, ast.Call)
                       and isinstance(n.func, ast.Attribute) and n.func.attr in ("joinpath", "join")
                       for a in n.args}
        for n in ast.walk(tree):
            if not isinstance(n, ast.Constant) or not isinstance(n.value, str) or id(n) in docs:
                continue
            v = n.value
            if v in names or re.fullmatch(r"[\w.-]*\.schema\.json", v) or (
                    v == "data" and id(n) in folder_args):
                out.append(f"{path.relative_to(root).as_posix()}:{n.lineno}: {v!r}")
    return out


def test_data_file_names_live_in_the_index() -> None:
    import os

    from cuwheel import _datafiles

    shipped = set(os.listdir(SRC / "data"))
    assert data_file_literals(SRC, shipped) == []
    # the index names every shipped file (the schemas by their documents)
    schemas = {n for n in shipped if n.endswith(".schema.json")}
    assert shipped - schemas == set(_datafiles.ALL)
    from cuwheel._envelope import SCHEMAS

    assert {_datafiles.schema_name(d) for d in SCHEMAS} | {_datafiles.CONFIG_SCHEMA} == schemas


def test_a_data_file_literal_is_found(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text(
        '"""Reads gpus.toml."""\nA = "gpus.toml"\nB = f.joinpath("data")\nC = {"data": 1}\n'
        'D = "x.schema.json"\n', "utf-8")
    assert sorted(data_file_literals(tmp_path, {"gpus.toml"})) == [
        "m.py:2: 'gpus.toml'", "m.py:3: 'data'", "m.py:5: 'x.schema.json'"]


# -- skips only for what CI cannot install, named in one place (issue 35) -------------------

TESTS = Path(__file__).resolve().parent
_SKIPS = ("importorskip", "skipif", "skip")


def skip_calls(source: str) -> list[int]:
    """Lines of ``pytest.skip(...)``, ``pytest.importorskip(...)``, ``pytest.mark.skipif``
    and ``pytest.mark.skip`` in ``source``."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and node.attr in _SKIPS:
            base = node.value
            name = (base.id if isinstance(base, ast.Name)
                    else base.attr if isinstance(base, ast.Attribute) else "")
            if name in ("pytest", "mark"):
                out.append(node.lineno)
    return out


def test_skips_are_named_in_one_place() -> None:
    found = {p.name: lines for p in sorted(TESTS.glob("*.py"))
             if p.name != "_absent.py" and (lines := skip_calls(p.read_text("utf-8")))}
    assert found == {}, "skip through tests/_absent.py (ABSENT, extra, cuobjdump)"


def test_what_ci_installs_is_never_a_reason_to_skip() -> None:
    import re

    import _absent
    from cuwheel._toml import tomllib

    extras = tomllib.loads((TESTS.parent / "pyproject.toml").read_text("utf-8"))["project"][
        "optional-dependencies"]
    names = {re.split(r"[\s\[<>=;!~]", r, maxsplit=1)[0].lower()
             for e in _absent.CI_EXTRAS for r in extras[e]}
    assert "pefile" in names and "nvidia-cuda-cuobjdump" in names
    assert not names & set(_absent.ABSENT)


def test_a_skip_outside_the_index_is_found() -> None:
    src = ('import pytest\nm = pytest.mark.skipif(True, reason="x")\n'
           'def t():\n    pytest.importorskip("pefile")\n    pytest.skip("y")\n'
           'ok = _absent.skip_without("gcc", True)\n')
    assert sorted(skip_calls(src)) == [2, 4, 5]


def test_a_missing_extra_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib

    import _absent

    def missing(name: str) -> object:
        raise ImportError(f"No module named {name!r}")

    monkeypatch.setattr(importlib, "import_module", missing)
    with pytest.raises(pytest.fail.Exception, match="pefile is in the extras CI installs"):
        _absent.extra("pefile")
    with pytest.raises(KeyError, match="in no extra"):
        _absent.extra("numpy")


# -- every exception in cuwheel.errors (docs/api.md) ----------------------------------------

def exception_classes(root: Path) -> list[str]:
    """``module: Class`` for each public class outside errors.py that derives from an
    exception or warning (a base named ``*Error``, ``*Exception``, ``*Warning``, or an
    errors.py class), read with ast."""
    from cuwheel import errors

    known = {n for n in dir(errors) if isinstance(getattr(errors, n), type)
             and issubclass(getattr(errors, n), BaseException)}
    out = []
    for path in sorted(root.rglob("*.py")):
        if path.relative_to(root).as_posix() == "errors.py":
            continue
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if not isinstance(node, ast.ClassDef) or node.name.startswith("_"):
                continue
            bases = [b.id if isinstance(b, ast.Name) else b.attr if isinstance(b, ast.Attribute)
                     else "" for b in node.bases]
            if any(b in known or b.endswith(("Error", "Exception", "Warning")) for b in bases):
                out.append(f"{path.relative_to(root).as_posix()}: {node.name}")
    return out


def test_every_exception_is_defined_in_errors(tmp_path: Path) -> None:
    assert exception_classes(SRC) == []
    (tmp_path / "m.py").write_text("class A(ValueError): ...\nclass _B(Exception): ...\n"
                                   "class C(InputError): ...\nclass D: ...\n", "utf-8")
    assert exception_classes(tmp_path) == ["m.py: A", "m.py: C"]
