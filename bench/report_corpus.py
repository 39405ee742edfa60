"""Benchmark: `a2rl report` over a corpus the size of PostTrainBench's (1,338 runs), cold and
after adding one run, with peak memory (targets: cold <= 90 s, one added run <= 10 s, <= 1 GB);
then `a2rl results export` of the same corpus (runs, submissions and cells tables; target
<= 60 s, <= 1 GB) and one `a2rl import posttrainbench` with its analysis (the per-run cost of
importing the corpus).

    python bench/report_corpus.py [--runs 1338] [--dir /tmp/a2rl-report-corpus] [--keep]

The corpus is made of real imported runs: the PostTrainBench fixture
(tests/fixtures/imports/posttrainbench) goes through `a2rl import posttrainbench` (which also
analyses it), and its run folder is copied under new run ids. Each copy gets a task, an agent
and driver, scores and a cost drawn deterministically from its index, so the tables have many
stacks, tasks and repeats per cell. The copies name the benchmark's held-out set as their
submissions do (`posttrainbench:<task>`), so repeats pool into cells; one copy in 200 keeps the
import's unidentified set, so the report also meets runs that pool with nothing.

Each `a2rl report` runs as its own process; its wall time, CPU time and peak resident memory
come from os.wait4 (that process alone).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _common import load, result  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = (ROOT / "tests" / "fixtures" / "imports" / "posttrainbench" / "claude_claude-opus-4-6_10h"
           / "gsm8k_Qwen_Qwen3-1.7B-Base_40123")
TASKS = ("gsm8k", "humaneval", "aime2025", "bfcl", "gpqamain", "arenahardwriting", "healthbench")
STACKS = (("claude", "claude-opus-4-6"), ("claude", "claude-sonnet-4-5"), ("codex", "gpt-5-codex"),
          ("codex", "gpt-5.1"), ("gemini", "gemini-3-pro"), ("opencode", "glm-4.6"),
          ("openhands", "qwen3-coder"))
COLD_S, WARM_S, RSS_MB, EXPORT_S = 90.0, 10.0, 1024.0, 60.0


def _a2rl() -> list[str]:
    exe = Path(sys.executable).with_name("a2rl")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "a2rl.cli"]


def _unit(i: int, salt: str) -> float:
    """A deterministic number in [0, 1) for copy `i`."""
    return int(hashlib.sha256(f"{salt}:{i}".encode()).hexdigest()[:8], 16) / 2**32


def _copy(seed: Path, runs: Path, i: int) -> Path:
    """Copy the imported run as copy `i`: new id, task, stack, scores, cost."""
    from a2rl.schema import BaselineRecord, RunCost, SubmissionRecord, load_run, write_json

    task = TASKS[i % len(TASKS)]
    agent, driver = STACKS[(i // len(TASKS)) % len(STACKS)]
    run_id = f"ptb-{i:05d}-{agent}-{driver}-{task}"
    dest = runs / task / run_id
    shutil.copytree(seed, dest, symlinks=True)
    base = 20.0 + 5.0 * TASKS.index(task)
    skill = (STACKS.index((agent, driver)) - 3) * 2.0
    score = round(max(0.0, base + skill + 12.0 * (_unit(i, "score") - 0.3)), 2)
    fingerprint = None if i % 200 == 199 else f"posttrainbench:{task}"
    record = load_run(dest)
    hours = 10.0 * (0.5 + 0.5 * _unit(i, "hours"))
    subs = []
    for s in record.submissions:
        subs.append(s.model_copy(update={"score": score, "baseline": base,
                                         "improvement": round(score - base, 2),
                                         "elapsed_s": hours * 3600 - 100,
                                         "task_fingerprint": fingerprint or s.task_fingerprint}))
    gpus = 1 + i % 4
    record = record.model_copy(update={
        "run_id": run_id,
        "config": record.config.model_copy(update={"task": task, "agent": agent,
                                                   "agent_options": {"config": driver},
                                                   "driver": driver, "runs_dir": str(runs)}),
        "baseline": None if fingerprint is None else BaselineRecord(
            score=base, n_items=1319, metrics={"accuracy": base / 100}, model_hash="",
            task_fingerprint=fingerprint, evaluator_version="posttrainbench", eval_seconds=0.0,
            computed_at=record.created_at),
        "submissions": subs,
        "best": record.best.model_copy(update={"score": score}) if record.best else None,
        "improvement": round(score - base, 2),
        "cost": None if i % 10 == 9 else RunCost(
            input_tokens=2_000_000 + i * 1000, output_tokens=90_000 + i * 10,
            usd=round(5.0 + 40.0 * _unit(i, "usd"), 2), usd_source="cli", gpus=gpus,
            agent_gpu_hours=round(gpus * hours, 3), eval_gpu_hours=0.25),
    })
    write_json(dest / "run.json", record)
    (dest / "ledger.jsonl").write_text("".join(
        SubmissionRecord.model_validate(s).model_dump_json() + "\n" for s in subs))
    return dest


def _timed(cmd: list[str]) -> tuple[float, float, float, str]:
    """Run `cmd`; its wall seconds, CPU seconds and peak RSS (MiB), and its output."""
    t = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    assert proc.stdout is not None
    out = proc.stdout.read().decode(errors="replace")
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - t
    if proc.returncode:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{out[-3000:]}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=1338)
    ap.add_argument("--dir", type=Path, default=Path("/tmp/a2rl-report-corpus"))
    ap.add_argument("--keep", action="store_true", help="keep the corpus and the site")
    ap.add_argument("--reuse", action="store_true", help="reuse a corpus left by --keep")
    args = ap.parse_args()
    work: Path = args.dir
    runs, site = work / "runs", work / "report"
    imported_s = None
    if not (args.reuse and runs.is_dir()):
        shutil.rmtree(work, ignore_errors=True)
        seed_dir = work / "seed"
        imported_s, imported_cpu, imported_rss, _ = _timed(
            [*_a2rl(), "import", "posttrainbench", str(FIXTURE), "--runs-dir", str(seed_dir),
             "--baseline", "58"])
        print(f"one import with its analysis: {imported_s:.1f} s wall, {imported_cpu:.1f} s CPU, "
              f"peak RSS {imported_rss:.0f} MiB")
        seed = next(p.parent for p in seed_dir.glob("*/*/run.json"))
        t = time.perf_counter()
        for i in range(args.runs):
            _copy(seed, runs, i)
        print(f"corpus: {args.runs} runs in {runs} ({time.perf_counter() - t:.1f} s to copy)")
    shutil.rmtree(site, ignore_errors=True)
    report = [*_a2rl(), "report", str(runs), "-o", str(site)]
    print(f"command: {' '.join(report)}  ({load()})")
    cold, cold_cpu, cold_rss, _ = _timed(report)
    print(f"cold: {cold:.1f} s wall, {cold_cpu:.1f} s CPU, peak RSS {cold_rss:.0f} MiB")
    seed = next(runs.glob("*/*/run.json")).parent
    _copy(seed, runs, args.runs)
    warm, warm_cpu, warm_rss, _ = _timed(report)
    print(f"one run added: {warm:.1f} s wall, {warm_cpu:.1f} s CPU, peak RSS {warm_rss:.0f} MiB")
    pages = json.loads((site / "report.json").read_text())
    print(f"site: {pages['runs']} runs, {len(pages['pages'])} pages; the second build read and "
          f"rendered {pages['rebuilt']} run(s) again")
    if pages["rebuilt"] != 1:
        raise SystemExit("adding one run must rebuild that run's page alone")
    result("report_corpus_cold_s", cold, "s", target=f"<= {COLD_S}", ok=cold <= COLD_S,
           note=f"{args.runs} runs, {cold_cpu:.1f} s CPU")
    result("report_corpus_one_added_s", warm, "s", target=f"<= {WARM_S}", ok=warm <= WARM_S,
           note=f"{warm_cpu:.1f} s CPU")
    peak = max(cold_rss, warm_rss)
    result("report_corpus_peak_rss_mb", peak, "MiB", target=f"<= {RSS_MB}", ok=peak <= RSS_MB)
    table = work / "results.csv"
    export = [*_a2rl(), "results", "export", str(runs), "-o", str(table)]
    print(f"command: {' '.join(export)}")
    exp, exp_cpu, exp_rss, _ = _timed(export)
    rows = sum(1 for _ in table.open()) - 1
    print(f"results export: {exp:.1f} s wall, {exp_cpu:.1f} s CPU, peak RSS {exp_rss:.0f} MiB, "
          f"{rows} run rows")
    if rows != args.runs + 1:
        raise SystemExit(f"the export holds {rows} runs, not {args.runs + 1}")
    ok_export = exp <= EXPORT_S and exp_rss <= RSS_MB
    result("results_export_corpus_s", exp, "s", target=f"<= {EXPORT_S}", ok=ok_export,
           note=f"{rows} runs, {exp_cpu:.1f} s CPU, peak RSS {exp_rss:.0f} MiB")
    if imported_s is not None:
        result("import_one_posttrainbench_run_s", imported_s, "s",
               note=f"with its analysis; {imported_cpu:.1f} s CPU, peak RSS {imported_rss:.0f} MiB")
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 0 if cold <= COLD_S and warm <= WARM_S and peak <= RSS_MB and ok_export else 1


if __name__ == "__main__":
    sys.exit(main())
