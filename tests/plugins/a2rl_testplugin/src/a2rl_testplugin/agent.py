"""`--agent testplugin-agent`: says it ran and which sandbox marker it saw, then exits."""

from __future__ import annotations

from a2rl.agents import Agent, AgentContext


class MarkerAgent(Agent):
    name = "testplugin-agent"
    description = "prints a line naming itself (a2rl's plug-in tests)"

    def command(self, ctx: AgentContext) -> list[str]:
        return ["bash", "-c", 'echo "testplugin-agent ran (testjail=${A2RL_TESTJAIL:-no})"']
