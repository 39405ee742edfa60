"""The reference agent's pipeline (runs inside the sandbox, in the workspace).

    python -m a2rl.agents.reference_agent [--steps N] [--lr X] [--lr2 Y]
                                          [--variant continue|lr|none]

Static tasks: v1 = SFT from the base model on data/train.jsonl. v2 (the variant): `continue`
trains a second stage from v1 at lr2 (the default: on the embedded task the model keeps
improving with more steps), `lr` trains from the base model again with lr2, `none` stops
after v1.

Interactive tasks (data/episodes.jsonl): rejection-sampling fine-tuning. Each round collects
rollouts on the train episodes with `a2rl rollout` (sampling, several seeds), keeps the
successful trajectories (plus any demonstrations the task ships), trains on every assistant
step of them, submits, and starts the next round from the new model.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

HERE = Path(__file__).parent


def log(msg: str) -> None:
    print(f"[reference-agent {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def grader(method: str, path: str, body: dict | None = None) -> dict:
    req = urllib.request.Request(
        os.environ["A2RL_GRADER_URL"] + path, method=method,
        data=json.dumps(body).encode() if body is not None else None,
        headers={"Authorization": "Bearer " + os.environ["A2RL_TOKEN"],
                 "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=24 * 3600) as resp:
            return json.load(resp)
    except urllib.error.HTTPError as exc:
        return {"http_error": exc.code, "detail": exc.read().decode(errors="replace")}


def train(script: Path, init: str, out: str, lr: float, args: argparse.Namespace) -> bool:
    cmd = [sys.executable, str(script), "--model", init,
           "--data", str(Path(os.environ["DATA_PATH"]) / "train.jsonl"), "--out", out,
           "--lr", str(lr), "--max-steps", str(args.steps), "--batch-size", str(args.batch_size),
           "--max-train", str(args.max_train)]
    log("$ " + " ".join(cmd))
    return subprocess.run(cmd).returncode == 0


def interactive(script: Path, args: argparse.Namespace) -> None:
    data = Path(os.environ["DATA_PATH"])
    init, task = os.environ["MODEL_PATH"], os.environ["TASK"]
    for round_ in range(1, args.rounds + 1):
        kept: list[dict] = []
        for sample in range(args.samples):
            out = Path("code") / f"rollouts_r{round_}_s{sample}.jsonl"
            cmd = ["a2rl", "rollout", "--task", task, "--model", init, "--out", str(out),
                   "--temperature", str(args.temperature if sample else 0.0), "--seed", str(sample)]
            if args.episodes:
                cmd += ["--n", str(args.episodes)]
            log("$ " + " ".join(cmd))
            if subprocess.run(cmd).returncode != 0 or not out.exists():
                log("rollout failed")
                continue
            trajs = [json.loads(line) for line in out.read_text().splitlines() if line.strip()]
            good = [t for t in trajs if t["success"] or t["reward"] >= args.min_reward]
            log(f"round {round_} sample {sample}: {len(good)}/{len(trajs)} trajectories kept")
            kept += good
        demos = data / "demos.jsonl"
        if round_ == 1 and demos.exists():
            kept += [json.loads(line) for line in demos.read_text().splitlines() if line.strip()]
        rows = []
        for t in kept:  # one example per assistant step, with the conversation before it
            msgs = t["messages"]
            for i, m in enumerate(msgs):
                if m["role"] == "assistant":
                    rows.append({"prompt_messages": msgs[:i], "completion": m["content"]})
        if not rows:
            log(f"round {round_}: nothing to train on; stopping")
            return
        train_file = Path("code") / f"sft_round{round_}.jsonl"
        train_file.write_text("".join(json.dumps(r) + "\n" for r in rows))
        out_dir = f"output/r{round_}"
        cmd = [sys.executable, str(script), "--model", init, "--data", str(train_file),
               "--out", out_dir, "--lr", str(args.lr), "--max-steps", str(args.steps),
               "--batch-size", str(args.batch_size), "--max-length", "1024"]
        log("$ " + " ".join(cmd))
        if subprocess.run(cmd).returncode != 0:
            log("training failed; stopping")
            return
        log(f"submitted {out_dir}: {json.dumps(grader('POST', '/submit', {'model_path': out_dir}))}")
        init = out_dir


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--lr", type=float, default=1e-4)
    ap.add_argument("--lr2", type=float, default=1e-4)
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--max-train", type=int, default=0)
    ap.add_argument("--variant", choices=["continue", "lr", "none"], default="continue")
    # interactive tasks
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--samples", type=int, default=2, help="rollouts per episode per round")
    ap.add_argument("--temperature", type=float, default=0.8)
    ap.add_argument("--episodes", type=int, default=0, help="0 = all train episodes")
    ap.add_argument("--min-reward", type=float, default=1.0)
    args = ap.parse_args()

    status = grader("GET", "/status")
    log(f"task {os.environ['TASK']}; baseline {status.get('baseline')}; "
        f"{status.get('remaining_seconds')} s left")
    code = Path("code")
    code.mkdir(exist_ok=True)
    script = code / "train_sft.py"
    shutil.copyfile(HERE / "train_sft.py", script)
    log(f"wrote {script}")

    if (Path(os.environ["DATA_PATH"]) / "episodes.jsonl").exists():
        interactive(script, args)
        log("done")
        return 0

    started = time.monotonic()
    base = os.environ["MODEL_PATH"]
    plan = [(base, "output/v1", args.lr)]
    if args.variant == "continue":
        plan.append(("output/v1", "output/v2", args.lr2))
    elif args.variant == "lr":
        plan.append((base, "output/v2", args.lr2))
    for i, (init, out, lr) in enumerate(plan):
        if i:
            remaining = float(grader("GET", "/status").get("remaining_seconds", 0))
            needed = (time.monotonic() - started) / i * 1.2
            if remaining < needed:
                log(f"skipping {out}: {remaining:.0f} s left, about {needed:.0f} s needed")
                break
        if not Path(init, "config.json").exists():
            log(f"skipping {out}: {init} does not exist")
            continue
        if not train(script, init, out, lr, args):
            log(f"training {out} failed")
            continue
        result = grader("POST", "/submit", {"model_path": out})
        log(f"submitted {out}: {json.dumps(result)}")
    log("done")
    return 0


if __name__ == "__main__":
    sys.exit(main())
