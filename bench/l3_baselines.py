"""Benchmark: the embedded model's baseline on the interactive (L3) tasks, and what it costs.

    python bench/l3_baselines.py [--model smollm2-135m] [--episodes 20 | --full]
                                 [--tasks alfworld,webshop,deepsearchqa] [--compare 4]
                                 [--engine transformers|vllm --vllm-env DIR --memory 0.3]

Scores the base model on the first `--episodes` held-out episodes of each offline L3 task
(`max_heldout`; `--full`: the whole held-out set), exactly as the grader scores a baseline
(child process, the task's own prompting and decoding), and prints score, success rate, wall
time and time per episode. A partial run's full-size time is an extrapolation and says so
(ALFWorld 134, WebShop 100, DeepSearchQA 200 episodes; targets 30, 30 and 15 min).
`--compare N` then rolls the first N episodes out again in this process with the KV-cached
engine and with the re-encoding engine (every step re-encodes its whole prompt, with
transformers' concatenating cache and SDPA attention; bench/_comparison_engine.py), reported as
"previous engine", and checks that the trajectories are identical (greedy). With `--engine vllm`
(the venv `a2rl engines install vllm --cpu --extras alfworld,webshop` makes; ALFWorld's engine
must be installed there too) `--compare N` instead evaluates the first N episodes again with the
transformers engine and counts the identical step completions (goal >= 97 %; after an episode's
first differing step every later step of it counts as different). DeepSearchQA runs offline
(generated corpus, BM25) with the string-match judge unless A2RL_JUDGE_BASE_URL is set. Rows are
appended as JSON lines to `--out`.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import cpu_seconds, load, result  # noqa: E402
from _comparison_engine import Reencoding  # noqa: E402

from a2rl.envs import run_rollouts, same_steps  # noqa: E402
from a2rl.grader import score_baseline  # noqa: E402
from a2rl.inference import load_engine, select  # noqa: E402
from a2rl.inference._registry import resolve  # noqa: E402
from a2rl.models import resolve_model  # noqa: E402
from a2rl.tasks import get_task  # noqa: E402

FULL_SIZE = {"alfworld": 134, "webshop": 100, "deepsearchqa": 200}
TARGET_MIN = {"alfworld": 30, "webshop": 30, "deepsearchqa": 15}
OFFLINE_OPTIONS: dict[str, dict[str, Any]] = {
    "alfworld": {"n_train": 6},
    "webshop": {},
    "deepsearchqa": {"source": "offline"},
}


def compare(name: str, task: Any, model_dir: Path, n: int,
            steps: int | None = None) -> tuple[bool, float, float]:
    """(identical, CPU seconds cached, CPU seconds re-encoding) on the first n held-out
    episodes, each cut at `steps` steps when given (CPU time: on a shared machine the wall time
    says more about the others' load)."""
    rollout = task.rollout if steps is None else dataclasses.replace(task.rollout, max_steps=steps)
    engine = load_engine(model_dir, chat_template_from=model_dir)
    episodes = task.heldout_episodes()[:n]
    runs = []
    try:
        for eng in (engine, Reencoding(engine)):
            if hasattr(task, "_ensure_session"):
                task._ensure_session()  # DeepSearchQA's search backend and judge
            start = time.process_time()
            trajs = run_rollouts(eng, episodes, task.make_env, task.messages, task.parse_action,
                                 task.finish, rollout, task=name,
                                 batch_size=task.rollout_batch_size)
            runs.append((time.process_time() - start,
                         [[(s.completion, s.action) for s in t.steps] for t in trajs]))
            if hasattr(task, "_ensure_session"):
                task.close()
    finally:
        engine.close()
    return runs[0][1] == runs[1][1], runs[0][0], runs[1][0]


def details(eval_dir: Path) -> list[dict[str, Any]]:
    """The trajectories an evaluation wrote (details.jsonl opens with the task's summary row)."""
    rows = [json.loads(line) for line in (eval_dir / "details.jsonl").read_text().splitlines()]
    return [r for r in rows if "steps" in r]


def compare_engines(name: str, model: Any, n: int, eval_dir: Path) -> dict[str, Any]:
    """The first n episodes again with the transformers engine, against the selected engine's
    trajectories of them in `eval_dir`."""
    task = get_task(name, {**OFFLINE_OPTIONS[name], "max_heldout": n})
    engine = select_engine("transformers")
    other = eval_dir.with_name("transformers")
    try:
        start = time.monotonic()
        score_baseline(task, model, other, timeout_s=6 * 3600, use_cache=False)
        seconds = time.monotonic() - start
    finally:
        select(engine)
    wanted = {t["episode_id"] for t in details(other)}
    same, total, diffs = same_steps([t for t in details(eval_dir) if t["episode_id"] in wanted],
                                    details(other), ("engine", "transformers"))
    return {"compare_episodes": n, "identical_steps": same, "compared_steps": total,
            "identical_pct": round(100 * same / max(1, total), 2), "differences": diffs[:20],
            "compare_transformers_wall_s": round(seconds, 1)}


def select_engine(name: str, memory: float | None = None) -> Any:
    """Select engine `name` for the evaluation child; returns what was selected before."""
    from a2rl.inference._registry import selected

    before = selected()
    select(resolve(name, memory_fraction=memory))
    return before


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--episodes", type=int, default=20)
    ap.add_argument("--full", action="store_true", help="the whole held-out set of each task")
    ap.add_argument("--tasks", default="alfworld,webshop,deepsearchqa")
    ap.add_argument("--compare", type=int, default=0,
                    help="check N episodes' trajectories against the re-encoding engine")
    ap.add_argument("--compare-steps", type=int, default=None,
                    help="cut the compared episodes at this many steps (the re-encoding "
                         "engine re-encodes every prompt: a full ALFWorld episode costs it minutes)")
    ap.add_argument("--out", default="bench/l3_baselines.jsonl")
    ap.add_argument("--engine", choices=["transformers", "vllm"], default="transformers")
    ap.add_argument("--vllm-env", default=None,
                    help="the vLLM venv (default $A2RL_VLLM_ENV or the engines under A2RL_HOME)")
    ap.add_argument("--memory", type=float, default=0.3,
                    help="vLLM's share of the machine's memory (weights + KV cache)")
    args = ap.parse_args()
    model = resolve_model(args.model)
    if args.vllm_env:
        import os

        os.environ["A2RL_VLLM_ENV"] = str(Path(args.vllm_env).absolute())
    select_engine(args.engine, args.memory if args.engine == "vllm" else None)
    for name in args.tasks.split(","):
        params = {**OFFLINE_OPTIONS[name], **({} if args.full else {"max_heldout": args.episodes})}
        task = get_task(name, params)
        with tempfile.TemporaryDirectory() as tmp:
            start, cpu = time.monotonic(), cpu_seconds()
            record = score_baseline(task, model, Path(tmp) / "eval", timeout_s=6 * 3600,
                                    use_cache=False)
            seconds, cpu = time.monotonic() - start, cpu_seconds() - cpu
            engine_rows: dict[str, Any] = {}
            if args.compare and args.engine != "transformers":
                engine_rows = compare_engines(name, model, args.compare, Path(tmp) / "eval")
        n = record.n_items
        full = n >= FULL_SIZE[name]
        estimate = seconds / max(1, n) * FULL_SIZE[name] / 60
        row: dict[str, Any] = {
            "task": name, "model": args.model, "episodes": n, "score": record.score,
            "metrics": record.metrics, "wall_s": round(seconds, 1), "cpu_s": round(cpu, 1),
            "s_per_episode": round(seconds / max(1, n), 2), "full_size": FULL_SIZE[name],
            "full_size_min": round(estimate, 1), "measured_full": full, "load": load(),
            "engine": args.engine, "date": time.strftime("%Y-%m-%d %H:%M"), **engine_rows}
        if args.compare and args.engine == "transformers":
            same, cached_s, old_s = compare(name, task, model.path, args.compare,
                                            args.compare_steps)
            row.update({"compare_episodes": args.compare, "compare_steps": args.compare_steps,
                        "identical_to_previous_engine": same,
                        "compare_cached_cpu_s": round(cached_s, 1),
                        "compare_previous_cpu_s": round(old_s, 1)})
        print(json.dumps(row), flush=True)
        with open(args.out, "a") as fh:
            fh.write(json.dumps(row) + "\n")
        how = "measured" if full else f"extrapolated from {n} episodes"
        how += f", engine {args.engine}"
        result(f"L3 baseline {name} ({FULL_SIZE[name]} episodes), wall", estimate, "min",
               target=f"<= {TARGET_MIN[name]}", ok=estimate <= TARGET_MIN[name], note=how)
        result(f"L3 baseline {name} ({FULL_SIZE[name]} episodes), CPU", cpu / max(1, n)
               * FULL_SIZE[name] / 60, "cpu-min", note=f"{how}; 2 cores busy = half this in wall")
        if engine_rows:
            result(f"L3 {name} {args.engine} / transformers identical step completions",
                   engine_rows["identical_pct"], "%", target=">= 97",
                   ok=engine_rows["identical_pct"] >= 97,
                   note=f"{args.compare} episodes, {engine_rows['compared_steps']} steps")
        if args.compare and args.engine == "transformers":
            result(f"L3 {name} previous engine / kv-cached ({args.compare} episodes)",
                   old_s / max(0.1, cached_s), "x",
                   note=f"identical trajectories: {row['identical_to_previous_engine']}")


if __name__ == "__main__":
    main()
