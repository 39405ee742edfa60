"""Helpers shared by several tasks: the LLM-judge client and Hugging Face Hub dataset files."""
