"""Benchmark: `a2rl --help` wall time (target < 0.3 s) and that it never imports torch.

    python bench/cli_startup.py [--runs 10]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

TARGET_S = 0.3


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=10)
    args = ap.parse_args()
    exe = Path(sys.executable).with_name("a2rl")
    cmd = [str(exe), "--help"] if exe.exists() else [sys.executable, "-m", "a2rl.cli", "--help"]
    subprocess.run(cmd, check=True, capture_output=True)  # warm the page cache
    times = []
    for _ in range(args.runs):
        t = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True)
        times.append(time.perf_counter() - t)
    med = statistics.median(times)
    print(f"a2rl --help: median {med:.3f} s, min {min(times):.3f} s over {args.runs} runs "
          f"(target < {TARGET_S} s): {'OK' if med < TARGET_S else 'TOO SLOW'}")
    return 0 if med < TARGET_S else 1


if __name__ == "__main__":
    sys.exit(main())
