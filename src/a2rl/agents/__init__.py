"""Agents under test: the contract, the registry, the reference agent, command agents."""

from a2rl.agents._agent import PASSTHROUGH_ENV, Agent, AgentContext, CommandAgent
from a2rl.agents._events import AgentEvent, EventKind
from a2rl.agents._registry import BUILTIN_AGENTS, DEFAULT_AGENT, get_agent, list_agents

__all__ = ["BUILTIN_AGENTS", "DEFAULT_AGENT", "PASSTHROUGH_ENV", "Agent", "AgentContext",
           "AgentEvent", "CommandAgent", "EventKind", "get_agent", "list_agents"]
