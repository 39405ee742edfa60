"""The environment of one DeepSearchQA question: `search[q]` returns the top-k results,
`answer[a]` ends the episode and hands the answer to the grader."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from a2rl.envs import Episode, StepResult
from a2rl.tasks.deepsearchqa.answer_grader import Verdict
from a2rl.tasks.deepsearchqa.react import first_observation, split_action
from a2rl.tasks.deepsearchqa.search import SearchBackend, format_results


class DeepSearchQAEnv:
    """One question. `search[q]` → top-k results; `answer[a]` → done (graded by the task)."""

    def __init__(self, episode: Episode, backend: SearchBackend, *, top_k: int, max_steps: int,
                 collection: str, submit: Callable[[dict[str, Any], str], Future[Verdict]]) -> None:
        self.episode = episode
        self.backend = backend
        self.top_k, self.max_steps, self.collection = top_k, max_steps, collection
        self._submit = submit
        self.searches: list[str] = []
        self.answer: str | None = None
        self.verdict: Future[Verdict] | None = None
        self.n_actions = 0

    def reset(self) -> str:
        return first_observation(self.episode.payload["question"], top_k=self.top_k,
                                 max_steps=self.max_steps, collection=self.collection)

    def step(self, action: str) -> StepResult:
        if self.answer is not None:
            return StepResult("The episode is over.", 0.0, True)
        self.n_actions += 1
        name, body = split_action(action)
        if name == "answer":
            self.answer = body
            self.verdict = self._submit(self.episode.payload, body)  # graded concurrently
            return StepResult("Answer recorded.", 0.0, True, {"answer": body})
        if name == "search":
            self.searches.append(body)
            obs = "Observation:\n" + format_results(self.backend.search(body, self.top_k))
        else:
            obs = "Observation: not an action. Use search[<query>] or answer[<final answer>]."
        if self.n_actions == self.max_steps - 1:
            obs += "\n\nYou have one action left: give your final answer now with answer[...]."
        return StepResult(obs, 0.0, False, {"search": body} if name == "search" else {})

    def admissible_actions(self) -> list[str] | None:
        return None

    def close(self) -> None: ...

