"""Benchmark: the embedded model's baseline on the interactive (L3) tasks, and what it costs.

    python bench/l3_baselines.py [--model smollm2-135m] [--episodes 20] [--tasks alfworld,...]

Scores the base model on the first `--episodes` held-out episodes of each offline L3 task
(`max_heldout`), exactly as the grader scores a baseline (child process, the task's own
prompting and decoding), and prints score, success rate, wall time and time per episode, so the
full-size baseline time can be extrapolated (ALFWorld 134, WebShop 100, DeepSearchQA 200
episodes). DeepSearchQA runs offline (generated corpus, BM25) with the string-match judge unless
A2RL_JUDGE_BASE_URL is set. Results are appended as JSON lines to `--out`.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

from a2rl.grader import score_baseline
from a2rl.models import resolve_model
from a2rl.tasks import get_task

FULL_SIZE = {"alfworld": 134, "webshop": 100, "deepsearchqa": 200}
OFFLINE_OPTIONS: dict[str, dict[str, Any]] = {
    "alfworld": {"n_train": 6},
    "webshop": {},
    "deepsearchqa": {"source": "offline"},
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--episodes", type=int, default=20)
    ap.add_argument("--tasks", default="alfworld,webshop,deepsearchqa")
    ap.add_argument("--out", default="bench/l3_baselines.jsonl")
    args = ap.parse_args()
    model = resolve_model(args.model)
    for name in args.tasks.split(","):
        params = {**OFFLINE_OPTIONS[name], "max_heldout": args.episodes}
        task = get_task(name, params)
        with tempfile.TemporaryDirectory() as tmp:
            start = time.monotonic()
            record = score_baseline(task, model, Path(tmp) / "eval", timeout_s=6 * 3600,
                                    use_cache=False)
            seconds = time.monotonic() - start
        n = record.n_items
        row = {"task": name, "model": args.model, "episodes": n, "score": record.score,
               "metrics": record.metrics, "wall_s": round(seconds, 1),
               "s_per_episode": round(seconds / max(1, n), 2),
               "full_size": FULL_SIZE[name],
               "full_size_estimate_min": round(seconds / max(1, n) * FULL_SIZE[name] / 60, 1),
               "date": time.strftime("%Y-%m-%d")}
        print(json.dumps(row), flush=True)
        with open(args.out, "a") as fh:
            fh.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
