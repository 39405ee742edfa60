"""One interface for batched text generation, whatever runs it (transformers on CPU, vLLM on GPU).

Two ways to ask an engine for text:

* `generate(prompts, settings)`: independent prompts (static evaluation). The engine orders and
  batches them as it likes; completions come back in the caller's order.
* `generate_sessions(requests, settings)`: the next turn of several conversations (interactive
  rollouts). Each `SessionPrompt` names its conversation (`session`, e.g. the episode id) and
  carries the WHOLE rendered prompt, never a delta, so any engine can answer it. An engine may
  keep per-session state between calls (the transformers engine keeps each session's KV cache
  and encodes only the tokens the new prompt adds after the longest prefix it shares with the
  session's previous prompt + completion); `end_session(session)` frees that state. The result
  must be what `generate` would return for the same prompts (identical under greedy decoding).
  `EngineBase` gives the default that re-sends every prompt through `generate`, the right choice
  for an engine with its own automatic prefix caching (vLLM). Engines without the session
  methods (test doubles, the replay engine) are called through the module functions
  `generate_sessions` / `end_session`, which fall back to `generate`.
"""

from __future__ import annotations

import importlib.util
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

ProgressFn = Callable[[int], None]
"""Called with the number of prompts finished since the last call."""


@dataclass(frozen=True)
class GenerationSettings:
    """Decoding settings. For evaluation they come from the task, never from the submission."""

    max_new_tokens: int
    temperature: float = 0.0
    """0 = greedy."""
    top_p: float = 1.0
    stop: tuple[str, ...] = ()
    """Completions are cut at the first of these strings (the string itself is dropped)."""
    seed: int = 0


class Engine(Protocol):
    backend: str

    def apply_chat_template(self, messages: list[dict[str, str]]) -> str:
        """Render a conversation with the engine's chat template, ready for the assistant turn."""
        ...

    def generate(self, prompts: Sequence[str], settings: GenerationSettings,
                 on_progress: ProgressFn | None = None) -> list[str]:
        """One completion per prompt, in order."""
        ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class SessionPrompt:
    """One turn of one conversation, for `generate_sessions`."""

    session: str
    """The conversation's key (the episode id); stable across its turns, unique among live ones."""
    prompt: str
    """The whole rendered prompt of this turn (chat template applied), not only what is new."""


@runtime_checkable
class SessionEngine(Engine, Protocol):
    """An engine that answers conversations turn by turn and may keep state per conversation."""

    def generate_sessions(self, requests: Sequence[SessionPrompt],
                          settings: GenerationSettings) -> list[str]:
        """One completion per request, in order; at most one request per session per call."""
        ...

    def end_session(self, session: str) -> None:
        """The conversation is over: drop whatever the engine keeps for it (idempotent)."""
        ...


class EngineBase(ABC):
    """Base of the real engines: the session API by re-sending each whole prompt to `generate`
    (an engine with automatic prefix caching, like vLLM, needs nothing more)."""

    backend: str

    @abstractmethod
    def apply_chat_template(self, messages: list[dict[str, str]]) -> str: ...

    @abstractmethod
    def generate(self, prompts: Sequence[str], settings: GenerationSettings,
                 on_progress: ProgressFn | None = None) -> list[str]: ...

    def generate_sessions(self, requests: Sequence[SessionPrompt],
                          settings: GenerationSettings) -> list[str]:
        return self.generate([r.prompt for r in requests], settings)

    def end_session(self, session: str) -> None:  # noqa: B027 (a default, not a missing override)
        """Nothing is kept per session by default."""

    @abstractmethod
    def close(self) -> None: ...


def generate_sessions(engine: Engine, requests: Sequence[SessionPrompt],
                      settings: GenerationSettings) -> list[str]:
    """`engine.generate_sessions` where the engine has it, else `engine.generate` on the prompts."""
    if isinstance(engine, SessionEngine):
        return engine.generate_sessions(requests, settings)
    return engine.generate([r.prompt for r in requests], settings)


def end_session(engine: Engine, session: str) -> None:
    if isinstance(engine, SessionEngine):
        engine.end_session(session)




def cut_at_stop(text: str, stop: Sequence[str]) -> str:
    cut = len(text)
    for s in stop:
        i = text.find(s)
        if i != -1:
            cut = min(cut, i)
    return text[:cut]


def vllm_usable() -> bool:
    """vLLM is installed and a CUDA GPU is visible (checked without importing vLLM)."""
    if importlib.util.find_spec("vllm") is None:
        return False
    import torch

    return bool(torch.cuda.is_available())
