"""OpenCode launcher: argv/env/config building, credential selection, the `--format json` parser
on a recorded real stream, and one real sandboxed run of the pinned CLI against the scripted
OpenAI Chat Completions server."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import pytest
from scripted_llm import (
    FAKE_KEY,
    Script,
    agent_context,
    create_app,
    reported_usage,
    scripted_cli_run,
    stream_fixture,
)
from test_cost import assert_cost_is_the_clis

from a2rl._errors import A2RLError
from a2rl.agents import get_agent
from a2rl.agents._cli import REPROMPT, SessionSpec
from a2rl.agents.opencode import PROVIDER_KEYS, OpenCodeAgent, parse_stream

STREAM = "opencode_stream.jsonl"
"""A recorded real stream of the pinned CLI (tests/fixtures)."""
FIXTURE_WS = Path("/runs/arith/r1/workspace")
"""The workspace path the recorded stream's absolute file paths use."""
ALL_KEYS = {k for keys in PROVIDER_KEYS.values() for k in keys}


@pytest.fixture
def no_keys(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for k in ALL_KEYS:
        monkeypatch.delenv(k, raising=False)
    return monkeypatch


def test_registered() -> None:
    agent = get_agent("opencode")
    assert isinstance(agent, OpenCodeAgent)
    assert agent.package.spec == "opencode-ai@1.18.33" and agent.package.executable == "opencode"
    assert agent.memory_file == "AGENTS.md"


def test_argv_first_run_and_resume(tmp_path: Path) -> None:
    agent = OpenCodeAgent()
    ctx = agent_context(tmp_path, driver="openai/gpt-5", options={"variant": "high"})
    first = agent.cli_argv(ctx, "opencode", "-do it", resume=False)
    assert first[:4] == ["opencode", "run", "--format", "json"]
    assert first[first.index("-m") + 1] == "openai/gpt-5" and "--auto" in first
    assert first[first.index("--variant") + 1] == "high" and "--continue" not in first
    assert first[-2:] == ["--", "-do it"]  # a prompt starting with '-' is not an option
    again = agent.cli_argv(ctx, "opencode", REPROMPT, resume=True)
    assert "--continue" in again and again[-1] == REPROMPT
    # default driver; openrouter ids keep their inner slash
    assert agent.cli_argv(agent_context(tmp_path), "o", "x", resume=False)[5] == \
        OpenCodeAgent.default_driver
    ctx = agent_context(tmp_path, driver="openrouter/qwen/qwen3-coder")
    assert agent.provider_model(ctx) == ("openrouter", "qwen/qwen3-coder")
    # with a base URL the whole driver is the endpoint's model id, under the custom provider
    ctx = agent_context(tmp_path, driver="meta/llama-3", driver_base_url="http://h:1/v1/")
    assert agent.cli_argv(ctx, "o", "x", resume=False)[5] == "a2rl/meta/llama-3"
    with pytest.raises(A2RLError, match="provider"):
        agent.cli_argv(agent_context(tmp_path, driver="gpt-5"), "o", "x", resume=False)


@pytest.mark.parametrize("driver,key", [
    ("anthropic/claude-sonnet-4-5", "ANTHROPIC_API_KEY"), ("openai/gpt-5", "OPENAI_API_KEY"),
    ("openrouter/anthropic/claude-sonnet-4.5", "OPENROUTER_API_KEY"),
    ("google/gemini-2.5-pro", "GEMINI_API_KEY")])
def test_only_the_drivers_credentials_enter(tmp_path: Path, no_keys: pytest.MonkeyPatch,
                                            driver: str, key: str) -> None:
    for k in ALL_KEYS:
        no_keys.setenv(k, f"value-of-{k}")
    agent = OpenCodeAgent()
    ctx = agent_context(tmp_path, driver=driver)
    creds = agent.credential_values(ctx)
    assert key in creds and set(creds) == set(PROVIDER_KEYS[driver.split("/")[0]])
    no_keys.setattr(agent, "executable", lambda: Path("/opt/opencode"))
    env = agent.extra_env(ctx)
    assert not (ALL_KEYS - set(creds)) & set(env)


def test_missing_key_and_base_url_key(tmp_path: Path, no_keys: pytest.MonkeyPatch) -> None:
    agent = OpenCodeAgent()
    with pytest.raises(A2RLError, match="ANTHROPIC_API_KEY"):
        agent.credential_values(agent_context(tmp_path, driver="anthropic/claude-x"))
    no_keys.setenv("ANTHROPIC_API_KEY", "ant-key")
    ctx = agent_context(tmp_path, driver="m", driver_base_url="http://127.0.0.1:5/v1")
    assert agent.credential_values(ctx) == {}  # a local endpoint needs no key
    no_keys.setenv("OPENAI_API_KEY", FAKE_KEY)
    assert agent.credential_values(ctx) == {"OPENAI_API_KEY": FAKE_KEY}


def test_env_and_home_files(tmp_path: Path, no_keys: pytest.MonkeyPatch) -> None:
    agent = OpenCodeAgent()
    no_keys.setenv("OPENAI_API_KEY", FAKE_KEY)
    no_keys.setattr(agent, "executable", lambda: Path("/opt/opencode"))
    ctx = agent_context(tmp_path, driver="scripted-model", driver_base_url="http://127.0.0.1:5/v1/",
               options={"small_model": "a2rl/small"})
    env = agent.extra_env(ctx)
    for off in ("OPENCODE_DISABLE_MODELS_FETCH", "OPENCODE_DISABLE_AUTOUPDATE",
                "OPENCODE_DISABLE_SHARE", "OPENCODE_DISABLE_LSP_DOWNLOAD"):
        assert env[off] == "1"
    assert env["OPENCODE_EXPERIMENTAL_BASH_DEFAULT_TIMEOUT_MS"] == "1800000"
    assert env["OPENAI_API_KEY"] == FAKE_KEY and agent.secrets(ctx) == [FAKE_KEY]
    spec = SessionSpec.decode(env["A2RL_CLI_SESSION"])
    assert FAKE_KEY not in json.dumps(spec.__dict__)
    cfg = json.loads(spec.home_files[".config/opencode/opencode.json"])
    assert cfg["permission"] == "allow" and cfg["autoupdate"] is False
    assert cfg["model"] == "a2rl/scripted-model" and cfg["small_model"] == "a2rl/small"
    provider = cfg["provider"]["a2rl"]
    assert provider["npm"] == "@ai-sdk/openai-compatible"
    assert provider["options"] == {"baseURL": "http://127.0.0.1:5/v1",
                                   "apiKey": "{env:OPENAI_API_KEY}"}
    assert "scripted-model" in provider["models"]
    # the plugin dependency counts as installed: no npm registry request at start
    pkg = json.loads(spec.home_files[".config/opencode/package.json"])
    lock = json.loads(spec.home_files[".config/opencode/package-lock.json"])
    assert set(pkg["dependencies"]) <= set(lock["packages"][""]["dependencies"])
    assert ".config/opencode/node_modules/.a2rl-keep" in spec.home_files
    # a hosted provider: its model is declared under it, no endpoint override
    cfg = agent.config(agent_context(tmp_path, driver="anthropic/claude-new"))
    assert cfg["provider"] == {"anthropic": {"models": {"claude-new": {"name": "claude-new"}}}}


def test_parse_recorded_stream() -> None:
    """Real streams of the pinned CLI: the scripted plan (first run, then a --continue round)
    and write/edit/failing-command steps; absolute paths rewritten to FIXTURE_WS."""
    lines = stream_fixture(STREAM)
    events = parse_stream(lines, FIXTURE_WS)
    turns = [e for e in events if e.kind == "turn"]
    assert [e.turn for e in turns] == list(range(len(turns)))
    usage = [e for e in events if e.kind == "usage"]
    assert len(usage) == len(turns)  # one step_finish per model response
    commands = [e for e in events if e.kind == "command"]
    assert [c.command.split()[0] for c in commands if c.command] == \
        ["mkdir", "python", "curl", "./timer.sh", "cat"]
    assert [c.exit_code for c in commands] == [0, 0, 0, 0, 3]
    assert all(c.end_s is not None and c.end_s >= c.t_s for c in commands)
    assert [(e.name, e.path) for e in events if e.kind == "file_edit"] == \
        [("write", "code/notes.txt"), ("edit", "code/notes.txt")]
    assert [e.name for e in events if e.kind == "tool_call"] == \
        ["bash"] * 4 + ["write", "edit", "bash"]
    assert any(e.kind == "message" and e.text == "Running it." for e in events)
    # usage: whole prompt (input + cache) and whole completion (output + reasoning), per step
    steps = [json.loads(s)["part"] for _, s in lines if '"type":"step_finish"' in s]
    assert reported_usage(events) == (
        sum(p["tokens"]["input"] + p["tokens"]["cache"]["read"] + p["tokens"]["cache"]["write"]
            for p in steps),
        sum(p["tokens"]["output"] + p["tokens"]["reasoning"] for p in steps))
    cached = [e for e in usage if e.extra["cache_read"] != "0"]
    assert cached and all(e.extra["reasoning"] == "2" and (e.cost_usd or 0) > 0 for e in cached)
    assert sum(e.cost_usd or 0 for e in usage) == pytest.approx(sum(p["cost"] for p in steps))
    # without the workspace, paths stay absolute
    edits = [e.path for e in parse_stream(lines) if e.kind == "file_edit"]
    assert edits == [str(FIXTURE_WS / "code/notes.txt")] * 2


def test_parse_errors_and_noise() -> None:
    lines = ["plain log line", json.dumps({"a2rl_session": {"event": "round_start"}}),
             json.dumps({"type": "error", "error": {"name": "APIError",
                                                   "data": {"message": "rate limited"}}}),
             json.dumps({"type": "tool_use", "part": {"tool": "bash", "state": {
                 "status": "error", "input": {"command": "sleep 9"}, "error": "aborted"}}})]
    events = OpenCodeAgent().parse_events([(1.0, s) for s in lines])
    assert [e.kind for e in events] == ["message", "tool_call", "command"]
    assert events[0].text == "error: rate limited"
    assert events[2].command == "sleep 9" and events[2].exit_code is None


@pytest.mark.cli
@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap missing")
def test_opencode_end_to_end(tmp_path: Path, tiny_model: Path, monkeypatch: pytest.MonkeyPatch,
                             installed_cli) -> None:  # type: ignore[no-untyped-def]
    installed_cli("opencode")
    # network="none": the sandbox reaches only the grader and this server (through a unix
    # socket bridge in the run folder, whose path must fit AF_UNIX's 108 bytes: short root).
    with tempfile.TemporaryDirectory(prefix="oc-", dir="/tmp",
                                     ignore_cleanup_errors=True) as short:
        run = scripted_cli_run(Path(short), tiny_model, "opencode", "chat", monkeypatch,
                               key_env="OPENAI_API_KEY", api_path="/v1", network="none")
    script, events = run.script, run.events
    # AGENTS.md (the memory file, written by prepare()) reached the model.
    system = script.requests[-1]["body"]["messages"][0]["content"]
    assert f"Instructions from: {run.run_dir / 'workspace' / 'AGENTS.md'}" in system
    # Only Chat Completions requests (no unknown routes), streamed with usage asked for, the
    # key as a bearer token; the sandbox had no network but the grader and this server.
    assert {r["route"] for r in script.requests} == {"/v1/chat/completions"}
    assert all(r["headers"].get("authorization") == f"Bearer {FAKE_KEY}"
               for r in script.requests)
    assert all(r["body"]["stream"] and r["body"]["stream_options"]["include_usage"]
               for r in script.requests)
    # The stream reports each agent-loop response (step_finish) but not the session-title
    # request (a side request without tools): the launcher counts exactly the main figures.
    assert [s.main for s in script.sent].count(False) == 1
    assert reported_usage(events) == script.totals(main_only=True)
    assert_cost_is_the_clis(run.record, events)  # run.json: the CLI's own totals
    assert sum(1 for e in events if e.kind == "turn") == sum(1 for s in script.sent if s.main)
    assert [e.path for e in events if e.kind == "file_edit"] == []  # the plan edits by shell


def test_scripted_chat_protocol() -> None:
    """The scripted server's Chat Completions module, streamed and not (shared with OpenHands)."""
    from fastapi.testclient import TestClient

    script = Script()
    client = TestClient(create_app(script, ["chat"]))
    tools = [{"type": "function", "function": {"name": "bash", "parameters": {
        "type": "object", "properties": {"command": {"type": "string"}},
        "required": ["command"]}}}]
    messages: list[dict[str, str]] = [{"role": "user", "content": "go"}]
    body = {"model": "m", "messages": messages, "tools": tools}
    done = client.post("/v1/chat/completions", json=body).json()
    call = done["choices"][0]["message"]["tool_calls"][0]["function"]
    assert call["name"] == "bash" and "code/train.py" in json.loads(call["arguments"])["command"]
    assert done["choices"][0]["finish_reason"] == "tool_calls"
    assert done["usage"]["prompt_tokens"] == script.sent[0].input_tokens
    streamed = client.post("/v1/chat/completions", json=dict(
        body, stream=True, stream_options={"include_usage": True},
        messages=[*messages, {"role": "tool", "tool_call_id": "c", "content": "ok"}]))
    chunks = [json.loads(line[6:]) for line in streamed.text.splitlines()
              if line.startswith("data: {")]
    assert streamed.text.rstrip().endswith("data: [DONE]")
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["completion_tokens"] == \
        script.sent[1].output_tokens
    args = "".join(c["choices"][0]["delta"].get("tool_calls", [{}])[0].get("function", {})
                   .get("arguments", "") for c in chunks if c["choices"])
    assert json.loads(args) == {"command": "python code/train.py"}
    side = client.post("/v1/chat/completions", json={"model": "m", "stream": True,
                                                     "messages": messages})
    last = [json.loads(line[6:]) for line in side.text.splitlines()
            if line.startswith("data: {")][-1]
    assert last["choices"][0]["finish_reason"] == "stop" and "usage" in last
    assert [s.main for s in script.sent] == [True, True, False]
    assert client.get("/v1/models").json()["data"][0]["id"] == "m"
