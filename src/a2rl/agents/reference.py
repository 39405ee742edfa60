"""The reference agent: a scripted, non-LLM post-training pipeline (the fixed-recipe row).

It writes its training script into code/, runs TRL SFT on the train-visible data, saves a full
model to output/v1, submits, tries one variant as output/v2 (by default a second SFT stage
started from v1; or another learning rate from the base), submits, and exits. Options
(--agent-opt key=value): steps, lr, lr2, batch_size, max_train, variant (continue|lr|none).
"""

from __future__ import annotations

from a2rl.agents._agent import Agent, AgentContext


class ReferenceAgent(Agent):
    name = "reference"
    description = "scripted SFT pipeline (TRL): v1, then a second stage v2 from v1"

    def command(self, ctx: AgentContext) -> list[str]:
        argv = [ctx.python, "-m", "a2rl.agents.reference_agent"]
        for key, value in sorted(ctx.options.items()):
            argv += [f"--{key.replace('_', '-')}", value]
        return argv
