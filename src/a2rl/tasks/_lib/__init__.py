"""Helpers shared by several tasks: the LLM-judge client, Hugging Face Hub dataset files, the
sandboxed code executor of execution-scored tasks, held-out/train overlap and splits."""
