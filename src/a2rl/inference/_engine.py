"""One interface for batched text generation, whatever runs it (transformers on CPU, vLLM on GPU)."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol

from a2rl._errors import A2RLError

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


Backend = Literal["auto", "transformers", "vllm"]


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


def load_engine(model_dir: Path, *, chat_template_from: Path | None = None,
                backend: Backend = "auto", batch_size: int | None = None) -> Engine:
    """Load a checkpoint for generation.

    `chat_template_from`: take the chat template from this folder instead of the checkpoint's
    own (the evaluator uses the base model's, so a submission cannot change the prompt format).
    """
    if backend == "auto":
        backend = "vllm" if vllm_usable() else "transformers"
    if backend == "vllm":
        if importlib.util.find_spec("vllm") is None:
            raise A2RLError("the vLLM backend was requested but vLLM is not installed",
                            "pip install 'a2rl[gpu]' on a machine with a CUDA GPU")
        from a2rl.inference._vllm import VLLMEngine

        return VLLMEngine(model_dir, chat_template_from=chat_template_from)
    from a2rl.inference._transformers import TransformersEngine

    return TransformersEngine(model_dir, chat_template_from=chat_template_from,
                              batch_size=batch_size)
