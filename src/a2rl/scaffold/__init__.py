"""The scaffold's former import path: a re-export of `a2rl.extensions.scaffold` for callers that
still import it from here (the CLI's `--scaffold` option)."""

from a2rl.extensions.scaffold import (
    COMPONENTS,
    SCRIPT,
    Scaffold,
    ScaffoldConfig,
    install,
    normalize_strategy,
    parse_components,
    read_scaffold_files,
    scaffold_config,
)

__all__ = ["COMPONENTS", "SCRIPT", "Scaffold", "ScaffoldConfig", "install",
           "normalize_strategy", "parse_components", "read_scaffold_files", "scaffold_config"]
