"""What the agent saw, in the normalised events: each tool call's output (paired to its call,
errors marked, capped head and tail, key-shaped tokens redacted, hostile bytes survived) for
every CLI parser and the PostTrainBench importer; the prompts the agent received (the first one
and each re-prompt, noted by the CLI session and kept in agent/prompt.md); a plain log as
timed message blocks; and token/dollar totals equal to the CLI's own."""

from __future__ import annotations

import http.server
import json
import os
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from scripted_llm import FAKE_KEY, agent_context

from a2rl.agents import PROMPT_FILE, get_agent, log_events, read_log_events, usage_totals
from a2rl.agents._cli import REPROMPT, SPEC_ENV, SessionSpec
from a2rl.schema import OUTPUT_CAP, AgentEvent

FIXTURES = Path(__file__).parent.parent / "fixtures"
STREAMS = FIXTURES / "streams"


def lines_of(rel: str | Path) -> list[tuple[float, str]]:
    path = rel if isinstance(rel, Path) else STREAMS / rel
    return [(float(i), line) for i, line in enumerate(path.read_text().split("\n")[:-1])]


def calls(events: list[AgentEvent]) -> list[tuple[str | None, str | None, bool | None]]:
    return [(e.name, e.output, e.is_error) for e in events if e.kind == "tool_call"]


def j(obj: object, t: float = 0.0) -> tuple[float, str]:
    return t, json.dumps(obj)


# ---- outputs on the real stream shapes of each CLI ------------------------------------------
CASES: list[tuple[str, str, list[tuple[str, str | None, bool | None]]]] = [
    ("claude-code", "claude_code/v2.0_failed_bash.jsonl", [
        ("Write", "File created successfully", False), ("Bash", "Traceback", True),
        ("Edit", "File has not been read yet", True), ("Read", "SFTTrainer", False),
        ("Edit", "has been updated", False), ("Bash", "saved output/v1", False)]),
    ("codex", "codex/exec_current.jsonl", [
        ("command_execution", "code\ndata\nmodel", False), ("file_change", None, False),
        ("command_execution", "KeyError: 'question'", True), ("file_change", None, False),
        ("command_execution", "saved output/v1", False)]),
    ("codex", "codex/exec_legacy_msg.jsonl", [
        ("command_execution", "code\ndata", False), ("file_change", "Success. Updated", False),
        ("command_execution", "", True), ("file_change", "error: patch failed", True),
        ("file_change", "Success.", False), ("command_execution", "saved output/v1", False)]),
    ("codex", "codex/rollout_session.jsonl", [
        ("command_execution", "code\ndata", False), ("file_change", "A code/train.py", False),
        ("command_execution", "Process exited with code 1", True),
        ("file_change", "M code/train.py", False), ("command_execution", "saved output/v1", False)]),
    ("gemini", "gemini/max_turns.jsonl", [
        ("write_file", None, False), ("run_shell_command", "Command exited with code: 1", True),
        ("read_file", "", False), ("replace", None, False),
        ("run_shell_command", "Command exited with code: 137", True)]),
    ("opencode", "opencode/apply_patch.jsonl", [
        ("apply_patch", "A code/prep.py", False), ("edit", "oldString not found", True),
        ("bash", "wrote 7473 rows", False)]),
    ("opencode", "opencode/errors.jsonl", [("bash", "GPU 0: H100", False), ("bash", "Killed", True)]),
    ("openhands", "openhands/pretty_v1_12_errors_ts.log", [
        ("terminal", "step 10 loss", False), ("terminal", "step 400 loss", False),
        ("file_editor", "File created successfully", False),
        ("terminal", "unrecognized arguments", True)]),
    ("openhands", "openhands/line_v1_16.jsonl", [
        ("terminal", "code", False), ("file_editor", "File created successfully", False),
        ("terminal", "saved output/v1", False), ("finish", None, None)]),
]


@pytest.mark.parametrize(("agent", "rel", "expected"), CASES, ids=[c[1] for c in CASES])
def test_each_call_has_its_output_and_error_mark(agent: str, rel: str,
                                                 expected: list[tuple[str, str | None, bool | None]]
                                                 ) -> None:
    got = calls(get_agent(agent).parse_events(lines_of(rel)))
    assert [name for name, _, _ in got] == [name for name, _, _ in expected]
    for (name, output, error), (_, want, want_error) in zip(got, expected, strict=True):
        assert error is want_error, (name, output)
        if want is None:
            assert output is None, (name, output)
        else:
            assert output is not None and want in output, (name, output, want)


@pytest.mark.parametrize(("agent", "rel"), [(c[0], c[1]) for c in CASES],
                         ids=[c[1] for c in CASES])
def test_a_shell_command_and_its_call_agree(agent: str, rel: str) -> None:
    """Each command event follows its tool_call (which names the call's id) and carries the
    same error mark."""
    events = get_agent(agent).parse_events(lines_of(rel))
    for i, e in enumerate(events):
        if e.kind == "command":
            call = events[i - 1]
            assert call.kind == "tool_call" and call.extra["call_id"] != ""
            assert call.is_error == e.is_error or e.end_s is None


def test_claude_results_out_of_order_pair_with_their_calls() -> None:
    """Parallel calls of one response whose results come back in the other order."""
    lines = [j({"type": "assistant", "message": {"id": "m1", "content": [
                 {"type": "tool_use", "id": "a", "name": "Bash", "input": {"command": "ls"}},
                 {"type": "tool_use", "id": "b", "name": "Read",
                  "input": {"file_path": "/w/x.py"}}]}}),
             j({"type": "user", "message": {"content": [
                 {"type": "tool_result", "tool_use_id": "b", "content": [
                     {"type": "text", "text": "print(1)"}, {"type": "image", "source": {}}]},
                 {"type": "tool_result", "tool_use_id": "a", "content": "Exit code 2\nno such",
                  "is_error": True}]}}, 1.0)]
    events = get_agent("claude-code").parse_events(lines)
    assert calls(events) == [("Bash", "Exit code 2\nno such", True), ("Read", "print(1)", False)]
    (cmd,) = [e for e in events if e.kind == "command"]
    assert (cmd.exit_code, cmd.is_error) == (2, True)
    assert json.loads(events[1].extra["args"]) == {"command": "ls"}


def test_a_call_without_a_result_keeps_its_output_unknown() -> None:
    lines = [j({"type": "assistant", "message": {"id": "m1", "content": [
        {"type": "tool_use", "id": "a", "name": "Bash", "input": {"command": "sleep 9"}}]}})]
    assert calls(get_agent("claude-code").parse_events(lines)) == [("Bash", None, None)]


def test_codex_mcp_call_result_and_error() -> None:
    item = {"id": "item_1", "type": "mcp_tool_call", "server": "docs", "tool": "search",
            "arguments": {"q": "grpo"}, "status": "in_progress"}
    lines = [j({"type": "turn.started"}),
             j({"type": "item.started", "item": item}),
             j({"type": "item.completed", "item": {**item, "status": "completed", "result": {
                 "content": [{"type": "text", "text": "GRPO is"}], "structured_content": None}}}),
             j({"type": "item.started", "item": {**item, "id": "item_2"}}),
             j({"type": "item.completed", "item": {**item, "id": "item_2", "status": "failed",
                                                   "error": {"message": "server gone"}}})]
    events = get_agent("codex").parse_events(lines)
    assert calls(events) == [("mcp:docs/search", "GRPO is", False),
                             ("mcp:docs/search", "server gone", True)]
    assert json.loads(events[1].extra["args"]) == {"q": "grpo"}


def test_gemini_failed_tool_keeps_its_error_message() -> None:
    lines = [j({"type": "tool_use", "tool_name": "read_file", "tool_id": "r1",
                "parameters": {"absolute_path": "/nope"}}),
             j({"type": "tool_result", "tool_id": "r1", "status": "error",
                "error": {"type": "file_not_found", "message": "File not found: /nope"}})]
    assert calls(get_agent("gemini").parse_events(lines)) == [
        ("read_file", "File not found: /nope", True)]


def test_openhands_agent_error_on_a_call_is_its_output() -> None:
    lines = [j({"kind": "ActionEvent", "source": "agent", "tool_name": "file_editor",
                "tool_call_id": "c1", "llm_response_id": "r1",
                "action": {"kind": "FileEditorAction", "command": "view", "path": "/w"}}),
             j({"kind": "AgentErrorEvent", "source": "agent", "tool_call_id": "c1",
                "error": "missing required argument"})]
    events = get_agent("openhands").parse_events(lines)
    assert calls(events) == [("file_editor", "missing required argument", True)]


# ---- caps, secrets and hostile outputs ---------------------------------------------------------
BIG = "HEAD-" + "x" * 1_000_000 + "-TAIL"


def big_output_lines(agent: str, text: str) -> list[tuple[float, str]]:
    """One shell call whose result is `text`, in each CLI's stream shape."""
    if agent == "claude-code":
        return [j({"type": "assistant", "message": {"id": "m", "content": [
                    {"type": "tool_use", "id": "a", "name": "Bash", "input": {"command": "cat f"}}]}}),
                j({"type": "user", "message": {"content": [
                    {"type": "tool_result", "tool_use_id": "a", "content": text}]}})]
    if agent == "codex":
        item = {"id": "i", "type": "command_execution", "command": "cat f", "exit_code": 0,
                "status": "completed", "aggregated_output": text}
        return [j({"type": "item.started", "item": {**item, "status": "in_progress"}}),
                j({"type": "item.completed", "item": item})]
    if agent == "gemini":
        return [j({"type": "tool_use", "tool_name": "run_shell_command", "tool_id": "g",
                   "parameters": {"command": "cat f"}}),
                j({"type": "tool_result", "tool_id": "g", "status": "success", "output": text})]
    if agent == "opencode":
        return [j({"type": "step_start", "part": {}}),
                j({"type": "tool_use", "part": {"tool": "bash", "callID": "o", "state": {
                    "status": "completed", "input": {"command": "cat f"}, "output": text,
                    "metadata": {"exit": 0}}}})]
    return [j({"kind": "ActionEvent", "tool_name": "terminal", "tool_call_id": "h",
               "llm_response_id": "r", "action": {"kind": "TerminalAction", "command": "cat f"}}),
            j({"kind": "ObservationEvent", "tool_call_id": "h", "observation": {
                "content": [{"type": "text", "text": text}], "exit_code": 0}})]


AGENTS = ["claude-code", "codex", "gemini", "opencode", "openhands"]


@pytest.mark.parametrize("agent", AGENTS)
def test_a_megabyte_output_is_capped_head_and_tail(agent: str) -> None:
    (call,) = [e for e in get_agent(agent).parse_events(big_output_lines(agent, BIG))
               if e.kind == "tool_call"]
    assert call.output is not None and len(call.output) <= OUTPUT_CAP
    assert call.output.startswith("HEAD-x") and call.output.endswith("x-TAIL")
    assert f"{len(BIG)} characters in all" in call.output
    assert call.output_chars == len(BIG)


@pytest.mark.parametrize("agent", AGENTS)
def test_key_shaped_tokens_are_redacted_from_outputs(agent: str) -> None:
    keys = ["sk-ant-api03-" + "Ab1_" * 20, "sk-proj-" + "Q" * 48, "AIza" + "k" * 35,
            "hf_" + "Z" * 34]
    text = "env:\n" + "\n".join(f"KEY={k}" for k in keys) + "\ntask-name stays"
    (call,) = [e for e in get_agent(agent).parse_events(big_output_lines(agent, text))
               if e.kind == "tool_call"]
    assert call.output is not None
    assert not any(k in call.output for k in keys)
    assert call.output.count("[REDACTED]") == len(keys) and "task-name stays" in call.output


def test_hostile_outputs_survive_into_events_jsonl(tmp_path: Path) -> None:
    """Control characters, invalid UTF-8, a lone surrogate escape, U+2028 and a line past the
    supervisor's 64 KiB cut: the events file is written and reads back."""
    agent_dir = tmp_path / "agent"
    agent_dir.mkdir()
    nasty = "\x00\x1b[31mred\x1b[0m\r\x07 bell \u2028 sep \x85 nel \\ud800"
    raw = (json.dumps({"type": "assistant", "message": {"id": "m", "content": [
               {"type": "tool_use", "id": "a", "name": "Bash", "input": {"command": "x"}},
               {"type": "tool_use", "id": "b", "name": "Bash", "input": {"command": "y"}}]}})
           + "\n").encode()
    first = json.dumps({"type": "user", "message": {"content": [
        {"type": "tool_result", "tool_use_id": "a", "content": nasty}]}}).replace(
            "\\\\ud800", "\\ud800").encode()
    raw += first.replace(b"red", b"r\xff\xfed") + b"\n"
    huge = json.dumps({"type": "user", "message": {"content": [
        {"type": "tool_result", "tool_use_id": "b", "content": "L" * 200_000}]}}).encode()
    raw += huge[:65536] + b"\n" + huge[65536:] + b"\n"  # cut where the supervisor cuts
    (agent_dir / "transcript.log").write_bytes(raw)
    (agent_dir / "transcript.times").write_text("0.5\n1.0\n1.5\n1.6\n")
    agent = get_agent("claude-code")
    n = agent.write_events(agent_dir)
    text = (agent_dir / "events.jsonl").read_text()
    events = [AgentEvent.model_validate_json(line) for line in text.splitlines()]
    assert len(events) == n
    (a, b) = [e for e in events if e.kind == "tool_call"]
    assert a.output is not None and "\x1b[31m" in a.output and "\x00" in a.output
    assert "\ufffd" in a.output and "\u2028" in a.output
    assert b.output is None  # its result line was cut in two: counted, not invented
    report = json.loads((agent_dir / "parse_report.json").read_text())
    assert report["unparsed_lines"] == 1  # the cut line's head; its tail is plain text


def test_the_supervisor_scrubs_the_run_key_before_any_event_sees_it(tmp_path: Path) -> None:
    """A real agent process printing the key it was given inside a tool result: the
    transcript, and so every event, holds [REDACTED] instead."""
    from a2rl.runner._supervise import AgentProcess

    line = json.dumps({"type": "user", "message": {"content": [
        {"type": "tool_result", "tool_use_id": "a", "content": f"ANTHROPIC_API_KEY={FAKE_KEY}"}]}})
    call = json.dumps({"type": "assistant", "message": {"id": "m", "content": [
        {"type": "tool_use", "id": "a", "name": "Bash", "input": {"command": "env"}}]}})
    script = tmp_path / "cli.py"
    script.write_text(f"print({call!r})\nprint({line!r})\n")
    agent_dir = tmp_path / "agent"
    proc = AgentProcess([sys.executable, str(script)], env={"PATH": os.environ["PATH"]},
                        cwd=tmp_path, transcript=agent_dir / "transcript.log", secrets=[FAKE_KEY])
    proc.proc.wait(timeout=60)
    proc.close()  # drains the output
    get_agent("claude-code").write_events(agent_dir)
    text = (agent_dir / "events.jsonl").read_text()
    assert FAKE_KEY not in text and "ANTHROPIC_API_KEY=[REDACTED]" in text


# ---- prompts --------------------------------------------------------------------------------
@pytest.mark.parametrize("agent", AGENTS)
def test_the_session_spec_locates_the_prompt_in_argv(agent: str, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    launcher = get_agent(agent)
    monkeypatch.setattr(launcher, "executable", lambda: Path("/opt/cli"))
    ctx = agent_context(tmp_path, driver="anthropic/x" if agent == "opencode" else "x")
    spec = launcher.session_spec(ctx)  # type: ignore[attr-defined]
    assert spec.prompt_offset is not None
    assert spec.argv[-1][spec.prompt_offset:] == launcher.prompt(ctx)  # type: ignore[attr-defined]


@pytest.fixture
def status_server() -> Iterator[str]:
    """A grader's /status that grants one re-prompt round (an hour left, then nothing)."""
    answers = iter([3600.0])

    class Status(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - the handler's API
            body = json.dumps({"remaining_seconds": next(answers, 0.0)}).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Status)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_first_prompt_and_reprompt_become_prompt_events(tmp_path: Path,
                                                        status_server: str) -> None:
    """The real session wrapper runs a stand-in CLI twice (first prompt, one re-prompt) under
    the real supervisor; the events start with the whole first prompt at 0 s, turn 0, and the
    re-prompt comes before the second round's turn; agent/prompt.md keeps the first prompt."""
    from a2rl.runner._supervise import AgentProcess

    cli = tmp_path / "cli.py"
    cli.write_text(
        "import json, sys\n"
        "prompt = sys.argv[-1]\n"
        "mid = 'm%d' % len(prompt)\n"
        "print(json.dumps({'type': 'assistant', 'message': {'id': mid, 'content': [\n"
        "    {'type': 'text', 'text': 'got %d chars' % len(prompt)}]}}))\n")
    prompt = "# Instructions\n" + "Do well. é\n" * 2000 + "Start now."
    spec = SessionSpec(argv=[sys.executable, str(cli), "--", prompt],
                       resume_argv=[sys.executable, str(cli), "--resume", "--", REPROMPT],
                       reprompt=True, reserve_s=60, prompt_offset=0)
    agent_dir = tmp_path / "agent"
    env = {"PATH": os.environ["PATH"], SPEC_ENV: spec.encode(), "A2RL_GRADER_URL": status_server,
           "A2RL_TOKEN": "t", "HOME": str(tmp_path / "home"),
           "PYTHONPATH": str(Path(__file__).parent.parent.parent / "src")}
    proc = AgentProcess([sys.executable, "-m", "a2rl.agents._cli_session"], env=env, cwd=tmp_path,
                        transcript=agent_dir / "transcript.log")
    assert proc.proc.wait(timeout=120) == 0
    proc.close()
    agent = get_agent("claude-code")
    agent.write_events(agent_dir)
    events = [AgentEvent.model_validate_json(line)
              for line in (agent_dir / "events.jsonl").read_text().splitlines()]
    assert (agent_dir / PROMPT_FILE).read_text() == prompt
    first, *rest = events
    assert (first.kind, first.turn, first.t_s, first.text) == ("prompt", 0, 0.0, prompt)
    kinds = [(e.kind, e.turn) for e in rest]
    assert kinds == [("turn", 0), ("message", 0), ("prompt", 1), ("turn", 1), ("message", 1)]
    reprompt = rest[2]
    assert reprompt.text == REPROMPT.format(remaining="60 min")
    assert reprompt.extra["round"] == "1" and reprompt.t_s <= rest[3].t_s
    assert rest[4].text == f"got {len(reprompt.text)} chars"
    # the live view shows the same
    live = agent.live_events(agent_dir)
    assert live is not None and [e.kind for e in live] == [e.kind for e in events]


def test_a_prompt_past_the_note_limit_is_cut_and_marked() -> None:
    from a2rl.agents._cli_session import NOTE_BYTES, fitted

    prompt = "start\n" + "ü" * 100_000 + "\nend"
    kept = fitted(prompt)
    assert len(json.dumps({"a2rl_session": {"prompt": kept}})) < NOTE_BYTES + 100
    assert kept.startswith("start") and kept.endswith("end") and "characters in all" in kept


def test_posttrainbench_import_shows_prompt_and_tool_outputs(tmp_path: Path) -> None:
    from a2rl.importers import posttrainbench

    folder = next((FIXTURES / "imports" / "posttrainbench").glob("*/*/solve_out.txt")).parent
    run_dir = posttrainbench.import_run(folder, tmp_path / "runs")
    events = [AgentEvent.model_validate_json(line)
              for line in (run_dir / "agent" / "events.jsonl").read_text().splitlines()]
    prompt = (folder / "prompt.txt").read_text()
    assert events[0].kind == "prompt" and events[0].text == prompt
    assert (run_dir / "agent" / PROMPT_FILE).read_text() == prompt
    outputs = [e for e in events if e.kind == "tool_call" and e.output is not None]
    assert outputs and all(e.is_error is not None for e in outputs)
    manifest = json.loads((run_dir / "import_manifest.json").read_text())
    assert "agent/prompt.md" in manifest["files"]  # published with the run


# ---- a plain log as timed blocks ------------------------------------------------------------
def test_log_blocks_sit_at_the_time_their_lines_were_written(tmp_path: Path) -> None:
    """Lines written from 1.3 s to 14.8 s, a submission at 8.0 s: no block spans the
    submission and each starts at its first line's time (not all at 1.3 s)."""
    times = [1.3, 1.9, 2.6, 3.4, 4.1, 7.2, 7.9, 8.4, 9.0, 14.8]
    agent_dir = tmp_path / "agent"
    agent_dir.mkdir()
    (agent_dir / "transcript.log").write_text(
        "".join(f"line {i}\r\n" if i != 3 else "10%\r50%\r100%\n" for i in range(len(times))))
    (agent_dir / "transcript.times").write_text("".join(f"{t}\n" for t in times))
    blocks = read_log_events(agent_dir, breaks=[8.0])
    assert [b.kind for b in blocks] == ["message"] * len(blocks)
    starts = [b.t_s for b in blocks]
    assert starts == [1.3, 7.2, 8.4, 14.8]
    assert [b.end_s for b in blocks] == [4.1, 7.9, 9.0, 14.8]
    assert blocks[0].text == "line 0\nline 1\nline 2\n100%\nline 4"
    assert all(not (b.t_s < 8.0 < (b.end_s or 0)) for b in blocks)
    assert sum(int(b.extra["lines"]) for b in blocks) == len(times)
    assert [float(x) for b in blocks for x in b.extra["times"].split()] == times


def test_a_steady_log_is_cut_into_blocks_of_bounded_span() -> None:
    lines = [(0.5 * i, f"step {i}") for i in range(40)]  # one line every 0.5 s for 20 s
    blocks = log_events(lines)
    assert len(blocks) >= 4
    assert all((b.end_s or 0) - b.t_s <= 5.0 for b in blocks)
    assert [b.t_s for b in blocks] == sorted(b.t_s for b in blocks)


# ---- tokens and dollars equal the CLI's own totals -----------------------------------------
def objects(path: Path) -> list[dict[str, Any]]:
    from a2rl.agents._stream import strip_stamp

    out = []
    for line in path.read_text().splitlines():
        text = strip_stamp(line)[1]
        if text.startswith("{"):
            out.append(json.loads(text))
    return out


def claude_total(objs: list[dict[str, Any]]) -> tuple[int, int, float]:
    """Claude Code: the last `result` of the session, whose modelUsage (every model) and
    total_cost_usd are cumulative over the session's rounds."""
    last = [o for o in objs if o.get("type") == "result"][-1]
    models = last["modelUsage"].values()
    return (sum(m["inputTokens"] + m["cacheReadInputTokens"] + m["cacheCreationInputTokens"]
                for m in models), sum(m["outputTokens"] for m in models), last["total_cost_usd"])


def codex_total(objs: list[dict[str, Any]]) -> tuple[int, int, None]:
    """Codex: the last `turn.completed` of the thread (cumulative over resumed rounds)."""
    usage = [o for o in objs if o.get("type") == "turn.completed"][-1]["usage"]
    return usage["input_tokens"], usage["output_tokens"], None


def gemini_total(objs: list[dict[str, Any]]) -> tuple[int, int, None]:
    """Gemini CLI: each process's `result` stats (one per CLI round), added up."""
    stats = [o["stats"] for o in objs if o.get("type") == "result"]
    return sum(s["input_tokens"] for s in stats), sum(s["output_tokens"] for s in stats), None


def opencode_total(objs: list[dict[str, Any]]) -> tuple[int, int, float]:
    """OpenCode: each step's `step_finish` tokens and cost (it prints no run total)."""
    parts = [o["part"] for o in objs if o.get("type") == "step_finish"]
    t = [p["tokens"] for p in parts]
    return (sum(x["input"] + x["cache"]["read"] + x["cache"]["write"] for x in t),
            sum(x["output"] + x["reasoning"] for x in t), sum(p["cost"] for p in parts))


def openhands_total(objs: list[dict[str, Any]]) -> tuple[int, int, float | None]:
    """OpenHands: the SDK's persisted metrics, relayed per response by the wrapper."""
    usage = [o["a2rl_openhands_usage"] for o in objs if "a2rl_openhands_usage" in o]
    cost = sum(u.get("cost_usd") or 0.0 for u in usage)
    return (sum(u["prompt_tokens"] for u in usage), sum(u["completion_tokens"] for u in usage),
            cost or None)


TOTALS = [("claude-code", "claude_code_stream.jsonl", claude_total),
          ("claude-code", "streams/claude_code/v2.0_failed_bash.jsonl", claude_total),
          ("claude-code", "streams/claude_code/v2.1_resumed_ts.jsonl", claude_total),
          ("codex", "codex_stream.jsonl", codex_total),
          ("codex", "streams/codex/exec_resumed.jsonl", codex_total),
          ("gemini", "gemini_stream.jsonl", gemini_total),
          ("gemini", "streams/gemini/loop_detected_ts.jsonl", gemini_total),
          ("opencode", "opencode_stream.jsonl", opencode_total),
          ("opencode", "streams/opencode/continue_rounds.jsonl", opencode_total),
          ("openhands", "openhands_stream.jsonl", openhands_total),
          ("openhands", "streams/openhands/line_v1_16.jsonl", openhands_total)]


@pytest.mark.parametrize(("agent", "rel", "total"), TOTALS, ids=[t[1] for t in TOTALS])
def test_usage_totals_equal_the_cli_totals(agent: str, rel: str, total: Any) -> None:
    path = FIXTURES / rel
    want_in, want_out, want_usd = total(objects(path))
    got_in, got_out, got_usd = usage_totals(get_agent(agent).parse_events(lines_of(path)))
    assert (got_in, got_out) == (want_in, want_out)
    if want_usd is None:
        assert got_usd is None
    else:
        assert got_usd == pytest.approx(want_usd, abs=1e-6)


@pytest.mark.parametrize(("agent", "rel", "reply"), [
    ("claude-code", "claude_code_stream.jsonl", '{"detail":"Not Found"}'),
    ("codex", "codex_stream.jsonl", '"submission_id":"s0001"'),
    ("gemini", "gemini_stream.jsonl", None), ("opencode", "opencode_stream.jsonl",
                                             '"submission_id":"s0001"'),
    ("openhands", "openhands_stream.jsonl", None)])
def test_recorded_pinned_streams_give_every_call_its_output(agent: str, rel: str,
                                                            reply: str | None) -> None:
    """The streams the pinned CLIs printed against the scripted servers: every shell call has
    its output and an error mark (Gemini CLI's edit results carry no output: None), and where
    the recorded call that submitted got the grader's reply, it is that call's output."""
    events = get_agent(agent).parse_events(lines_of(FIXTURES / rel))
    shell = [events[i - 1] for i, e in enumerate(events) if e.kind == "command"]
    assert shell and all(c.output is not None and c.is_error is not None for c in shell)
    assert all(err is not None for _, _, err in calls(events))
    if reply is not None:
        (submit,) = [events[i - 1] for i, e in enumerate(events)
                     if e.kind == "command" and "/submit" in (e.command or "")]
        assert reply in (submit.output or "")
