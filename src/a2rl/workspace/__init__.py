"""The agent's workspace: the base model (mounted read-only), train-visible data, docs, timer,
code/ and output/."""

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
from a2rl.workspace._model import copy_model, model_copy_changes, mount_source

__all__ = [
    "GRADER_ENV", "MODES", "GradingProtocol", "NetworkFacts", "Workspace", "build_multi_root",
    "build_workspace", "check_mode", "copy_model", "human_duration", "model_copy_changes",
    "mount_source", "remove_workspace_tree", "render_instructions", "write_grader_envs",
]
