"""Benchmark: what one forward of the model costs on this machine, and the floor it puts under a
full L3 baseline.

    python bench/forward_floor.py [--model smollm2-135m] [--rows 16] [--prefill 200]
                                  [--context 1500] [--decode-steps 20]
                                  [--verify-width 17] [--alfworld-context 2500]

Times, with the transformers model alone (no harness): a batched prefill of `--rows` random
prompts of `--prefill` tokens (the most tokens per second this CPU gets through with this model),
and decode steps of `--rows` rows over a cached context of `--context` tokens (one row encoded,
its cache repeated to every row, so the set-up stays cheap), once with the engine's preallocated
KV cache and once with transformers' concatenating one (the ratio, and whether the logits are
bit-identical, as the engine's contract needs), and a forward that verifies drafted tokens
(`--rows` rows x `--verify-width` columns, masked, over `--alfworld-context` cached tokens, the
shape of an ALFWorld round) with the engine's copy-free grouped-query attention and with
transformers' SDPA path. It then prints the floors these rates put under a full baseline, from
the token counts measured for the embedded model (ALFWorld: 134 games x 50 steps, ~73 generated
and ~14 encoded tokens a step, plus ~576 for a game's first prompt and ~1,064 when its history
window first slides; WebShop: 100 goals,
~2,280 encoded prompt tokens and ~112 generated tokens an episode). Under exact greedy decoding
every one of those tokens needs its own column of a forward at its context, so the cheapest
column this CPU computes at that context (the verification forward's) bounds a full baseline
from below; the short-prompt prefill rate gives a lower, looser bound.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import load, result  # noqa: E402

from a2rl.inference._kv_cache import growing_cache  # noqa: E402
from a2rl.models import resolve_model  # noqa: E402

ALFWORLD_GENERATED = 134 * 50 * 73
"""Held-out games x step limit x tokens a step (the embedded model never ends a game and repeats
its reply: 1,160 tokens a round for 16 games x 10 steps, 2026-12-02; ~65 for 4 games x 14)."""
ALFWORLD_ENCODED = 134 * (576 + 1064 + 48 * 14)
"""Prompt tokens a full ALFWorld baseline encodes with KV sessions, a game: ~576 for its first
prompt (9,215 for a batch of 16 fresh games), ~1,064 in the three rounds after its history window
first slides (17,029 for 16), ~14 in each other round (16 games x 16 steps, 2026-12-02)."""
WEBSHOP_TOKENS = 100 * (2280 + 112)
"""Held-out goals x (prompt tokens encoded + tokens generated) an episode, with KV caches."""


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--rows", type=int, default=16)
    ap.add_argument("--prefill", type=int, default=200)
    ap.add_argument("--context", type=int, default=1500)
    ap.add_argument("--decode-steps", type=int, default=20)
    ap.add_argument("--verify-width", type=int, default=17)
    ap.add_argument("--alfworld-context", type=int, default=2500)
    args = ap.parse_args()

    import torch
    from transformers import AutoModelForCausalLM, DynamicCache

    torch.set_num_threads(max(1, len(os.sched_getaffinity(0))))
    path = resolve_model(args.model).path
    model = AutoModelForCausalLM.from_pretrained(str(path), dtype=torch.float32).eval()
    vocab = model.config.vocab_size
    gen = torch.Generator().manual_seed(0)
    with torch.inference_mode():
        ids = torch.randint(100, vocab - 100, (args.rows, args.prefill), generator=gen)
        start = time.perf_counter()
        model(ids, use_cache=True, logits_to_keep=1)
        prefill_s = time.perf_counter() - start
        rate = args.rows * args.prefill / prefill_s

        one = model(torch.randint(100, vocab - 100, (1, args.context), generator=gen),
                    use_cache=True, logits_to_keep=1).past_key_values
        layers = [(layer.keys.repeat(args.rows, 1, 1, 1), layer.values.repeat(args.rows, 1, 1, 1))
                  for layer in one.layers]
        first = torch.randint(100, vocab - 100, (args.rows, 1), generator=gen)
        timed: dict[str, tuple[float, Any]] = {}
        # The engine's preallocated cache and transformers' concatenating one, same tokens.
        for name, cache in (
                ("concatenating", DynamicCache(ddp_cache_data=[(k.clone(), v.clone())
                                                               for k, v in layers])),
                ("preallocated", growing_cache(model.config, layers,
                                               args.context + args.decode_steps))):
            token, logits = first, []
            start = time.perf_counter()
            for _ in range(args.decode_steps):
                out = model(token, cache=cache, use_cache=True)
                logits.append(out.logits[:, -1])
                token = out.logits[:, -1:].argmax(-1)
            timed[name] = ((time.perf_counter() - start) / args.decode_steps, torch.stack(logits))
        step_s, old_step_s = timed["preallocated"][0], timed["concatenating"][0]
        identical = torch.equal(timed["preallocated"][1], timed["concatenating"][1])
        verify = _verify_forward(model, args.rows, args.verify_width, args.alfworld_context, gen)

    print(f"model {args.model} ({load()})")
    print(f"batched prefill: {args.rows} x {args.prefill} tokens in {prefill_s:.2f} s = "
          f"{rate:.0f} tokens/s")
    print(f"decode: {args.rows} rows over {args.context} cached tokens: {step_s * 1000:.0f} ms a "
          f"step = {step_s / args.rows * 1000:.1f} ms a token (preallocated cache); "
          f"{old_step_s * 1000:.0f} ms with the concatenating cache; logits identical: {identical}")
    alf_floor = ALFWORLD_GENERATED / rate / 60
    alf_decode = ALFWORLD_GENERATED * step_s / args.rows / 3600
    web_floor = WEBSHOP_TOKENS / rate / 60
    print(f"ALFWorld (134 games): >= {alf_floor:.0f} min for its generated tokens at the prefill "
          f"rate (target 30); {alf_decode:.1f} h at this decode rate")
    print(f"WebShop (100 goals): >= {web_floor:.0f} min at the prefill rate (target 30)")
    result("batched prefill rate", rate, "tokens/s", note=f"{args.rows} x {args.prefill}")
    result("decode step", step_s * 1000, "ms", note=f"{args.rows} rows, {args.context} context")
    result("decode step, concatenating / preallocated cache", old_step_s / step_s, "x",
           note=f"logits bit-identical: {identical}")
    result("ALFWorld full baseline floor (prefill rate)", alf_floor, "min", target="<= 30",
           ok=alf_floor <= 30)
    columns = args.rows * args.verify_width
    column_s = verify["packed"][0] / columns
    alf_exact = (ALFWORLD_GENERATED + ALFWORLD_ENCODED) * column_s / 60
    print(f"verification forward: {args.rows} rows x {args.verify_width} columns over "
          f"{args.alfworld_context} cached tokens: {verify['packed'][0]:.2f} s with copy-free "
          f"grouped-query attention ({column_s * 1000:.1f} ms a column), "
          f"{verify['sdpa'][0]:.2f} s with transformers' SDPA path; logits max |diff| "
          f"{verify['diff']:.1e}")
    print(f"ALFWorld (134 games): >= {alf_exact:.0f} min for its "
          f"{ALFWORLD_GENERATED + ALFWORLD_ENCODED:,} generated and encoded tokens at the "
          f"verification forward's cost per column (target 30)")
    result("verification forward, SDPA / copy-free attention", verify["sdpa"][0]
           / verify["packed"][0], "x", note=f"{args.rows} x {args.verify_width} over "
           f"{args.alfworld_context}; logits max diff {verify['diff']:.1e}")
    result("ALFWorld full baseline floor (a column at its context)", alf_exact, "min",
           target="<= 30", ok=alf_exact <= 30)
    result("WebShop full baseline floor (prefill rate)", web_floor, "min", target="<= 30",
           ok=web_floor <= 30)
    return 0


def _verify_forward(model: Any, rows: int, width: int, context: int,
                    gen: Any) -> dict[str, Any]:
    """Median seconds of a masked `rows` x `width` forward over `context` cached tokens, with
    the engine's attention and with transformers' SDPA, and the largest logit difference."""
    import torch

    from a2rl.inference._attention import NAME, use_packed_attention

    vocab = model.config.vocab_size
    one = model(torch.randint(100, vocab - 100, (1, context), generator=gen), use_cache=True,
                logits_to_keep=1).past_key_values
    layers = [(layer.keys.repeat(rows, 1, 1, 1), layer.values.repeat(rows, 1, 1, 1))
              for layer in one.layers]
    ids = torch.randint(100, vocab - 100, (rows, width), generator=gen)
    mask = torch.ones(rows, context + width, dtype=torch.long)
    mask[0, context // 2] = 0  # a masked column, as a rejected draft or padding leaves
    positions = (mask.cumsum(-1) - 1)[:, context:]
    out: dict[str, Any] = {}
    logits = {}
    for name in ("sdpa", "packed"):
        if name == "packed":
            use_packed_attention(model)
        else:
            model.set_attn_implementation("sdpa")
        times = []
        for _ in range(3):
            cache = growing_cache(model.config, layers, context + width)
            start = time.perf_counter()
            logits[name] = model(input_ids=ids, attention_mask=mask, position_ids=positions,
                                 cache=cache, use_cache=True, logits_to_keep=width).logits
            times.append(time.perf_counter() - start)
        out[name] = (sorted(times)[1],)
    assert model.config._attn_implementation == NAME
    out["diff"] = float((logits["sdpa"] - logits["packed"]).abs().max())
    return out


if __name__ == "__main__":
    sys.exit(main())
