"""Benchmark: the harness's overhead on a static evaluation.

    python bench/grading_overhead.py [--items 200] [--runs 2] [--model smollm2-135m]

Grading = `score_baseline` on the arith task (the grader's own path: evaluation child process,
model load, prompts, generation, scoring, records). Raw = a fresh interpreter that loads the
same engine and generates the same prompts with the same decoding, nothing else. Both start a
Python process, import torch and load the model, so the ratio is what the harness adds
(target <= 1.05). Runs alternate, so load changes hit both alike; medians are reported.
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import load, result  # noqa: E402

from a2rl.grader import score_baseline  # noqa: E402
from a2rl.inference._registry import child_env  # noqa: E402
from a2rl.models import resolve_model  # noqa: E402
from a2rl.tasks import get_task  # noqa: E402

RAW = """
import json, sys
from a2rl.inference import load_engine
from a2rl.tasks import get_task
task = get_task("arith", {"n_heldout": %d})
engine = load_engine(__import__("pathlib").Path(%r), chat_template_from=__import__("pathlib").Path(%r))
prompts = [engine.apply_chat_template(task.messages(i)) + task.assistant_prefix(i)
           for i in task.heldout_items()]
out = engine.generate(prompts, task.generation)
print(json.dumps(out))
"""


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--items", type=int, default=200)
    ap.add_argument("--runs", type=int, default=2)
    args = ap.parse_args()
    logging.basicConfig(level=logging.ERROR)
    model = resolve_model(args.model)
    task = get_task("arith", {"n_heldout": args.items})
    code = RAW % (args.items, str(model.path), str(model.path))
    raw_t: list[float] = []
    grade_t: list[float] = []
    raw_out: list[str] = []
    graded = 0
    for _ in range(args.runs):
        start = time.perf_counter()
        # The environment the harness gives its evaluation child (OpenMP waiting included), so
        # the ratio is the harness's overhead and not a difference of thread settings.
        proc = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                              text=True, env=child_env(None))
        raw_t.append(time.perf_counter() - start)
        raw_out = json.loads(proc.stdout.strip().splitlines()[-1])
        with tempfile.TemporaryDirectory() as tmp:
            start = time.perf_counter()
            record = score_baseline(task, model, Path(tmp) / "eval", timeout_s=3600,
                                    use_cache=False)
            grade_t.append(time.perf_counter() - start)
            graded = record.n_items
    raw_med, grade_med = statistics.median(raw_t), statistics.median(grade_t)
    ratio = grade_med / raw_med
    print(f"arith, {args.items} items, model {args.model}, {args.runs} runs each ({load()})")
    print(f"raw generation (fresh process, load + generate): median {raw_med:.2f} s "
          f"(runs: {', '.join(f'{t:.2f}' for t in raw_t)})")
    print(f"grading (score_baseline, child process):      median {grade_med:.2f} s "
          f"(runs: {', '.join(f'{t:.2f}' for t in grade_t)})")
    print(f"overhead ratio: {ratio:.3f}x (target <= 1.05); {len(raw_out)} raw completions, "
          f"{graded} graded items")
    result("grading / raw generation (arith)", ratio, "x", target="<= 1.05", ok=ratio <= 1.05)
    return 0


if __name__ == "__main__":
    sys.exit(main())
