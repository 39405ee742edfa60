"""Codex CLI launcher: argv/config building, the `exec --json` parser on a recorded real
transcript, and one real sandboxed run of the pinned CLI against the scripted Responses server."""

from __future__ import annotations

import json
import shutil
import tomllib
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
from a2rl.agents._stream import relative_path
from a2rl.agents.codex import CodexAgent, unwrap_shell

STREAM = "codex_stream.jsonl"
"""A recorded real stream of the pinned CLI (tests/fixtures)."""
BYPASS = "--dangerously-bypass-approvals-and-sandbox"


def test_registered() -> None:
    agent = get_agent("codex")
    assert isinstance(agent, CodexAgent)
    assert agent.package.spec == "@openai/codex@0.171.0"
    assert agent.memory_file == "AGENTS.md"


def test_argv_first_run_and_resume(tmp_path: Path) -> None:
    agent, ctx = CodexAgent(), agent_context(tmp_path, driver="gpt-x")
    first = agent.cli_argv(ctx, "codex", "-do it", resume=False)
    assert first[:3] == ["codex", "exec", "--json"]
    assert BYPASS in first and "--skip-git-repo-check" in first
    assert first[first.index("-m") + 1] == "gpt-x"
    assert first[-2:] == ["--", "-do it"]  # a prompt starting with '-' is not an option
    again = agent.cli_argv(ctx, "codex", REPROMPT, resume=True)
    assert again[:4] == ["codex", "exec", "resume", "--last"]
    assert BYPASS in again and "--json" in again and again[again.index("-m") + 1] == "gpt-x"
    assert again[-1] == REPROMPT  # _cli_session substitutes the remaining time in it
    plain = agent.cli_argv(agent_context(tmp_path), "codex", "x", resume=False)
    assert plain[plain.index("-m") + 1] == CodexAgent.default_driver


def test_config_and_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    agent = CodexAgent()
    monkeypatch.setattr(agent, "executable", lambda: Path("/opt/codex"))  # not installed here
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("CODEX_API_KEY", FAKE_KEY)
    ctx = agent_context(tmp_path, driver_base_url="http://127.0.0.1:5/v1",
               options={"reasoning_effort": "high", "web_search": "disabled"})
    env = agent.extra_env(ctx)
    assert env["CODEX_API_KEY"] == FAKE_KEY and agent.secrets(ctx) == [FAKE_KEY]
    spec = SessionSpec.decode(env["A2RL_CLI_SESSION"])
    assert FAKE_KEY not in json.dumps(spec.__dict__)
    config = tomllib.loads(spec.home_files[".codex/config.toml"])
    assert config["model_provider"] == "a2rl"
    assert config["model_providers"]["a2rl"] == {
        "name": "a2rl", "base_url": "http://127.0.0.1:5/v1", "wire_api": "responses",
        "env_key": "CODEX_API_KEY"}
    assert config["check_for_update_on_startup"] is False and config["allow_login_shell"] is False
    assert config["analytics"] == {"enabled": False} and config["feedback"] == {"enabled": False}
    assert config["model_reasoning_effort"] == "high" and config["web_search"] == "disabled"
    # OPENAI_API_KEY first; the OpenAI API when no base URL; a keyless local endpoint
    monkeypatch.setenv("OPENAI_API_KEY", "sk-other-key")
    provider = tomllib.loads(agent.home_files(agent_context(tmp_path))[".codex/config.toml"])
    assert provider["model_providers"]["a2rl"]["env_key"] == "OPENAI_API_KEY"
    assert provider["model_providers"]["a2rl"]["base_url"] == "https://api.openai.com/v1"
    assert "web_search" not in provider and "model_reasoning_effort" not in provider
    # no hosted web search when the sandbox has no network (unless asked for)
    for policy in ("none", "allowlist"):  # hosted search would bypass the egress proxy
        offline = tomllib.loads(agent.home_files(agent_context(tmp_path, network=policy))[
            ".codex/config.toml"])
        assert offline["web_search"] == "disabled"
    monkeypatch.delenv("OPENAI_API_KEY")
    monkeypatch.delenv("CODEX_API_KEY")
    local = agent_context(tmp_path, driver_base_url="http://127.0.0.1:5/v1")
    assert agent.extra_env(local).keys().isdisjoint({"OPENAI_API_KEY", "CODEX_API_KEY"})
    keyless = tomllib.loads(agent.home_files(local)[".codex/config.toml"])
    assert "env_key" not in keyless["model_providers"]["a2rl"]


def test_helpers() -> None:
    assert unwrap_shell("/bin/bash -lc 'python code/train.py'") == "python code/train.py"
    assert unwrap_shell('/bin/bash -lc "echo \\"a b\\""') == 'echo "a b"'
    assert unwrap_shell("/bin/bash -lc ./timer.sh") == "./timer.sh"
    assert unwrap_shell("ls -la") == "ls -la"
    assert unwrap_shell("/bin/bash -lc 'unterminated") == "/bin/bash -lc 'unterminated"
    assert relative_path("/r/runs/arith/x/workspace/code/a.py", by_marker=True) == "code/a.py"
    assert relative_path("/elsewhere/b.py", by_marker=True) == "/elsewhere/b.py"


def test_parse_recorded_stream() -> None:
    """A real transcript (two rounds: `exec`, then `exec resume --last`) of the pinned CLI."""
    lines = stream_fixture(STREAM)
    events = CodexAgent().parse_events(lines)
    turns = [e for e in events if e.kind == "turn"]
    assert [e.turn for e in turns] == list(range(len(turns)))
    assert len(turns) == 6  # the plan's 5 responses, then one for the re-prompt
    commands = [e for e in events if e.kind == "command"]
    assert [(c.command or "").split()[0] for c in commands] == \
        ["mkdir", "python", "curl", "./timer.sh"]
    assert commands[1].command == "python code/train.py"
    assert all(c.exit_code == 0 and c.end_s is not None and c.end_s >= c.t_s
               for c in commands)
    assert [e.name for e in events if e.kind == "tool_call"] == ["command_execution"] * 4
    assert [e.turn for e in commands] == [0, 1, 2, 3]
    assert any(e.kind == "message" and e.text == "Running it." for e in events)
    # turn.completed carries the thread's cumulative total: one usage event per round, with
    # the difference, so the sum is the last round's total
    totals = [json.loads(line)["usage"] for _, line in lines if '"turn.completed"' in line]
    usage = [e for e in events if e.kind == "usage"]
    assert len(usage) == len(totals) == 2
    assert reported_usage(events) == (totals[-1]["input_tokens"], totals[-1]["output_tokens"])
    assert all((e.input_tokens or 0) > 0 and (e.output_tokens or 0) > 0 for e in usage)


def test_parse_file_changes_and_failures() -> None:
    def j(obj: object) -> tuple[float, str]:
        return 0.0, json.dumps(obj)

    lines = [
        j({"type": "thread.started", "thread_id": "t"}),
        j({"type": "turn.started"}),
        j({"type": "item.completed", "item": {"id": "i0", "type": "error",
                                              "message": "Model metadata not found"}}),
        j({"type": "item.completed", "item": {"id": "i1", "type": "reasoning", "text": "hm"}}),
        j({"type": "item.completed", "item": {
            "id": "i2", "type": "file_change", "status": "completed", "changes": [
                {"path": "/x/runs/arith/r/workspace/code/a.py", "kind": "add"}]}}),
        j({"type": "item.started", "item": {"id": "i3", "type": "command_execution",
                                            "command": "bash -lc 'false'", "exit_code": None,
                                            "status": "in_progress"}}),
        j({"type": "item.completed", "item": {"id": "i3", "type": "command_execution",
                                              "command": "bash -lc 'false'", "exit_code": 1,
                                              "status": "failed"}}),
        (0.0, "Reading additional input from stdin..."),
        j({"type": "turn.failed", "error": {"message": "stream disconnected"}}),
    ]
    events = CodexAgent().parse_events(lines)
    assert [(e.kind, e.turn) for e in events if e.kind in ("turn", "file_edit", "command")] == \
        [("turn", 0), ("file_edit", 0), ("turn", 1), ("command", 1)]
    (edit,) = [e for e in events if e.kind == "file_edit"]
    assert edit.path == "code/a.py" and edit.extra["change"] == "add"
    (cmd,) = [e for e in events if e.kind == "command"]
    assert cmd.command == "false" and cmd.exit_code == 1
    assert events[-1].kind == "message" and events[-1].text == "stream disconnected"
    assert not any(e.kind == "usage" for e in events)  # a failed round reports none


def test_parse_background_commands_and_rounds() -> None:
    """A command outliving exec_command's yield time: the model's next message (a new
    response) comes while it runs; a command never completed is reported at the round's end.
    Item ids restart in each `exec` process; usage is cumulative per thread."""
    def j(obj: object) -> str:
        return json.dumps(obj)

    def cmd(event: str, item_id: str, command: str, code: int | None = None) -> str:
        return j({"type": event, "item": {"id": item_id, "type": "command_execution",
                                          "command": f"/bin/bash -c '{command}'",
                                          "exit_code": code, "status": "x"}})

    def msg(item_id: str, text: str) -> str:
        return j({"type": "item.completed", "item": {"id": item_id, "type": "agent_message",
                                                     "text": text}})

    def done(i: int, o: int) -> str:
        return j({"type": "turn.completed", "usage": {"input_tokens": i, "output_tokens": o,
                                                      "cached_input_tokens": 0}})

    raw = [j({"type": "thread.started", "thread_id": "A"}), j({"type": "turn.started"}),
           msg("item_1", "Slow one."), cmd("item.started", "item_2", "sleep 13"),
           msg("item_3", "Waiting."), cmd("item.completed", "item_2", "sleep 13", 0),
           msg("item_4", "Training in the background."),
           cmd("item.started", "item_5", "python train.py"),
           msg("item_6", "Done for now."), done(300, 30),
           # round 2 resumes thread A: ids restart, usage is the thread's running total
           j({"type": "thread.started", "thread_id": "A"}), j({"type": "turn.started"}),
           msg("item_1", "Again."), cmd("item.started", "item_2", "ls"),
           cmd("item.completed", "item_2", "ls", 0), msg("item_3", "Bye."), done(500, 45),
           # round 3 is killed mid-command: no turn.completed
           j({"type": "thread.started", "thread_id": "A"}), j({"type": "turn.started"}),
           cmd("item.started", "item_1", "python long.py")]
    events = CodexAgent().parse_events([(float(i), s) for i, s in enumerate(raw)])
    assert [(e.turn, e.text) for e in events if e.kind == "message"] == [
        (0, "Slow one."), (1, "Waiting."), (2, "Training in the background."),
        (3, "Done for now."), (4, "Again."), (5, "Bye.")]
    commands = [(e.turn, e.command, e.exit_code, e.end_s) for e in events
                if e.kind == "command"]
    assert commands == [(0, "sleep 13", 0, 5.0), (2, "python train.py", None, None),
                        (4, "ls", 0, 14.0), (6, "python long.py", None, None)]
    assert [(e.input_tokens, e.output_tokens) for e in events if e.kind == "usage"] == \
        [(300, 30), (200, 15)]


@pytest.mark.cli
@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap missing")
def test_codex_end_to_end(tmp_path: Path, tiny_model: Path, monkeypatch: pytest.MonkeyPatch,
                          installed_cli) -> None:  # type: ignore[no-untyped-def]
    installed_cli("codex")
    monkeypatch.delenv("CODEX_API_KEY", raising=False)
    run = scripted_cli_run(tmp_path, tiny_model, "codex", "responses", monkeypatch,
                           key_env="OPENAI_API_KEY", api_path="/v1")
    script, events = run.script, run.events
    # Every request went to the Responses API (no unknown routes), with the key as bearer.
    assert {r["route"] for r in script.requests} == {"/v1/responses"}, \
        sorted({r["route"] for r in script.requests})
    assert all(r["headers"].get("authorization") == f"Bearer {FAKE_KEY}"
               for r in script.requests)
    # AGENTS.md (the memory file, written by prepare()) reached the model.
    assert "# AGENTS.md instructions for" in json.dumps(script.requests[0]["body"])
    # codex exec's turn.completed usage sums every response of the round; it made no side
    # requests here (all requests offered the shell tool), so all figures sent = main ones.
    assert reported_usage(events) == script.totals(main_only=False) == \
        script.totals(main_only=True)
    assert_cost_is_the_clis(run.record, events)  # run.json: the CLI's own totals
    # One turn per plan step; on a loaded machine `python code/train.py` can outlast
    # exec_command's 10 s yield, and Codex then polls it with write_stdin: one more model
    # response that the --json stream does not show as a turn.
    turns = sum(1 for e in events if e.kind == "turn")
    assert len(script.plan) <= turns <= sum(1 for s in script.sent if s.main)
