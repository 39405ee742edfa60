"""Benchmark: cost of the code sandbox. Runs HumanEval's 164 canonical solutions through the
executor sandboxed (bubblewrap) and unsandboxed (same launchers: rlimits, seccomp, timeout; each
program is a solution process plus its trusted judge process) and prints both wall times and
their ratio. Every program must pass in both modes.

    python bench/humaneval_sandbox.py [--runs 3] [--workers N]
"""

from __future__ import annotations

import argparse
import logging
import statistics
import sys
import time

from a2rl.sandbox._code_exec import CodeExecutor, TestedProgram, default_workers
from a2rl.tasks.humaneval.task import build_job, heldout_problems, train_problems


def timed(executor: CodeExecutor, programs: list[TestedProgram], workers: int) -> float:
    start = time.perf_counter()
    results = executor.run_many(programs, workers=workers)
    wall = time.perf_counter() - start
    failed = [i for i, r in enumerate(results) if not r.passed]
    if failed:
        raise SystemExit(f"{len(failed)} canonical solutions failed (first: HumanEval/{failed[0]}: "
                         f"{results[failed[0]].output[-300:]})")
    return wall


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3, help="repetitions per mode (median reported)")
    ap.add_argument("--workers", type=int, default=default_workers())
    args = ap.parse_args()
    logging.basicConfig(level=logging.ERROR)  # the deliberate sandbox='none' warning is noise here
    problems = train_problems() + heldout_problems()
    programs = [build_job(p, p["canonical_solution"]) for p in problems]
    sandboxed = CodeExecutor(sandbox="bwrap")
    plain = CodeExecutor(sandbox="none")
    timed(sandboxed, programs[:8], args.workers)  # warm the page cache
    times: dict[str, list[float]] = {"bwrap": [], "none": []}
    for _ in range(args.runs):  # interleaved, so load changes hit both modes alike
        times["bwrap"].append(timed(sandboxed, programs, args.workers))
        times["none"].append(timed(plain, programs, args.workers))
    med = {mode: statistics.median(ts) for mode, ts in times.items()}
    print(f"{len(programs)} programs, {args.workers} workers, {args.runs} runs per mode "
          f"(process filter: {'on' if sandboxed.fork_blocked else 'off'})")
    for mode, label in (("bwrap", "sandboxed (bwrap)"), ("none", "unsandboxed")):
        runs = ", ".join(f"{t:.2f}" for t in times[mode])
        print(f"{label:>18}: median {med[mode]:.2f} s  ({med[mode] / len(programs) * 1000:.1f} ms "
              f"per program; runs: {runs})")
    print(f"{'ratio':>18}: {med['bwrap'] / med['none']:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
