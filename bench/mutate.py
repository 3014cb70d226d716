"""A hand-made mutation pass over the loading rules, the readers' limits and the checks.

Each mutant is one deliberate one-line bug: (file, an exact substring of the original
line, its replacement).  For each, the package is copied to a scratch directory, the
substring replaced there (first found in the named file; if that file is gone or no
longer holds the line, anywhere in the package where it occurs exactly once), and a
targeted set of test files run against the copy.  A failing run kills the mutant; a run
that passes lets it survive; a line found nowhere makes the mutant "not applicable".

    PYTHONPATH=src python bench/mutate.py [--only ID,ID] [--out FILE]

Each run is bounded by CPU time (``--cpu``, 90 s by default): a mutant that makes the
tests loop counts as killed (timeout).
"""

# ruff: noqa: E501  (the mutants quote whole source lines)
from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PKG = ROOT / "src" / "cuwheel"

# Test files per area; files missing from the tree are left out, so later tests join
# the pass by being named here.
RULES = [
    "test_compat.py", "test_rollup.py", "test_rules_agreement.py", "test_compat_probe.py",
    "test_library_truth.py", "test_loading_facts.py", "test_limits.py", "test_shapes.py",
    "test_thresholds.py",
]
READ = ["test_anomalies.py", "test_limits.py", "test_stream_shortcuts.py", "test_corrupt.py"]
CHECKS = [
    "test_checks.py", "test_platform_tags.py", "test_check_deps.py", "test_check_audit.py",
    "test_rules_agreement.py", "test_loading_facts.py", "test_limits.py", "test_check_seed.py",
]  # fmt: skip
# issue 30's judgement; files missing from a tree (an older checkout) are left out
JUDGE = [
    "test_judge_mutants.py", "test_kernels.py", "test_kernel_rule.py", "test_core_library.py",
    "test_static_runtime.py",
    "test_loaders_versioned.py", "test_rollup.py", "test_compat.py", "test_shapes.py",
    "test_library_truth.py", "test_check_deps.py", "test_anomalies.py", "test_corrupt.py",
    "test_doctor.py",
]

HOST = ["test_hostrefs.py", "test_family_truth.py", "test_curand_truth.py", "test_doctor.py"]


@dataclass(frozen=True)
class Mutant:
    id: str
    file: str  # relative to src/cuwheel
    old: str
    new: str
    tests: tuple[str, ...]
    why: str


def m(id: str, file: str, old: str, new: str, tests: list[str], why: str) -> Mutant:
    return Mutant(id, file, old, new, tuple(tests), why)


MUTANTS = [
    # -- rules/loading.py: CUDA's loading rules
    m("L1", "rules/loading.py", "code.major == device.major and code.minor < device.minor",
      "code.major == device.major and code.minor <= device.minor", RULES,
      "compatible SASS: minor off-by-one (unreachable after the exact match: equivalent?)"),
    m("L2", "rules/loading.py", "code.major == device.major and code.minor < device.minor",
      "code.minor < device.minor", RULES, "compatible SASS across majors (dropped condition)"),
    m("L3", "rules/loading.py", "code.major == device.major and code.minor < device.minor",
      "code.major == device.major and code.minor > device.minor", RULES,
      "sm_XY runs on lower minors (swapped comparison)"),
    m("L4", "rules/loading.py", "    if device.number >= code.number:\n",
      "    if device.number > code.number:\n", RULES, "PTX JIT to its own CC refused"),
    m("L5", "rules/loading.py", "    if device.number >= code.number:\n",
      "    if device.major >= code.major:\n", RULES, "PTX JIT to a lower minor of its major"),
    m("L6", "rules/loading.py", 'if code.variant == "a":\n        return SassFit.NONE,',
      'if code.variant == "x":\n        return SassFit.NONE,', RULES,
      "an 'a' cubin treated as plain (runs on later minors)"),
    m("L7", "rules/loading.py", 'if code.variant == "f" and device in family_members(code):',
      'if code.variant == "f" and device.major == code.major:', RULES,
      "family = same major (sm_100f on 10.1 / 10.x)"),
    m("L8", "rules/loading.py", "    if cuda >= rel.version:\n", "    if cuda > rel.version:\n",
      RULES, "PTX ISA gate: a driver of exactly the ISA's release refused"),
    m("L9", "rules/loading.py", "if rel is None or cuda is None or cuda >= rel.version:",
      "if rel is None or cuda is None or cuda > rel.version:", RULES,
      "zstd gate off-by-one (12.4 driver refused)"),
    m("L10", "rules/loading.py", "e.kind is CodeKind.SASS and e.uncompressed_size <= largest",
      "e.kind is CodeKind.SASS and e.uncompressed_size < largest", RULES,
      "stub cubin size limit off-by-one"),
    m("L11", "rules/loading.py", "    if len(named) < 2:\n        return None",
      "    if len(named) < 1:\n        return None", RULES,
      "a lone container taken for the device-link stub"),
    m("L12", "rules/loading.py",
      "(Verdict.NATIVE if level is SassFit.NATIVE else Verdict.COMPATIBLE)",
      "(Verdict.COMPATIBLE if level is SassFit.NATIVE else Verdict.NATIVE)", RULES,
      "native and compatible swapped"),
    m("L13", "rules/loading.py", "(level, e.arch.number) > (best_sass[0], best_sass[1].arch.number)",
      "(level, e.arch.number) < (best_sass[0], best_sass[1].arch.number)", RULES,
      "the worst fitting cubin chosen"),
    m("L14", "rules/loading.py", "if ok and (jit is None or e.arch.number > jit[0].arch.number):",
      "if ok and (jit is None or e.arch.number < jit[0].arch.number):", RULES,
      "the lowest PTX chosen for JIT"),
    m("L15", "rules/loading.py", 'if any(e.kind is CodeKind.LTOIR for e in container.entries):\n',
      'if False:\n', RULES, "LTO-IR containers counted as modules"),
    # -- rules/runtime.py
    m("R1", "rules/runtime.py", "return h[0] >= f[0] if len(h) == 1 else h >= f",
      "return h[0] >= f[0] if len(h) == 1 else h > f", RULES,
      "a driver exactly at the floor refused"),
    m("R2", "rules/runtime.py", "return h[0] >= f[0] if len(h) == 1 else h >= f",
      "return h[0] > f[0] if len(h) == 1 else h >= f", RULES, "bare branch off-by-one"),
    # -- rules/evidence.py thresholds
    # the measured thresholds live in data/thresholds.toml (each value appears once there)
    m("E1", "data/thresholds.toml", "value = 8\n", "value = 9\n", RULES,
      "dispatch threshold +1"),
    m("E2", "data/thresholds.toml", "value = 8\n", "value = 7\n", RULES,
      "dispatch threshold -1"),
    m("E3", "rules/evidence.py", "return len(_sass_sets(binary)) >= DISPATCH_ARCH_SETS",
      "return len(_sass_sets(binary)) > DISPATCH_ARCH_SETS", RULES,
      "dispatch comparison off-by-one"),
    m("E4", "rules/evidence.py", "if firsts[number] >= FLOOR_SHARE * total:",
      "if firsts[number] > FLOOR_SHARE * total:", RULES, "floor share comparison off-by-one"),
    m("E5", "data/thresholds.toml", "value = 0.1\n", "value = 0.5\n", RULES,
      "floor share raised"),
    m("E6", "rules/evidence.py", "return archs is not None and len(archs) > 1 and device.base in archs",
      "return archs is not None and len(archs) > 0 and device.base in archs", RULES,
      "a one-architecture build taken for a per-architecture one"),
    # -- rules/rollup.py
    m("U1", "rules/rollup.py", "if any(a.number > device.number for a in plain):",
      "if any(a.number >= device.number for a in plain):", RULES,
      "gap 'newer' off-by-one"),
    m("U2", "rules/rollup.py", "if newer and floor is not None and device.number < floor.number:",
      "if newer and floor is not None and device.number <= floor.number:", RULES,
      "below the build floor off-by-one"),
    m("U3", "rules/rollup.py", "if not loads or not others or strict:",
      "if not loads or strict:", RULES, "mixed container verdicts not rolled up"),
    # -- read/ limits
    m("D1", "read/bytes/tables.py", "        if len(kept) > MAX_ANOMALIES:",
      "        if len(kept) >= MAX_ANOMALIES:", READ, "anomalies kept: one too few"),
    m("D2", "read/bytes/tables.py", "MAX_ANOMALIES = 64", "MAX_ANOMALIES = 65", READ,
      "anomalies kept: one too many"),
    m("D3", "read/sources/wheelmeta.py", 'and len(tags) < MAX_WHEEL_TAGS:',
      'and len(tags) <= MAX_WHEEL_TAGS:', READ, "wheel tags: one too many"),
    m("D4", "read/sources/wheelmeta.py", "MAX_WHEEL_TAGS = 10_000", "MAX_WHEEL_TAGS = 9_999", READ,
      "wheel tags: one too few"),
    m("D5", "read/bytes/tables.py", "MAX_NAME = 4096", "MAX_NAME = 4095", READ,
      "a decoded name cut one byte short"),
    m("D6", "read/binary/elf.py", "if len(self._needed) < MAX_NEEDED:", "if len(self._needed) <= MAX_NEEDED:",
      READ, "DT_NEEDED: one entry too many"),
    m("D7", "read/binary/elfsyms.py", "if entries + len(parts) > MAX_PATH_ENTRIES:",
      "if entries + len(parts) >= MAX_PATH_ENTRIES:", READ, "RUNPATH entries: one too few"),
    m("D8", "read/binary/elfsyms.py", "MAX_PATH_LIST = 64 << 10", "MAX_PATH_LIST = (64 << 10) - 1", READ,
      "a RUNPATH string cut one byte short"),
    m("D9", "_json.py", "        if depth > limit:", "        if depth >= limit:", READ,
      "JSON nesting: one level too few"),
    m("D10", "_json.py", "def _int(text: str) -> int:\n    if len(text) > MAX_DIGITS:",
      "def _int(text: str) -> int:\n    if len(text) >= MAX_DIGITS:", READ,
      "JSON numbers: one digit too few"),
    m("D11", "toolkit/lock.py", "MAX_LOCK = 4 << 20", "MAX_LOCK = (4 << 20) - 1", READ,
      "lockfile size cap one byte short"),
    m("D12", "toolkit/manifest.py", "MAX_MANIFEST = 16 << 20", "MAX_MANIFEST = (16 << 20) + 1",
      READ, "manifest size cap one byte long"),
    m("D13", "read/sources/wheelmeta.py", "MAX_WHEEL_FILE = 1 << 20", "MAX_WHEEL_FILE = (1 << 20) - 1",
      READ, "WHEEL file size cap one byte short"),
    # -- checks/
    m("C1", "checks/devicecode.py", 'return Severity.ERROR if ctx.policy.device_code == "strict" else Severity.WARNING',
      'return Severity.WARNING if ctx.policy.device_code == "strict" else Severity.ERROR', CHECKS,
      "device-code severity swapped"),
    m("C2", "checks/devicecode.py", "if arch.variant and arch.base in bases and ctx.policy.allow_variants:",
      "if arch.variant and ctx.policy.allow_variants:", CHECKS,
      "a variant cubin accepted without its base claimed"),
    m("C3", "checks/platform_tags.py", "if tag.family == \"manylinux\" and v.startswith(\"GLIBC_\") and _glibc_ok(v, tag.libc):",
      "if v.startswith(\"GLIBC_\") and _glibc_ok(v, tag.libc):", CHECKS,
      "glibc versions accepted under a musllinux tag"),
    m("C4", "checks/platform_tags.py", "return m is not None and (int(m.group(1)), int(m.group(2))) <= libc",
      "return m is not None and (int(m.group(1)), int(m.group(2))) < libc", CHECKS,
      "a symbol of exactly the tag's glibc refused"),
    m("C5", "checks/platform_tags.py", "if m is not None and tag.libc < m.glibc:",
      "if m is not None and tag.libc <= m.glibc:", CHECKS,
      "a library allowed at exactly the tag's glibc flagged"),
    m("C6", "checks/dependencies.py", "if unused and len(unused) == len({c.name for c in d.components}):",
      "if unused:", CHECKS, "partly used dependency reported as unused"),
    m("C7", "checks/dependencies.py", 'if not any(c.major == major for c in comps) or ctx.ships(name) is not None:',
      'if not any(c.major == major for c in comps):', CHECKS,
      "a shipped library still asked for as a dependency"),
    m("C8", "checks/driver.py", "if symbols <= exported and any(n.startswith(stem) for n in names):",
      "if symbols <= exported or any(n.startswith(stem) for n in names):", CHECKS,
      "a renamed driver library recognised by name alone"),
    # -- issue 30: library / wheel judgement (J: the survivors; K: the kernel rule,
    # the core library, the static runtime, versioned loaders, the train's own pin)
    m("J1", "rules/rollup.py", "best = min(running, key=lambda x: x[1].verdict.rank)",
      "best = max(running, key=lambda x: x[1].verdict.rank)", JUDGE,
      "a group reports its worst running variant instead of its best"),
    m("J2", "knowledge/loaders.py", "        return max(lower)\n", "        return min(lower)\n",
      JUDGE, "the newest variant a CUDA version may load becomes the oldest"),
    m("J3", "rules/library.py", "plain = [a for a in code if not a.variant and is_tegra(a) == is_tegra(device)]",
      "plain = [a for a in code if not a.variant]", JUDGE,
      "the Tegra / desktop divide dropped in library evidence"),
    m("J4", "rules/trains.py", "return max(found.items(), key=lambda kv: (kv[1], kv[0].version))[0], None",
      "return min(found.items(), key=lambda kv: (kv[1], kv[0].version))[0], None", JUDGE,
      "the least common release chosen as a wheel's train"),
    m("J5", "rules/kernels.py", "if all(e.kind is CodeKind.SASS and e.kernels is False for e in c.entries) and (",
      "if False and all(e.kind is CodeKind.SASS and e.kernels is False for e in c.entries) and (",
      JUDGE, "kernel-less containers counted"),
    m("J6", "read/device/fatbin.py", "if len(out) == want == uncompressed_size and reader.read(1):",
      "if False and len(out) == want == uncompressed_size and reader.read(1):", JUDGE + READ,
      "the zstd over-inflation check off"),
    m("J7", "read/device/containers.py", "        if off < last_end:\n", "        if off < 0:\n", JUDGE + READ,
      "overlapping containers kept"),
    m("K1", "rules/kernels.py", "        if not absent:\n", "        if len(absent) <= 1:\n", JUDGE,
      "a container with one kernel family found nowhere else taken for other GPUs"),
    m("K2", "rules/kernels.py", "        elif blind:\n", "        elif False:\n", JUDGE,
      "missing code named although a loading container's kernels are unknown"),
    m("K3", "model/kernels.py", 'elif c in "IE" and parts:', 'elif c in "E" and parts:', JUDGE,
      "template arguments kept in the family (each instantiation its own family)"),
    m("K4", "read/device/cubin.py", "if st_info & 0xF == _STT_FUNC and st_other & _STO_CUDA_ENTRY:",
      "if st_info & 0xF == _STT_FUNC:", JUDGE, "device functions read as entry kernels"),
    m("K5", "rules/evidence.py", "if sum(1 for u in users if d in reach[u]) >= 2",
      "if sum(1 for u in users if d in reach[u]) >= 1", JUDGE,
      "a library one other links taken for the core library"),
    m("K6", "rules/rollup.py", "lv.path in static and lv.verdict is Verdict.DRIVER",
      "lv.path in static and lv.verdict is Verdict.NO_CODE", JUDGE,
      "a static runtime's driver floor stops only its own module"),
    m("K7", "knowledge/loaders.py", '    if rule == "exact":\n', '    if rule == "never":\n', JUDGE,
      "bitsandbytes before 0.50.0 given the later fallback"),
    m("K8", "rules/trains.py", 'return (*built, *wheel.requires_dist, f"{wheel.name}=={wheel.version}")',
      "return (*built, *wheel.requires_dist)", JUDGE + CHECKS,
      "NVIDIA's runtime wheel judged by its soname (cu135), not its own release"),
    m("K9", "rules/library.py", "elif knew and per_architecture_build(binary, device) and not split.unique:",
      "elif knew and per_architecture_build(binary, device):", JUDGE,
      "a one-architecture-per-container shape hides a kernel unique to another GPU"),
    # kernel-less containers and the doctor's evidence (stop 39)
    m("H1", "rules/kernels.py", "    if named and c.host_reads == ():\n", "    if named:\n", HOST,
      "a kernel-less container ignored although the host code reads its variables"),
    m("H2", "read/binary/hostrefs.py", "if others or shadow in pointed:",
      "if shadow in pointed:", HOST, "a second reference to a shadow not taken for a read"),
    m("H3", "read/binary/hostrefs.py", "if abs(x - lea) > _NEAR]", "if abs(x - lea) >= 0]", HOST,
      "the registration's own reference taken for a read"),
    m("H4", "read/device/ptx.py", "return entries, (None if entries else ptx_variables(text))",
      "return entries, None", HOST, "a kernel-less PTX text's variables not read"),
    m("H5", "doctor/diagnose.py", "    return v is Verdict.DEPENDS or (v.fails and v is not Verdict.PLATFORM)",
      "    return False", HOST, "doctor judges without kernel names where they decide"),
    m("H6", "doctor/loader.py", "        if feature and owner:\n", "        if False and feature and owner:\n",
      HOST, "an optional feature's missing library fails its package"),
    m("K10", "read/binary/elfsyms.py", "if f & 7 == 4 and off]", "if f & 7 == 4 and off and False]",
      JUDGE, "the read-only segment after the code not searched for a static runtime"),
]


def locate(mut: Mutant) -> Path | None:
    """The file to mutate: the named one if it holds the line, else the one file of the
    package where it occurs exactly once."""
    named = PKG / mut.file
    if named.exists() and named.read_text().count(mut.old) == 1:
        return named
    hits = [p for p in PKG.rglob("*.py") if p.read_text().count(mut.old) == 1]
    return hits[0] if len(hits) == 1 else None


def _limit(cpu: int) -> None:
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 5))


def run(mut: Mutant, cpu: int) -> tuple[str, float, str]:
    target = locate(mut)
    if target is None:
        return "not applicable", 0.0, "line not found"
    tests = [str(ROOT / "tests" / t) for t in dict.fromkeys(mut.tests)
             if (ROOT / "tests" / t).exists()]
    with tempfile.TemporaryDirectory(prefix="cuwheel-mut-") as tmp:
        src = Path(tmp) / "src"
        shutil.copytree(PKG, src / "cuwheel", ignore=shutil.ignore_patterns("__pycache__"))
        copy = src / "cuwheel" / target.relative_to(PKG)
        copy.write_text(copy.read_text().replace(mut.old, mut.new, 1))
        env = {**os.environ, "PYTHONPATH": str(src), "PYTHONDONTWRITEBYTECODE": "1"}
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        proc = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", *tests],
            cwd=ROOT, env=env, capture_output=True, text=True,
            preexec_fn=lambda: _limit(cpu), check=False,
        )
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    used = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if proc.returncode == 0:
        return "survived", used, ""
    if proc.returncode < 0:
        return "killed", used, f"signal {-proc.returncode} (CPU limit)"
    failed = [ln.split(" ")[1] for ln in proc.stdout.splitlines() if ln.startswith("FAILED ")]
    return "killed", used, failed[0] if failed else proc.stdout.strip().splitlines()[-1][:120]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default="", help="comma-separated mutant ids")
    ap.add_argument("--cpu", type=int, default=90, help="CPU seconds per mutant's test run")
    ap.add_argument("--out", type=Path, help="also write the table here")
    ap.add_argument("--root", type=Path, help="the checkout to mutate and test (default: "
                    "this one); an older one for a 'before' figure")
    args = ap.parse_args()
    if args.root is not None:
        global ROOT, PKG
        ROOT, PKG = args.root.resolve(), args.root.resolve() / "src" / "cuwheel"
    wanted = set(filter(None, args.only.split(",")))
    lines = [f"# cuwheel mutation pass, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}",
             f"# {'id':4} {'result':15} {'cpu_s':>6}  where / why / first failing test"]
    counts: dict[str, int] = {}
    for mut in MUTANTS:
        if wanted and mut.id not in wanted:
            continue
        result, used, detail = run(mut, args.cpu)
        counts[result] = counts.get(result, 0) + 1
        line = f"{mut.id:6} {result:15} {used:6.1f}  {mut.file}: {mut.why}" + (
            f"  [{detail}]" if detail else "")
        print(line, flush=True)
        lines.append(line)
    total = sum(counts.values())
    summary = (f"# killed {counts.get('killed', 0)} of {total}; survived "
               f"{counts.get('survived', 0)}; not applicable {counts.get('not applicable', 0)}")
    print(summary)
    lines.append(summary)
    if args.out:
        args.out.write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
