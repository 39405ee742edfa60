"""The agent's workspace: base model copy, train-visible data, docs, timer, code/ and output/."""

from a2rl.workspace._build import (
    MODES,
    READ_ONLY_ENTRIES,
    Workspace,
    build_workspace,
    check_mode,
    human_duration,
    remove_workspace_tree,
    render_instructions,
)

__all__ = ["MODES", "READ_ONLY_ENTRIES", "Workspace", "build_workspace", "check_mode",
           "human_duration", "remove_workspace_tree", "render_instructions"]
