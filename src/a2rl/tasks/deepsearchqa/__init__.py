"""deepsearchqa: multi-step search-and-answer episodes over a document corpus."""

from a2rl.tasks.deepsearchqa.task import DeepSearchQATask

__all__ = ["DeepSearchQATask"]
