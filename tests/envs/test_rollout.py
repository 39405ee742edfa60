"""The lockstep rollout engine, with a small deterministic environment."""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from pathlib import Path

import pytest

from a2rl.envs import Episode, RolloutConfig, Step, StepResult, run_rollouts
from a2rl.inference import GenerationSettings, load_engine


class CounterEnv:
    """Reach the target number with `inc`/`dec`, then `stop`. Reward 1 for stopping on it."""

    def __init__(self, ep: Episode) -> None:
        self.target, self.value, self.ended = ep.payload["target"], ep.payload["start"], False

    def reset(self) -> str:
        return f"Goal: reach {self.target}. Value: {self.value}."

    def step(self, action: str) -> StepResult:
        if action == "stop":
            return StepResult("Stopped.", float(self.value == self.target), True)
        self.value += {"inc": 1, "dec": -1}.get(action, 0)
        return StepResult(f"Value: {self.value}.", 0.0, False)

    def admissible_actions(self) -> list[str]:
        return ["inc", "dec", "stop"]

    def close(self) -> None:
        self.ended = True


class ScriptedEngine:
    """Acts optimally from the last observation in the prompt; counts generate calls."""

    backend = "scripted"

    def __init__(self, broken_for: str | None = None) -> None:
        self.calls: list[int] = []
        self.broken_for = broken_for

    def apply_chat_template(self, messages: list[dict[str, str]]) -> str:
        return "\n".join(f"<{m['role']}>{m['content']}" for m in messages)

    def generate(self, prompts: Sequence[str], settings: GenerationSettings, on_progress=None):
        self.calls.append(len(prompts))
        out = []
        for p in prompts:
            target = int(re.search(r"reach (-?\d+)", p)[1])  # type: ignore[index]
            value = int(re.findall(r"Value: (-?\d+)", p)[-1])
            if self.broken_for and f"reach {self.broken_for}." in p:
                out.append("I am confused")
            else:
                out.append("Action: " + ("stop" if value == target else "inc" if value < target
                                         else "dec"))
        return out

    def close(self) -> None: ...


def parse(completion: str) -> str | None:
    m = re.search(r"Action:\s*(inc|dec|stop)\b", completion)
    return m[1] if m else None


def finish(ep: Episode, env, steps: list[Step]) -> tuple[float, bool]:
    r = steps[-1].reward if steps else 0.0
    return r, r >= 1


def prompt(ep: Episode, history: list[dict[str, str]]) -> list[dict[str, str]]:
    return [{"role": "system", "content": "Reply 'Action: inc|dec|stop'."}, *history]


EPISODES = [Episode(id=f"e{i}", split="train", payload={"target": t, "start": s})
            for i, (t, s) in enumerate([(3, 0), (0, 2), (5, 5), (-2, 1)])]
CONFIG = RolloutConfig(generation=GenerationSettings(max_new_tokens=8), max_steps=10)


def test_lockstep_runs_all_episodes_with_one_call_per_step(
        caplog: pytest.LogCaptureFixture) -> None:
    engine = ScriptedEngine()
    with caplog.at_level(logging.INFO, logger="a2rl.rollout"):
        trajs = run_rollouts(engine, EPISODES, CounterEnv, prompt, parse, finish, CONFIG,
                             task="t")
    assert [t.success for t in trajs] == [True, True, True, True]
    assert [len(t.steps) for t in trajs] == [4, 3, 1, 4]
    # one batched call per step; finished episodes drop out of the batch
    assert engine.calls == [4, 3, 3, 2]
    # each step is logged (an L3 evaluation is hours on a CPU: its eval.log shows progress)
    running = [re.search(r"t: step (\d+)/\d+, (\d+) of 4 episodes", r.getMessage())
               for r in caplog.records]
    assert [(int(m[1]), int(m[2])) for m in running if m] == [(1, 4), (2, 3), (3, 3), (4, 2)]
    t0 = trajs[0]
    assert [s.action for s in t0.steps] == ["inc", "inc", "inc", "stop"] and t0.finished
    assert t0.messages[0]["role"] == "system" and t0.messages[-1] == {
        "role": "assistant", "content": "Action: stop"}
    assert [m["role"] for m in t0.messages[1:]] == ["user", "assistant"] * 4


def test_sequential_equals_lockstep() -> None:
    lock = run_rollouts(ScriptedEngine(), EPISODES, CounterEnv, prompt, parse, finish, CONFIG,
                        task="t")
    seq = run_rollouts(ScriptedEngine(), EPISODES, CounterEnv, prompt, parse, finish, CONFIG,
                       task="t", batch_size=1)
    assert [t.model_dump() for t in lock] == [t.model_dump() for t in seq]


def test_unparseable_action_and_step_limit_end_episodes() -> None:
    engine = ScriptedEngine(broken_for="3")
    short = RolloutConfig(generation=CONFIG.generation, max_steps=2)
    trajs = run_rollouts(engine, EPISODES, CounterEnv, prompt, parse, finish, short, task="t")
    broken = trajs[0]
    assert len(broken.steps) == 1 and broken.steps[0].action is None and not broken.finished
    assert trajs[3].finished is False and len(trajs[3].steps) == 2 and not trajs[3].success


def test_history_window_keeps_the_goal() -> None:
    seen: list[str] = []

    class Spy(ScriptedEngine):
        def generate(self, prompts, settings, on_progress=None):
            seen.extend(prompts)
            return super().generate(prompts, settings, on_progress)

    windowed = RolloutConfig(generation=CONFIG.generation, max_steps=10, history_window=1)
    run_rollouts(Spy(), EPISODES[:1], CounterEnv, prompt, parse, finish, windowed, task="t")
    last = seen[-1]
    assert "Goal: reach 3" in last and "earlier steps omitted" in last
    assert last.count("<assistant>") == 1


def test_real_model_lockstep_matches_one_by_one(tiny_model: Path) -> None:
    engine = load_engine(tiny_model, backend="transformers")
    cfg = RolloutConfig(generation=GenerationSettings(max_new_tokens=6), max_steps=3)
    free_parse = lambda c: c.strip().split(" ")[0] or "noop"  # noqa: E731 (any text acts)
    lock = run_rollouts(engine, EPISODES, CounterEnv, prompt, free_parse, finish, cfg, task="t")
    seq = run_rollouts(engine, EPISODES, CounterEnv, prompt, free_parse, finish, cfg, task="t",
                       batch_size=1)
    assert [[s.completion for s in t.steps] for t in lock] == \
        [[s.completion for s in t.steps] for t in seq]


class SessionSpy(ScriptedEngine):
    """A session engine: records each call's sessions and the sessions ended."""

    def __init__(self) -> None:
        super().__init__()
        self.turns: list[list[str]] = []
        self.ended: list[str] = []

    def generate_sessions(self, requests, settings):
        self.turns.append([r.session for r in requests])
        return self.generate([r.prompt for r in requests], settings)

    def end_session(self, session: str) -> None:
        self.ended.append(session)


def test_pool_refills_as_episodes_end_and_ends_their_sessions() -> None:
    """Two in flight: an ended episode's place goes to the next one at once; each episode is
    one session, ended when the episode is; trajectories are the all-at-once ones, in order."""
    engine = SessionSpy()
    pooled = run_rollouts(engine, EPISODES, CounterEnv, prompt, parse, finish, CONFIG, task="t",
                          batch_size=2)
    assert engine.calls == [2, 2, 2, 2, 1, 1, 1, 1]
    assert engine.turns[3] == ["0:e0", "2:e2"] and engine.turns[4] == ["3:e3"]
    assert engine.ended == ["1:e1", "0:e0", "2:e2", "3:e3"]
    whole = run_rollouts(ScriptedEngine(), EPISODES, CounterEnv, prompt, parse, finish, CONFIG,
                         task="t")
    assert [t.model_dump() for t in pooled] == [t.model_dump() for t in whole]


def test_failure_closes_envs_and_sessions_in_flight() -> None:
    engine = SessionSpy()
    envs: list[CounterEnv] = []

    def make(ep: Episode) -> CounterEnv:
        if ep.id == "e2":
            raise RuntimeError("env broke")
        envs.append(CounterEnv(ep))
        return envs[-1]

    with pytest.raises(RuntimeError, match="env broke"):
        run_rollouts(engine, EPISODES, make, prompt, parse, finish, CONFIG, task="t",
                     batch_size=2)
    assert all(env.ended for env in envs) and sorted(engine.ended) == ["0:e0", "1:e1"]


def test_same_steps_counts_agreement_until_the_first_difference() -> None:
    from a2rl.envs import same_steps

    def traj(ep: str, *completions: str) -> dict:
        return {"episode_id": ep, "steps": [{"completion": c} for c in completions]}

    a = [traj("e1", "x", "y", "z"), traj("e2", "p")]
    b = [traj("e2", "p", "q"), traj("e1", "x", "Y", "z")]
    same, total, diffs = same_steps(a, b, ("one", "two"))
    # e1: 1 identical of 3 (everything after "y"/"Y" counts as different); e2: 1 of 2
    assert (same, total) == (2, 5)
    assert diffs == ["e1 step 1: one 'y' / two 'Y'"]
