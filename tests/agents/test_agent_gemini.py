"""Gemini CLI launcher: argv/env/config building, the stream-json parser on a recorded real
transcript, the scripted Gemini API's side answers, and one real sandboxed run of the pinned
CLI against the scripted Gemini server."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from scripted_llm import (
    FAKE_KEY,
    Script,
    agent_context,
    reported_usage,
    scripted_cli_run,
    stream_fixture,
)
from test_cost import assert_cost_is_the_clis

from a2rl.agents import get_agent
from a2rl.agents._cli import REPROMPT, SessionSpec
from a2rl.agents.gemini import SIDE_ALIASES, GeminiAgent

STREAM = "gemini_stream.jsonl"
"""A recorded real stream of the pinned CLI (tests/fixtures)."""


def test_registered() -> None:
    agent = get_agent("gemini")
    assert isinstance(agent, GeminiAgent)
    assert agent.package.spec == "@google/gemini-cli@0.61.0"
    assert agent.memory_file == "GEMINI.md"


def test_argv_first_run_and_resume(tmp_path: Path) -> None:
    agent, ctx = GeminiAgent(), agent_context(tmp_path, driver="gemini-x")
    first = agent.cli_argv(ctx, "gemini", "-do it", resume=False)
    assert first[:5] == ["gemini", "--output-format", "stream-json", "--approval-mode", "yolo"]
    assert first[first.index("-m") + 1] == "gemini-x"
    assert first[-1] == "--prompt=-do it"  # a prompt starting with '-' is not an option
    sid = first[first.index("--session-id") + 1]
    again = agent.cli_argv(ctx, "gemini", REPROMPT, resume=True)
    assert again[again.index("--resume") + 1] == sid and "--session-id" not in again
    assert again[-1] == f"--prompt={REPROMPT}"  # _cli_session fills in the time left
    plain = agent.cli_argv(agent_context(tmp_path), "gemini", "x", resume=False)
    assert plain[plain.index("-m") + 1] == GeminiAgent.default_driver


def test_env_and_home_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    agent = GeminiAgent()
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    ctx = agent_context(tmp_path, driver="m1", driver_base_url="http://127.0.0.1:5/")
    env = agent.cli_env(ctx)
    assert env["GOOGLE_GEMINI_BASE_URL"] == "http://127.0.0.1:5"
    assert env["GEMINI_API_KEY"] == "a2rl-no-key"  # a local endpoint needs no real key
    assert env["GEMINI_CLI_NO_RELAUNCH"] == "true"  # one process: SIGTERM reaches the CLI
    # GOOGLE_API_KEY alone is passed on as GEMINI_API_KEY (API-key auth reads only that)
    monkeypatch.setenv("GOOGLE_API_KEY", FAKE_KEY)
    assert agent.cli_env(ctx)["GEMINI_API_KEY"] == FAKE_KEY
    monkeypatch.delenv("GOOGLE_API_KEY")
    monkeypatch.setenv("GEMINI_API_KEY", FAKE_KEY)
    assert "GEMINI_API_KEY" not in agent.cli_env(ctx)  # the credential itself enters
    monkeypatch.setattr(agent, "executable", lambda: Path("/opt/gemini"))  # not installed here
    full = agent.extra_env(ctx)
    assert full["GEMINI_API_KEY"] == FAKE_KEY and agent.secrets(ctx) == [FAKE_KEY]
    spec = SessionSpec.decode(full["A2RL_CLI_SESSION"])
    assert FAKE_KEY not in json.dumps(spec.__dict__)
    settings = json.loads(spec.home_files[".gemini/settings.json"])
    assert settings["security"] == {"auth": {"selectedType": "gemini-api-key"},
                                    "folderTrust": {"enabled": False}}
    assert settings["privacy"]["usageStatisticsEnabled"] is False
    assert settings["telemetry"]["enabled"] is False
    assert settings["general"]["enableAutoUpdate"] is False
    assert settings["general"]["checkpointing"]["enabled"] is False
    assert settings["ide"]["enabled"] is False
    assert settings["model"]["disableLoopDetection"] is True
    assert settings["tools"]["shell"]["inactivityTimeout"] == 1800
    # with a base URL, the side calls go to the driver
    overrides = settings["modelConfigs"]["customOverrides"]
    assert {o["match"]["model"] for o in overrides} == set(SIDE_ALIASES)
    assert {o["modelConfig"]["model"] for o in overrides} == {"m1"}
    # options; without a base URL nothing points the CLI elsewhere
    opts = {"loop_detection": "1", "shell_inactivity_s": "60"}
    direct = json.loads(agent.home_files(agent_context(tmp_path, options=opts))[".gemini/settings.json"])
    assert direct["model"]["disableLoopDetection"] is False
    assert direct["tools"]["shell"]["inactivityTimeout"] == 60
    assert "modelConfigs" not in direct
    assert "GOOGLE_GEMINI_BASE_URL" not in agent.cli_env(agent_context(tmp_path))


def test_parse_recorded_stream() -> None:
    """A real transcript of the pinned CLI (two rounds: first run, then --resume) against a
    scripted server: parallel calls, write_file/replace, failing commands, stderr noise."""
    events = GeminiAgent().parse_events(stream_fixture(STREAM))
    turns = [e for e in events if e.kind == "turn"]
    assert [e.turn for e in turns] == list(range(6))  # 5 responses, then 1 after --resume
    assert [e.name for e in events if e.kind == "tool_call"] == \
        ["write_file", "run_shell_command", "replace", "run_shell_command", "run_shell_command"]
    commands = [e for e in events if e.kind == "command"]
    assert [(c.turn, c.command, c.exit_code) for c in commands] == [
        (0, "ls code", None), (2, "echo oops; exit 3", None), (3, "exit 4", 4)]
    assert all(c.end_s is not None and c.end_s > c.t_s for c in commands)
    edits = [(e.turn, e.name, e.path) for e in events if e.kind == "file_edit"]
    assert edits == [(0, "write_file", "code/a.py"), (1, "replace", "code/a.py")]
    messages = [(e.turn, e.text) for e in events if e.kind == "message"]
    assert messages == [(0, "Writing a file and listing."), (2, "Now a failing command."),
                        (4, "All done."), (5, "All done.")]
    # one usage event per CLI round, exactly the figures of its result event
    usage = [e for e in events if e.kind == "usage"]
    totals = [json.loads(line)["stats"] for _, line in stream_fixture(STREAM)
              if '"type":"result"' in line]
    assert [(e.input_tokens, e.output_tokens) for e in usage] == \
        [(s["input_tokens"], s["output_tokens"]) for s in totals]
    assert [e.turn for e in usage] == [4, 5]


def test_parse_joins_text_deltas_and_tolerates_a_killed_round() -> None:
    def j(obj: object) -> str:
        return json.dumps(obj)

    lines = [
        j({"type": "init", "session_id": "s", "model": "m"}),
        j({"type": "message", "role": "user", "content": "go"}),
        j({"type": "message", "role": "assistant", "content": "Hel", "delta": True}),
        j({"type": "message", "role": "assistant", "content": "lo " + "x" * 600,
           "delta": True}),
        j({"type": "tool_use", "tool_name": "run_shell_command", "tool_id": "a",
           "parameters": {"command": "sleep 999", "is_background": True}}),
        "Killed",
    ]
    events = GeminiAgent().parse_events([(float(i), s) for i, s in enumerate(lines)])
    assert [e.kind for e in events] == ["turn", "message", "tool_call", "command"]
    assert events[1].text is not None and events[1].text.startswith("Hello x")
    assert len(events[1].text) == 500
    assert events[3].end_s is None and events[3].extra == {"background": "true"}


def test_scripted_side_requests_answer_the_schema() -> None:
    """Side calls (no shell tool) get JSON valid for their response schema, e.g. the
    next-speaker check; agent-loop calls get the plan's step with OpenAPI-style schemas."""
    from scripted_llm.gemini import _response

    script = Script()
    body = {"contents": [{"role": "user", "parts": [{"text": "x"}]}], "generationConfig": {
        "responseMimeType": "application/json", "responseJsonSchema": {
            "type": "object", "required": ["reasoning", "next_speaker"], "properties": {
                "reasoning": {"type": "string"},
                "next_speaker": {"type": "string", "enum": ["user", "model"]}}}}}
    side = _response(script, "r", body)
    answer = json.loads(side["candidates"][0]["content"]["parts"][0]["text"])
    assert answer == {"reasoning": "Scripted answer.", "next_speaker": "user"}
    main = _response(script, "r", {"contents": [], "tools": [{"functionDeclarations": [{
        "name": "run_shell_command", "parameters": {
            "type": "OBJECT", "required": ["command"],
            "properties": {"command": {"type": "STRING"}}}}]}]})
    call = main["candidates"][0]["content"]["parts"][1]["functionCall"]
    assert call["name"] == "run_shell_command" and "code/train.py" in call["args"]["command"]
    assert [s.main for s in script.sent] == [False, True]
    assert side["usageMetadata"]["promptTokenCount"] == script.sent[0].input_tokens


@pytest.mark.cli
@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap missing")
def test_gemini_end_to_end(tmp_path: Path, tiny_model: Path, monkeypatch: pytest.MonkeyPatch,
                           installed_cli) -> None:  # type: ignore[no-untyped-def]
    installed_cli("gemini")
    run = scripted_cli_run(tmp_path, tiny_model, "gemini", "gemini", monkeypatch,
                           key_env="GEMINI_API_KEY")
    script, events = run.script, run.events
    # Every request went to the Gemini API (no unknown routes), with the key as x-goog-api-key.
    routes = {r["route"] for r in script.requests}
    assert routes <= {"/v1beta/models/{model}:streamGenerateContent",
                      "/v1beta/models/{model}:generateContent",
                      "/v1beta/models/{model}:countTokens"}, sorted(routes)
    assert all(r["headers"].get("x-goog-api-key") == FAKE_KEY for r in script.requests)
    # GEMINI.md (the memory file, written by prepare()) reached the model.
    assert re.search(r"Context from: \S*GEMINI\.md", json.dumps(script.requests[0]["body"]))
    # The CLI's result stats count every model call of the process, side calls included (they
    # go through the same content generator): all figures sent, nothing twice.
    assert reported_usage(events) == script.totals(main_only=False)
    assert_cost_is_the_clis(run.record, events)  # run.json: the CLI's own totals
    assert sum(1 for e in events if e.kind == "turn") == sum(1 for s in script.sent if s.main)
