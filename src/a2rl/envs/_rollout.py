"""Lockstep rollouts: N episodes advance together, one batched generation call per step.

The evaluator and `a2rl rollout` use the same engine, so trajectories an agent collects on its
train episodes have exactly the prompt and action format it will be scored with.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from a2rl.envs._env import Env, Episode, Step, Trajectory
from a2rl.inference import Engine, GenerationSettings

PromptFn = Callable[[Episode, list[dict[str, str]]], list[dict[str, str]]]
"""(episode, history turns so far) -> chat messages for the next generation."""
ParseFn = Callable[[str], str | None]
"""completion -> action, or None when no action can be read."""
log = logging.getLogger("a2rl.rollout")
FinishFn = Callable[[Episode, Env, list[Step]], tuple[float, bool]]
"""(episode, env, steps) -> (episode reward, success), read once the episode stops."""


@dataclass(frozen=True)
class RolloutConfig:
    generation: GenerationSettings
    """Decoding of each step (stop strings end an action)."""
    max_steps: int = 30
    history_window: int | None = None
    """Keep only the last N (observation, action) pairs in the prompt; None = all."""


def _history(steps: list[Step], first_obs: str, window: int | None) -> list[dict[str, str]]:
    """The conversation so far: the first observation (it carries the goal), then alternating
    assistant (completion) / user (next observation) turns. With a window, only the last N
    steps are kept; the observation that preceded the oldest kept step joins the first turn."""
    kept = steps if window is None or len(steps) <= window else steps[-window:]
    first = first_obs
    if kept and kept is not steps:
        first = f"{first_obs}\n\n[… earlier steps omitted …]\n\n{kept[0].observation}"
    turns: list[dict[str, str]] = [{"role": "user", "content": first}]
    for i, st in enumerate(kept):
        turns.append({"role": "assistant", "content": st.completion})
        if i + 1 < len(kept):
            turns.append({"role": "user", "content": kept[i + 1].observation})
    return turns


def run_rollouts(engine: Engine, episodes: Sequence[Episode], make_env: Callable[[Episode], Env],
                 prompt_fn: PromptFn, parse_fn: ParseFn, finish_fn: FinishFn,
                 config: RolloutConfig, *, task: str, batch_size: int | None = None,
                 on_progress: Callable[[int], None] | None = None) -> list[Trajectory]:
    """Run `episodes` to completion, `batch_size` of them in lockstep (None = all at once)."""
    size = batch_size or max(1, len(episodes))
    out: list[Trajectory] = []
    for start in range(0, len(episodes), size):
        out.extend(_lockstep(engine, list(episodes[start:start + size]), make_env, prompt_fn,
                             parse_fn, finish_fn, config, task))
        if on_progress:
            on_progress(len(episodes[start:start + size]))
    return out


def _lockstep(engine: Engine, episodes: list[Episode], make_env: Callable[[Episode], Env],
              prompt_fn: PromptFn, parse_fn: ParseFn, finish_fn: FinishFn,
              config: RolloutConfig, task: str) -> list[Trajectory]:
    envs = [make_env(ep) for ep in episodes]
    first = [env.reset() for env in envs]
    steps: list[list[Step]] = [[] for _ in episodes]
    pending_obs = list(first)  # observation each episode must act on next
    active = [True] * len(episodes)
    finished = [False] * len(episodes)
    started = time.monotonic()
    try:
        for step in range(config.max_steps):
            idx = [i for i, a in enumerate(active) if a]
            if not idx:
                break
            # An L3 evaluation is one long call (hours on a CPU): say where it is, per step.
            log.info("%s: step %d/%d, %d of %d episodes still running, %.0f s so far", task,
                     step + 1, config.max_steps, len(idx), len(episodes),
                     time.monotonic() - started)
            prompts = []
            for i in idx:
                history = _history(steps[i], first[i], config.history_window)
                if steps[i]:
                    history.append({"role": "user", "content": pending_obs[i]})
                prompts.append(engine.apply_chat_template(prompt_fn(episodes[i], history)))
            completions = engine.generate(prompts, config.generation)
            for i, completion in zip(idx, completions, strict=True):
                action = parse_fn(completion)
                st = Step(observation=pending_obs[i], completion=completion, action=action)
                steps[i].append(st)
                if action is None:
                    active[i] = False
                    continue
                result = envs[i].step(action)
                st.reward, st.done = result.reward, result.done
                pending_obs[i] = result.observation
                if result.done:
                    active[i] = False
                    finished[i] = True
        trajectories = []
        for i, ep in enumerate(episodes):
            reward, success = finish_fn(ep, envs[i], steps[i])
            # The whole episode in the evaluator's format, ending with the last completion.
            messages = prompt_fn(ep, _history(steps[i], first[i], None))
            trajectories.append(Trajectory(episode_id=ep.id, task=task, steps=steps[i],
                                           reward=reward, success=success,
                                           finished=finished[i], messages=messages))
        return trajectories
    finally:
        for env in envs:
            env.close()
