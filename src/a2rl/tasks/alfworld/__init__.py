"""alfworld: text household games (TextWorld + ALFWorld PDDL), ReAct-style episodes."""

from a2rl.tasks.alfworld.task import ALFWorldTask

__all__ = ["ALFWorldTask"]
