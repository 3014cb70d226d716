"""``cuwheel plan``: print a release row in a consumer's terms (torch, cmake, nvcc, env...)."""

from __future__ import annotations

import argparse
from typing import Any

from cuwheel.cli._common import (
    CONFIG_HELP,
    add_output,
    check_output_path,
    info,
    project_config,
    warn,
    write_output,
)
from cuwheel.errors import ConfigError, Exit
from cuwheel.render.escape import dumps

__all__ = ["register"]

FORMATS = ("env", "sh", "torch", "cmake", "nvcc", "json", "matrix")


def register(subparsers: Any) -> None:
    p: argparse.ArgumentParser = subparsers.add_parser(
        "plan",
        help="emit a release row's architectures for torch, CMake, nvcc, env, JSON or a matrix",
        description=(
            "Select the release row of a train and platform (from flags, a wheel's +cuXYZ "
            "and platform tag, or CUWHEEL_TRAIN / CU_VERSION / DESIRED_CUDA) and print it "
            "for one consumer. Rows come from [tool.cuwheel] in pyproject.toml or the "
            "built-in defaults."
        ),
    )
    p.add_argument("wheel", nargs="?", help="a wheel file name whose row to print")
    add_output(
        p, FORMATS, default="env",
        help="env: KEY=VALUE lines for $GITHUB_ENV; sh: quoted exports; torch: "
        "TORCH_CUDA_ARCH_LIST; cmake: CMAKE_CUDA_ARCHITECTURES; nvcc: -gencode flags; json: "
        "the plan (data/plan.schema.json); matrix: a GitHub Actions matrix of every row",
    )  # fmt: skip
    p.add_argument(
        "--train",
        action="append",
        default=[],
        help="CUDA train: cu130, 13.0 or cpu (repeatable with --format matrix)",
    )
    p.add_argument(
        "--platform",
        action="append",
        default=[],
        help="linux-x86_64, linux-aarch64, win-amd64... (repeatable with --format matrix)",
    )
    p.add_argument("--config", help=CONFIG_HELP)
    p.add_argument("--torch-version", help="PyTorch version that reads TORCH_CUDA_ARCH_LIST")
    p.add_argument("--cmake-version", help="CMake version that reads CMAKE_CUDA_ARCHITECTURES")
    p.add_argument(
        "--python", action="append", default=[], help="Python version for --format matrix"
    )
    p.set_defaults(handler=_run)


EXAMPLES = """\
examples:
  cuwheel plan --train cu130 --platform linux-x86_64 >> "$GITHUB_ENV"
  cuwheel plan -f torch --train cu130          8.0;8.6;...;12.0+PTX
  cuwheel plan -f matrix --python 3.12 -o matrix.json
  cuwheel plan dist/x-1.0+cu130-cp312-cp312-manylinux_2_28_x86_64.whl -f cmake
"""


def _warn(lines: list[str] | tuple[str, ...]) -> None:
    for line in lines:
        warn(line)


def _single(values: list[str], flag: str) -> str | None:
    if len(values) > 1:
        raise ConfigError(f"{flag} may be given once except with --format matrix")
    return values[0] if values else None


def _run(args: argparse.Namespace) -> int:
    from dataclasses import replace

    from cuwheel.config import check_consumer_version, check_python_version
    from cuwheel.plan import emit
    from cuwheel.plan.select import select_plan

    if args.output:
        check_output_path(args.output)
    config = project_config(args)
    flag_problems = [
        p
        for flag, value in (("--torch-version", args.torch_version),
                            ("--cmake-version", args.cmake_version))
        if value is not None and (p := check_consumer_version(value, flag))
    ] + [p for v in args.python if (p := check_python_version(v, "--python"))]
    if flag_problems:
        raise ConfigError(flag_problems)
    torch_version = args.torch_version or config.torch_version
    cmake_version = args.cmake_version or config.cmake_version
    if args.format == "matrix":
        _warn(config.warnings)
        if args.wheel:
            raise ConfigError("--format matrix takes no wheel")
        if args.torch_version or args.cmake_version:
            config = replace(config, torch_version=torch_version, cmake_version=cmake_version)
        result = emit.matrix(
            config.project, trains=args.train, platforms=args.platform, python=args.python
        )
        if not args.quiet:
            info(f"rows from {config.source}")
        write_output(args, dumps(result, separators=(",", ":")) + "\n")
        return Exit.OK
    plan = select_plan(
        config.rows,
        train=_single(args.train, "--train"),
        platform=_single(args.platform, "--platform"),
        wheel=args.wheel,
    )
    _warn(plan.warnings)
    if not args.quiet:  # on stderr: stdout is the value a build reads
        info(f"row {plan.row.name} ({plan.train.name}, {plan.platform}) from {config.source}")
    if args.format == "torch":
        text = emit.torch_arch_list(plan, torch_version)
    elif args.format == "cmake":
        text = emit.cmake_architectures(plan, cmake_version)
    elif args.format == "nvcc":
        text = " ".join(emit.nvcc_flags(plan))
    elif args.format == "json":
        doc = emit.plan_json(plan, torch_version, cmake_version, config=config.path)
        text = dumps(doc, indent=2)
    else:
        lines, problems = emit.env_lines(plan, torch_version, cmake_version)
        _warn([f"{p} (left out)" for p in problems])
        text = "\n".join(emit.sh_lines(lines) if args.format == "sh" else lines)
    write_output(args, text + "\n")
    return Exit.OK
