"""Batched generation behind one interface: transformers on CPU, vLLM on GPU when installed."""

from a2rl.inference._engine import (
    Engine,
    EngineBase,
    GenerationSettings,
    ProgressFn,
    SessionEngine,
    SessionPrompt,
    cut_at_stop,
    end_session,
    generate_sessions,
    load_engine,
    vllm_usable,
)

__all__ = ["Engine", "EngineBase", "GenerationSettings", "ProgressFn", "SessionEngine",
           "SessionPrompt", "cut_at_stop", "end_session", "generate_sessions", "load_engine",
           "vllm_usable"]
