"""``cuwheel check``: verify built wheels against their release rows."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from cuwheel.checks import check_wheel
from cuwheel.checks.codes import Severity
from cuwheel.checks.policy import parse_prefixes
from cuwheel.config import load_config
from cuwheel.errors import ConfigError
from cuwheel.render.check import FORMATS, render

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
    p.add_argument("wheels", nargs="+", metavar="WHEEL", help="wheel files to check")
    p.add_argument("--row", help="check against the row of this name")
    p.add_argument("--train", help="CUDA train: cu130, 13.0 or cpu (default: the wheel's +cuXYZ)")
    p.add_argument("--platform", help="row platform (default: from the wheel's platform tag)")
    p.add_argument("--config", help="pyproject.toml or rows file (default: ./pyproject.toml)")
    p.add_argument(
        "--format", "-f", choices=FORMATS, default="text", help="report format (default: text)"
    )
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
    p.add_argument("--output", "-o", help="write the report to this file instead of stdout")
    p.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
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
    reports = [
        check_wheel(w, config.rows, policy, train=args.train, platform=args.platform, row=args.row)
        for w in args.wheels
    ]
    text = render(reports, args.format)
    if args.output:
        with open(args.output, "w", encoding="utf-8") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    return 0 if all(r.passed for r in reports) else 1
