"""CPU (or single-GPU) generation with transformers: batched, left-padded, greedy by default."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from a2rl.inference._chat import load_tokenizer, render_chat, stop_token_ids
from a2rl.inference._engine import EngineBase, GenerationSettings, ProgressFn, cut_at_stop


class TransformersEngine(EngineBase):
    backend = "transformers"

    def __init__(self, model_dir: Path, *, chat_template_from: Path | None = None,
                 batch_size: int | None = None) -> None:
        import torch
        from transformers import AutoModelForCausalLM, GenerationConfig

        if not torch.cuda.is_available():
            torch.set_num_threads(max(1, len(os.sched_getaffinity(0))))
        self.device = "cuda" if torch.cuda.is_available() else "cpu"
        self.tokenizer = load_tokenizer(model_dir, chat_template_from)
        dtype = torch.bfloat16 if self.device == "cuda" else torch.float32
        self.model = AutoModelForCausalLM.from_pretrained(
            str(model_dir), dtype=dtype, trust_remote_code=False, use_safetensors=True
        ).to(self.device)  # type: ignore[arg-type]
        self.model.eval()
        # Whatever generation_config.json the checkpoint carries is replaced: decoding is the
        # caller's decision (the task's, for evaluation).
        self.model.generation_config = GenerationConfig()
        self.batch_size = batch_size or (64 if self.device == "cuda" else 16)
        self._stop_ids = stop_token_ids(self.tokenizer)

    def apply_chat_template(self, messages: list[dict[str, str]]) -> str:
        return render_chat(self.tokenizer, messages)

    def generate(self, prompts: Sequence[str], settings: GenerationSettings,
                 on_progress: ProgressFn | None = None) -> list[str]:
        import torch
        from transformers import GenerationConfig

        greedy = settings.temperature <= 0
        config = GenerationConfig(
            max_new_tokens=settings.max_new_tokens, do_sample=not greedy,
            temperature=settings.temperature if not greedy else None,
            top_p=settings.top_p if not greedy else None,
            eos_token_id=self._stop_ids or None, pad_token_id=self.tokenizer.pad_token_id,
            stop_strings=list(settings.stop) or None,
        )
        # Sort by length so each batch pads little; restore the order at the end.
        order = sorted(range(len(prompts)), key=lambda i: len(prompts[i]))
        results: list[str] = [""] * len(prompts)
        if not greedy:
            torch.manual_seed(settings.seed)
        for start in range(0, len(order), self.batch_size):
            idx = order[start:start + self.batch_size]
            batch = self.tokenizer([prompts[i] for i in idx], return_tensors="pt", padding=True,
                                   add_special_tokens=False).to(self.device)
            with torch.inference_mode():
                # stop_strings ends each sequence at its first stop string instead of generating
                # to max_new_tokens (the cut below still trims the string itself).
                out = self.model.generate(**batch, generation_config=config,
                                          tokenizer=self.tokenizer if settings.stop else None)
            new_tokens = out[:, batch["input_ids"].shape[1]:]
            texts = self.tokenizer.batch_decode(new_tokens, skip_special_tokens=True)
            for i, text in zip(idx, texts, strict=True):
                results[i] = cut_at_stop(text, settings.stop)
            if on_progress:
                on_progress(len(idx))
        return results

    def close(self) -> None:
        del self.model
