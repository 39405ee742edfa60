"""Batched generation behind one interface; engines by name in `_registry` (transformers,
vLLM on GPU or CPU, plug-ins), chosen per run with --engine."""

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
    vllm_usable,
)
from a2rl.inference._registry import engine_names, load_engine, resolve, select

__all__ = ["Engine", "EngineBase", "GenerationSettings", "ProgressFn", "SessionEngine",
           "SessionPrompt", "cut_at_stop", "end_session", "engine_names", "generate_sessions",
           "load_engine", "resolve", "select", "vllm_usable"]
