"""``cuwheel check``: verify built wheels against their release rows."""

from __future__ import annotations

import argparse
import os
import re
from typing import TYPE_CHECKING, Any

from cuwheel.cli._common import (
    CONFIG_HELP,
    add_output,
    check_output_path,
    error,
    project_config,
    write_output,
)
from cuwheel.errors import ConfigError, CuwheelError, Exit, InputError
from cuwheel.render import CHECK_FORMATS

if TYPE_CHECKING:
    from cuwheel.model.inventory import Source

__all__ = ["register"]


def register(subparsers: Any) -> None:
    p: argparse.ArgumentParser = subparsers.add_parser(
        "check",
        help="verify built wheels against their release row (device code, dependencies, tags)",
        description=(
            "Check each wheel against its release row: the row comes from --row, or from "
            "--train / the wheel's +cuXYZ local version and --platform / its platform tag. "
            "Policy comes from [tool.cuwheel.check] in pyproject.toml (or --config). Exit "
            "status: 0 clean, 1 findings at or above the failing severity, 2 unusable input "
            "or configuration."
        ),
    )
    p.add_argument(
        "wheels", nargs="*", metavar="WHEEL",
        help="wheel files, or directories whose *.whl to check",
    )  # fmt: skip
    p.add_argument(
        "--dist", action="append", default=[], metavar="NAME",
        help="an installed distribution, judged as the wheel it was installed from "
        "(repeatable; e.g. in cibuildwheel's test-command)",
    )  # fmt: skip
    p.add_argument(
        "--env", action="store_true",
        help="every installed distribution of this environment that holds a binary",
    )  # fmt: skip
    p.add_argument("--row", help="check against the row of this name")
    p.add_argument("--train", help="CUDA train: cu130, 13.0 or cpu (default: the wheel's +cuXYZ)")
    p.add_argument("--platform", help="row platform (default: from the wheel's platform tag)")
    p.add_argument("--config", help=CONFIG_HELP)
    p.add_argument(
        "--select",
        action="append",
        default=[],
        metavar="PREFIX",
        help="only codes starting with PREFIX (repeatable, comma-separated)",
    )
    p.add_argument(
        "--ignore",
        action="append",
        default=[],
        metavar="PREFIX",
        help="drop codes starting with PREFIX (repeatable, comma-separated)",
    )
    p.add_argument(
        "--fail-on",
        choices=("error", "warning"),
        help="severity at which the run fails (default: error)",
    )
    p.add_argument("--strict", action="store_true", help="same as --fail-on warning")
    p.add_argument(
        "--exit-zero", action="store_true",
        help="exit 0 even when findings fail the run (reports still say FAIL); unusable "
        "input or configuration still exits 2",
    )  # fmt: skip
    p.add_argument(
        "--device-code",
        choices=("strict", "warn"),
        help="warn: device-code coverage findings are warnings",
    )
    p.add_argument(
        "--accept-ptx-for-sass",
        action="store_true",
        default=None,
        help="PTX that JIT-compiles for a claimed architecture stands in for SASS",
    )
    p.add_argument(
        "--accept-missing-ptx",
        action="store_true",
        default=None,
        help="the row's PTX may be missing (reported as info)",
    )
    p.add_argument(
        "--archs",
        metavar="LIST",
        help="the architectures the wheel claims, in TORCH_CUDA_ARCH_LIST ('8.0;9.0+PTX'), "
        "CMake ('80-real;90') or nvcc ('-gencode arch=compute_90,code=sm_90') spelling",
    )
    p.add_argument(
        "--gpus",
        metavar="NAMES",
        help="the GPUs the wheel claims: 'V100,T4,A100' (catalog names, families, CCs) or "
        "'all' (every GPU the train builds for)",
    )
    p.add_argument(
        "--profile",
        help="check profile: audit (published wheels, the default) or release (exact arch "
        "lists; the built-in rows use it)",
    )
    p.add_argument(
        "--audit",
        action="store_true",
        help="judge the wheel without a row: each library by its own train",
    )
    p.add_argument(
        "--index",
        metavar="URL",
        help="look the wheel's requirements up on this PEP 691 simple index (DEP007: "
        "placeholder projects); without it cuwheel reads nothing from the network",
    )
    p.add_argument(
        "--artifact", action="append", default=[], metavar="FILE",
        help="an exported program to judge beside each wheel: AOTInductor .pt2, ExecuTorch "
        ".pte/.ptd, a Triton cache directory or a library (its CUDA train, GPUs, host ISA; "
        "ART codes; repeatable)",
    )  # fmt: skip
    p.add_argument(
        "--cpu-baseline", metavar="LEVEL",
        help="the CPU level the machines an --artifact runs on promise: baseline, "
        "x86-64-v2, x86-64-v3 or x86-64-v4 (host code needing more is ART004, an error; "
        "without it ART004 is a warning)",
    )  # fmt: skip
    add_output(p, CHECK_FORMATS)
    p.set_defaults(handler=_run, fits_itself=True)  # render/check.py wraps to the width


def _wheels(targets: list[str]) -> list[str]:
    """Wheel files, each directory replaced by its ``*.whl`` (sorted; not recursive)."""
    out: list[str] = []
    for t in targets:
        if os.path.isdir(t):
            found = sorted(
                os.path.join(t, n) for n in os.listdir(t)
                if n.endswith(".whl") and os.path.isfile(os.path.join(t, n))
            )  # fmt: skip
            if not found:
                raise InputError(t, "no wheel (*.whl) in this directory")
            out += found
        else:
            out.append(t)
    return out


def _with_binaries() -> list[str]:
    """The distributions of this environment with a file a binary could be (an ELF or PE
    extension): checking the pure-Python ones would only say that nothing was read."""
    from cuwheel.read.sources.installed import distributions

    names: dict[str, str] = {}
    for d in distributions():  # the one bounded reader (docs/trust.md)
        name = d.name
        if not name or name.lower() in names:
            continue
        if any(_BINARY.search(f) for f in d.files):
            names[name.lower()] = name
    return sorted(names.values(), key=str.lower)


_BINARY = re.compile(r"\.(so(\.[0-9.]+)?|pyd|dll|a|cubin|fatbin)$")


def _artifact(path: str) -> Source:
    """An artifact read whole; a path that is not there is bad input (exit 2)."""
    from cuwheel.read.artifacts.programs import read_artifact

    if not os.path.exists(path):
        raise InputError(path, "no such file or directory")
    return read_artifact(path)


def _run(args: argparse.Namespace) -> int:
    from cuwheel.checks import check_installed, check_wheel
    from cuwheel.checks.artifact import check_artifact
    from cuwheel.checks.claims import claim_from_archs
    from cuwheel.checks.codes import Severity
    from cuwheel.checks.findings import Unreadable
    from cuwheel.checks.policy import parse_prefixes
    from cuwheel.checks.rowpick import asked_row
    from cuwheel.cli._progress import progress
    from cuwheel.errors import IndexUnusable
    from cuwheel.render.check import render, text_block, text_table, unreadable_block

    if args.output:
        check_output_path(args.output)
    _refuse_contradictions(args)
    config = project_config(args)
    if not args.audit:
        asked_row(config.rows, row=args.row, train=args.train)
    problems: list[str] = []
    select = parse_prefixes(args.select, "--select", problems)
    ignore = parse_prefixes(args.ignore, "--ignore", problems)
    if problems:
        raise ConfigError(problems)
    fail_on = "warning" if args.strict else args.fail_on
    policy = config.check.with_options(
        select=select or None,
        ignore=(config.check.ignore + ignore) if ignore else None,
        fail_on=Severity.parse(fail_on) if fail_on else None,
        device_code=args.device_code,
        accept_ptx_for_sass=args.accept_ptx_for_sass,
        accept_missing_ptx=args.accept_missing_ptx,
    )
    if args.profile:
        from cuwheel.checks.profiles import profile

        profile(args.profile)  # ConfigError naming the known ones
        policy = policy.with_options(profile=args.profile)
    # Which row judges a wheel is the library's decision (checks/rowpick.py): the CLI
    # passes the configuration and what was typed.
    audit: bool | None = True if args.audit else None
    claim = claim_from_archs(args.archs) if args.archs else None
    reports = []
    unusable: list[Unreadable] = []
    if not (args.wheels or args.dist or args.env):
        raise ConfigError("nothing to check: name wheels or directories, or --dist NAME / --env")
    artifacts = [_artifact(a) for a in args.artifact]
    wheels: list[tuple[str, bool]] = [(w, False) for w in _wheels(args.wheels)]
    wheels += [(d, True) for d in (*args.dist, *(_with_binaries() if args.env else ()))]
    import shutil

    width = shutil.get_terminal_size().columns  # COLUMNS, else the terminal, else 80
    # Text on stdout is written a wheel at a time (the first answer does not wait for the
    # tenth wheel); the same bytes as one render() of every report.
    stream = args.format == "text" and args.output in (None, "-") and not args.quiet
    with progress(args, "check", total=len(wheels), unit="wheels") as bar:
        for w, installed in wheels:
            try:
                if installed:
                    report = check_installed(
                        w, config, policy, train=args.train, platform=args.platform,
                        row=args.row, claim=claim, audit=audit, gpus=args.gpus,
                        index=args.index,
                    )  # fmt: skip
                else:
                    report = check_wheel(
                        w, config, policy, train=args.train, platform=args.platform,
                        row=args.row, claim=claim, audit=audit, gpus=args.gpus,
                        index=args.index, progress=bar,
                    )  # fmt: skip
                for art in artifacts:
                    report = check_artifact(report, art, policy,
                                            gpus_claimed=bool(args.gpus or args.archs),
                                            cpu_baseline=args.cpu_baseline)
                reports.append(report)
                if stream:
                    write_output(args, text_block(report, verbose=args.verbose, width=width))
            except CuwheelError as exc:
                if isinstance(exc, IndexUnusable):
                    raise
                # An input that cannot be checked is a failed entry of every format and
                # does not hide the others' results; the run exits 2.
                error(str(exc))  # above the bar: rich redirects stderr while it shows
                unusable.append(Unreadable(w, str(exc)))
                if stream:
                    write_output(args, unreadable_block(unusable[-1]))
            if bar is not None:
                bar.step(w)
    if stream:
        if reports or len(unusable) > 1:
            write_output(args, text_table(reports, unusable))
    else:
        write_output(args, render(reports, args.format, verbose=args.verbose, width=width,
                                  unreadable=unusable))
    if unusable:
        return Exit.UNUSABLE
    return Exit.OK if args.exit_zero or all(r.passed for r in reports) else Exit.NO


# Flags that say opposite things: refused in one line (exit 2), never one silently winning.
_CONTRADICTIONS = (
    ("archs", "gpus", "--archs and --gpus both name a claim: give one"),
    ("strict", "fail_on", "--strict is --fail-on warning: give one of them"),
    ("audit", "row", "--audit judges the wheel without a row, --row names one: give one"),
    ("quiet", "stdout", "-q prints nothing on stdout, -o - writes the result there: give one"),
)


def _refuse_contradictions(args: argparse.Namespace) -> None:
    for a, b, message in _CONTRADICTIONS:
        second = args.output == "-" if b == "stdout" else getattr(args, b)
        if getattr(args, a) and second:
            raise ConfigError(message)
    if args.cpu_baseline is not None:
        from cuwheel.checks.artifact import CPU_LEVELS

        if args.cpu_baseline not in CPU_LEVELS:
            raise ConfigError(f"--cpu-baseline must be one of {', '.join(CPU_LEVELS)}, "
                              f"got {args.cpu_baseline!r}")
        if not args.artifact:
            raise ConfigError("--cpu-baseline claims the CPU of an --artifact: name one "
                              "with it")


EXAMPLES = """\
examples:
  cuwheel check dist/                           audit every wheel of a directory
  cuwheel check x.whl --gpus V100,T4,A100       the GPUs the release notes promise
  cuwheel check x.whl --archs '8.0;9.0+PTX'     the TORCH_CUDA_ARCH_LIST it was built with
  cuwheel check x.whl --row linux-x86_64-cu13   against a row of the project's config
  cuwheel check dist/ -f junit -o check.xml     JUnit for CI test reports
  cuwheel check --dist mypkg                    the installed distribution (cibuildwheel)
  cuwheel check x.whl --artifact model.pt2      the exported program's train, GPUs, host ISA
"""
