"""Benchmark: two torch processes on the same cores, with OpenMP's default and passive waiting.

    python bench/shared_cores.py [--model smollm2-135m] [--steps 4] [--rows 8] [--tokens 128]

On a CPU box the evaluation child shares the cores with the agent's training, and the test
suite runs two workers on two cores. Each torch process starts a thread per core, and OpenMP's
default policy has a thread spin at every barrier: while another process holds its core that
spinning is pure loss. This runs the same training loop (forward, backward, optimizer step on
`--rows` x `--tokens` random tokens) alone and as two processes at once, under the default
policy and under `OMP_WAIT_POLICY=PASSIVE` (what the test suite sets, and what docs/getting-started.md
advises on a CPU box where evaluation and training overlap), and prints each pair's slowdown
over the loop alone: 2.0 is a fair split of the cores, more is waste.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import load, result  # noqa: E402

LOOP = """
import sys, time, torch
from transformers import AutoModelForCausalLM
torch.manual_seed(0)
model = AutoModelForCausalLM.from_pretrained(sys.argv[1], dtype=torch.float32)
ids = torch.randint(100, 1000, (int(sys.argv[2]), int(sys.argv[3])))
opt = torch.optim.SGD(model.parameters(), lr=0.0)
model(ids[:, :8])
start = time.perf_counter()
for _ in range(int(sys.argv[4])):
    model(ids, labels=ids).loss.backward()
    opt.step()
    opt.zero_grad()
print(time.perf_counter() - start)
"""


def timed(n: int, policy: str | None, args: argparse.Namespace, model: Path) -> float:
    """Wall seconds of the loop's steps (model load excluded), the slowest of `n` at once."""
    env = dict(os.environ)
    env.pop("OMP_WAIT_POLICY", None)
    if policy:
        env["OMP_WAIT_POLICY"] = policy
    cmd = [sys.executable, "-c", LOOP, str(model), str(args.rows), str(args.tokens), str(args.steps)]
    procs = [subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                              text=True) for _ in range(n)]
    outs = [p.communicate()[0] for p in procs]
    if any(p.returncode for p in procs):
        raise SystemExit(f"the training loop failed (exit {[p.returncode for p in procs]})")
    return max(float(o.split()[-1]) for o in outs)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--rows", type=int, default=8)
    ap.add_argument("--tokens", type=int, default=128)
    args = ap.parse_args()
    from a2rl.models import resolve_model

    model = resolve_model(args.model).path
    print(f"{args.steps} training steps of {args.rows} x {args.tokens} tokens; {load()}")
    policies = {"default": None, "passive": "PASSIVE"}
    # One process alone is timed twice per policy, interleaved, and the faster kept: a single
    # short run varies by +-15 % here, as much as the difference being measured.
    runs: dict[str, list[float]] = {label: [] for label in policies}
    for _ in range(2):
        for label, policy in policies.items():
            runs[label].append(timed(1, policy, args, model))
    alone = {label: min(times) for label, times in runs.items()}
    pair: dict[str, float] = {}
    for label, policy in policies.items():
        pair[label] = timed(2, policy, args, model)
        slowdown = pair[label] / alone["default"]
        print(f"  {label:8s} alone {alone[label]:6.1f} s   two at once {pair[label]:6.1f} s   "
              f"two at once / default alone {slowdown:.2f}x", flush=True)
        result(f"two processes at once / one alone (default waiting), {label} waiting", slowdown,
               "x", target=None if policy is None else "<= 2.2 (2 is a fair split of the cores)",
               ok=None if policy is None else slowdown <= 2.2,
               note=f"one alone {alone[label]:.1f} s, two at once {pair[label]:.1f} s")
    result("two at once, passive / default waiting", pair["passive"] / pair["default"], "x",
           target="< 1", ok=pair["passive"] < pair["default"])
    ratio = alone["passive"] / alone["default"]
    result("one alone, passive / default waiting", ratio, "x", target="<= 1.2",
           ok=ratio <= 1.2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
