"""Where a2rl keeps state that outlives a run (model cache, baseline cache, install secrets)."""

from __future__ import annotations

import os
from pathlib import Path

DISTRIBUTION = "a2rl-bench"
"""a2rl's name on the package index (`pip install a2rl-bench`; the import name is `a2rl`)."""


def a2rl_home() -> Path:
    """`$A2RL_HOME`, default `~/.cache/a2rl`. Never mounted into an agent's sandbox."""
    root = Path(os.environ.get("A2RL_HOME") or Path.home() / ".cache" / "a2rl")
    root.mkdir(parents=True, exist_ok=True)
    return root


def cache_dir(*parts: str) -> Path:
    path = a2rl_home().joinpath(*parts)
    path.mkdir(parents=True, exist_ok=True)
    return path


def default_runs_dir() -> Path:
    """`$A2RL_RUNS_DIR`, default `./runs` (relative to where `a2rl` is invoked)."""
    return Path(os.environ.get("A2RL_RUNS_DIR") or "runs").absolute()
