"""Registers `ClaudeCodeAgent` as the agent `claude-code` (its module, `a2rl.agents.claude_code`,
carries no decorator of its own)."""

from a2rl.agents._registry import agents
from a2rl.agents.claude_code import ClaudeCodeAgent

agents.register("claude-code")(ClaudeCodeAgent)
