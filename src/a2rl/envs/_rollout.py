"""Lockstep rollouts: the episodes in flight advance together, one batched generation call per
round, each episode a session of the engine (its KV cache kept between its steps).

The evaluator and `a2rl rollout` use the same engine, so trajectories an agent collects on its
train episodes have exactly the prompt and action format it will be scored with.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from a2rl.envs._env import Env, Episode, Step, Trajectory
from a2rl.inference import Engine, GenerationSettings, SessionPrompt, end_session, generate_sessions

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


@dataclass
class _Live:
    """An episode in flight: its environment, the first observation and the steps so far."""

    index: int
    session: str
    env: Env
    first: str
    pending: str
    """The observation the episode must act on next."""
    steps: list[Step]


def run_rollouts(engine: Engine, episodes: Sequence[Episode], make_env: Callable[[Episode], Env],
                 prompt_fn: PromptFn, parse_fn: ParseFn, finish_fn: FinishFn,
                 config: RolloutConfig, *, task: str, batch_size: int | None = None,
                 on_progress: Callable[[int], None] | None = None) -> list[Trajectory]:
    """Run `episodes` to completion, at most `batch_size` of them in flight (None = all at once).

    Each round asks the engine for the next turn of every episode in flight in one call (a
    session per episode, so an engine that keeps KV caches encodes only what is new). An episode
    that ends leaves at once and the next waiting episode takes its place, so short episodes
    never wait for the longest of a fixed group. Trajectories come back in the episodes' order;
    what each contains does not depend on `batch_size` (greedy decoding).
    """
    size = batch_size or max(1, len(episodes))
    out: list[Trajectory | None] = [None] * len(episodes)
    waiting = list(enumerate(episodes))[::-1]  # popped from the end: episode order
    live: list[_Live] = []
    started = time.monotonic()
    try:
        while waiting or live:
            while waiting and len(live) < size:
                index, ep = waiting.pop()
                env = make_env(ep)
                live.append(_Live(index, f"{index}:{ep.id}", env, "", "", []))
                live[-1].first = live[-1].pending = env.reset()
            # An L3 evaluation is one long call (hours on a CPU): say where it is, each round
            # (the step of the furthest episode in flight; episodes not yet done).
            log.info("%s: step %d/%d, %d of %d episodes still running, %d in flight, %.0f s so "
                     "far", task, max(len(lv.steps) for lv in live) + 1, config.max_steps,
                     len(live) + len(waiting), len(episodes), len(live),
                     time.monotonic() - started)
            requests = []
            for lv in live:
                history = _history(lv.steps, lv.first, config.history_window)
                if lv.steps:
                    history.append({"role": "user", "content": lv.pending})
                prompt = engine.apply_chat_template(prompt_fn(episodes[lv.index], history))
                requests.append(SessionPrompt(lv.session, prompt))
            completions = generate_sessions(engine, requests, config.generation)
            still: list[_Live] = []
            for lv, completion in zip(live, completions, strict=True):
                if _advance(lv, completion, parse_fn) or len(lv.steps) >= config.max_steps:
                    out[lv.index] = _finish(lv, episodes[lv.index], prompt_fn, finish_fn, task)
                    lv.env.close()
                    end_session(engine, lv.session)
                    if on_progress:
                        on_progress(1)
                else:
                    still.append(lv)
            live = still
    finally:
        for lv in live:
            lv.env.close()
            end_session(engine, lv.session)
    return [t for t in out if t is not None]


def _advance(lv: _Live, completion: str, parse_fn: ParseFn) -> bool:
    """Record the step and act on it; True when the episode is over (unparseable or done)."""
    action = parse_fn(completion)
    st = Step(observation=lv.pending, completion=completion, action=action)
    lv.steps.append(st)
    if action is None:
        return True
    result = lv.env.step(action)
    st.reward, st.done = result.reward, result.done
    lv.pending = result.observation
    return result.done


def _finish(lv: _Live, ep: Episode, prompt_fn: PromptFn, finish_fn: FinishFn,
            task: str) -> Trajectory:
    reward, success = finish_fn(ep, lv.env, lv.steps)
    # The whole episode in the evaluator's format, ending with the last completion.
    messages = prompt_fn(ep, _history(lv.steps, lv.first, None))
    finished = bool(lv.steps) and lv.steps[-1].done
    return Trajectory(episode_id=ep.id, task=task, steps=lv.steps, reward=reward,
                      success=success, finished=finished, messages=messages)
