"""``cuwheel check``: verify built wheels against their release rows."""

from __future__ import annotations

import argparse
import os
import re
from typing import TYPE_CHECKING, Any

from cuwheel.cli._common import CONFIG_HELP, add_output, check_output_path, error, write_output
from cuwheel.errors import ConfigError, CuwheelError, InputError
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
    add_output(p, CHECK_FORMATS)
    p.set_defaults(handler=_run)


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
    from cuwheel.read.installed import distributions

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
    from cuwheel.read.artifacts import read_artifact

    if not os.path.exists(path):
        raise InputError(path, "no such file or directory")
    return read_artifact(path)


def _run(args: argparse.Namespace) -> int:
    from dataclasses import replace

    from cuwheel.checks import check_installed, check_wheel
    from cuwheel.checks.artifact import check_artifact
    from cuwheel.checks.claims import claim_from_archs
    from cuwheel.checks.codes import Severity
    from cuwheel.checks.index import IndexUnusable
    from cuwheel.checks.policy import parse_prefixes
    from cuwheel.cli._progress import progress
    from cuwheel.config import load_config
    from cuwheel.plan.select import ENV_ROW
    from cuwheel.render.check import render, text_block, text_table

    if args.output:
        check_output_path(args.output)
    if args.archs and args.gpus:
        raise ConfigError("--archs and --gpus both name a claim: give one")
    config = load_config(args.config)
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
    # Without a project configuration the built-in rows are the seed project's own: a wheel
    # of anyone else is audited, unless a row of them is asked for by name (--row, or
    # CUWHEEL_ROW as `cuwheel plan --format env` exports it).
    audit: bool | None = True if args.audit else None
    if config.path is None and not (args.row or os.environ.get(ENV_ROW, "").strip()):
        audit = True
    claim = claim_from_archs(args.archs) if args.archs else None
    reports = []
    unusable: list[str] = []
    if not (args.wheels or args.dist or args.env):
        raise ConfigError("nothing to check: name wheels or directories, or --dist NAME / --env")
    artifacts = [_artifact(a) for a in args.artifact]
    wheels: list[tuple[str, bool]] = [(w, False) for w in _wheels(args.wheels)]
    wheels += [(d, True) for d in (*args.dist, *(_with_binaries() if args.env else ()))]
    import shutil

    width = shutil.get_terminal_size().columns  # COLUMNS, else the terminal, else 80
    # Text on stdout is written a wheel at a time (the first answer does not wait for the
    # tenth wheel); the same bytes as one render() of every report.
    stream = args.format == "text" and not args.output and not args.quiet
    with progress(args, "check", total=len(wheels), unit="wheels") as bar:
        for w, installed in wheels:
            try:
                if installed:
                    report = check_installed(
                        w, config.rows, policy, train=args.train, platform=args.platform,
                        row=args.row, claim=claim, audit=audit, gpus=args.gpus,
                        index=args.index,
                    )  # fmt: skip
                else:
                    report = check_wheel(
                        w, config.rows, policy, train=args.train, platform=args.platform,
                        row=args.row, claim=claim, audit=audit, gpus=args.gpus,
                        index=args.index, progress=bar,
                    )  # fmt: skip
                if config.path is not None:
                    report = replace(report, config=config.path)
                for art in artifacts:
                    report = check_artifact(report, art, policy)
                reports.append(report)
                if stream:
                    write_output(args, text_block(report, verbose=args.verbose, width=width))
            except CuwheelError as exc:
                if len(wheels) == 1 or isinstance(exc, IndexUnusable):
                    raise
                # One unusable wheel does not hide the others' results; the run exits 2.
                error(str(exc))  # above the bar: rich redirects stderr while it shows
                unusable.append(str(exc))
            if bar is not None:
                bar.step(w)
    if reports and stream:
        write_output(args, text_table(reports))
    elif reports:
        write_output(args, render(reports, args.format, verbose=args.verbose, width=width))
    if unusable:
        return 2
    return 0 if all(r.passed for r in reports) else 1


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
