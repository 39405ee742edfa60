"""Attention for grouped-query models that does not copy the KV cache on multi-token forwards.

With a mask and more than one query token, transformers' SDPA path expands every layer's cached
keys and values to one copy per query head (`repeat_kv`): for the embedded model (9 query heads
on 3 KV heads) a forward of 16 rows x 5 new tokens over 1,500 cached ones spends 1 s of its 2 s
copying (profiled, 2026-12-02). That is the shape of every forward that verifies drafted tokens
(`_decode`) and of every fused first forward of a session turn. For a single query token
transformers already avoids the copy by folding the heads that share a KV head into the query
length (`pack_gqa`); `packed_gqa_sdpa` does the same for any query length: the queries of the
heads sharing a KV head are laid end to end, the mask repeated for each of them. Each query row
meets the same keys, values and mask entries as in the copying path: on the embedded model the
logits were bit-identical to that path's for 16 rows x 1 to 17 new tokens over 1,500 cached ones
and within 4e-5 at 33 (the kernel's blocking changes with the query length), and
tests/inference/test_engine_cache.py checks them on a small model. A forward of 16 rows x 5 new tokens took
0.4 s instead of 2.1 s (bench/forward_floor.py times the verification forward both ways).
"""

from __future__ import annotations

from typing import Any

NAME = "a2rl_packed_sdpa"
"""The name under which the attention (and its mask, transformers' SDPA mask) is registered."""


def packed_gqa_sdpa(module: Any, query: Any, key: Any, value: Any, attention_mask: Any,
                    dropout: float = 0.0, scaling: float | None = None,
                    is_causal: bool | None = None, **kwargs: Any) -> tuple[Any, None]:
    """transformers' SDPA attention, except that a masked multi-token query of a grouped-query
    layer attends to the KV heads as they are instead of to a copy per query head."""
    import torch
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    groups = getattr(module, "num_key_value_groups", 1)
    batch, heads, q_len, dim = query.shape
    plain = (groups == 1 or q_len == 1 or attention_mask is None or dropout
             or attention_mask.dim() != 4 or attention_mask.shape[1] != 1
             or kwargs.get("position_bias") is not None or kwargs.get("softcap") is not None)
    if plain:  # transformers' own path is already copy-free (or the case is not ours)
        return sdpa_attention_forward(module, query, key, value, attention_mask, dropout=dropout,
                                      scaling=scaling, is_causal=is_causal, **kwargs)
    # Head h uses KV head h // groups: the `groups` heads of a KV head become one longer query,
    # ordered (head in group, position); the mask row for (head, position) is position's.
    packed = query.reshape(batch, heads // groups, groups * q_len, dim)
    mask = attention_mask.repeat(1, 1, groups, 1)
    out = torch.nn.functional.scaled_dot_product_attention(packed, key, value, attn_mask=mask,
                                                           scale=scaling)
    return out.reshape(batch, heads, q_len, dim).transpose(1, 2).contiguous(), None


def use_packed_attention(model: Any) -> bool:
    """Switch `model` to `packed_gqa_sdpa` when it runs transformers' SDPA attention (the only
    implementation this one stands in for); True if it did."""
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

    if getattr(model.config, "_attn_implementation", None) != "sdpa":
        return False
    AttentionInterface.register(NAME, packed_gqa_sdpa)
    AttentionMaskInterface.register(NAME, sdpa_mask)
    try:
        model.set_attn_implementation(NAME)
    except (ValueError, NotImplementedError, AttributeError):
        # An architecture that refuses a registered implementation keeps transformers' SDPA.
        model.set_attn_implementation("sdpa")
        return False
    return True
