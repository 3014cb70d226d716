"""The torch releases each published torch-extension wheel loads with (rules/torch_abi.py),
and what the resolution costs: CPU seconds of the resolution alone on each wheel's
largest torch-linked binary (the reading is inspect's, timed apart).

    PYTHONPATH=src python bench/torch_abi_real.py /tmp/wheels/torchabi/*.whl
"""

from __future__ import annotations

import resource
import sys
import time

from cuwheel.knowledge.torchabi import load_torch_abi
from cuwheel.read.inspect import inspect
from cuwheel.rules.torch_abi import (
    loadable_span,
    requirement_for,
    resolve_torch_abi,
    resolve_without_cuda_dlls,
)


def main(paths: list[str]) -> None:
    abi = load_torch_abi()
    t0 = time.process_time()
    abi.columns("x")  # decode the table once
    print(f"table: {abi.symbols} keys, {len(abi.releases)} columns, decoded in "
          f"{time.process_time() - t0:.3f} s CPU")
    for p in paths:
        t0 = time.process_time()
        src = inspect([p], workers=1, payload="none").sources[0]
        read_s = time.process_time() - t0
        wheel = src.wheel
        req = [r for r in (wheel.requires_dist if wheel else ()) if r.split(";")[0]
               .strip().lower().startswith("torch") and not r.lower().startswith("torch-")]
        req = [r for r in req if r.split()[0].lower().rstrip("<>=!~(").startswith("torch")
               and r.lower().split()[0].rstrip("<>=!~(,") in ("torch",)] or req
        loads: set[str] | None = None
        cands: set[str] | None = None
        worst = (0.0, 0, "")
        n = 0
        plat = "?"
        imported = 0
        cuda_dlls: set[str] = set()
        for b in src.binaries:
            t1 = time.process_time()
            ans = resolve_torch_abi(b)
            dt = time.process_time() - t1
            if ans is None or not (ans.imported or ans.unknown_count or ans.cuda_dlls):
                continue
            n += 1
            plat = ans.platform
            imported += ans.imported
            if len(b.undefined) > worst[1]:
                worst = (dt, len(b.undefined), b.path.rsplit("!", 1)[-1])
            got = set(ans.versions)
            loads = got if loads is None else loads & got
            if ans.cuda_dlls:
                cuda_dlls |= {d for d, _ in ans.cuda_dlls}
                c = {r.version for r in resolve_without_cuda_dlls(ans, b)}
                cands = c if cands is None else cands & c
        name = p.rsplit("/", 1)[-1]
        if not n:
            print(f"{name}: no binary imports torch symbols; requires {req}")
            continue
        known = [r.version for r in abi.on(plat)]
        line = (f"{name}: {n} binaries, {imported} torch imports, {plat}; requires "
                f"{req or 'nothing'}; loads with {loadable_span(sorted(loads or ()))}"
                f" ({requirement_for(loads or (), known)})")
        if cuda_dlls:
            line += (f"; imports {', '.join(sorted(cuda_dlls))} (no PyPI build has them); "
                     f"CPU DLLs match {loadable_span(sorted(cands or ()))}")
        print(line)
        print(f"    largest: {worst[2]} ({worst[1]} imports) resolved in {worst[0] * 1000:.1f} ms "
              f"CPU; read in {read_s:.2f} s CPU")
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(f"max RSS {rss >> 10} MiB")


if __name__ == "__main__":
    main(sys.argv[1:])
