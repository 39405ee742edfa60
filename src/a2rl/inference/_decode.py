"""Greedy decoding in which a finished row leaves the batch (continuous batching at the token
level), for the transformers engine's session turns.

`model.generate` keeps every row in the batch until the last one stops: a row that ended its
action after 5 tokens is computed again, as padding, at every step the slowest row still takes
(on WebShop with the embedded model, 57 % of the row-steps of a round were such padding). Here
a row that produced an end-of-turn token, a stop string or its last allowed token is handed
back at once (its tokens and KV cache) and, once enough rows have finished, they are dropped
from the batch and its KV cache. Every step feeds the model exactly what `generate` would
(the new tokens, the 2-D padding mask or none when there is no padding, position ids counted
from the mask, `logits_to_keep=1`) and picks the argmax of the float32 logits, so each row's
tokens are `generate`'s up to where it stops (tests/test_engine_cache.py checks it against
`generate`, bench/l3_baselines.py --compare on real rollouts).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

RowDone = Callable[[int, Any, int, list[tuple[Any, Any]]], None]
"""(row, its token ids (prompt + generated, 1-D), how many of them were generated up to and
including the one that stopped it, its KV cache as (keys, values) views of batch size one per
layer): called once per row, as soon as it stops; copy what you keep, the views are reused."""


def _ends_turn(tail: str, stop: Sequence[str]) -> bool:
    return any(s in tail for s in stop)


def greedy_decode(model: Any, tokenizer: Any, input_ids: Any, mask: Any, cache: Any, *,
                  max_new_tokens: int, stop_ids: Sequence[int], stop: Sequence[str],
                  pad_id: int, on_row_done: RowDone, compact_fraction: float = 0.125) -> None:
    """Decode greedily from `input_ids` (left-padded rows, `mask` 1 on real tokens) whose first
    `cache.get_seq_length()` columns are already in `cache`; report each row through
    `on_row_done` as soon as it stops. Finished rows are dropped from the batch once at least
    `compact_fraction` of the rows still in it have finished (a drop copies the cache once)."""
    import torch

    batch = input_ids.shape[0]
    if batch == 0:
        return
    # As `generate`: position ids from the mask (pads at 0), and no mask at all when there is
    # no padding (the attention kernel then takes its causal path).
    positions = (mask.long().cumsum(-1) - 1).masked_fill(mask == 0, 0)
    attention = None if bool((mask == 1).all()) else mask
    seqs = input_ids
    start = input_ids.shape[1]
    past = cache.get_seq_length()
    feed, feed_pos = seqs[:, past:], positions[:, past:]
    rows = list(range(batch))  # the original row of each batch position
    stop_set = {int(i) for i in stop_ids}
    tail_tokens = max((len(s) for s in stop), default=0) + 2
    done_at: dict[int, int] = {}  # batch position -> generated tokens when it stopped
    steps = 0
    while True:
        out = model(input_ids=feed, attention_mask=attention, position_ids=feed_pos, cache=cache,
                    use_cache=True, logits_to_keep=1)
        nxt = out.logits[:, -1].to(dtype=torch.float32).argmax(-1)
        if done_at:  # rows that stopped but are still in the batch continue as padding
            finished = torch.zeros(len(rows), dtype=torch.bool)
            finished[list(done_at)] = True
            nxt = torch.where(finished.to(nxt.device), torch.full_like(nxt, pad_id), nxt)
        seqs = torch.cat([seqs, nxt[:, None]], dim=1)
        positions = torch.cat([positions, positions[:, -1:] + 1], dim=1)
        if attention is not None:
            attention = torch.cat([attention, attention.new_ones((len(rows), 1))], dim=1)
        steps += 1
        last = nxt.tolist()
        for pos in range(len(rows)):
            if pos in done_at:
                continue
            if last[pos] in stop_set or steps >= max_new_tokens:
                done_at[pos] = steps
            elif stop:
                tail = tokenizer.decode(seqs[pos, max(start, start + steps - tail_tokens):],
                                        skip_special_tokens=True)
                if _ends_turn(tail, stop):
                    done_at[pos] = steps
        if len(done_at) == len(rows):
            _report(seqs, cache, rows, list(range(len(rows))), done_at, on_row_done)
            return
        if len(done_at) >= max(1.0, compact_fraction * len(rows)):
            gone = sorted(done_at)
            _report(seqs, cache, rows, gone, done_at, on_row_done)
            keep = [pos for pos in range(len(rows)) if pos not in done_at]
            index = torch.tensor(keep, device=seqs.device)
            seqs, positions, nxt = seqs[index], positions[index], nxt[index]
            if attention is not None:
                attention = attention[index]
            cache.batch_select_indices(index)
            rows = [rows[pos] for pos in keep]
            done_at = {}
        feed, feed_pos = nxt[:, None], positions[:, -1:]


def _report(seqs: Any, cache: Any, rows: list[int], positions: list[int],
            done_at: dict[int, int], on_row_done: RowDone) -> None:
    for pos in positions:
        kv = [(layer.keys[pos:pos + 1], layer.values[pos:pos + 1]) for layer in cache.layers]
        on_row_done(rows[pos], seqs[pos], done_at[pos], kv)
