"""idle: reads the task and stops, so a run scores only the base model (the floor every agent
should beat). Copy this file to `src/a2rl/agents/<name>.py` and change `command` to add one."""

from a2rl.agents import Agent, AgentContext, agents


@agents.register("idle")
class IdleAgent(Agent):
    name = "idle"
    description = "reads the task description and exits (the run scores the base model)"

    def command(self, ctx: AgentContext) -> list[str]:
        # argv run inside the sandbox, in the workspace; ctx has the grader's URL and token, the
        # budget, the interpreter with a2rl's training stack and the --agent-opt values.
        return ["bash", "-c", "head -n 3 description.md"]
