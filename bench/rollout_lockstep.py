"""Benchmark: lockstep batched rollouts vs one episode at a time, same episodes, same model.

    python bench/rollout_lockstep.py [--model smollm2-135m] [--episodes 16] [--steps 4]

Greedy decoding, so both modes must produce identical trajectories; prints both wall times and
the speed-up (goal: ≥ 5× at N = 16). The environment is a small deterministic text walk so the
measurement is about generation, not about an environment's own cost.
"""

from __future__ import annotations

import argparse
import sys
import time

from a2rl.envs import Episode, RolloutConfig, Step, StepResult, run_rollouts
from a2rl.inference import GenerationSettings, load_engine
from a2rl.models import resolve_model

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
    args = ap.parse_args()
    model = resolve_model(args.model).path
    engine = load_engine(model)
    episodes = [Episode(id=f"w{i}", split="train",
                        payload={"goal": ROOMS[i % len(ROOMS)], "start": ROOMS[(i * 5 + 1) % len(ROOMS)]})
                for i in range(args.episodes)]
    cfg = RolloutConfig(generation=GenerationSettings(max_new_tokens=args.tokens, stop=("\n",)),
                        max_steps=args.steps)
    engine.generate([engine.apply_chat_template([{"role": "user", "content": "hi"}])],
                    cfg.generation)  # warm-up
    t = time.perf_counter()
    lock = run_rollouts(engine, episodes, WalkEnv, prompt, parse, finish, cfg, task="bench")
    t_lock = time.perf_counter() - t
    t = time.perf_counter()
    seq = run_rollouts(engine, episodes, WalkEnv, prompt, parse, finish, cfg, task="bench",
                       batch_size=1)
    t_seq = time.perf_counter() - t
    same = [[s.completion for s in x.steps] for x in lock] == [[s.completion for s in x.steps] for x in seq]
    steps = sum(len(x.steps) for x in lock)
    print(f"{args.episodes} episodes, {steps} steps, model {args.model}, backend {engine.backend}")
    print(f"lockstep  : {t_lock:7.2f} s")
    print(f"sequential: {t_seq:7.2f} s")
    print(f"speed-up  : {t_seq / t_lock:5.2f}x   identical trajectories: {same}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
