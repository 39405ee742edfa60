"""Shared evaluation for interactive (L3) tasks: held-out episodes rolled out in lockstep."""

from __future__ import annotations

import json
from abc import abstractmethod
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, ClassVar

from pydantic import ValidationError

from a2rl._errors import A2RLError
from a2rl.envs import Env, Episode, RolloutConfig, Step, run_rollouts
from a2rl.inference import GenerationSettings
from a2rl.tasks._core.offline import Prediction, match_predictions
from a2rl.tasks._core.task import EvalOutcome, ProgressCounter, Task

EPISODES_FILE = "episodes.jsonl"
REPLAY_MODEL = Path("<replay>")
"""The model_dir `evaluate` is given while recorded completions are replayed (no model loads)."""
_REPLAY_ROLE = "a2rl-replay-episode"


class _ReplayEngine:
    """An engine that answers each episode's turns with the completions recorded for it, in
    order (then an empty reply, which ends the episode). The episode of a prompt is told by a
    marker message the replaying `collect` puts in front of the task's own messages, so the
    rollout loop, the environment, the parser and the task's `finish` run unchanged."""

    backend = "replay"

    def __init__(self, turns: dict[str, list[str]]) -> None:
        self._turns = {k: list(v) for k, v in turns.items()}

    def apply_chat_template(self, messages: list[dict[str, str]]) -> str:
        assert messages and messages[0]["role"] == _REPLAY_ROLE, "replay prompt without a marker"
        return messages[0]["content"]

    def generate(self, prompts: Sequence[str], settings: GenerationSettings,
                 on_progress: Callable[[int], None] | None = None) -> list[str]:
        out = []
        for episode_id in prompts:
            queue = self._turns.get(episode_id) or []
            out.append(queue.pop(0) if queue else "")
        if on_progress:
            on_progress(len(prompts))
        return out

    def close(self) -> None:
        """Nothing to release."""


class InteractiveTask(Task):
    """A task scored by running the model as an agent in an environment.

    Subclasses define the episodes, the environment, the prompt (the exact format shown to the
    model at every step) and the action parser. `a2rl rollout` runs the same code on the
    train-visible episodes inside the agent's workspace.
    """

    rollout: ClassVar[RolloutConfig]
    rollout_batch_size: ClassVar[int] = 16
    _replay: _ReplayEngine | None = None

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
        from a2rl.inference import Engine, load_engine

        prompt_fn = self.messages
        engine: Engine
        if self._replay is not None:
            engine = self._replay

            def prompt_fn(episode: Episode, history: list[dict[str, str]]) -> list[dict[str, str]]:
                return [{"role": _REPLAY_ROLE, "content": episode.id}, *self.messages(episode, history)]
        else:
            engine = load_engine(model_dir, chat_template_from=chat_template_from)
        try:
            trajectories = run_rollouts(engine, episodes, self.make_env,
                                        prompt_fn, self.parse_action, self.finish,
                                        config or self.rollout, task=self.name,
                                        batch_size=self.rollout_batch_size, on_progress=on_progress)
        finally:
            engine.close()
        if self._replay is not None:
            for t in trajectories:
                t.messages = [m for m in t.messages if m["role"] != _REPLAY_ROLE]
        return trajectories

    def score_offline(self, predictions: Sequence[Prediction], *, allow_missing: bool = False,
                      on_progress: Callable[[int, int], None] | None = None) -> EvalOutcome:
        """Replay each held-out episode with the turns given for it: the same environment,
        parser, step limit and `finish` as `evaluate`, with the recorded completions in place
        of generation. An episode whose turns run out before it ends gets an empty reply."""
        grouped = match_predictions(predictions, self.item_ids(), allow_missing=allow_missing,
                                    several_per_id=False)
        self._replay = _ReplayEngine({i: ps[0].completions for i, ps in grouped.items()})
        try:
            return self.evaluate(REPLAY_MODEL, chat_template_from=None, on_progress=on_progress)
        finally:
            self._replay = None

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
