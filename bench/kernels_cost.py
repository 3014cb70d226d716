#!/usr/bin/env python3
"""CPU cost of reading entry-kernel names (``inspect(payload="kernels")``) against the
default read (``payload="sample"``), one worker, best of N runs.

Usage: SRC=src python bench/kernels_cost.py FILE_OR_WHEEL MODE [RUNS]
(SRC: the cuwheel source tree to measure, e.g. /work/main/src for the baseline).
"""

from __future__ import annotations

import os
import resource
import sys
import time

sys.path.insert(0, os.environ.get("SRC", "src"))
from cuwheel.read.inspect import inspect

path, mode = sys.argv[1], sys.argv[2]
best = None
for _ in range(int(sys.argv[3]) if len(sys.argv) > 3 else 2):
    t = time.process_time()
    inv = inspect([path], payload=mode, workers=1)
    c = time.process_time() - t
    best = c if best is None else min(best, c)
n = sum(len(getattr(e, "kernel_names", None) or ()) for b in inv.binaries for e in b.entries())
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
print(f"{os.path.basename(path)} payload={mode}: cpu {best:.2f} s  kernel names {n}  "
      f"peak rss {rss} MB")
