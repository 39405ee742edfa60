"""Benchmark: the peak memory of `a2rl analyze` on a run with a large transcript, as a ratio to
the transcript's size (target: the growth over the same run with an empty transcript stays
below the transcript's size).

    python bench/analyze_large.py [--mb 200] [--hours 12] [--dir /tmp/a2rl-analyze-large] [--keep]

Two runs are built as bench/viewer_large.py builds its run: a Claude Code stream-json
transcript of `--mb` megabytes over `--hours`, parsed by the launcher into agent/events.jsonl,
and the same run with a transcript of one line. `a2rl analyze` runs on each in its own process;
the figure is the difference of their peak resident sizes (the kernel's maxrss of the waited-for
process) divided by the large transcript's size.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _common import load, result  # noqa: E402
from viewer_large import make_run  # noqa: E402

TARGET_RATIO = 1.0


def peak_rss_bytes(argv: list[str]) -> tuple[int, float]:
    """Peak resident bytes of one command run to its end, and its wall time."""
    started = time.monotonic()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        sys.exit(f"{' '.join(argv)} exited with {proc.returncode}")
    return usage.ru_maxrss * 1024, time.monotonic() - started  # Linux reports KiB


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mb", type=float, default=200.0)
    ap.add_argument("--hours", type=float, default=12.0)
    ap.add_argument("--dir", type=Path, default=Path("/tmp/a2rl-analyze-large"))
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    shutil.rmtree(args.dir, ignore_errors=True)
    args.dir.mkdir(parents=True)
    try:
        # Built in a fresh interpreter: a child forked from a process that held the transcript
        # would start from that process's peak (Linux keeps maxrss across exec).
        with multiprocessing.get_context("spawn").Pool(1) as pool:
            large, turns = pool.apply(make_run, (args.dir / "large", args.mb, args.hours))
            empty, _ = pool.apply(make_run, (args.dir / "empty", 0.0, args.hours))
        transcript = (large / "agent" / "transcript.log").stat().st_size
        events_mb = (large / "agent" / "events.jsonl").stat().st_size / 1e6
        exe = Path(sys.executable).with_name("a2rl")
        cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "a2rl.cli"]
        base, _ = peak_rss_bytes(cmd + ["analyze", str(empty)])
        peak, took = peak_rss_bytes(cmd + ["analyze", str(large)])
        ratio = (peak - base) / transcript
        print(f"{transcript / 1e6:.1f} MB transcript ({turns} turns, {events_mb:.1f} MB of events): "
              f"`a2rl analyze` peaks at {peak / 2**20:.0f} MiB in {took:.1f} s, {base / 2**20:.0f} MiB "
              f"on the same run with an empty transcript: growth {(peak - base) / 2**20:.0f} MiB = "
              f"{ratio:.3f}x the transcript ({load()})")
        note = f"{transcript / 1e6:.0f} MB transcript, {turns} turns"
        result("analyze_peak_growth_per_transcript_byte", ratio, "x", target=f"< {TARGET_RATIO}",
               ok=ratio < TARGET_RATIO, note=note)
        result("analyze_peak_rss_mib", peak / 2**20, "MiB", note=note)
    finally:
        if not args.keep:
            shutil.rmtree(args.dir, ignore_errors=True)


if __name__ == "__main__":
    main()
