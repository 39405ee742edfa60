"""Claude Code launcher: argv/env/config building, the stream-json parser on a recorded real
transcript, and one real sandboxed run of the pinned CLI against the scripted Anthropic server."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from scripted_llm import (
    FAKE_KEY,
    agent_context,
    reported_usage,
    scripted_cli_run,
    stream_fixture,
)

from a2rl.agents import get_agent
from a2rl.agents._cli import REPROMPT, SessionSpec
from a2rl.agents.claude_code import ClaudeCodeAgent

STREAM = "claude_code_stream.jsonl"
"""A recorded real stream of the pinned CLI (tests/fixtures)."""


def test_registered() -> None:
    agent = get_agent("claude-code")
    assert isinstance(agent, ClaudeCodeAgent)
    assert agent.package.spec == "@anthropic-ai/claude-code@2.1.332"
    assert agent.memory_file == "CLAUDE.md"


def test_argv_first_run_and_resume(tmp_path: Path) -> None:
    agent, ctx = ClaudeCodeAgent(), agent_context(tmp_path, driver="claude-x", options={"effort": "high"})
    first = agent.cli_argv(ctx, "claude", "-do it", resume=False)
    assert first[:5] == ["claude", "-p", "--output-format", "stream-json", "--verbose"]
    assert "--include-partial-messages" in first and "--dangerously-skip-permissions" in first
    assert first[first.index("--model") + 1] == "claude-x"
    assert first[first.index("--effort") + 1] == "high"
    assert first[-2:] == ["--", "-do it"]  # a prompt starting with '-' is not an option
    sid = first[first.index("--session-id") + 1]
    again = agent.cli_argv(ctx, "claude", REPROMPT, resume=True)
    assert again[again.index("--resume") + 1] == sid and "--session-id" not in again
    assert again[-1] == REPROMPT  # _cli_session substitutes the remaining time in it
    # no partial messages on request; default driver otherwise
    plain = agent.cli_argv(agent_context(tmp_path, options={"partial": "0"}), "claude", "x", resume=False)
    assert "--include-partial-messages" not in plain
    assert plain[plain.index("--model") + 1] == ClaudeCodeAgent.default_driver


def test_env_and_home_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    agent = ClaudeCodeAgent()
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("CLAUDE_CODE_OAUTH_TOKEN", raising=False)
    ctx = agent_context(tmp_path, driver="m1", driver_base_url="http://127.0.0.1:5/")
    env = agent.cli_env(ctx)
    assert env["ANTHROPIC_BASE_URL"] == "http://127.0.0.1:5"
    assert env["ANTHROPIC_DEFAULT_HAIKU_MODEL"] == env["ANTHROPIC_DEFAULT_SONNET_MODEL"] == "m1"
    assert env["ANTHROPIC_API_KEY"] == "a2rl-no-key"  # a local endpoint needs no real key
    for off in ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "DISABLE_AUTOUPDATER",
                "DISABLE_TELEMETRY", "IS_SANDBOX"):
        assert env[off] == "1"
    monkeypatch.setenv("ANTHROPIC_API_KEY", FAKE_KEY)
    monkeypatch.setattr(agent, "executable", lambda: Path("/opt/claude"))  # not installed here
    full = agent.extra_env(ctx)
    assert full["ANTHROPIC_API_KEY"] == FAKE_KEY and agent.secrets(ctx) == [FAKE_KEY]
    spec = SessionSpec.decode(full["A2RL_CLI_SESSION"])
    assert FAKE_KEY not in json.dumps(spec.__dict__)
    settings = json.loads(spec.home_files[".claude/settings.json"])
    assert settings["permissions"]["defaultMode"] == "bypassPermissions"
    # without a base URL nothing points the CLI elsewhere
    assert "ANTHROPIC_BASE_URL" not in agent.cli_env(agent_context(tmp_path))


def test_parse_recorded_stream() -> None:
    """A real transcript (two rounds: first run, then --resume) of the pinned CLI."""
    events = ClaudeCodeAgent().parse_events(stream_fixture(STREAM))
    turns = [e for e in events if e.kind == "turn"]
    assert [e.turn for e in turns] == list(range(len(turns)))
    commands = [e for e in events if e.kind == "command"]
    assert [c.command.split()[0] for c in commands if c.command] == \
        ["mkdir", "python", "curl", "./timer.sh"]
    assert all(c.exit_code == 0 and c.end_s is not None and c.end_s >= c.t_s for c in commands)
    assert [e.name for e in events if e.kind == "tool_call"] == ["Bash"] * 4
    assert any(e.kind == "message" and e.text == "Running it." for e in events)
    usage = [e for e in events if e.kind == "usage"]
    per_response = [e for e in usage if e.extra.get("source") != "result"]
    assert len(per_response) == len(turns)
    assert all((e.output_tokens or 0) > 0 for e in per_response)  # final counts, not 0
    # the result events add the cost and no tokens (the stream showed every response)
    rounds = [e for e in usage if e.extra.get("source") == "result"]
    assert len(rounds) == 2 and all(e.input_tokens == e.output_tokens == 0 for e in rounds)
    assert all((e.cost_usd or 0) > 0 for e in rounds)
    totals = [json.loads(line) for _, line in stream_fixture(STREAM) if '"type":"result"' in line]
    assert reported_usage(events) == (
        sum(t["usage"]["input_tokens"] for t in totals),
        sum(t["usage"]["output_tokens"] for t in totals))
    # total_cost_usd is cumulative over resumed rounds: the events hold each round's share
    assert sum(e.cost_usd or 0 for e in rounds) == pytest.approx(totals[-1]["total_cost_usd"])


def test_parse_without_partial_messages_uses_result_remainder() -> None:
    """partial=0: assistant events carry message_start usage (output 0); the round's result
    event supplies the rest, so the totals still match the CLI's."""
    lines = [(t, line) for t, line in stream_fixture(STREAM) if '"type":"stream_event"' not in line]
    events = ClaudeCodeAgent().parse_events(lines)
    totals = [json.loads(line) for _, line in lines if '"type":"result"' in line]
    assert reported_usage(events) == (
        sum(t["usage"]["input_tokens"] for t in totals),
        sum(t["usage"]["output_tokens"] for t in totals))


def test_parse_killed_round_and_file_edits() -> None:
    """A round cut off before its result (the budget's end) keeps its per-response usage;
    Write/Edit calls become file_edit events relative to the CLI's cwd."""
    def j(obj: object) -> str:
        return json.dumps(obj)

    lines = [
        j({"type": "system", "subtype": "init", "cwd": "/ws", "session_id": "s"}),
        j({"type": "stream_event", "api_message_id": "m1", "event": {
            "type": "message_start", "message": {"id": "m1", "model": "x", "usage": {
                "input_tokens": 10, "output_tokens": 1, "cache_read_input_tokens": 90,
                "cache_creation_input_tokens": 5}}}}),
        j({"type": "assistant", "message": {"id": "m1", "content": [
            {"type": "tool_use", "id": "t1", "name": "Write",
             "input": {"file_path": "/ws/code/a.py", "content": "x"}},
            {"type": "tool_use", "id": "t2", "name": "Edit",
             "input": {"file_path": "/elsewhere/b.py", "old_string": "", "new_string": ""}},
            {"type": "tool_use", "id": "t3", "name": "Bash",
             "input": {"command": "false", "description": "d"}}]}}),
        j({"type": "stream_event", "api_message_id": "m1", "event": {
            "type": "message_delta", "usage": {"output_tokens": 42}}}),
        j({"type": "user", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t3", "is_error": True,
             "content": "Exit code 1"}]}}),
        "plain stderr line",
    ]
    events = ClaudeCodeAgent().parse_events([(float(i), s) for i, s in enumerate(lines)])
    edits = [(e.name, e.path) for e in events if e.kind == "file_edit"]
    assert edits == [("Write", "code/a.py"), ("Edit", "/elsewhere/b.py")]
    (cmd,) = [e for e in events if e.kind == "command"]
    assert cmd.exit_code == 1 and cmd.end_s == 4.0
    (usage,) = [e for e in events if e.kind == "usage"]
    assert (usage.input_tokens, usage.output_tokens) == (105, 42)
    assert usage.extra["cache_read_input_tokens"] == "90"


@pytest.mark.cli
@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap missing")
def test_claude_code_end_to_end(tmp_path: Path, tiny_model: Path,
                                monkeypatch: pytest.MonkeyPatch,
                                installed_cli) -> None:  # type: ignore[no-untyped-def]
    installed_cli("claude-code")
    run = scripted_cli_run(tmp_path, tiny_model, "claude-code", "anthropic", monkeypatch,
                           key_env="ANTHROPIC_API_KEY")
    script, events = run.script, run.events
    # Every request went to the Messages API (no unknown routes), with the key as x-api-key.
    assert {r["route"] for r in script.requests} <= {"/v1/messages",
                                                     "/v1/messages/count_tokens"}, \
        sorted({r["route"] for r in script.requests})
    assert all(r["headers"].get("x-api-key") == FAKE_KEY for r in script.requests)
    # CLAUDE.md (the memory file, written by prepare()) reached the model.
    assert "CLAUDE.md (project instructions" in json.dumps(script.requests[0]["body"])
    # The launcher counts every response the CLI received, side calls included (its result
    # event counts them too, and the stream shows each agent-loop response): all figures sent.
    assert reported_usage(events) == script.totals(main_only=False)
    assert sum(1 for e in events if e.kind == "turn") == sum(1 for s in script.sent if s.main)
