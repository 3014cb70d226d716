"""ENV009: an installed extension imports torch symbols that the installed torch does not
export (rules/torch_abi.py decides which of its symbols are torch's).  Where the installed
release is one of the data's (data/torch_abi.toml), the answer is the data's; otherwise
(a nightly, a +cuXYZ build PyPI does not carry, a source build) the same symbols are
looked up in the installed torch's own libraries, as read from the environment."""

from __future__ import annotations

import os

from cuwheel.doctor.environment import Distribution, Environment
from cuwheel.model.inventory import Binary
from cuwheel.rules.torch_abi import (
    TORCH,
    loadable_span,
    requirement_for,
    resolve_torch_abi,
    torch_symbols,
)

__all__ = ["torch_abi_findings"]


def _installed(env: Environment) -> tuple[str, dict[str, set[str]]] | None:
    """The installed torch's public version and its libraries' exports (file name, lower
    case -> names; "" -> every library's, the scope an ELF import is resolved in)."""
    d = env.distribution(TORCH)
    if d is None:
        return None
    version = (env.torch_version or d.version).split("+")[0]
    exports: dict[str, set[str]] = {"": set()}
    for b in d.binaries:
        exports[os.path.basename(b.path).lower()] = set(b.exported)
        exports[""].update(b.exported)
    return version, exports


def _lacks(b: Binary, exports: dict[str, set[str]]) -> list[str]:
    """The torch symbols ``b`` imports that the installed torch's libraries do not export."""
    got = torch_symbols(b)
    if got is None:
        return []
    found, unknown, dlls = got
    names = [n for n, _ in found] + unknown
    if b.format == "pe":
        out = []
        for u in b.undefined:
            lib = (u.library or "").lower()
            if (u.name in names or u.library in dlls) and u.name not in exports.get(lib, set()):
                out.append(u.name)
        return out
    return [n for n in names if n not in exports[""]]


def torch_abi_findings(
    d: Distribution, env: Environment
) -> list[tuple[str, str, str, str | None]]:
    """(library path, message, error text, the precise fix or None) for each binary of
    ``d`` that does not load with the installed torch."""
    if d.name.lower() == TORCH:
        return []
    inst = _installed(env)
    if inst is None:
        return []  # no torch: the loader's own findings say what is missing
    version, exports = inst
    out = []
    for b in d.binaries:
        ans = resolve_torch_abi(b)
        if ans is None or not (ans.imported or ans.unknown_count or ans.cuda_dlls):
            continue
        known = [r.version for r in ans.considered]
        if version in known:
            if version in ans.versions:
                continue
            missing = ans.lacking.get(version, "?")
            how = f"torch {version}'s libraries (data/torch_abi.toml) do not export {missing}"
        else:
            lacking = _lacks(b, exports)
            if not lacking:
                continue
            missing = lacking[0]
            how = (f"the installed torch {env.torch_version or version} does not export "
                   f"{missing} ({len(lacking)} of them missing)")
        fix = requirement_for(ans.versions, known)
        loads = (f"the PyPI releases that define them all: {loadable_span(ans.versions)}"
                 if ans.versions else "no PyPI torch release defines them all")
        out.append((
            b.path,
            f"{os.path.basename(b.path)} imports {ans.imported} symbols of torch's libraries; "
            f"{how}; {loads}",
            f"undefined symbol: {missing}",
            f"pip install '{fix}'" if fix else None,  # None: codes.toml's ENV009 fix
        ))
    return out
