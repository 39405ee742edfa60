"""alpacaeval: instruction following, judged pairwise against a reference output."""

from a2rl.tasks.alpacaeval.task import AlpacaEvalTask

__all__ = ["AlpacaEvalTask"]
