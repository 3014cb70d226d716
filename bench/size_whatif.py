"""The size ledger's what-if against real rebuilds: predict each rebuilt wheel's size from
the base wheel alone, and print prediction, real size and error (docs/size.md).

    PYTHONPATH=src python bench/size_whatif.py [--apportioned] BASE.whl 'SCENARIO=REAL.whl' ...

--apportioned: without simulation (the shares of the ledger taken off, payloads
recompressed one by one), as the library API estimates when measure() gets no scenario.

SCENARIO is ``drop:75,86``, ``ptx-from:90``, ``compress:size`` (joined with ``+``).
"""

from __future__ import annotations

import os
import sys
import time

from cuwheel.model.arch import Arch
from cuwheel.read.inspect import inspect
from cuwheel.size import Scenario, estimate, measure, parse_drop


def scenario(spec: str) -> Scenario:
    drop_s: frozenset[Arch] = frozenset()
    drop_p: frozenset[Arch] = frozenset()
    ptx_from = None
    mode = None
    for part in spec.split("+"):
        key, _, value = part.partition(":")
        if key == "drop":
            drop_s, drop_p = parse_drop([value])
        elif key == "ptx-from":
            ptx_from = Arch.parse(value)
        elif key == "compress":
            mode = value
        else:
            raise SystemExit(f"unknown scenario part {part!r}")
    return Scenario(drop_s, drop_p, ptx_from, mode)


def main(base: str, pairs: list[str], apportioned: bool = False) -> int:
    cases = [(scenario(p.split("=", 1)[0]), p.split("=", 1)[1]) for p in pairs]
    t = time.process_time()
    inv = inspect([base])
    if apportioned:
        measured = measure(inv, modes=sorted({s.compression for s, _ in cases if s.compression}))
    else:
        measured = measure(inv, scenarios=[s for s, _ in cases])
    worst = 0.0
    print(f"base {os.path.basename(base)}: {os.path.getsize(base)} bytes")
    print(f"{'what-if':<44} {'predicted':>11} {'real':>11} {'error':>8}")
    for sc, real_path in cases:
        e = estimate(inv, measured, sc, gpus=False)
        real = os.path.getsize(real_path)
        err = 100.0 * (e.estimate - real) / real
        worst = max(worst, abs(err))
        how = "+".join(sorted({x.method for x in e.sources}))
        print(f"{sc.label:<44} {e.estimate:>11} {real:>11} {err:>+7.2f}%  {how}")
    print(f"worst |error| {worst:.2f}%; CPU {time.process_time() - t:.1f} s")
    return 0 if worst <= 2.0 else 1


if __name__ == "__main__":
    flag = "--apportioned" in sys.argv[1:2]
    args = sys.argv[2:] if flag else sys.argv[1:]
    sys.exit(main(args[0], args[1:], flag))
