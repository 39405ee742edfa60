"""Benchmark: lockstep batched rollouts vs one episode at a time, same episodes, same model.

    python bench/rollout_lockstep.py [--model smollm2-135m] [--episodes 16] [--steps 4]
                                     [--without prompt-lookup,packed-attention,...]

Three modes on the same episodes: lockstep (every episode in flight, one batched call per
round, KV caches kept per episode), sequential (one episode at a time, same engine), and the
re-encoding engine, labelled "previous engine" (lockstep, but every step re-encodes its whole
prompt with transformers' concatenating cache and SDPA attention; bench/_comparison_engine.py).
Greedy decoding, so all three must produce identical trajectories; prints the wall times, the
lockstep / sequential speed-up in episodes per second (goal: >= 5x at N = 16) and what the
caches save. The environment is a small deterministic text walk so the measurement is about
generation, not about an environment's own cost. `--without` measures the transformers engine
without some of its parts (bench/_comparison_engine.PARTS) in all three modes. Prompt-lookup
drafts (the engine's default) help one episode at a time far more than a batch of 16 (a lone
row's forward costs about the same for 1 or 17 columns, 16 rows' does not), so the ratio is
lower with them than with `--without prompt-lookup`; the script says which it measured.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from a2rl.envs import Episode, RolloutConfig, Step, StepResult, run_rollouts
from a2rl.inference import GenerationSettings, load_engine
from a2rl.models import resolve_model

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import load, result  # noqa: E402
from _comparison_engine import ComparisonEngine, Reencoding, parse_parts  # noqa: E402

ROOMS = ["kitchen", "hall", "garden", "attic", "cellar", "study"]


class WalkEnv:
    """Walk between rooms until you reach the goal room; `go to <room>` moves you."""

    def __init__(self, ep: Episode) -> None:
        self.goal, self.here = ep.payload["goal"], ep.payload["start"]

    def reset(self) -> str:
        return (f"You are in the {self.here}. Find the {self.goal}. "
                f"Rooms: {', '.join(ROOMS)}. Reply with: go to <room>")

    def step(self, action: str) -> StepResult:
        room = action.removeprefix("go to ").strip().strip(".")
        if room in ROOMS:
            self.here = room
        done = self.here == self.goal
        return StepResult(f"You are in the {self.here}.", float(done), done)

    def admissible_actions(self) -> list[str]:
        return [f"go to {r}" for r in ROOMS]

    def close(self) -> None: ...


def prompt(ep: Episode, history: list[dict[str, str]]) -> list[dict[str, str]]:
    return history


def parse(completion: str) -> str | None:
    return completion.strip().split("\n")[0] or "look"


def finish(ep: Episode, env: WalkEnv, steps: list[Step]) -> tuple[float, bool]:
    r = steps[-1].reward if steps else 0.0
    return r, r >= 1


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--episodes", type=int, default=16)
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--tokens", type=int, default=12)
    ap.add_argument("--without", type=parse_parts, default=(),
                    help="the transformers engine without these parts, comma-separated "
                         "(kv-sessions, growing-cache, compact-decode, prompt-lookup, "
                         "packed-attention)")
    args = ap.parse_args()
    model = resolve_model(args.model).path
    engine = ComparisonEngine(model, without=args.without) if args.without else load_engine(model)
    episodes = [Episode(id=f"w{i}", split="train",
                        payload={"goal": ROOMS[i % len(ROOMS)], "start": ROOMS[(i * 5 + 1) % len(ROOMS)]})
                for i in range(args.episodes)]
    cfg = RolloutConfig(generation=GenerationSettings(max_new_tokens=args.tokens, stop=("\n",)),
                        max_steps=args.steps)
    engine.generate([engine.apply_chat_template([{"role": "user", "content": "hi"}])],
                    cfg.generation)  # warm-up
    runs = {}
    for label, eng, size in (("lockstep", engine, None), ("sequential", engine, 1),
                             ("previous engine", Reencoding(engine), None)):
        t, c = time.perf_counter(), time.process_time()
        trajs = run_rollouts(eng, episodes, WalkEnv, prompt, parse, finish, cfg,  # type: ignore[arg-type]
                             task="bench", batch_size=size)
        runs[label] = (time.perf_counter() - t, [[s.completion for s in x.steps] for x in trajs],
                       time.process_time() - c)
    same = all(r[1] == runs["lockstep"][1] for r in runs.values())
    steps = sum(len(x) for x in runs["lockstep"][1])
    lookup = getattr(engine, "_lookup", 0)
    without = f" without {', '.join(args.without)}" if args.without else ""
    print(f"{args.episodes} episodes, {steps} steps, model {args.model}, backend "
          f"{engine.backend}{without}, prompt lookup "
          f"{f'on ({lookup} tokens)' if lookup else 'off'} ({load()})")
    for label, (secs, _, cpu) in runs.items():
        print(f"{label:>16}: {secs:7.2f} s  ({args.episodes / secs:.2f} episodes/s; "
              f"{cpu:.1f} CPU s)")
    speedup = runs["sequential"][0] / runs["lockstep"][0]
    cache_gain = runs["previous engine"][0] / runs["lockstep"][0]
    print(f"lockstep / sequential: {speedup:5.2f}x (target >= 5)   cache gain over the previous "
          f"engine: {cache_gain:.2f}x   identical trajectories: {same}")
    result("rollouts lockstep / sequential (episodes/s)", speedup, "x", target=">= 5",
           ok=speedup >= 5, note=f"{args.episodes} episodes, identical={same}, prompt lookup "
                                 f"{'on' if lookup else 'off (--without prompt-lookup)'}"
                                 + (f", without {','.join(args.without)}" if args.without else ""))
    result("rollouts previous engine / kv-cached (time)", cache_gain, "x",
           note="toy walk, short prompts")
    cpu_speedup = runs["sequential"][2] / runs["lockstep"][2]
    result("rollouts lockstep / sequential (CPU time)", cpu_speedup, "x",
           note="less sensitive to the machine's other load")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
