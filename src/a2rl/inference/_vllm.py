"""GPU generation with vLLM (used automatically when vLLM is installed and a GPU is present)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from a2rl.inference._chat import load_tokenizer, render_chat
from a2rl.inference._engine import GenerationSettings, ProgressFn, cut_at_stop


class VLLMEngine:
    backend = "vllm"

    def __init__(self, model_dir: Path, *, chat_template_from: Path | None = None) -> None:
        from vllm import LLM

        self.tokenizer = load_tokenizer(model_dir, chat_template_from)
        self.llm = LLM(
            model=str(model_dir), tokenizer=str(model_dir), trust_remote_code=False, seed=0,
            # "vllm": ignore the checkpoint's generation_config.json; decoding is the task's.
            generation_config="vllm",
            gpu_memory_utilization=float(os.environ.get("A2RL_VLLM_GPU_UTIL", "0.85")),
        )

    def apply_chat_template(self, messages: list[dict[str, str]]) -> str:
        return render_chat(self.tokenizer, messages)

    def generate(self, prompts: Sequence[str], settings: GenerationSettings,
                 on_progress: ProgressFn | None = None) -> list[str]:
        from vllm import SamplingParams

        params = SamplingParams(
            temperature=max(settings.temperature, 0.0), top_p=settings.top_p,
            max_tokens=settings.max_new_tokens, stop=list(settings.stop) or None,
            seed=settings.seed,
        )
        outputs = self.llm.generate(list(prompts), params, use_tqdm=False)
        if on_progress:
            on_progress(len(prompts))
        return [cut_at_stop(o.outputs[0].text, settings.stop) for o in outputs]

    def close(self) -> None:
        del self.llm
