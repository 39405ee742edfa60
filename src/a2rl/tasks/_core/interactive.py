"""Shared evaluation for interactive (L3) tasks: held-out episodes rolled out in lockstep."""

from __future__ import annotations

import json
from abc import abstractmethod
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

from pydantic import ValidationError

from a2rl._errors import A2RLError
from a2rl.envs import Env, Episode, RolloutConfig, Step, run_rollouts
from a2rl.tasks._core.task import EvalOutcome, ProgressCounter, Task

EPISODES_FILE = "episodes.jsonl"


class InteractiveTask(Task):
    """A task scored by running the model as an agent in an environment.

    Subclasses define the episodes, the environment, the prompt (the exact format shown to the
    model at every step) and the action parser. `a2rl rollout` runs the same code on the
    train-visible episodes inside the agent's workspace.
    """

    rollout: ClassVar[RolloutConfig]
    rollout_batch_size: ClassVar[int] = 16

    @abstractmethod
    def train_episodes(self) -> list[Episode]: ...

    @abstractmethod
    def heldout_episodes(self) -> list[Episode]: ...

    @abstractmethod
    def make_env(self, episode: Episode) -> Env: ...

    @abstractmethod
    def messages(self, episode: Episode, history: list[dict[str, str]]) -> list[dict[str, str]]:
        """The chat sent to the model: the task's preamble (few-shots, rules) + the history."""

    @abstractmethod
    def parse_action(self, completion: str) -> str | None: ...

    def finish(self, episode: Episode, env: Env, steps: list[Step]) -> tuple[float, bool]:
        """Episode reward and success; by default the last reward, success when it is 1."""
        reward = steps[-1].reward if steps else 0.0
        return reward, reward >= 1.0

    def heldout_items(self) -> list[dict[str, Any]]:
        return [e.model_dump() for e in self.heldout_episodes()]

    def write_train_data(self, data_dir: Path) -> list[Path]:
        data_dir.mkdir(parents=True, exist_ok=True)
        path = data_dir / EPISODES_FILE
        path.write_text("".join(e.model_dump_json() + "\n" for e in self.train_episodes()))
        return [path]

    @staticmethod
    def episodes_from(path: Path) -> list[Episode]:
        """The episodes of an episode file (JSON lines, as the workspace's episodes.jsonl)."""
        try:
            text = path.read_text()
        except OSError as exc:
            raise A2RLError(f"cannot read the episode file {path}: {exc.strerror}",
                            "pass an existing episodes.jsonl (the workspace has one in "
                            "$DATA_PATH), or leave --episodes out") from exc
        episodes = []
        for number, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                episodes.append(Episode.model_validate_json(line))
            except ValidationError as exc:
                raise A2RLError(f"{path} line {number} is not an episode: "
                                f"{exc.errors()[0]['msg']}",
                                "use an episodes.jsonl written by a2rl (one JSON episode per "
                                "line)") from exc
        return episodes

    def collect(self, model_dir: Path, episodes: list[Episode], *,
                chat_template_from: Path | None, config: RolloutConfig | None = None,
                on_progress: Callable[[int], None] | None = None) -> list[Any]:
        from a2rl.inference import load_engine

        engine = load_engine(model_dir, chat_template_from=chat_template_from)
        try:
            return run_rollouts(engine, episodes, self.make_env, self.messages, self.parse_action,
                                self.finish, config or self.rollout, task=self.name,
                                batch_size=self.rollout_batch_size, on_progress=on_progress)
        finally:
            engine.close()

    def evaluate(self, model_dir: Path, *, chat_template_from: Path | None,
                 on_progress: Callable[[int, int], None] | None = None) -> EvalOutcome:
        episodes = self.heldout_episodes()
        progress = ProgressCounter(len(episodes), on_progress)

        trajectories = self.collect(model_dir, episodes, chat_template_from=chat_template_from,
                                    on_progress=progress)
        n = max(1, len(trajectories))
        mean_reward = sum(t.reward for t in trajectories) / n
        success = sum(t.success for t in trajectories) / n
        return EvalOutcome(
            score=round(100.0 * self.score_of(mean_reward, success), 4), n_items=len(trajectories),
            metrics={"mean_reward": round(100 * mean_reward, 4), "success_rate": round(100 * success, 4),
                     "mean_steps": round(sum(len(t.steps) for t in trajectories) / n, 3)},
            details=[json.loads(t.model_dump_json(exclude={"messages"})) for t in trajectories])

    def score_of(self, mean_reward: float, success_rate: float) -> float:
        """The task score (0–1) from the two aggregates; sparse tasks use success."""
        return success_rate
