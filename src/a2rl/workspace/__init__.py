"""The agent's workspace: base model copy, train-visible data, docs, timer, code/ and output/."""

from a2rl.workspace._build import (
    GRADER_ENV,
    MODES,
    READ_ONLY_ENTRIES,
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

__all__ = ["GRADER_ENV", "GradingProtocol", "MODES", "READ_ONLY_ENTRIES", "Workspace", "build_multi_root",
           "build_workspace", "check_mode", "human_duration", "remove_workspace_tree",
           "render_instructions", "write_grader_envs"]
