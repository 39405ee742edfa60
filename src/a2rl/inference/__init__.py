"""Batched generation behind one interface: transformers on CPU, vLLM on GPU when installed."""

from a2rl.inference._engine import (
    Engine,
    GenerationSettings,
    ProgressFn,
    cut_at_stop,
    load_engine,
    vllm_usable,
)

__all__ = ["Engine", "GenerationSettings", "ProgressFn", "cut_at_stop", "load_engine",
           "vllm_usable"]
