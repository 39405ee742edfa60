"""Agents under test: the contract, the registry (`agents`), the reference agent, command
agents, and the launchers of the LLM coding CLIs (Claude Code, Codex, OpenCode, Gemini CLI,
OpenHands)."""

from a2rl.agents._agent import PASSTHROUGH_ENV, Agent, AgentContext, CommandAgent
from a2rl.agents._cli import CLIAgent, CLIPackage, install, is_installed
from a2rl.agents._events import ParseResult, usage_totals
from a2rl.agents._registry import (
    BUILTIN_AGENTS,
    DEFAULT_AGENT,
    agent_class,
    agents,
    get_agent,
    list_agents,
)
from a2rl.agents._stream import (
    PARSE_REPORT,
    PROMPT_FILE,
    cap_text,
    clean_text,
    jsonl_line,
    log_events,
    read_lines,
    read_log_events,
    read_parse_report,
    read_transcript,
    with_prompts,
)
from a2rl.agents._which_cli import detect_cli

__all__ = [
    "BUILTIN_AGENTS", "DEFAULT_AGENT", "PARSE_REPORT", "PASSTHROUGH_ENV", "Agent", "AgentContext",
    "CLIAgent", "CLIPackage", "CommandAgent", "ParseResult", "agent_class", "agents", "detect_cli",
    "get_agent", "install", "is_installed", "list_agents", "read_lines", "read_parse_report",
    "read_transcript", "PROMPT_FILE", "cap_text", "clean_text", "jsonl_line", "log_events",
    "read_log_events", "usage_totals", "with_prompts",
]
