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
from test_cost import assert_cost_is_the_clis

from a2rl.agents import get_agent
from a2rl.agents._cli import REPROMPT, SessionSpec
from a2rl.agents._events import AgentEvent
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


def main_usage(events: list[AgentEvent]) -> tuple[int, int]:
    """(input, output) of the main model alone, summed over the usage events."""
    usage = [e for e in events if e.kind == "usage"]
    assert all(e.main_input_tokens is not None and e.main_output_tokens is not None for e in usage)
    return (sum(e.main_input_tokens or 0 for e in usage), sum(e.main_output_tokens or 0 for e in usage))


def _prompt(usage: dict[str, int]) -> int:
    return usage["input_tokens"] + usage.get("cache_read_input_tokens", 0) + \
        usage.get("cache_creation_input_tokens", 0)


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
    # one model only: the main model's total is every model's, and the round's own `usage`
    assert main_usage(events) == reported_usage(events) == (
        sum(_prompt(t["usage"]) for t in totals), sum(t["usage"]["output_tokens"] for t in totals))


def test_parse_without_partial_messages_uses_result_remainder() -> None:
    """partial=0: assistant events carry message_start usage (output 0); the round's result
    event supplies the rest, so the totals still match the CLI's."""
    lines = [(t, line) for t, line in stream_fixture(STREAM) if '"type":"stream_event"' not in line]
    events = ClaudeCodeAgent().parse_events(lines)
    totals = [json.loads(line) for _, line in lines if '"type":"result"' in line]
    assert reported_usage(events) == (
        sum(t["usage"]["input_tokens"] for t in totals),
        sum(t["usage"]["output_tokens"] for t in totals))


MAIN, SMALL = "claude-sonnet-4-5-20250929", "claude-haiku-4-5-20251001"


def _j(obj: object) -> str:
    return json.dumps(obj)


def _response(msg_id: str, prompt: int, cached: int, out: int, *, parent: str | None = None,
              partial: bool = True) -> list[str]:
    """One model response as the CLI streams it: message_start (placeholder output count), the
    assistant copy, and with partial messages the message_delta holding the final count."""
    start_usage = {"input_tokens": prompt, "cache_read_input_tokens": cached,
                   "cache_creation_input_tokens": 0, "output_tokens": 1}
    lines = []
    if partial:
        lines.append(_j({"type": "stream_event", "session_id": "s", "parent_tool_use_id": parent,
                         "event": {"type": "message_start", "message": {
                             "id": msg_id, "model": MAIN, "role": "assistant", "content": [],
                             "usage": start_usage}}}))
    lines.append(_j({"type": "assistant", "session_id": "s", "parent_tool_use_id": parent,
                     "message": {"id": msg_id, "model": MAIN, "role": "assistant",
                                 "content": [{"type": "text", "text": f"step {msg_id}"}],
                                 "usage": start_usage}}))
    if partial:
        lines.append(_j({"type": "stream_event", "session_id": "s", "parent_tool_use_id": parent,
                         "api_message_id": msg_id,
                         "event": {"type": "message_delta", "usage": {"output_tokens": out}}}))
    return lines


def _model_usage(prompt: int, cached: int, out: int, cost: float) -> dict[str, float]:
    return {"inputTokens": prompt, "cacheReadInputTokens": cached, "cacheCreationInputTokens": 0,
            "outputTokens": out, "webSearchRequests": 0, "costUSD": cost, "contextWindow": 200000}


def _side_call_round(*, partial: bool) -> list[tuple[float, str]]:
    """One round: two main-loop responses, one subagent response (same model) and a side call
    of the small model that the stream never shows. The result's `usage` holds the two main
    responses; its `modelUsage` every call: the main model with the subagent, the small one."""
    lines = [_j({"type": "system", "subtype": "init", "cwd": "/ws", "session_id": "s",
                 "model": MAIN})]
    lines += _response("m1", 400, 2000, 90, partial=partial)
    lines += _response("sub1", 300, 0, 40, parent="toolu_task1", partial=partial)
    lines += _response("m2", 120, 2400, 60, partial=partial)
    per_model = {MAIN: _model_usage(820, 4400, 190, 0.031), SMALL: _model_usage(350, 0, 12, 0.0004)}
    lines.append(_j({"type": "result", "subtype": "success", "is_error": False, "num_turns": 2,
                     "session_id": "s", "total_cost_usd": 0.0314,
                     "usage": {"input_tokens": 520, "cache_read_input_tokens": 4400,
                               "cache_creation_input_tokens": 0, "output_tokens": 150},
                     "modelUsage": per_model, "model_usage_since_last_result": per_model}))
    return [(float(i), line) for i, line in enumerate(lines)]


@pytest.mark.parametrize("partial", [True, False])
def test_all_models_and_main_model_totals(partial: bool) -> None:
    """Every model's total (side call and subagent included) is the result's modelUsage; the
    main model's is its usage; a subagent's response counts for the first only."""
    events = ClaudeCodeAgent().parse_events(_side_call_round(partial=partial))
    assert reported_usage(events) == (820 + 4400 + 350, 190 + 12)
    assert main_usage(events) == (520 + 4400, 150)
    usage = {e.extra.get("message_id", "result"): e for e in events if e.kind == "usage"}
    sub = usage["sub1"]
    assert (sub.input_tokens, sub.main_input_tokens, sub.main_output_tokens) == (300, 0, 0)
    assert usage["m1"].main_input_tokens == usage["m1"].input_tokens == 2400
    result = usage["result"]
    # the result event adds the side call to every model's total, nothing to the main model's
    # input (the stream showed both main responses); without partial messages it brings the
    # output counts up from the placeholders
    assert (result.input_tokens, result.main_input_tokens) == (350, 0)
    assert result.main_output_tokens == (0 if partial else 150 - 2)
    assert [e.extra.get("subagent_of") for e in events if e.kind == "turn"] == \
        [None, "toolu_task1", None]


def test_main_model_total_over_resumed_rounds() -> None:
    """modelUsage is cumulative over a resumed session, the result's usage is the round's own:
    both totals still add up over two rounds."""
    first = _side_call_round(partial=True)
    lines = [line for _, line in first]
    lines.append(_j({"a2rl_session": {"event": "round_start", "round": 1, "t": 20.0}}))
    lines += _response("m3", 200, 4800, 30)
    cumulative = {MAIN: _model_usage(820 + 200, 4400 + 4800, 190 + 30, 0.04),
                  SMALL: _model_usage(350, 0, 12, 0.0004)}
    lines.append(_j({"type": "result", "subtype": "success", "num_turns": 1, "session_id": "s",
                     "total_cost_usd": 0.0404,
                     "usage": {"input_tokens": 200, "cache_read_input_tokens": 4800,
                               "cache_creation_input_tokens": 0, "output_tokens": 30},
                     "modelUsage": cumulative}))
    events = ClaudeCodeAgent().parse_events([(float(i), line) for i, line in enumerate(lines)])
    assert reported_usage(events) == (1020 + 9200 + 350, 220 + 12)
    assert main_usage(events) == (520 + 4400 + 200 + 4800, 150 + 30)


def test_a_result_without_usage_leaves_the_main_share_unknown() -> None:
    """A result that gives no `usage` adds no main-model figure (None, not a made-up 0)."""
    lines = [line for _, line in _side_call_round(partial=True)][:-1]
    lines.append(_j({"type": "result", "subtype": "success", "session_id": "s",
                     "modelUsage": {MAIN: _model_usage(820, 4400, 190, 0.031)}}))
    events = ClaudeCodeAgent().parse_events([(float(i), line) for i, line in enumerate(lines)])
    result = [e for e in events if e.kind == "usage" and e.extra.get("source") == "result"]
    assert len(result) == 1 and result[0].main_input_tokens is None
    assert result[0].main_output_tokens is None


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
    assert (usage.main_input_tokens, usage.main_output_tokens) == (105, 42)  # a main-loop response
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
    assert_cost_is_the_clis(run.record, events)  # run.json: the CLI's own totals
    # The main model's total leaves the side calls out.
    assert main_usage(events) == script.totals(main_only=True)
    assert sum(1 for e in events if e.kind == "turn") == sum(1 for s in script.sent if s.main)
