"""A KV cache that does not copy itself at every decode step.

transformers' `DynamicLayer` grows by `torch.cat`: each decode step allocates a new tensor and
copies the whole cache into it, so a step over a long context costs a copy of every layer's keys
and values (on a 2-core CPU, 16 rows over 1,500 cached tokens: 355 ms a step with it, 238 ms
without on a quiet machine, bench/forward_floor.py; the copy costs more on a loaded one).
`GrowingLayer` writes each step's keys and values into a preallocated buffer and hands attention
a view of the filled part. The view has exactly the shape and values the concatenated tensor
would have, so attention computes the same numbers: logits are bit-identical to `DynamicLayer`'s
(tests/inference/test_engine_cache.py checks it), and greedy results do not change. (A static cache that
attends over the whole preallocated length, masked, is faster still but moves the logits, which
the engine's contract rules out.)
"""

from __future__ import annotations

from typing import Any

from transformers.cache_utils import DynamicLayer

_GROW_MIN = 64
"""Columns added at least when a buffer must grow beyond what was reserved (amortised growth)."""


class GrowingLayer(DynamicLayer):
    """A `DynamicLayer` whose keys/values live in a buffer with room to grow: `update` writes
    in place and `keys`/`values` are views of the filled columns. When something else replaces
    `keys`/`values` (a crop, a batch reorder), the next update adopts the new tensors."""

    def __init__(self, reserve: int = 0) -> None:
        super().__init__()
        self.reserve = reserve
        """Columns to allocate up front (prompt + new tokens), so a generate call never grows."""
        self._buf_k: Any = None
        self._buf_v: Any = None
        self._filled = 0

    def _owns_views(self) -> bool:
        return (self._buf_k is not None and self.keys is not None and self._filled > 0
                and self.keys.data_ptr() == self._buf_k.data_ptr()
                and self.keys.shape[-2] == self._filled
                and self.keys.shape[:2] == self._buf_k.shape[:2])

    def _allocate(self, like: Any, columns: int) -> None:
        shape = (*like.shape[:2], columns, like.shape[3])
        self._buf_k = like.new_empty(shape)
        self._buf_v = like.new_empty(shape)

    def update(self, key_states: Any, value_states: Any, *args: Any,
               **kwargs: Any) -> tuple[Any, Any]:
        if not self.is_initialized:
            self.lazy_initialization(key_states, value_states)
        if not self._owns_views():
            # First update, or keys replaced from outside: start a buffer from what is there.
            old_k, old_v = self.keys, self.values
            old = old_k.shape[-2] if old_k is not None and old_k.numel() else 0
            self._allocate(key_states, max(self.reserve, old + key_states.shape[-2]))
            if old:
                self._buf_k[:, :, :old] = old_k
                self._buf_v[:, :, :old] = old_v
            self._filled = old
        new = key_states.shape[-2]
        end = self._filled + new
        if end > self._buf_k.shape[-2]:
            k, v = self._buf_k, self._buf_v
            self._allocate(key_states, max(end, 2 * k.shape[-2], k.shape[-2] + _GROW_MIN))
            self._buf_k[:, :, :self._filled] = k[:, :, :self._filled]
            self._buf_v[:, :, :self._filled] = v[:, :, :self._filled]
        self._buf_k[:, :, self._filled:end] = key_states
        self._buf_v[:, :, self._filled:end] = value_states
        self._filled = end
        self.keys = self._buf_k[:, :, :end]
        self.values = self._buf_v[:, :, :end]
        return self.keys, self.values

    def batch_select_indices(self, indices: Any) -> None:
        """Keep only the rows `indices` (finished rows leave a decode batch): the buffer is
        selected whole, so the rows that stay keep their room to grow."""
        if not self._owns_views():
            super().batch_select_indices(indices)
            return
        self._buf_k = self._buf_k[indices]
        self._buf_v = self._buf_v[indices]
        self.keys = self._buf_k[:, :, :self._filled]
        self.values = self._buf_v[:, :, :self._filled]

    def reset(self) -> None:
        self._buf_k = self._buf_v = None
        self._filled = 0
        super().reset()


def growing_cache(config: Any, layers: list[tuple[Any, Any]] | None = None,
                  reserve: int = 0) -> Any:
    """A `DynamicCache` for `config` whose layers are `GrowingLayer`s with room for `reserve`
    columns, filled with `layers` ((keys, values) per layer) when given. Only for models whose
    every layer is a plain full-attention `DynamicLayer` (the engine checks that first)."""
    from transformers import DynamicCache

    cache = DynamicCache(config=config)
    if not all(type(layer) is DynamicLayer for layer in cache.layers):
        raise ValueError("growing_cache: the model has layers other than full attention")
    growing: list[Any] = [GrowingLayer(reserve) for _ in cache.layers]
    for layer, (keys, values) in zip(growing, layers or [], strict=False):
        layer.update(keys, values)
    cache.layers = growing
    return cache
