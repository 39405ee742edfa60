"""Batched generation behind one interface; engines by name in `_registry` (transformers,
vLLM on GPU or CPU, plug-ins), chosen per run with --engine."""

from a2rl.inference._chat import load_tokenizer, render_chat
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
from a2rl.inference._registry import (
    child_env,
    child_python,
    describe_engines,
    engine_cache_key,
    engine_names,
    instructions_line,
    load_engine,
    resolve,
    resolve_for_run,
    select,
    selected,
    use_engine_in_command,
)
from a2rl.inference._venv import install_engine

__all__ = [
    "Engine", "EngineBase", "GenerationSettings", "ProgressFn", "SessionEngine",
    "SessionPrompt", "child_env", "child_python", "cut_at_stop", "describe_engines",
    "end_session", "engine_cache_key", "engine_names", "generate_sessions", "install_engine",
    "instructions_line", "load_engine", "load_tokenizer", "render_chat", "resolve",
    "resolve_for_run", "select", "selected", "use_engine_in_command", "vllm_usable",
]
