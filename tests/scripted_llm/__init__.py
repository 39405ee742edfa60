"""A scripted LLM server for testing the real agent CLIs offline (test-only, loopback).

It speaks the wire protocols the CLIs use (one module per protocol: anthropic, responses, chat,
gemini) and replays one plan of shell commands, whatever the CLI asks: write code/train.py, run
it, submit with curl, read timer.sh, finish. Every usage figure it sends is recorded, so a test
can check that the CLI's transcript reports the same token counts.
"""

from scripted_llm._core import (
    DEFAULT_PLAN,
    FAKE_KEY,
    Script,
    ScriptedRun,
    Step,
    agent_context,
    create_app,
    reported_usage,
    scripted_cli_run,
    stream_fixture,
)

__all__ = ["DEFAULT_PLAN", "FAKE_KEY", "Script", "ScriptedRun", "Step", "agent_context",
           "create_app", "reported_usage", "scripted_cli_run", "stream_fixture"]
