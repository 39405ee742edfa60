"""CPU (or single-GPU) generation with transformers: batched, left-padded, greedy by default.

Sessions (interactive rollouts) keep each conversation's KV cache between its turns: a turn
encodes only the tokens after the longest prefix its prompt shares with a cached sequence (its
own previous prompt + completion, or, for a new conversation, another one's: the task preamble
all episodes share is encoded once), then every session of the call decodes in one batch.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from a2rl._errors import A2RLError
from a2rl.inference._chat import load_tokenizer, render_chat, stop_token_ids
from a2rl.inference._engine import (
    EngineBase,
    GenerationSettings,
    ProgressFn,
    SessionPrompt,
    cut_at_stop,
)


@dataclass
class _Cached:
    """A token sequence and its KV cache (one (keys, values) pair per layer, batch of one)."""

    tokens: Any
    """1-D LongTensor of the token ids the cache covers."""
    kv: list[tuple[Any, Any]]
    """Per layer, keys and values shaped [1, kv_heads, len(tokens), head_dim]."""


def _layers(cache: Any) -> list[tuple[Any, Any]]:
    """(keys, values) of each layer of a DynamicCache of plain layers."""
    return [(layer.keys, layer.values) for layer in cache.layers]


def _common_prefix(a: Any, b: Any) -> int:
    """Length of the longest common prefix of two 1-D token tensors."""
    n = min(len(a), len(b))
    if n == 0:
        return 0
    differ = (a[:n] != b[:n]).nonzero()
    return int(differ[0, 0]) if len(differ) else n


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
        self._sessions: dict[str, _Cached] = {}
        self._donor: _Cached | None = None
        """The last ended session's cache: the next episode usually shares its preamble."""
        self._caching = self._full_attention_only()
        self.cache_stats = {"prompt_tokens": 0, "encoded_tokens": 0}
        """Session prompts' tokens, and how many of them had to be encoded (the rest came
        from a cache): what the KV caches save, for benchmarks and tests."""

    def _full_attention_only(self) -> bool:
        """KV caches are kept only for models whose every layer is a plain growing cache (no
        sliding window, no recurrent state), where a cache can be cut at any prefix."""
        from transformers import DynamicCache
        from transformers.cache_utils import DynamicLayer

        try:
            layers = DynamicCache(config=self.model.config).layers
        except Exception:  # an architecture the generic cache does not describe
            return False
        return bool(layers) and all(type(layer) is DynamicLayer for layer in layers)

    def _config(self, settings: GenerationSettings) -> Any:
        from transformers import GenerationConfig

        greedy = settings.temperature <= 0
        return GenerationConfig(
            max_new_tokens=settings.max_new_tokens, do_sample=not greedy,
            temperature=settings.temperature if not greedy else None,
            top_p=settings.top_p if not greedy else None,
            eos_token_id=self._stop_ids or None, pad_token_id=self.tokenizer.pad_token_id,
            stop_strings=list(settings.stop) or None,
        )

    def apply_chat_template(self, messages: list[dict[str, str]]) -> str:
        return render_chat(self.tokenizer, messages)

    def generate(self, prompts: Sequence[str], settings: GenerationSettings,
                 on_progress: ProgressFn | None = None) -> list[str]:
        import torch

        greedy = settings.temperature <= 0
        config = self._config(settings)
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

    # ---------------------------------------------------------------- sessions (KV caches)

    def generate_sessions(self, requests: Sequence[SessionPrompt],
                          settings: GenerationSettings) -> list[str]:
        if not self._caching:
            return super().generate_sessions(requests, settings)
        keys = [r.session for r in requests]
        if len(set(keys)) != len(keys):
            raise A2RLError("generate_sessions got two turns of one session in one call",
                            "ask for one turn per session per call (the rollout loop does)")
        import torch

        if settings.temperature > 0:
            torch.manual_seed(settings.seed)
        ids = [self.tokenizer(r.prompt, return_tensors="pt", add_special_tokens=False)
               ["input_ids"][0] for r in requests]
        for key, tokens in zip(keys, ids, strict=True):
            if len(tokens) == 0:
                raise A2RLError("an empty prompt was sent to the engine",
                                "render the conversation with apply_chat_template first")
            self._sessions[key] = self._prefill(key, tokens)
        results: list[str] = [""] * len(requests)
        # Similar cache lengths decode together (less padding), batch_size at a time.
        order = sorted(range(len(requests)), key=lambda i: len(ids[i]))
        for start in range(0, len(order), self.batch_size):
            chunk = order[start:start + self.batch_size]
            texts = self._decode([keys[i] for i in chunk], [ids[i] for i in chunk], settings)
            for i, text in zip(chunk, texts, strict=True):
                results[i] = text
        return results

    def end_session(self, session: str) -> None:
        cached = self._sessions.pop(session, None)
        if cached is not None:
            self._donor = cached

    def _prefill(self, key: str, tokens: Any) -> _Cached:
        """The session's cache extended to all of `tokens` but the last (which the decode step
        feeds), reusing the longest cached prefix among this session's and every other's."""
        import torch
        from transformers import DynamicCache

        target = len(tokens) - 1
        self.cache_stats["prompt_tokens"] += len(tokens)
        best, reuse = None, 0
        candidates = [self._sessions.get(key), *self._sessions.values(), self._donor]
        for cand in candidates:
            if cand is None:
                continue
            n = min(_common_prefix(cand.tokens, tokens), target)
            if n > reuse:
                best, reuse = cand, n
        kv = [(k[:, :, :reuse], v[:, :, :reuse]) for k, v in best.kv] if best else []
        self.cache_stats["encoded_tokens"] += len(tokens) - reuse  # the last one is fed in decode
        if reuse == target:
            return _Cached(tokens[:target], kv)
        cache = DynamicCache(ddp_cache_data=kv) if kv else DynamicCache(config=self.model.config)
        new = tokens[reuse:target].unsqueeze(0).to(self.device)
        with torch.inference_mode():
            # Only the cache is wanted; one position of logits keeps the lm_head cheap.
            self.model(input_ids=new, cache=cache, use_cache=True, logits_to_keep=1)
        return _Cached(tokens[:target], _layers(cache))

    def _decode(self, keys: list[str], ids: list[Any], settings: GenerationSettings) -> list[str]:
        """Generate for sessions whose caches cover all their prompt but the last token: the
        caches are left-padded into one batch; each session keeps its row afterwards."""
        import torch
        from transformers import DynamicCache

        cached = [self._sessions[k] for k in keys]
        width = max(len(c.tokens) for c in cached)  # cache columns; the prompts are width + 1
        pad_id = self.tokenizer.pad_token_id
        input_ids = torch.full((len(keys), width + 1), pad_id, dtype=torch.long)
        mask = torch.zeros((len(keys), width + 1), dtype=torch.long)
        for row, tokens in enumerate(ids):
            input_ids[row, width + 1 - len(tokens):] = tokens
            mask[row, width + 1 - len(tokens):] = 1
        layers = []
        for layer in range(len(cached[0].kv)):
            ks, vs = [], []
            for c in cached:
                k, v = c.kv[layer]
                gap = width - k.shape[2]
                if gap:
                    k = torch.cat([k.new_zeros(*k.shape[:2], gap, k.shape[3]), k], dim=2)
                    v = torch.cat([v.new_zeros(*v.shape[:2], gap, v.shape[3]), v], dim=2)
                ks.append(k)
                vs.append(v)
            layers.append((torch.cat(ks), torch.cat(vs)))
        cache = DynamicCache(ddp_cache_data=layers)
        input_ids, mask = input_ids.to(self.device), mask.to(self.device)
        with torch.inference_mode():
            out = self.model.generate(input_ids=input_ids, attention_mask=mask, cache=cache,
                                      generation_config=self._config(settings),
                                      tokenizer=self.tokenizer if settings.stop else None)
        new_tokens = out[:, width + 1:]
        texts = self.tokenizer.batch_decode(new_tokens, skip_special_tokens=True)
        # What the cache now covers: the prompt and every generated token but the last (never
        # fed). Tokens after a row's end are pads the model did see; a later prompt diverges
        # from them at once, so they are never reused wrongly.
        grown = _layers(cache)
        covered = grown[0][0].shape[2]
        for row, (key, tokens) in enumerate(zip(keys, ids, strict=True)):
            left = width + 1 - len(tokens)
            seq = out[row, left:covered].cpu()
            kv = [(k[row:row + 1, :, left:covered].clone(), v[row:row + 1, :, left:covered].clone())
                  for k, v in grown]
            self._sessions[key] = _Cached(seq, kv)
        return [cut_at_stop(t, settings.stop) for t in texts]

    def close(self) -> None:
        self._sessions.clear()
        self._donor = None
        del self.model
