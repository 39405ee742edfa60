"""CPU (or single-GPU) generation with transformers: batched, left-padded, greedy by default.

Sessions (interactive rollouts) keep each conversation's KV cache between its turns: a turn
encodes only the tokens after the longest prefix its prompt shares with a cached sequence (its
own previous prompt + completion, or, for a new conversation, another one's: the task preamble
all episodes share is encoded once). One `generate` call then serves every session of the
round: its first forward encodes all the sessions' new tokens at once (each row its cached
prefix, then its new tokens, pads masked between), and they decode together.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from a2rl._errors import A2RLError
from a2rl.inference._attention import use_packed_attention
from a2rl.inference._chat import load_tokenizer, render_chat, stop_token_ids
from a2rl.inference._decode import RowDone, greedy_decode
from a2rl.inference._engine import (
    EngineBase,
    GenerationSettings,
    ProgressFn,
    SessionPrompt,
    cut_at_stop,
)
from a2rl.inference._registry import EngineSpec, engines

_LOOKUP = 64
"""Most tokens a row drafts for one forward (prompt lookup): a whole repeated reply of the
embedded model (~65 tokens on ALFWorld) in one or two forwards."""

_LONE_FORWARD = 32
"""What one forward of a single sequence costs beyond its tokens, in tokens: on a CPU a forward
reads every weight once, ~0.17 s for the 135M model on two cores, while a batch encodes ~200-250
tokens a second (bench/forward_floor.py)."""


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


@engines.register("transformers")
class TransformersEngine(EngineBase):
    backend = "transformers"
    engine_spec: ClassVar[EngineSpec] = EngineSpec(f"{__name__}:TransformersEngine",
                                                   ("transformers",))

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
        # Session KV caches and preallocated KV buffers (bit-identical logits, no per-step copy;
        # see _kv_cache) both need every layer to be a plain growing cache. The cached path is
        # faster than re-encoding even on short prompts on a quiet machine; on a loaded one,
        # OpenMP threads spinning while descheduled can make its CPU time look worse
        # (bench/rollout_lockstep.py).
        full_attention = self._full_attention_only()
        self._caching = full_attention
        self._growing = full_attention
        # Greedy session turns draft up to this many tokens a row from the row's own context and
        # verify them in one forward (_decode).
        self._lookup = _LOOKUP
        self._acceptance: dict[str, list[int]] = {}
        """Per session, [drafted tokens accepted, drafts rejected] over its turns so far: how
        far its next drafts are trusted (an agent that repeats itself gets long ones)."""
        # Multi-token forwards of grouped-query models attend without copying the KV cache per
        # query head (_attention).
        use_packed_attention(self.model)

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

    def _new_cache(self, layers: list[tuple[Any, Any]] | None, reserve: int) -> Any:
        """A preallocated KV cache (`GrowingLayer`s) holding `layers` ((keys, values) per layer)
        with room for `reserve` columns."""
        from a2rl.inference._kv_cache import growing_cache

        return growing_cache(self.model.config, layers, reserve)

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
            extra = {}
            if self._growing:
                # Room for the prompt and every new token: no decode step copies the cache.
                extra["cache"] = self._new_cache(
                    None, batch["input_ids"].shape[1] + settings.max_new_tokens)
            with torch.inference_mode():
                # stop_strings ends each sequence at its first stop string instead of generating
                # to max_new_tokens (the cut below still trims the string itself).
                out = self.model.generate(**batch, generation_config=config,
                                          tokenizer=self.tokenizer if settings.stop else None,
                                          **extra)
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
        if any(len(tokens) == 0 for tokens in ids):
            raise A2RLError("an empty prompt was sent to the engine",
                            "render the conversation with apply_chat_template first")
        results: list[str] = [""] * len(requests)
        # Similar prompt lengths decode together (less padding), batch_size at a time.
        order = sorted(range(len(requests)), key=lambda i: len(ids[i]))
        for start in range(0, len(order), self.batch_size):
            chunk = order[start:start + self.batch_size]
            texts = self._generate_chunk([keys[i] for i in chunk], [ids[i] for i in chunk],
                                         settings)
            for i, text in zip(chunk, texts, strict=True):
                results[i] = text
        return results

    def end_session(self, session: str) -> None:
        cached = self._sessions.pop(session, None)
        self._acceptance.pop(session, None)
        if cached is not None:
            self._donor = cached

    def _reuse(self, key: str, tokens: Any) -> tuple[list[tuple[Any, Any]], int]:
        """The longest prefix of `tokens` some cache holds (this session's, another live one's
        or the last ended one's), as (per-layer keys/values cut to it, its length); at most
        all tokens but the last, so every turn feeds at least one."""
        target = len(tokens) - 1
        best, reuse = None, 0
        for cand in [self._sessions.get(key), *self._sessions.values(), self._donor]:
            if cand is None:
                continue
            n = min(_common_prefix(cand.tokens, tokens), target)
            if n > reuse:
                best, reuse = cand, n
        if best is None or reuse == 0:
            return [], 0
        return [(k[:, :, :reuse], v[:, :, :reuse]) for k, v in best.kv], reuse

    def _prefill(self, tokens: Any, kv: list[tuple[Any, Any]], reuse: int) -> _Cached:
        """A cache of all of `tokens` but the last, extending `kv` (its first `reuse` tokens).
        Used for a conversation that another one in the same call shares more with than any
        cache does: encoded alone first, so the other reuses it (the task preamble of a new
        batch of episodes is encoded once); and for one with far more new tokens than the
        rest of its batch (see `_encode_alone`)."""
        import torch

        cache = self._new_cache(kv, len(tokens) - 1)
        with torch.inference_mode():
            # Only the cache is wanted; one position of logits keeps the lm_head cheap.
            self.model(input_ids=tokens[reuse:-1].unsqueeze(0).to(self.device), cache=cache,
                       use_cache=True, logits_to_keep=1)
        return _Cached(tokens[:-1], _layers(cache))

    def _prefill_session(self, key: str, tokens: Any, kv: list[tuple[Any, Any]],
                         reuse: int) -> tuple[list[tuple[Any, Any]], int]:
        """`_prefill` for a session of this call: its cache becomes the session's, and the
        (keys/values, length) the fused forward then starts the row from."""
        fresh = self._prefill(tokens, kv, reuse)
        self._sessions[key] = fresh
        return fresh.kv, len(fresh.tokens)

    @staticmethod
    def _encode_alone(new: list[int]) -> list[int]:
        """The rows (by their counts of tokens still to encode) to prefill one at a time before
        the fused forward: the cheapest split under a simple cost model, where the fused forward
        costs rows x its longest row and a lone prefill its own tokens plus a fixed
        `_LONE_FORWARD` (one pass over the weights, a small batch's decode step)."""
        best_cost, best_limit = len(new) * max(new, default=1), max(new, default=1)
        for limit in sorted(set(new)):
            cost = (len(new) * max(1, limit)
                    + sum(length + _LONE_FORWARD for length in new if length > limit))
            if cost < best_cost:
                best_cost, best_limit = cost, limit
        return [row for row, length in enumerate(new) if length > best_limit and length > 1]

    def _generate_chunk(self, keys: list[str], ids: list[Any],
                        settings: GenerationSettings) -> list[str]:
        """One batched `generate` for these sessions: each row is its cached prefix (right-
        aligned in the cache columns) followed by its new tokens (right-aligned after them),
        pads masked out; the first forward encodes every row's new tokens at once, then all
        decode together. Each session keeps its row's cache, pads removed, afterwards."""
        import torch

        reused = []
        for row, (key, tokens) in enumerate(zip(keys, ids, strict=True)):
            self.cache_stats["prompt_tokens"] += len(tokens)
            kv, n = self._reuse(key, tokens)
            self.cache_stats["encoded_tokens"] += len(tokens) - n
            shared = max((_common_prefix(tokens, other) for other in ids[row + 1:]), default=0)
            # Worth a forward of its own only when the part others would reuse is long (a
            # task preamble); a few shared tokens (two episodes at the same step of the same
            # walk) cost less encoded again in the fused forward than a lone pass does.
            if min(shared, len(tokens) - 1) - n > 2 * _LONE_FORWARD:
                kv, n = self._prefill_session(key, tokens, kv, n)
            reused.append((kv, n))
        # Every row of the fused first forward is as long as the longest one's new tokens, pads
        # included (masked pads still cost their compute): rows with many more new tokens than
        # the rest (an episode whose history window just slid, a fresh episode) are encoded
        # alone first, so the batch does not pay their length once per row.
        for row in self._encode_alone([len(t) - n for t, (_, n) in zip(ids, reused, strict=True)]):
            reused[row] = self._prefill_session(keys[row], ids[row], *reused[row])
        width = max(n for _, n in reused)  # cache columns
        fed = max(len(tokens) - n for tokens, (_, n) in zip(ids, reused, strict=True))
        total = width + fed
        pad_id = self.tokenizer.pad_token_id
        input_ids = torch.full((len(keys), total), pad_id, dtype=torch.long)
        mask = torch.zeros((len(keys), total), dtype=torch.long)
        for row, (tokens, (_, n)) in enumerate(zip(ids, reused, strict=True)):
            input_ids[row, width - n:width] = tokens[:n]
            mask[row, width - n:width] = 1
            input_ids[row, total - (len(tokens) - n):] = tokens[n:]
            mask[row, total - (len(tokens) - n):] = 1
        # Rows without a cached prefix get zero columns of the others' shape.
        shaped = next((kv for kv, _ in reused if kv), [])
        layers = []
        for layer in range(len(shaped) if width else 0):
            ks, vs = [], []
            for kv, n in reused:
                k, v = kv[layer] if kv else (shaped[layer][0][:, :, :0], shaped[layer][1][:, :, :0])
                if width - n:
                    k = torch.cat([k.new_zeros(*k.shape[:2], width - n, k.shape[3]), k], dim=2)
                    v = torch.cat([v.new_zeros(*v.shape[:2], width - n, v.shape[3]), v], dim=2)
                ks.append(k)
                vs.append(v)
            layers.append((torch.cat(ks), torch.cat(vs)))
        # Room for every token this call adds: decode steps write in place, never copy the cache.
        cache = self._new_cache(layers, total + settings.max_new_tokens + self._lookup)
        input_ids, mask = input_ids.to(self.device), mask.to(self.device)
        texts: list[str] = [""] * len(keys)

        def keep(row: int, row_ids: Any, generated: int, row_kv: list[tuple[Any, Any]]) -> None:
            """Store a finished row's session cache and text. Its KV covers the prompt and the
            generated tokens the model was fed (all but the last, unless `greedy_decode` fed it
            as a draft). From `generate`, tokens after the row stopped are pads the model did
            see; a later prompt diverges from them at once, so they are never reused wrongly."""
            tokens, n = ids[row], reused[row][1]
            texts[row] = self.tokenizer.decode(row_ids[total:total + generated],
                                               skip_special_tokens=True)
            # Column j of the cache holds token row_ids[j]; never keep a column without its token.
            covered = min(row_kv[0][0].shape[2], len(row_ids))
            # The row's own columns, in order: its cached prefix, its new tokens, what it
            # generated (the masked pads between them are dropped).
            cols = torch.cat([torch.arange(width - n, width),
                              torch.arange(total - (len(tokens) - n), covered)]).to(row_ids.device)
            self._sessions[keys[row]] = _Cached(
                row_ids.index_select(0, cols).cpu(),
                [(k.index_select(2, cols), v.index_select(2, cols)) for k, v in row_kv])

        with torch.inference_mode():
            self._decode_turn(keys, input_ids, mask, cache, settings, keep)
        return [cut_at_stop(t, settings.stop) for t in texts]

    def _decode_turn(self, keys: list[str], input_ids: Any, mask: Any, cache: Any,
                     settings: GenerationSettings, keep: RowDone) -> None:
        """Decode one turn of these sessions from `input_ids` (its first columns already in
        `cache`), handing each row to `keep` once it stops. Greedy: `greedy_decode` (a row leaves
        the batch as soon as it stops, drafts verified; the same tokens as `generate`); sampled:
        `generate`."""
        if settings.temperature > 0:
            self._generate_turn(input_ids, mask, cache, settings, keep)
            return
        greedy_decode(self.model, self.tokenizer, input_ids, mask, cache,
                      max_new_tokens=settings.max_new_tokens, stop_ids=self._stop_ids,
                      stop=settings.stop, pad_id=self.tokenizer.pad_token_id, on_row_done=keep,
                      lookup=self._lookup,
                      acceptance=[self._acceptance.setdefault(k, [0, 0]) for k in keys])

    def _generate_turn(self, input_ids: Any, mask: Any, cache: Any, settings: GenerationSettings,
                       keep: RowDone) -> None:
        """A turn decoded by `model.generate`: every row stays in the batch until the last one
        stops, then each is handed to `keep`."""
        total = input_ids.shape[1]
        out = self.model.generate(input_ids=input_ids, attention_mask=mask, cache=cache,
                                  generation_config=self._config(settings),
                                  tokenizer=self.tokenizer if settings.stop else None)
        grown = _layers(cache)
        for row in range(input_ids.shape[0]):
            keep(row, out[row], out.shape[1] - total,
                 [(k[row:row + 1], v[row:row + 1]) for k, v in grown])

    def close(self) -> None:
        self._sessions.clear()
        self._acceptance.clear()
        self._donor = None
        del self.model
