"""The OpenHands launcher: command line, environment, transcript parsing (recorded output of
openhands 1.16.0 driven by the scripted server), and one real sandboxed run end to end."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from scripted_llm import agent_context, reported_usage, scripted_cli_run, stream_fixture
from test_cost import assert_cost_is_the_clis

from a2rl.agents import get_agent
from a2rl.agents._agent import AgentContext
from a2rl.agents._cli import find_python
from a2rl.agents.openhands import (
    PLACEHOLDER_KEY,
    USAGE_KEY,
    OpenHandsAgent,
    _UsageWatcher,
    venv_base_prefix,
)


def _ctx(tmp_path: Path, **kw: Any) -> AgentContext:
    return agent_context(tmp_path, python="/py/bin/python", **kw)  # type: ignore[no-any-return]


@pytest.fixture
def agent(monkeypatch: pytest.MonkeyPatch) -> OpenHandsAgent:
    for k in OpenHandsAgent.credentials:
        monkeypatch.delenv(k, raising=False)
    a = get_agent("openhands")
    assert isinstance(a, OpenHandsAgent)
    return a


def test_argv_headless_json_and_resume(agent: OpenHandsAgent, tmp_path: Path) -> None:
    ctx = _ctx(tmp_path)
    argv = agent.cli_argv(ctx, "/x/openhands", "do it", resume=False)
    assert argv[:4] == ["/py/bin/python", "-m", "a2rl.agents.openhands", "/x/openhands"]
    assert argv[4:] == ["--headless", "--json", "--override-with-envs", "-t", "do it"]
    again = agent.cli_argv(ctx, "/x/openhands", "more", resume=True)
    assert again[-5:] == ["--override-with-envs", "--resume", "--last", "-t", "more"]


def test_env_model_base_url_and_key(agent: OpenHandsAgent, tmp_path: Path,
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    env = agent.cli_env(_ctx(tmp_path, driver_base_url="http://127.0.0.1:9/v1"))
    assert env["LLM_MODEL"] == agent.default_driver
    assert env["LLM_BASE_URL"] == "http://127.0.0.1:9/v1"
    assert env["LLM_API_KEY"] == PLACEHOLDER_KEY  # a local endpoint needs no key
    assert env["LITELLM_LOCAL_MODEL_COST_MAP"] == "True"
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-xyz")
    env = agent.cli_env(_ctx(tmp_path, driver="anthropic/claude-x"))
    assert env["LLM_API_KEY"] == "sk-ant-xyz" and env["LLM_MODEL"] == "anthropic/claude-x"
    assert "LLM_BASE_URL" not in env
    monkeypatch.setenv("LLM_API_KEY", "sk-llm")
    assert "LLM_API_KEY" not in agent.cli_env(_ctx(tmp_path))  # passed through as a credential
    assert agent.credential_values(_ctx(tmp_path))["LLM_API_KEY"] == "sk-llm"
    assert agent.home_files(_ctx(tmp_path)) == {}
    assert agent.memory_file == "AGENTS.md"


def test_sandbox_mounts_include_base_python(agent: OpenHandsAgent, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("A2RL_AGENTS_DIR", str(tmp_path / "agents"))
    venv = tmp_path / "agents" / "openhands-1.16.0" / "venv"
    venv.mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text(f"home = {tmp_path}/py312/bin\nversion = 3.12.1\n")
    mounts = agent.sandbox_mounts()
    assert mounts == [venv.parent, (tmp_path / "py312").resolve()]
    assert venv_base_prefix(tmp_path) is None


def test_parse_recorded_stream(agent: OpenHandsAgent) -> None:
    lines = stream_fixture("openhands_stream.jsonl")
    events = agent.parse_events(lines)
    kinds = [e.kind for e in events]
    assert kinds.count("turn") == 5
    commands = [e for e in events if e.kind == "command"]
    assert [c.command.split()[0] for c in commands if c.command] == [
        "mkdir", "python", "curl", "./timer.sh"]
    assert all(c.end_s is not None and c.end_s >= c.t_s for c in commands)
    assert [e.name for e in events if e.kind == "tool_call"] == ["terminal"] * 4
    messages = [e.text for e in events if e.kind == "message"]
    assert messages[0] == "I will write a training script."
    assert messages[-1] == "Submitted output/v1. Done."
    usage = [e for e in events if e.kind == "usage"]
    assert [(u.input_tokens, u.output_tokens) for u in usage] == [
        (1000, 20), (1037, 23), (1074, 26), (1111, 29), (1148, 32)]
    assert [u.turn for u in usage] == [0, 1, 2, 3, 4]  # matched to turns by response id
    assert all(u.cost_usd is None for u in usage)  # litellm priced nothing (scripted model)


def test_parse_file_edits_errors_and_exit_codes(agent: OpenHandsAgent) -> None:
    def line(obj: dict[str, Any]) -> tuple[float, str]:
        return 1.0, json.dumps(obj)

    stream = [
        line({"kind": "ActionEvent", "source": "agent", "llm_response_id": "r1",
              "thought": [{"type": "text", "text": "edit"}], "tool_name": "file_editor",
              "tool_call_id": "c1", "action": {"kind": "FileEditorAction", "command": "create",
                                                "path": "/ws/run/workspace/code/a.py"}}),
        line({"kind": "ActionEvent", "source": "agent", "llm_response_id": "r1",
              "tool_name": "terminal", "tool_call_id": "c2",
              "action": {"kind": "TerminalAction", "command": "false"}}),
        (2.0, json.dumps({"kind": "ObservationEvent", "tool_call_id": "c2", "observation": {
            "kind": "TerminalObservation", "exit_code": 1, "timeout": False,
            "metadata": {"working_dir": "/ws/run/workspace"}}})),
        line({"kind": "ActionEvent", "source": "agent", "llm_response_id": "r2",
              "tool_name": "file_editor", "tool_call_id": "c3",
              "action": {"kind": "FileEditorAction", "command": "view", "path": "/ws/x"}}),
        line({"kind": "AgentErrorEvent", "source": "agent", "error": "bad arguments"}),
        line({USAGE_KEY: {"response_id": "r1", "prompt_tokens": 5, "completion_tokens": 2,
                          "cost_usd": 0.25}}),
        (3.0, "plain log line"),
    ]
    events = agent.parse_events(stream)
    assert [e.kind for e in events] == ["turn", "message", "tool_call", "file_edit",
                                        "tool_call", "command", "turn", "tool_call", "message",
                                        "usage"]
    assert events[3].path == "code/a.py"
    assert events[5].exit_code == 1 and events[5].end_s == 2.0
    assert events[8].extra["type"] == "AgentErrorEvent"
    assert events[9].turn == 0 and events[9].cost_usd == 0.25


def test_usage_watcher_reports_only_new_responses(tmp_path: Path) -> None:
    state = tmp_path / "c1" / "base_state.json"
    state.parent.mkdir()

    def write(n: int, cost: float) -> None:
        usages = [{"response_id": f"r{i}", "prompt_tokens": 10 * i, "completion_tokens": i}
                  for i in range(n)]
        state.write_text(json.dumps({"stats": {"usage_to_metrics": {"agent": {
            "accumulated_cost": cost, "token_usages": usages}}}}))

    write(2, 0.5)
    watcher = _UsageWatcher(tmp_path)  # an earlier round's responses are not repeated
    assert watcher.poll() == []
    write(4, 0.75)
    new = [r[USAGE_KEY] for r in watcher.poll()]
    assert [r["response_id"] for r in new] == ["r2", "r3"]
    assert "cost_usd" not in new[0] and new[1]["cost_usd"] == 0.25
    assert watcher.poll() == []


def test_wrapper_relays_output_and_exit_code(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch,
                                             capfdbinary: pytest.CaptureFixture[bytes]) -> None:
    from a2rl.agents.openhands import main

    conv = tmp_path / "conv"
    monkeypatch.setenv("OPENHANDS_CONVERSATIONS_DIR", str(conv))
    script = ("import json, os, pathlib; p = pathlib.Path(os.environ['OPENHANDS_CONVERSATIONS_DIR'])"
              " / 'c' / 'base_state.json'; p.parent.mkdir(parents=True); print('hello');"
              " p.write_text(json.dumps({'stats': {'usage_to_metrics': {'agent': {"
              "'token_usages': [{'response_id': 'r', 'prompt_tokens': 3}]}}}})); raise SystemExit(3)")
    assert main([sys.executable, "-c", script]) == 3
    out = capfdbinary.readouterr().out.decode().splitlines()
    assert out[0] == "hello"
    assert json.loads(out[1])[USAGE_KEY]["prompt_tokens"] == 3


# ---- end to end -----------------------------------------------------------------------------
@pytest.mark.cli
def test_openhands_end_to_end(installed_cli: Any, tiny_model: Path, tmp_path: Path,
                              monkeypatch: pytest.MonkeyPatch) -> None:
    installed_cli("openhands")  # pip, into a Python 3.12 venv (~4 min the first time)
    run = scripted_cli_run(tmp_path, tiny_model, "openhands", "chat", monkeypatch,
                           key_env="LLM_API_KEY", api_path="/v1", driver="openai/scripted-model")
    script, events = run.script, run.events
    assert all(r["body"]["model"] == "scripted-model" for r in script.requests
               if r["route"] == "/v1/chat/completions")
    assert reported_usage(events) == script.totals()
    assert_cost_is_the_clis(run.record, events)  # run.json: the CLI's own totals


def test_find_python_resolves_a_real_interpreter() -> None:
    found = find_python(f"{sys.version_info[0]}.{sys.version_info[1]}")
    assert found is not None and Path(found).resolve() == Path(found)
    assert find_python("2.1") is None


def test_cli_command_strips_credentials_from_the_agents_terminal(tmp_path: Path) -> None:
    from a2rl.agents.openhands import cli_command

    (tmp_path / "openhands").touch()
    (tmp_path / "python").touch()
    cmd = cli_command([str(tmp_path / "openhands"), "--headless", "-t", "x"])
    assert cmd[0] == str(tmp_path / "python") and cmd[1] == "-c"
    assert cmd[3].split(",") == list(OpenHandsAgent.credentials)
    assert cmd[4:] == ["--headless", "-t", "x"]
    assert cli_command(["/bin/echo", "hi"]) == ["/bin/echo", "hi"]
