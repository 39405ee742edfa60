"""Benchmark: what one forward of the model costs on this machine, and the floor it puts under a
full L3 baseline.

    python bench/forward_floor.py [--model smollm2-135m] [--rows 16] [--prefill 200]
                                  [--context 1500] [--decode-steps 20]

Times, with the transformers model alone (no harness): a batched prefill of `--rows` random
prompts of `--prefill` tokens (the most tokens per second this CPU gets through with this model),
and decode steps of `--rows` rows over a cached context of `--context` tokens (one row encoded,
its cache repeated to every row, so the set-up stays cheap), once with the engine's preallocated
KV cache and once with transformers' concatenating one (the ratio, and whether the logits are
bit-identical, as the engine's contract needs). It then prints the floors these
rates put under a full baseline, from the per-step token counts `bench/l3_baselines.py` and
the README measured for the embedded model (ALFWorld: 134 games x 50 steps x ~65 generated
tokens; WebShop: 100 goals, ~2,280 encoded prompt tokens and ~112 generated tokens an episode):
no engine can generate a token more cheaply than a batched prefill encodes one.
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

ALFWORLD_GENERATED = 134 * 50 * 65
"""Held-out games x step limit x tokens a step (the embedded model never ends a game and repeats a
~65-token reply: 4 games x 14 steps, 2026-12-02; ~76 in an earlier sample of 4 x 4)."""
WEBSHOP_TOKENS = 100 * (2280 + 112)
"""Held-out goals x (prompt tokens encoded + tokens generated) an episode, with KV caches."""


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--rows", type=int, default=16)
    ap.add_argument("--prefill", type=int, default=200)
    ap.add_argument("--context", type=int, default=1500)
    ap.add_argument("--decode-steps", type=int, default=20)
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
    result("WebShop full baseline floor (prefill rate)", web_floor, "min", target="<= 30",
           ok=web_floor <= 30)
    return 0


if __name__ == "__main__":
    sys.exit(main())
