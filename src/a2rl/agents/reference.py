"""The reference agent: a scripted, non-LLM post-training pipeline (the fixed-recipe row).

It copies its training scripts into code/ and runs one recipe, sized from the time the grader
says is left (src/a2rl/agents/reference_agent/__main__.py has the details):

* `rft` (default on arith): rejection-sampled self-generated targets, then TRL SFT;
* `sft` (default on the other static tasks): TRL SFT on the train answers;
* `grpo` (arith): TRL GRPO with the task's rule reward, the RL route;
* `rollout-rft` (interactive tasks): rejection-sampling fine-tuning on `a2rl rollout`
  trajectories, round after round.

Static recipes save several checkpoints, judge them on a dev split of the train rows and
submit the best ones. Options (--agent-opt key=value) are the pipeline's flags: recipe, steps
(a fixed step count instead of the clock), lr, grpo_lr, batch_size, dev, candidates,
max_submit, samples, temperature, rounds, episodes, …
"""

from __future__ import annotations

from pathlib import Path

import a2rl
from a2rl.agents._agent import Agent, AgentContext, AgentOption
from a2rl.agents._registry import agents
from a2rl.agents.reference_agent.recipe import FLAGS, RECIPES

__all__ = ["RECIPES", "ReferenceAgent"]


@agents.register("reference")
class ReferenceAgent(Agent):
    """No driver: `--driver` and `--driver-base-url` are refused with the other options."""

    name = "reference"
    description = ("scripted pipeline (TRL): rejection-sampled SFT, SFT, GRPO or rollout RFT, "
                   "sized from the time left (--agent-opt recipe=...)")
    agent_options = {key: AgentOption(flag.help, flag.kind,
                                      choices=RECIPES if key == "recipe" else ())
                     for key, flag in FLAGS.items()}

    def command(self, ctx: AgentContext) -> list[str]:
        argv = [ctx.python, "-m", "a2rl.agents.reference_agent"]
        for key, value in sorted(ctx.options.items()):
            argv += [f"--{key.replace('_', '-')}", value]
        return argv

    def extra_env(self, ctx: AgentContext) -> dict[str, str]:
        # The pipeline imports the a2rl the harness runs (mounted read-only by the sandbox),
        # not whichever copy the interpreter's own path would find first.
        return {"PYTHONPATH": str(Path(a2rl.__file__).resolve().parent.parent)}
