"""The transcript parsers on real stream shapes of each CLI (tests/fixtures/streams, written by
make_streams.py there): Claude Code 2.0.x and 2.1.x (failed, rejected and background calls,
repeated messages), Codex (current, 0.44 and pre-0.44 events), Gemini CLI (error events),
OpenCode, OpenHands (pretty-printed `--JSON Event--` and line forms), each also as
PostTrainBench stores transcripts (`[ISO-time] ` before every line, no arrival times).

The expected counts are worked out by hand from each transcript; usage totals are the CLI's
own totals where it reports them (Claude Code's per-round result, Codex's cumulative
turn.completed, Gemini's result stats), else the sum of what it reports per response."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from a2rl.agents import detect_cli, get_agent, read_lines, read_parse_report
from a2rl.agents._events import AgentEvent, ParseReport, ParseResult
from a2rl.agents._stream import PARSE_REPORT, TranscriptReader, read_transcript, strip_stamp

STREAMS = Path(__file__).parent.parent / "fixtures" / "streams"


def load(rel: str) -> list[tuple[float, str]]:
    """A fixture's lines: one second apart, or all 0.0 (no arrival times) for the
    timestamp-prefixed (`_ts`) ones, whose times must then come from the prefixes."""
    text = (STREAMS / rel).read_text().split("\n")[:-1]
    zero = "_ts." in rel
    return [(0.0 if zero else float(i), line) for i, line in enumerate(text)]


def parse(agent: str, rel: str) -> ParseResult:
    return get_agent(agent).parse_transcript(load(rel))


def of(events: list[AgentEvent], kind: str) -> list[AgentEvent]:
    return [e for e in events if e.kind == kind]


@dataclass
class Case:
    agent: str
    path: str
    turns: int
    tools: list[str]
    commands: list[tuple[str, int | None]]
    """(command line, exit code) of each shell command, in order."""
    edits: list[str] = field(default_factory=list)
    usage: tuple[int, int] = (0, 0)
    cost: float | None = None
    cli_errors: int = 0
    unparsed: int = 0


TRAIN = "python code/train.py"
CE, FC = "command_execution", "file_change"
RSC = "run_shell_command"
CASES = [
    # ---- Claude Code ------------------------------------------------------------------------
    *[Case("claude-code", f"claude_code/v2.0_failed_bash{ts}.jsonl", 7,
           ["Write", "Bash", "Edit", "Read", "Edit", "Bash"], [(TRAIN, 1), (TRAIN, 0)],
           ["code/train.py", "code/train.py"], (46231, 724), 0.051642) for ts in ("", "_ts")],
    *[Case("claude-code", f"claude_code/v2.1_background{ts}.jsonl", 8,
           ["Bash", "Bash", "TaskOutput", "Bash", "Edit", "Bash", "Bash"],
           [("nohup python code/train_sft.py > logs/sft.log 2>&1", 1),
            ("sleep 120; tail -n 3 logs/sft.log", 0), ("tail -n 20 logs/sft.log", 0),
            ("nohup python code/train_sft.py > logs/sft2.log 2>&1", 0),
            ("sleep 600; tail -n 2 logs/sft2.log", 0)],
           ["code/train_sft.py"], (56995, 573), 0.0530075) for ts in ("", "_ts")],
    Case("claude-code", "claude_code/v2.1_resumed_ts.jsonl", 6, ["Bash", "Bash", "Write", "Bash"],
         [("python eval.py --split dev", 2), ("python eval.py --split dev --ckpt output/v1", 0),
          ("python eval.py --split test --ckpt output/v1", 0)], [], (42383, 423), 0.036563),
    Case("claude-code", "claude_code/v2.0_bashoutput.jsonl", 6,
         ["Bash", "BashOutput", "Bash", "BashOutput", "KillShell"],
         [("python code/grpo.py > grpo.log 2>&1", 0), ("python -m http.server 8000", None)],
         [], (32503, 303), 0.034188),
    Case("claude-code", "claude_code/v2.1_subagent.jsonl", 6, ["Task"] + ["Bash"] * 4,
         [("ls data/", 0), ("wc -l data/train.jsonl", 0), ("python code/prep.py", 0),
          (TRAIN, 137)], [], (14360, 360), 0.027142, cli_errors=1),
    Case("claude-code", "claude_code/session_file_v2.0.jsonl", 4, ["Bash", "BashOutput", "Bash"],
         [("python code/train.py > train.log 2>&1", 1), ("nvidia-smi", 1)], [],
         (4203 + 4506 + 4756 + 4876, 130 + 40 + 35 + 22)),
    # ---- Codex ------------------------------------------------------------------------------
    *[Case("codex", f"codex/exec_current{ts}.jsonl", 6, [CE, FC, CE, FC, CE],
           [("ls -la", 0), (TRAIN, 1), (TRAIN, 0)], ["code/train.py", "code/train.py"],
           (48210, 1834)) for ts in ("", "_ts")],
    Case("codex", "codex/exec_resumed.jsonl", 5, [CE] * 3,
         [("python train.py > train.log 2>&1", None), ("tail -n 5 train.log", 0),
          ("python eval.py", 0)], [], (52000, 1500)),
    Case("codex", "codex/exec_0.44_item_type.jsonl", 4, [CE, FC, CE],
         [("pip install trl", 0), ("python code/sft.py", 2)], ["code/sft.py"], (12000, 640)),
    Case("codex", "codex/exec_legacy_msg.jsonl", 7, [CE, FC, CE, FC, FC, CE],
         [("ls", 0), (TRAIN, 1), (TRAIN, 0)], ["code/train.py", "code/train.py"],
         (60000, 2600)),
    Case("codex", "codex/rollout_session.jsonl", 6, [CE, FC, CE, FC, CE],
         [("ls", 0), (TRAIN, 1), (TRAIN, 0)], ["code/train.py", "code/train.py"],
         (38000, 1150)),
    Case("codex", "codex/exec_failed_ts.jsonl", 2, [CE, CE],
         [("nvidia-smi", 0), (TRAIN, None)], cli_errors=2),
    # ---- Gemini CLI -------------------------------------------------------------------------
    *[Case("gemini", f"gemini/loop_detected{ts}.jsonl", 5, [RSC] * 5,
           [("nohup python code/train.py > train.log 2>&1 &", None)]
           + [("sleep 30 && tail -n 1 train.log", None)] * 4, [], (21000, 420), cli_errors=1)
      for ts in ("", "_ts")],
    Case("gemini", "gemini/max_turns.jsonl", 5,
         ["write_file", RSC, "read_file", "replace", RSC],
         [("python code/train.py > train.log 2>&1", 1),
          ("python code/train.py > train.log 2>&1", 137)],
         ["/home/agent/ws/code/train.py"] * 2, (33000, 910), cli_errors=2),
    Case("gemini", "gemini/old_shapes.jsonl", 4, ["replace", "write_file", RSC],
         [("pytest -q", 1)], ["/srv/task/code/model.py"], (9000, 260)),
    Case("gemini", "gemini/two_rounds.jsonl", 4, [RSC] * 3,
         [(TRAIN, None), ("python eval.py", None), ("cp -r output/v1 output/v2", 0)], [],
         (22000, 410)),
    Case("gemini", "gemini/api_error_ts.jsonl", 1, [], [], [], (2100, 12), cli_errors=2),
    # ---- OpenCode (paths stay absolute unless the run's workspace is known) -----------------
    *[Case("opencode", f"opencode/run_basic{ts}.jsonl", 6, ["bash", "write", "bash", "edit", "bash"],
           [("ls", 0), (TRAIN, 1), (TRAIN, 0)], ["/home/agent/workspace/code/train.py"] * 2,
           (73527, 720), 0.0376) for ts in ("", "_ts")],
    Case("opencode", "opencode/apply_patch.jsonl", 4, ["apply_patch", "edit", "bash"],
         [("python code/prep.py --config code/cfg.yaml", 0)],
         ["/srv/run/workspace/code/prep.py", "/srv/run/workspace/code/cfg.yaml"],
         (8740, 1017), 0.016),
    Case("opencode", "opencode/errors.jsonl", 2, ["bash", "bash"],
         [("nvidia-smi -L", 0), (TRAIN, 137)], [], (19141, 124), 0.0084, cli_errors=2),
    Case("opencode", "opencode/continue_rounds.jsonl", 4, ["bash", "bash"],
         [(TRAIN, 0), ("python eval.py", 0)], [], (36561, 205), 0.0199),
    Case("opencode", "opencode/killed_ts.jsonl", 2, ["bash"], [("ls output", 0)], [],
         (7224, 33), 0.0037, unparsed=1),
    # ---- OpenHands --------------------------------------------------------------------------
    *[Case("openhands", f"openhands/pretty_v1_8{ts}.log", 8,
           ["execute_bash", "str_replace_editor", "execute_bash"] + ["str_replace_editor"] * 3
           + ["execute_bash", "finish"], [("ls -la", 0), (TRAIN, 1), (TRAIN, 0)],
           ["code/train.py", "code/train.py"]) for ts in ("", "_ts")],
    Case("openhands", "openhands/pretty_v1_12_errors_ts.log", 4,
         ["terminal", "terminal", "file_editor", "terminal"],
         [(TRAIN, None), ("tail -n 3 train.log", 0), ("python code/eval.py", 2)],
         ["code/eval.py"], cli_errors=2),
    *[Case("openhands", f"openhands/line_v1_16{ts}.jsonl", 4,
           ["terminal", "file_editor", "terminal", "finish"], [("ls", 0), (TRAIN, 0)],
           ["code/train.py"], (23200, 485), 0.0421) for ts in ("", "_ts")],
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.path)
def test_counts_on_real_shapes(case: Case) -> None:
    result = parse(case.agent, case.path)
    events, report = result.events, result.report
    assert len(of(events, "turn")) == case.turns
    assert [e.turn for e in of(events, "turn")] == list(range(case.turns))
    assert [e.name for e in of(events, "tool_call")] == case.tools
    assert [(e.command, e.exit_code) for e in of(events, "command")] == case.commands
    assert [e.path for e in of(events, "file_edit")] == case.edits
    usage = of(events, "usage")
    assert (sum(e.input_tokens or 0 for e in usage),
            sum(e.output_tokens or 0 for e in usage)) == case.usage
    if case.cost is not None:
        assert sum(e.cost_usd or 0 for e in usage) == pytest.approx(case.cost, abs=1e-6)
    assert len(report.cli_errors) == case.cli_errors
    assert len([e for e in events if e.extra.get("error") == "1"]) == case.cli_errors
    assert report.unparsed_lines == case.unparsed
    assert report.unknown_types == {}
    assert report.events == len(events) > 0
    assert bool(report.warnings) == bool(case.unparsed)


@pytest.mark.parametrize("case", [c for c in CASES if "_ts." in c.path], ids=lambda c: c.path)
def test_timestamp_prefixed_transcripts_take_their_times_from_the_prefix(case: Case) -> None:
    """PostTrainBench's form: every line prefixed, no arrival times (all 0.0 here)."""
    lines = load(case.path)
    report = parse(case.agent, case.path).report
    assert report.timestamp_prefixed == len(lines)
    events = parse(case.agent, case.path).events
    turn_times = [e.t_s for e in of(events, "turn")]
    assert turn_times == sorted(turn_times) and turn_times[-1] > 0
    first = strip_stamp(lines[0][1])[0]
    last = strip_stamp(lines[-1][1])[0]
    assert first is not None and last is not None
    assert max(e.t_s for e in events) <= last - first + 1e-6


def test_the_same_stream_with_and_without_prefixes_gives_the_same_events() -> None:
    for agent, plain, ts in [("claude-code", "claude_code/v2.0_failed_bash.jsonl",
                              "claude_code/v2.0_failed_bash_ts.jsonl"),
                             ("openhands", "openhands/pretty_v1_8.log",
                              "openhands/pretty_v1_8_ts.log"),
                             ("codex", "codex/exec_current.jsonl", "codex/exec_current_ts.jsonl")]:
        a, b = parse(agent, plain).events, parse(agent, ts).events
        strip = {"t_s", "end_s"}
        assert [e.model_dump(exclude=strip) for e in a] == [e.model_dump(exclude=strip) for e in b]


# ---- Claude Code specifics -------------------------------------------------------------------
def test_claude_background_command_ends_with_its_task_events() -> None:
    """The launch acknowledgement gives no exit code; task_updated (the first of the task's
    completion events) ends the command, task_notification's summary gives the code."""
    rel = "claude_code/v2.1_background.jsonl"
    lines = load(rel)
    events = parse("claude-code", rel).events
    first, *_, second = [e for e in of(events, "command") if e.extra.get("background")]
    updated = [i for i, (_, s) in enumerate(lines) if '"subtype":"task_updated"' in s]
    assert first.end_s == float(updated[0]) and second.end_s == float(updated[1])
    assert first.extra["task_id"] == "b2x7k4m9p" and first.extra["status"] == "failed"
    assert first.extra["exit_code_source"] == "system:task_notification"
    # cut before any completion: still running, no exit code
    cut = lines[:updated[0]]
    (running, *_) = of(get_agent("claude-code").parse_events(cut), "command")
    assert running.exit_code is None and running.end_s is None
    assert running.extra["status"] == "running"


def test_claude_bashoutput_poll_and_killshell_end_background_shells() -> None:
    rel = "claude_code/v2.0_bashoutput.jsonl"
    lines = load(rel)
    grpo, server = of(parse("claude-code", rel).events, "command")
    done = next(i for i, (_, s) in enumerate(lines) if "<status>completed</status>" in s)
    killed = next(i for i, (_, s) in enumerate(lines) if "Successfully killed shell" in s)
    assert (grpo.exit_code, grpo.end_s, grpo.extra["exit_code_source"]) == \
        (0, float(done), "tool:BashOutput")
    assert (server.exit_code, server.end_s, server.extra["status"]) == (None, float(killed),
                                                                        "killed")


def test_claude_failed_bash_without_exit_code_prefix_is_debugged_in_the_analysis() -> None:
    """2.0.x: `is_error` alone marks the failure; the re-run of the failed script is then
    labelled debugging by the analysis."""
    from a2rl.analysis import CommandReader
    from a2rl.analysis._phases import turn_phases

    events = parse("claude-code", "claude_code/v2.0_failed_bash.jsonl").events
    failed, rerun = of(events, "command")
    assert failed.exit_code == 1 and failed.extra["exit_code_source"] == "is_error"
    # A script that trains nothing: re-running it after its failure is debugging (a relaunched
    # training script would count as training time instead).
    reader = CommandReader({"code/train.py": "import json\nprint(json.dumps({}))\n"})
    labels, _ = turn_phases(events, reader, horizon=30.0)
    phase = {lab["turn"]: lab["phase"] for lab in labels}
    assert phase[rerun.turn] == "debugging"


def test_claude_rejected_write_is_no_edit_but_stays_a_failed_call() -> None:
    events = parse("claude-code", "claude_code/v2.1_resumed_ts.jsonl").events
    (write,) = [e for e in of(events, "tool_call") if e.name == "Write"]
    assert write.extra["status"] == "error" and of(events, "file_edit") == []


def test_claude_usage_above_the_cli_total_is_corrected_loudly() -> None:
    """Copies of a response the parser cannot tell apart (no message id) overstate the
    stream's usage; the round's result total wins, with a correction event and a warning."""
    def j(obj: object) -> tuple[float, str]:
        return 0.0, json.dumps(obj)

    copy = {"type": "assistant", "message": {"content": [{"type": "text", "text": "hi"}],
                                             "usage": {"input_tokens": 100, "output_tokens": 7}}}
    lines = [j(copy), j(copy), j(copy),
             j({"type": "result", "subtype": "success", "session_id": "s", "total_cost_usd": 0.01,
                "usage": {"input_tokens": 100, "output_tokens": 7}})]
    result = get_agent("claude-code").parse_transcript(lines)
    usage = of(result.events, "usage")
    assert (sum(e.input_tokens or 0 for e in usage), sum(e.output_tokens or 0 for e in usage)) \
        == (100, 7)
    assert usage[-1].extra["correction"] == "1" and (usage[-1].input_tokens or 0) < 0
    assert any("more tokens than the CLI's own total" in w for w in result.report.warnings)


def test_claude_model_usage_restarting_with_each_process() -> None:
    """A CLI whose cumulative modelUsage restarts with each process (not restored by
    --resume): round 2's modelUsage is its own total even when larger than round 1's."""
    def j(obj: object) -> tuple[float, str]:
        return 0.0, json.dumps(obj)

    def response(mid: str, inp: int, out: int) -> tuple[float, str]:
        return j({"type": "assistant", "message": {"id": mid, "content": [],
                  "usage": {"input_tokens": inp, "output_tokens": out}}})

    def result(inp: int, out: int) -> tuple[float, str]:
        return j({"type": "result", "subtype": "success", "session_id": "s",
                  "modelUsage": {"m": {"inputTokens": inp, "outputTokens": out,
                                       "costUSD": 0.001}}})

    lines = [response("a", 1000, 50), result(1000, 50),
             response("b", 3000, 70), response("c", 3500, 80), result(6500, 150)]
    usage = of(get_agent("claude-code").parse_events(lines), "usage")
    assert (sum(e.input_tokens or 0 for e in usage), sum(e.output_tokens or 0 for e in usage)) \
        == (7500, 200)
    assert usage[-1].extra["total_from"] == "modelUsage"
    # restored by --resume instead (cumulative 7500/200 at the second result): the growth
    cumulative = [*lines[:4], result(7500, 200)]
    usage = of(get_agent("claude-code").parse_events(cumulative), "usage")
    assert (sum(e.input_tokens or 0 for e in usage), sum(e.output_tokens or 0 for e in usage)) \
        == (7500, 200)
    assert usage[-1].extra["total_from"] == "modelUsage growth"


def test_claude_repeated_copies_keep_the_final_output_count() -> None:
    """2.0.x prints a response once per content block with the same id; the earlier copies
    carry a provisional output count: one usage event, the largest count."""
    events = parse("claude-code", "claude_code/v2.0_failed_bash.jsonl").events
    per_response = [e for e in of(events, "usage") if e.extra.get("source") != "result"]
    assert [e.output_tokens for e in per_response] == [184, 71, 150, 64, 133, 58, 41]
    (round_event,) = [e for e in of(events, "usage") if e.extra.get("source") == "result"]
    assert (round_event.input_tokens, round_event.output_tokens) == (412, 23)  # the side call


# ---- Gemini and the others -------------------------------------------------------------------
def test_gemini_error_events_are_recorded() -> None:
    events = parse("gemini", "gemini/loop_detected.jsonl").events
    (err,) = [e for e in events if e.extra.get("error") == "1"]
    assert err.text == "Loop detected, stopping execution"
    assert err.extra["type"] == "error:warning"
    result = parse("gemini", "gemini/max_turns.jsonl")
    assert result.report.cli_errors[0] == "error:error: Maximum session turns exceeded"
    assert result.report.cli_errors[1].startswith("result:FatalTurnLimitedError")


def test_openhands_truncated_pretty_event_is_counted_not_lost() -> None:
    rel = "openhands/pretty_truncated.log"
    lines = load(rel)
    last_marker = max(i for i, (_, s) in enumerate(lines) if s == "--JSON Event--")
    result = parse("openhands", rel)
    assert result.report.unparsed_lines == len(lines) - last_marker - 1
    assert result.report.multiline_objects == result.report.json_objects == \
        sum(s == "--JSON Event--" for _, s in lines) - 1
    commands = of(result.events, "command")
    assert [(c.command, c.exit_code) for c in commands] == \
        [("ls -la", 0), (TRAIN, 1), (TRAIN, None)]
    assert result.report.warnings and result.report.unparsed_samples[0].startswith("{")


def test_openhands_sdk_timeout_is_no_exit_code() -> None:
    events = parse("openhands", "openhands/pretty_v1_12_errors_ts.log").events
    first = of(events, "command")[0]
    assert first.exit_code is None and first.extra["timeout"] == "true"


# ---- the shared reader -----------------------------------------------------------------------
def test_reader_prefixes_pretty_objects_and_unreadable_lines() -> None:
    lines = [(0.0, "[2026-04-02T10:11:12.000Z] {\"a\": 1}"), (0.0, "plain log line"),
             (0.0, "[2026-04-02T10:11:14.500Z] --JSON Event--"),
             (0.0, "[2026-04-02T10:11:14.500Z] {"),
             (0.0, "[2026-04-02T10:11:14.500Z]   \"b\": {\"c\": [1,"),
             (0.0, "[2026-04-02T10:11:14.500Z]     2]}"),
             (0.0, "[2026-04-02T10:11:14.500Z] }"),
             (0.0, "{\"truncated\": "), (0.0, "[]"), (0.0, "{"), (0.0, "  \"never\": 1"),
             (0.0, "--JSON Event--"), (0.0, "{\"d\": 4}")]
    report = ParseReport()
    objects = list(TranscriptReader(lines, report).objects())
    assert objects == [(0.0, {"a": 1}), (2.5, {"b": {"c": [1, 2]}}), (2.5, {"d": 4})]
    assert report.multiline_objects == 1 and report.json_objects == 3
    assert report.unparsed_lines == 3  # the cut line and the two lines of the unclosed object
    assert report.timestamp_prefixed == 6 and report.text_lines == 2  # "plain…", "[]"
    # a stray "{" line (a program's output) does not swallow the JSON lines after it
    stray = [(0.0, "{"), (0.0, "not json"), (0.0, "{\"e\": 5}")]
    report = ParseReport()
    assert [o for _, o in TranscriptReader(stray, report).objects()] == [{"e": 5}]
    assert report.unparsed_lines == 1 and report.text_lines == 1
    # arrival times, when the transcript has them, win over the prefixes
    timed = [(7.0, "[2026-04-02T10:11:12.000Z] {\"a\": 1}")]
    assert list(TranscriptReader(timed, ParseReport()).objects()) == [(7.0, {"a": 1})]


def test_a_stream_no_parser_knows_is_reported_not_silent() -> None:
    """A Codex transcript given to the Claude Code parser: no events, and the report says so."""
    result = get_agent("claude-code").parse_transcript(load("codex/exec_current.jsonl"))
    assert result.events == []
    assert result.report.unknown_types["turn.completed"] == 1
    assert any(w.startswith("no events read from 14 transcript lines") for w in
               result.report.warnings)


def test_write_events_writes_the_parse_report(tmp_path: Path) -> None:
    agent_dir = tmp_path / "agent"
    agent_dir.mkdir()
    text = (STREAMS / "opencode" / "killed_ts.jsonl").read_text()
    (agent_dir / "transcript.log").write_text(text.replace("Starting the second",
                                                           "Starting\u2028the second"))
    n = get_agent("opencode").write_events(agent_dir)
    report = json.loads((agent_dir / PARSE_REPORT).read_text())
    assert report["version"] == 1 and report["parser"] == "opencode"
    assert report["events"] == n == len((agent_dir / "events.jsonl").read_text().splitlines())
    # U+2028 inside a JSON line does not split it (the supervisor splits on \n only)
    assert report["unparsed_lines"] == 1 and report["lines"] == len(text.splitlines())
    assert len(list(read_transcript(agent_dir))) == report["lines"]
    texts = [json.loads(x).get("text") for x in (agent_dir / "events.jsonl").read_text()
             .splitlines()]
    assert "Starting\u2028the second training run." in texts
    stored = read_parse_report(agent_dir)
    assert stored is not None and stored.unparsed_samples == report["unparsed_samples"]
    assert read_parse_report(tmp_path) is None


def test_a_transcript_file_of_another_harness_reads_with_its_prefix_times() -> None:
    """read_lines: a file without arrival times (what `a2rl import` hands the parsers)."""
    rel = "claude_code/v2.1_resumed_ts.jsonl"
    lines = read_lines(STREAMS / rel)
    assert lines == load(rel)
    assert read_lines(STREAMS / rel, ["5.5"])[0][0] == 5.5


def test_claude_structured_background_marker_without_known_wording() -> None:
    """2.x prints `tool_use_result.backgroundTaskId` beside a backgrounded command's result:
    it marks the launch even when the text is worded in a way the parser does not know."""
    def j(obj: object) -> tuple[float, str]:
        return 1.0, json.dumps(obj)

    lines = [j({"type": "assistant", "message": {"id": "m1", "content": [
                 {"type": "tool_use", "id": "t1", "name": "Bash",
                  "input": {"command": "python train.py"}}]}}),
             j({"type": "user", "message": {"content": [
                 {"type": "tool_result", "tool_use_id": "t1", "content": "Moved to background."}]},
                "tool_use_result": {"stdout": "", "stderr": "", "interrupted": False,
                                    "backgroundTaskId": "bz1"}}),
             (9.0, json.dumps({"type": "system", "subtype": "task_updated", "task_id": "bz1",
                               "patch": {"status": "completed"}}))]
    (cmd,) = of(get_agent("claude-code").parse_events(lines), "command")
    assert (cmd.exit_code, cmd.end_s, cmd.extra["task_id"]) == (0, 9.0, "bz1")
    assert cmd.extra["exit_code_source"] == "status"


def test_claude_task_event_for_a_finished_foreground_call_changes_nothing() -> None:
    def j(obj: object) -> tuple[float, str]:
        return 1.0, json.dumps(obj)

    lines = [j({"type": "assistant", "message": {"id": "m1", "content": [
                 {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}}]}}),
             j({"type": "user", "message": {"content": [
                 {"type": "tool_result", "tool_use_id": "t1", "content": "a.py"}]}}),
             (2.0, json.dumps({"type": "system", "subtype": "task_notification",
                               "task_id": "bx", "tool_use_id": "t1", "status": "failed",
                               "summary": "failed with exit code 3"}))]
    (cmd,) = of(get_agent("claude-code").parse_events(lines), "command")
    assert (cmd.exit_code, cmd.end_s, cmd.extra) == (0, 1.0, {})


@pytest.mark.parametrize("rel", sorted(str(p.relative_to(STREAMS)) for p in STREAMS.rglob("*")
                                       if p.suffix in (".jsonl", ".log")))
def test_detect_cli_tells_each_format(rel: str) -> None:
    expected = {"claude_code": "claude-code"}.get(rel.split("/")[0], rel.split("/")[0])
    assert detect_cli(load(rel)) == expected


def test_detect_cli_on_the_recorded_pinned_streams_and_on_noise() -> None:
    fixtures = Path(__file__).parent.parent / "fixtures"
    for name, agent in [("claude_code_stream.jsonl", "claude-code"), ("codex_stream.jsonl",
                        "codex"), ("gemini_stream.jsonl", "gemini"),
                        ("opencode_stream.jsonl", "opencode"),
                        ("openhands_stream.jsonl", "openhands")]:
        assert detect_cli(read_lines(fixtures / name)) == agent
    assert detect_cli([(0.0, "plain"), (0.0, "{\"x\": 1}")]) is None


@pytest.mark.parametrize("name,agent", [
    ("claude_code_stream.jsonl", "claude-code"), ("codex_stream.jsonl", "codex"),
    ("gemini_stream.jsonl", "gemini"), ("opencode_stream.jsonl", "opencode"),
    ("openhands_stream.jsonl", "openhands")])
def test_recorded_pinned_streams_read_the_same_when_prefixed(name: str, agent: str) -> None:
    """The recorded streams of the pinned CLIs, stored the PostTrainBench way (prefix on
    every line, seconds precision, no arrival times): the same events, times from prefixes."""
    lines = read_lines(Path(__file__).parent.parent / "fixtures" / name)
    prefixed = [(0.0, f"[2026-04-03T14:{i // 60 % 60:02d}:{i % 60:02d}Z] {text}")
                for i, (_, text) in enumerate(lines)]
    plain = get_agent(agent).parse_transcript([(float(i), s) for i, (_, s) in enumerate(lines)])
    stamped = get_agent(agent).parse_transcript(prefixed)
    strip = {"t_s", "end_s"}
    assert [e.model_dump(exclude=strip) for e in stamped.events] == \
        [e.model_dump(exclude=strip) for e in plain.events] != []
    assert stamped.report.timestamp_prefixed == len(lines)
    assert max(e.t_s for e in stamped.events) > 0
    # every line of the real streams is read: nothing unknown, nothing unreadable
    for report in (plain.report, stamped.report):
        assert report.unknown_types == {} and report.unparsed_lines == 0
        assert report.warnings == []
        assert report.harness_lines == sum('"a2rl_session"' in s for _, s in lines)


def test_claude_session_file_takes_times_from_its_timestamps() -> None:
    """A session file read without arrival times: each line's own `timestamp` (4 s apart)."""
    events = get_agent("claude-code").parse_events(
        read_lines(STREAMS / "claude_code" / "session_file_v2.0.jsonl"))
    train, smi = of(events, "command")
    # lines: prompt 0 s, text 4, Bash call 8, launch 12, poll 16, its result 20, nvidia-smi 24…
    assert (train.t_s, train.end_s, smi.t_s, smi.end_s) == (8.0, 20.0, 24.0, 28.0)
    assert train.extra["exit_code_source"] == "tool:BashOutput"
