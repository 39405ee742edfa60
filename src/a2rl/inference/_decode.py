"""Greedy decoding in which a finished row leaves the batch (continuous batching at the token
level) and a row may gain several tokens a forward (prompt-lookup drafts, verified), for the
transformers engine's session turns.

`model.generate` keeps every row in the batch until the last one stops: a row that ended its
action after 5 tokens is computed again, as padding, at every step the slowest row still took
(on WebShop with the embedded model, 57 % of the row-steps of a round were such padding). Here
a row that produced an end-of-turn token, a stop string or its last allowed token is handed
back at once (its tokens and KV cache) and, once enough rows have finished, they are dropped
from the batch and its KV cache. Every step feeds the model what `generate` would (the new
tokens, the 2-D padding mask or none when there is no padding, position ids counted from the
mask) and picks the argmax of the float32 logits.

A decode step reads every weight once for a handful of tokens, so on a CPU it costs about what
encoding a dozen tokens a row costs (bench/forward_floor.py). Interactive agents repeat
themselves (the embedded model gives ALFWorld the same 65-token reply at every step), so each
row's next tokens are drafted from its own context: the tokens that followed the last earlier
occurrence of its latest n-gram (prompt lookup). A forward then feeds the pending token plus the
draft, and the row keeps the drafted tokens up to the first one the model would not have picked,
plus the model's own pick after them: exactly the tokens plain greedy decoding gives, computed
in one forward instead of several (up to the float rounding of a wider matrix product, which
moves logits by ~1e-4 and would flip only an exact near-tie; bench/l3_baselines.py --compare
checks whole trajectories). Columns fed for rejected drafts stay in the KV cache, masked out of
attention and skipped in position ids, and are dropped when the row is handed back.
(tests/inference/test_engine_cache.py checks all of it against `generate`.)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

RowDone = Callable[[int, Any, int, list[tuple[Any, Any]]], None]
"""(row, its token ids (its prompt columns as given, then its generated tokens, 1-D), how many
tokens it generated (the last one stopped it), its KV cache as (keys, values) of batch size one
per layer, one column per token the model was fed, in order, masked columns dropped): called
once per row, as soon as it stops; copy what you keep, the tensors may be views that are reused."""

MATCH = 32
"""Longest suffix of a row's tokens matched against its context when looking for a draft: the
longest match (the most recent among equals) is the occurrence most likely to go on the same
way; a short one ("a desk", inside a list) often points at the wrong place."""
FORWARD_COST = 64
"""What a forward costs beyond its columns, in columns (reading every weight once; the engine's
`_LONE_FORWARD`). Each column costs the same whether it holds a draft, a pad or a real token, so
a draft is worth feeding only where it is likely to be accepted: one row's drafts cost little
next to a forward, sixteen rows' cost sixteen columns per drafted position."""


def _ends_turn(tail: str, stop: Sequence[str]) -> bool:
    return any(s in tail for s in stop)


def _draft(history: Any, cap: int) -> list[int]:
    """Up to `cap` tokens that followed the earlier occurrence of the longest suffix (at most
    MATCH tokens) of `history` (1-D token tensor), the most recent among equally long ones;
    [] if its last token never occurred before."""
    size = history.shape[0]
    # Candidate ends of an earlier occurrence: where the last token occurred before; each round
    # keeps those whose occurrence also matches one token further back.
    ends = (history[:-1] == history[-1]).nonzero()[:, 0]
    for back in range(1, min(MATCH, size - 1)):
        if len(ends) == 1:
            break
        still = (ends >= back) & (history[(ends - back).clamp(min=0)] == history[size - 1 - back])
        if not bool(still.any()):
            break
        ends = ends[still]
    if len(ends) == 0:
        return []
    begin = int(ends[-1]) + 1
    return [int(t) for t in history[begin:begin + cap]]


def _width(drafts: list[list[int]], stats: list[list[int]], live: int, batch: int) -> int:
    """How many columns the next forward feeds (1 + drafted tokens): the width with the most
    expected tokens per unit of cost. A row whose drafted tokens were accepted `a` times and
    rejected `r` times accepts each next one with probability p = (a + 1) / (a + r + 2), so
    k drafted tokens add p + p^2 + ... + p^k tokens; every row in the batch costs a column per
    position, plus `FORWARD_COST`."""
    rates = [(a + 1) / (a + r + 2) for a, r in stats]
    longest = max((len(d) for d in drafts), default=0)
    best_width, best = 1, live / (FORWARD_COST + batch)
    expected = [0.0] * len(drafts)  # p + ... + p^(w-1) of each row, for the width tried
    for width in range(2, longest + 2):
        for pos, draft in enumerate(drafts):
            if len(draft) >= width - 1:
                expected[pos] += rates[pos] ** (width - 1)
        value = (live + sum(expected)) / (FORWARD_COST + batch * width)
        if value > best:
            best_width, best = width, value
    return best_width


def greedy_decode(model: Any, tokenizer: Any, input_ids: Any, mask: Any, cache: Any, *,
                  max_new_tokens: int, stop_ids: Sequence[int], stop: Sequence[str],
                  pad_id: int, on_row_done: RowDone, compact_fraction: float = 0.125,
                  lookup: int = 0, acceptance: list[list[int]] | None = None) -> None:
    """Decode greedily from `input_ids` (left-padded rows, `mask` 1 on real tokens) whose first
    `cache.get_seq_length()` columns are already in `cache`; report each row through
    `on_row_done` as soon as it stops. Finished rows are dropped from the batch once at least
    `compact_fraction` of the rows still in it have finished (a drop copies the cache once).
    `lookup` > 0 drafts up to that many tokens a row and forward from the row's own context
    (0: one token a forward, as `generate`); `acceptance` holds each row's [drafted tokens
    accepted, drafts rejected] so far (updated in place; a session's history across turns) and
    sets how far its drafts are trusted (see `_width`)."""
    import torch

    batch = input_ids.shape[0]
    if batch == 0:
        return
    device = input_ids.device
    start = input_ids.shape[1]
    valid = mask.bool()  # per column of the cache (and of what is fed): attended to
    # As `generate`: position ids from the mask (pads at 0); no mask at all when no column is
    # masked (the attention kernel then takes its causal path).
    positions = (mask.long().cumsum(-1) - 1).masked_fill(mask == 0, 0)
    past = cache.get_seq_length()
    feed, feed_pos = input_ids[:, past:], positions[:, past:]
    seqs = input_ids  # the token of every column
    # Position id of each row's pending token (its last generated, not yet fed): the prompt's
    # last until the first forward picks one.
    next_pos = positions[:, -1].clone()
    rows = list(range(batch))  # the original row of each batch position
    history = [input_ids[r][valid[r]] for r in range(batch)]  # prompt tokens, for drafts
    generated: list[list[int]] = [[] for _ in range(batch)]
    fed_count = [0] * batch  # how many of a row's generated tokens are in the cache
    stats = acceptance if acceptance is not None else [[0, 0] for _ in range(batch)]
    if len(stats) != batch:
        raise ValueError(f"acceptance has {len(stats)} rows for a batch of {batch}")
    stop_set = {int(i) for i in stop_ids}
    tail_tokens = max((len(s) for s in stop), default=0) + 2
    done_at: dict[int, int] = {}  # batch position -> generated tokens when it stopped

    def emit(pos: int, token: int) -> bool:
        """Append a token to a row; True if it stops the row."""
        out = generated[pos]
        out.append(token)
        if (token in stop_set or len(out) >= max_new_tokens
                or (stop and _ends_turn(tokenizer.decode(out[-tail_tokens:],
                                                         skip_special_tokens=True), stop))):
            done_at[pos] = len(out)
            return True
        return False

    drafts: list[list[int]] = [[] for _ in rows]
    while True:
        width = feed.shape[1]
        first = past + width == start  # this forward encodes the prompt: only its last logits
        attention = None if bool(valid.all()) else valid.long()
        out = model(input_ids=feed, attention_mask=attention, position_ids=feed_pos, cache=cache,
                    use_cache=True, logits_to_keep=1 if first else width)
        picks = out.logits.to(dtype=torch.float32).argmax(-1)
        past += width
        pending = torch.full((len(rows),), pad_id, dtype=torch.long, device=device)
        for pos in range(len(rows)):
            if pos in done_at:
                continue
            if first:
                kept = [int(picks[pos, -1])]
            else:
                row = picks[pos].tolist()
                draft = drafts[pos]
                accepted = 0
                while accepted < len(draft) and row[accepted] == draft[accepted]:
                    accepted += 1
                kept = row[:accepted + 1]
                stats[pos][0] += accepted
                stats[pos][1] += accepted < len(draft)
                # Columns fed for drafted tokens after the first rejected one: masked from now on.
                valid[pos, past - width + 1 + accepted:] = False
                next_pos[pos] += accepted
                fed_count[pos] += 1 + accepted
            next_pos[pos] += 1
            if not any(emit(pos, token) for token in kept):
                pending[pos] = kept[-1]
        if len(done_at) == len(rows):
            _report(seqs, valid, start, generated, fed_count, cache, rows, list(range(len(rows))),
                    done_at, on_row_done)
            return
        if len(done_at) >= max(1.0, compact_fraction * len(rows)):
            gone = sorted(done_at)
            _report(seqs, valid, start, generated, fed_count, cache, rows, gone, done_at,
                    on_row_done)
            keep = [pos for pos in range(len(rows)) if pos not in done_at]
            index = torch.tensor(keep, device=device)
            seqs, valid, pending, next_pos = seqs[index], valid[index], pending[index], next_pos[index]
            cache.batch_select_indices(index)
            rows = [rows[pos] for pos in keep]
            history = [history[pos] for pos in keep]
            generated = [generated[pos] for pos in keep]
            fed_count = [fed_count[pos] for pos in keep]
            stats = [stats[pos] for pos in keep]
            done_at = {}
        # The next forward: each row's pending token, then its draft (rows that stopped but are
        # still in the batch are fed pads, attended to, as `generate` feeds them).
        drafts = [[] for _ in rows]
        if lookup > 0:
            for pos in range(len(rows)):
                left = max_new_tokens - len(generated[pos])
                if pos in done_at or left <= 1:
                    continue
                context = torch.cat([history[pos], torch.tensor(generated[pos], dtype=torch.long,
                                                           device=device)])
                draft = _draft(context, min(lookup, left - 1))
                for i, token in enumerate(draft):  # nothing after an end-of-turn token
                    if token in stop_set:
                        draft = draft[:i + 1]
                        break
                drafts[pos] = draft
        width = _width(drafts, stats, len(rows) - len(done_at), len(rows))
        drafts = [draft[:width - 1] for draft in drafts]
        feed = torch.full((len(rows), width), pad_id, dtype=torch.long, device=device)
        fed = torch.zeros((len(rows), width), dtype=torch.bool, device=device)
        feed[:, 0], fed[:, 0] = pending, True
        for pos, draft in enumerate(drafts):
            if draft:
                feed[pos, 1:1 + len(draft)] = torch.tensor(draft, device=device)
                fed[pos, 1:1 + len(draft)] = True
        feed_pos = next_pos[:, None] + torch.arange(width, device=device)
        seqs = torch.cat([seqs, feed], dim=1)
        valid = torch.cat([valid, fed], dim=1)


def _report(seqs: Any, valid: Any, start: int, generated: list[list[int]], fed_count: list[int],
            cache: Any, rows: list[int], positions: list[int], done_at: dict[int, int],
            on_row_done: RowDone) -> None:
    import torch

    for pos in positions:
        count = done_at[pos]
        tokens = torch.cat([seqs[pos, :start],
                            torch.tensor(generated[pos][:count], dtype=seqs.dtype,
                                         device=seqs.device)])
        # The row's fed generated tokens are its first attended columns after the prompt, in
        # order; later ones (drafts past its stop, pads after it) are not its tokens, and the
        # token that stopped it is in the cache only if it was fed as a draft.
        filled = cache.layers[0].keys.shape[2]
        own = valid[pos, start:filled].nonzero()[:, 0] + start
        own = own[:min(count, fed_count[pos])]
        if len(own) == 0 or int(own[-1]) - start == len(own) - 1:  # no masked column: views
            end = start + len(own)
            kv = [(layer.keys[pos:pos + 1, :, :end], layer.values[pos:pos + 1, :, :end])
                  for layer in cache.layers]
        else:
            cols = torch.cat([torch.arange(start, device=own.device), own])
            kv = [(layer.keys[pos:pos + 1].index_select(2, cols),
                   layer.values[pos:pos + 1].index_select(2, cols)) for layer in cache.layers]
        on_row_done(rows[pos], tokens, count, kv)
