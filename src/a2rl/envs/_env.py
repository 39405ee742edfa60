"""The environment interface of interactive (L3) tasks.

An `Env` is one episode: `reset()` gives the first observation, `step(action)` the next one with a
reward and a done flag. Environments that know their legal actions expose them (ALFWorld's
admissible commands, WebShop's clickables); the evaluator never shows them to the model unless
the task's prompt format does, and agents may not use them as privileged information where the
task forbids it (the audit looks for that).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from pydantic import BaseModel, Field


@dataclass
class StepResult:
    observation: str
    reward: float
    done: bool
    info: dict[str, Any] = field(default_factory=dict)


class Env(Protocol):
    def reset(self) -> str:
        """Start the episode; return the first observation (the task/goal included)."""
        ...

    def step(self, action: str) -> StepResult: ...

    def admissible_actions(self) -> list[str] | None:
        """Legal actions now, when the environment knows them; None otherwise."""
        ...

    def close(self) -> None: ...


class Episode(BaseModel):
    """An episode specification. Train-visible ones are written to the workspace
    (data/episodes.jsonl); held-out ones never are."""

    id: str
    split: str
    """`train` or `heldout`."""
    payload: dict[str, Any] = Field(default_factory=dict)
    """Task-specific: goal, game file, question…"""


class Step(BaseModel):
    observation: str
    """What the model saw before acting (the env's text)."""
    completion: str
    """What the model generated."""
    action: str | None
    """The action parsed from the completion (None: unparseable, the episode ends)."""
    reward: float = 0.0
    done: bool = False


class Trajectory(BaseModel):
    """One line of the trajectory JSONL that `a2rl rollout` writes and the evaluator records."""

    episode_id: str
    task: str
    steps: list[Step] = Field(default_factory=list)
    reward: float = 0.0
    """Final episode reward (the task defines it: sparse success, dense score…)."""
    success: bool = False
    finished: bool = False
    """The environment ended the episode (False: stopped at max steps or unparseable action)."""
    messages: list[dict[str, str]] = Field(default_factory=list)
    """The final conversation in the evaluator's exact prompt format (ready for SFT)."""
