"""The agent's workspace: base model copy, train-visible data, docs, timer, code/ and output/."""

from a2rl.workspace._build import (
    GRADER_ENV,
    MODES,
    GradingProtocol,
    Workspace,
    build_multi_root,
    build_workspace,
    check_mode,
    human_duration,
    remove_workspace_tree,
    render_instructions,
    write_grader_envs,
)
from a2rl.workspace._machine import NetworkFacts

__all__ = [
    "GRADER_ENV", "MODES", "GradingProtocol", "NetworkFacts", "Workspace", "build_multi_root",
    "build_workspace", "check_mode", "human_duration", "remove_workspace_tree",
    "render_instructions", "write_grader_envs",
]
