"""The engine paths the benchmarks compare the transformers engine against, built from the
product's engine without changing it (used by the bench scripts and tests/inference/test_engine_cache.py).

* `Reencoding(engine)`: an engine seen without its session methods, so every rollout step
  re-sends (and re-encodes) its whole prompt through `generate`; a transformers engine's
  `generate` runs with transformers' concatenating KV cache and SDPA attention meanwhile.
* `ComparisonEngine(model_dir, without=...)`: the transformers engine with some of its parts
  replaced by transformers' own (`PARTS`): session KV caches (every turn re-encoded), the
  preallocated KV cache (the concatenating `DynamicCache`), greedy decoding in which finished rows
  leave the batch (`generate`, every row kept to the end), prompt-lookup drafts (one token a
  forward), copy-free grouped-query attention (transformers' SDPA).

Greedy results are the same on every path (the tests check it); only the time differs.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from a2rl.inference._engine import GenerationSettings, ProgressFn
from a2rl.inference.engines.transformers import TransformersEngine

PARTS = ("kv-sessions", "growing-cache", "compact-decode", "prompt-lookup", "packed-attention")
"""The transformers engine's parts a `ComparisonEngine` can run without."""


def parse_parts(text: str) -> tuple[str, ...]:
    """The bench scripts' `--without` (an argparse `type`): comma-separated names from `PARTS`,
    "" for none."""
    parts = tuple(p.strip() for p in text.split(",") if p.strip())
    unknown = [p for p in parts if p not in PARTS]
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown part(s) {', '.join(unknown)}; "
                                         f"choose from {', '.join(PARTS)}")
    return parts


@contextmanager
def sdpa_concatenating(engine: object) -> Iterator[None]:
    """While inside: a transformers engine's `generate` uses transformers' concatenating KV
    cache and SDPA attention (any other engine is left as it is)."""
    if not isinstance(engine, TransformersEngine):
        yield
        return
    growing, attention = engine._growing, engine.model.config._attn_implementation
    engine._growing = False
    engine.model.set_attn_implementation("sdpa")
    try:
        yield
    finally:
        engine._growing = growing
        engine.model.set_attn_implementation(attention)


class Reencoding:
    """`engine` without its session methods: every rollout step re-sends its whole prompt to
    `generate`, run through `sdpa_concatenating`."""

    def __init__(self, engine: object) -> None:
        self._engine = engine
        self.backend = f"{getattr(engine, 'backend', '?')} (re-encoding)"

    def apply_chat_template(self, messages: list[dict[str, str]]) -> str:
        return self._engine.apply_chat_template(messages)  # type: ignore[attr-defined,no-any-return]

    def generate(self, prompts: Sequence[str], settings: GenerationSettings,
                 on_progress: ProgressFn | None = None) -> list[str]:
        with sdpa_concatenating(self._engine):
            return self._engine.generate(prompts, settings, on_progress)  # type: ignore[attr-defined,no-any-return]

    def close(self) -> None:
        """The wrapped engine is closed by its owner."""


class ComparisonEngine(TransformersEngine):
    """The transformers engine without the parts named in `without` (see `PARTS`)."""

    def __init__(self, model_dir: Path, *, without: Iterable[str] = (),
                 chat_template_from: Path | None = None, batch_size: int | None = None) -> None:
        self.without = tuple(without)
        unknown = [p for p in self.without if p not in PARTS]
        if unknown:
            raise ValueError(f"ComparisonEngine: unknown part(s) {unknown}; choose from {PARTS}")
        super().__init__(model_dir, chat_template_from=chat_template_from, batch_size=batch_size)
        if "kv-sessions" in self.without:
            self._caching = False  # the base class then re-sends every prompt to `generate`
        if "growing-cache" in self.without:
            self._growing = False  # `generate` builds transformers' own cache
        if "prompt-lookup" in self.without:
            self._lookup = 0
        if "packed-attention" in self.without:
            self.model.set_attn_implementation("sdpa")

    def _new_cache(self, layers: list[tuple[Any, Any]] | None, reserve: int) -> Any:
        if self._growing:
            return super()._new_cache(layers, reserve)
        from transformers import DynamicCache

        return (DynamicCache(ddp_cache_data=layers) if layers
                else DynamicCache(config=self.model.config))

    def _decode_turn(self, keys: list[str], input_ids: Any, mask: Any, cache: Any,
                     settings: GenerationSettings, keep: Any) -> None:
        if "compact-decode" in self.without:
            self._generate_turn(input_ids, mask, cache, settings, keep)
        else:
            super()._decode_turn(keys, input_ids, mask, cache, settings, keep)
