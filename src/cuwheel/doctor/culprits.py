"""Which installed distribution causes a pasted error: the causes of :mod:`.explain` read
against an environment (:func:`cuwheel.doctor.read_environment`) and, where a GPU or driver
is given, against doctor's diagnosis of it (:func:`cuwheel.doctor.diagnose`).

The binaries' own facts decide: which distribution's binaries need the library the text
says is missing (DT_NEEDED / PE imports), ask for the symbol or symbol version it names,
own a file the text names; which ship the library at all; which doctor finds without code
for the GPU or needing a newer driver.  docs/doctor.md#error-texts.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from cuwheel.doctor.environment import Distribution, Environment
from cuwheel.doctor.explain import Cause, TextDiagnosis
from cuwheel.doctor.facts import Fact

if TYPE_CHECKING:
    from cuwheel.doctor.diagnose import Diagnosis

__all__ = ["NEEDS_TARGET", "Blame", "blame"]

# the causes only doctor's diagnosis on a GPU + driver can pin on a distribution
NEEDS_TARGET = frozenset({"no-kernel-image", "ptx-jit-failed", "driver-too-old",
                          "forward-compat", "ptx-too-new"})

# the doctor findings each cause's error comes from (docs/checks.md#env)
_FINDINGS = {
    "no-kernel-image": ("ENV001",),
    "ptx-jit-failed": ("ENV001",),
    "driver-too-old": ("ENV002",),
    "forward-compat": ("ENV002",),
    "ptx-too-new": ("ENV003",),
    "library-missing": ("ENV004", "ENV005", "ENV010"),
    "nvjitlink-skew": ("ENV006", "ENV007"),
    "undefined-symbol": ("ENV006", "ENV007"),
    "extension-mismatch": ("ENV007",),
}


@dataclass(frozen=True)
class Blame:
    """One distribution's part in one cause."""

    cause: str  # the cause id
    distribution: str  # "name version"
    role: str  # "culprit": its binaries raise the error; "supplier": it ships the fix
    reason: str


def _base(name: str) -> str:
    return name.replace("\\", "/").rsplit("/", 1)[-1]


def _needs(d: Distribution, library: str) -> list[str]:
    lib = _base(library).lower()
    return [os.path.basename(b.path) for b in d.binaries if lib in (n.lower() for n in b.needed)]


def _asks(d: Distribution, fact: Fact) -> list[str]:
    def asks(b: Any) -> bool:
        if fact.kind == "symbol":
            return any(u.name == fact.value for u in b.undefined)
        return any(fact.value in v.versions for v in b.version_needs)

    return [os.path.basename(b.path) for b in d.binaries if asks(b)]


def _named_files(env: Environment, facts: Iterable[Fact]) -> dict[str, Distribution]:
    """Distributions owning a file the text quotes by path (``.../torch_cluster/x.so``)."""
    out: dict[str, Distribution] = {}
    for f in facts:
        for word in f.quote.replace("'", " ").replace('"', " ").split():
            word = word.rstrip(":,;)")
            if "/" not in word and "\\" not in word:
                continue
            tail = "/".join(word.replace("\\", "/").split("/")[-2:])
            for d in env.distributions:
                if any(p.replace("\\", "/").endswith("/" + tail) for p in d.files):
                    out.setdefault(d.label, d)
    return out


def _components(library: str) -> tuple[Any, ...]:
    from cuwheel.knowledge.active import active_catalog

    return active_catalog().find_library(library)


def _by_name(component: str) -> list[Any]:
    from cuwheel.knowledge.active import active_catalog

    return [c for c in active_catalog().components if c.name == component]


def _one(cause: Cause, facts: tuple[Fact, ...], env: Environment,
         diagnosis: Diagnosis | None) -> list[Blame]:
    out: list[Blame] = []
    seen: set[tuple[str, str]] = set()

    def add(d: str, role: str, reason: str) -> None:
        if (d, role) not in seen:
            seen.add((d, role))
            out.append(Blame(cause.id, d, role, reason))

    for label in _named_files(env, cause.facts):
        add(label, "culprit", "the text names its file")
    tools = {t.value for t in facts if t.kind == "tool"} - {"loader", "pip", "ptxas", "nvcc"}
    for d in env.distributions:  # the package whose own message the text is
        key = d.name.lower().replace("_", "-")
        if any(key == t or key.startswith(t + "-") for t in tools):
            add(d.label, "culprit", "its message is the text's")
    majors: set[int] = set()
    for f in cause.facts:
        m = re.search(r"while importing ([\w.]{1,100})", f.quote) if f.kind == "symptom" else None
        if m:  # Windows: "DLL load failed while importing _C": the module's distribution
            mod = m[1].rsplit(".", 1)[-1] + "."
            for d in env.distributions:
                hit = next((p for p in d.files if os.path.basename(p).startswith(mod)
                            and p.lower().endswith((".pyd", ".so"))), None)
                if hit:
                    add(d.label, "culprit", f"{os.path.basename(hit)} failed to import")
        for d in env.distributions:
            if f.kind == "component":  # "Unable to load cuSPARSE": whose binaries link it
                for b in d.binaries:
                    for n in b.needed:
                        for c in _components(n):
                            if c.name == f.value:
                                majors.add(c.major)
                                add(d.label, "culprit", f"{os.path.basename(b.path)} needs {n}")
            elif f.kind == "library":
                files = _needs(d, f.value)
                if files:
                    add(d.label, "culprit", f"{files[0]} needs {f.value}")
            elif f.kind in ("symbol", "version-node"):
                files = _asks(d, f)
                if files:
                    add(d.label, "culprit", f"{files[0]} asks for {f.value}")
    installed = {d.name.lower().replace("_", "-"): d for d in env.distributions}
    for req in cause.install:
        name = req.split("==")[0].lower()
        if majors and not any(c.distribution.lower() == name and c.major in majors
                              for f in cause.facts if f.kind == "component"
                              for c in _by_name(f.value)):
            continue  # the culprits link another major's copy
        have = installed.get(name)
        if have is None:
            add(name, "supplier", "not installed: pip install " + req)
        else:
            add(have.label, "supplier", "installed: its library is not on the loader's path")
    if cause.id in ("torch-cpu-build", "torchvision-mismatch") and env.torch_version:
        cuda = ("CUDA {}.{}".format(*env.torch_cuda) if env.torch_cuda else "no CUDA (a CPU build)")
        add(f"torch {env.torch_version}", "culprit", f"torch.version.cuda: {cuda}")
        for d in env.distributions:
            if d.name.lower() == "torchvision" and cause.id == "torchvision-mismatch":
                add(d.label, "culprit", f"installed with torch {env.torch_version}")
    if diagnosis is not None:
        for t in diagnosis.targets:
            for r in t.distributions:
                for fd in r.findings:
                    if fd.code in _FINDINGS.get(cause.id, ()):
                        add(f"{r.name} {r.version}", "culprit", f"{fd.code} on {t.target.label}: "
                            f"{fd.message}")
    return out


def blame(td: TextDiagnosis, env: Environment,
          diagnosis: Diagnosis | None = None) -> tuple[Blame, ...]:
    """The distributions of ``env`` behind each packaging cause of ``td``, culprits first."""
    out = [b for c in td.causes if c.packaging for b in _one(c, td.facts, env, diagnosis)]
    out.sort(key=lambda b: b.role != "culprit")
    return tuple(out)
