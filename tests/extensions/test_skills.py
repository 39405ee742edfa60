"""The skill library scaffold: the shipped skills, the read-only mount (also inside bwrap, with
reads traced by strace), skills the agent writes, and counting reads from an exec trace and a
transcript."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from a2rl._errors import A2RLError
from a2rl.agents import get_agent
from a2rl.capture import parse_exec_log
from a2rl.extensions.exec_trace import strace_available, traced_command
from a2rl.extensions.scaffold._library import (
    CREATED_DIR,
    LIBRARY_DIR,
    RECORD_DIR,
    check_skill,
    library_source,
    parse_front_matter,
    read_library,
)
from a2rl.extensions.scaffold._mount import mount_skills, prepare_skills
from a2rl.extensions.scaffold._usage import count_skill_reads, load_skill_usage, skill_consults
from a2rl.schema import AgentEvent

REQUIRED = {"post-training-pitfalls", "diagnose-silent-rl-failures", "trainer-data-formats",
            "monitor-training-run", "chat-template-alignment", "create-skill"}
MY_SKILL = "---\nname: my-lesson\ndescription: What I learnt about rewards.\n---\n\n# Body\n"


def _run(tmp_path: Path) -> tuple[Path, Path]:
    ws, run_dir = tmp_path / "run" / "workspace", tmp_path / "run"
    ws.mkdir(parents=True)
    (run_dir / "agent").mkdir()
    return ws, run_dir


def test_shipped_library_follows_the_convention() -> None:
    skills = read_library(library_source())
    assert REQUIRED <= {s.name for s in skills}
    for skill in skills:
        text = (library_source() / skill.name / "SKILL.md").read_text()
        meta, problems = parse_front_matter(text)
        assert not problems and meta["name"] == skill.name
        assert 40 <= len(skill.description) <= 1024
        assert 1200 <= len(text.encode()) <= 6000, f"{skill.name}: about a page"


def test_front_matter_checks() -> None:
    assert parse_front_matter("no front matter")[1]
    assert parse_front_matter("---\nname: x\n")[1] == ["the front matter has no closing `---` line"]
    meta, _ = parse_front_matter('---\nname: "a-b"\ndescription: >\n  folded\n  text\n---\n')
    assert meta == {"name": "a-b", "description": "folded text"}


def test_prepare_mounts_read_only_and_records_the_library(tmp_path: Path) -> None:
    ws, run_dir = _run(tmp_path)
    mount = prepare_skills(ws, run_dir)
    assert mount.library == ws.resolve() / LIBRARY_DIR and mount.read_only == [mount.library]
    assert (mount.library / "create-skill" / "SKILL.md").stat().st_mode & 0o222 == 0
    assert mount.library.stat().st_mode & 0o222 == 0
    assert mount.created.is_dir() and os.access(mount.created, os.W_OK)
    manifest = json.loads((run_dir / RECORD_DIR / "library.json").read_text())
    assert {s["name"] for s in manifest["skills"]} >= REQUIRED
    assert all(len(f["sha256"]) == 64 for s in manifest["skills"] for f in s["files"])
    index = mount.index_markdown()
    assert all(f"skills/{name}/SKILL.md" in index for name in REQUIRED)
    assert f"{CREATED_DIR}/<name>/SKILL.md" in index
    with pytest.raises(A2RLError, match="already exists"):
        prepare_skills(ws, run_dir)
    with pytest.raises(A2RLError, match="not made with --scaffold skills"):
        count_skill_reads(tmp_path)


def test_mount_skills_is_the_scaffolds_entry_point(tmp_path: Path) -> None:
    """`a2rl.scaffold._workspace.install` calls `mount_skills(workspace)` and uses
    `read_only` and `instructions`; the records go to the run directory, the workspace's
    parent."""
    ws, run_dir = _run(tmp_path)
    mount = mount_skills(ws)
    assert mount.read_only == [ws.resolve() / LIBRARY_DIR]
    assert mount.instructions == mount.index_markdown() and "## Skills" in mount.instructions
    assert (run_dir / RECORD_DIR / "library.json").is_file()
    inner = tmp_path / "other"
    inner.mkdir()
    with pytest.raises(A2RLError, match="inside the workspace"):
        mount_skills(inner, run_dir=inner / "sub")


def _bwrap():
    from a2rl.sandbox import get_sandbox

    try:
        box = get_sandbox("bwrap")
        box.probe()
    except A2RLError as exc:
        pytest.skip(f"bwrap cannot start here: {exc.message}")
    return box


def test_inside_bwrap_the_library_is_read_only_and_every_read_is_traced(tmp_path: Path) -> None:
    box = _bwrap()
    strace = strace_available()
    if strace is None:
        pytest.skip("strace is not installed")
    ws, run_dir = _run(tmp_path)
    mount = prepare_skills(ws, run_dir)
    script = (
        "cat skills/post-training-pitfalls/SKILL.md > /dev/null; "
        f"{sys.executable} -c \"open('skills/trainer-data-formats/SKILL.md').read()\"; "
        "(echo x > skills/create-skill/SKILL.md) 2>/dev/null && echo WROTE || echo REFUSED; "
        "mkdir -p new-skills/my-lesson\n"
        f"cat > new-skills/my-lesson/SKILL.md <<'EOF'\n{MY_SKILL}EOF\n"
        "cat new-skills/my-lesson/SKILL.md > /dev/null; ls skills > /dev/null")
    argv = box.wrap(["sh", "-c", script], workspace=ws, read_only=mount.read_only)
    log = run_dir / "agent" / "exec.log"
    traced = traced_command(argv, strace=strace, log=log, extra_syscalls=mount.trace_syscalls)
    import time

    t0 = time.time()
    out = subprocess.run(traced, capture_output=True, text=True, timeout=120, cwd=ws)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "REFUSED" in out.stdout
    events = parse_exec_log(log.read_text(), t0, hide=[[argv[0]]])
    (run_dir / "agent" / "exec.jsonl").write_text("".join(e.model_dump_json() + "\n" for e in events))
    usage = count_skill_reads(run_dir)
    assert usage.traced_opens and usage.library_modified == []
    by = {(c.origin, c.skill): c for c in usage.per_skill}
    assert by[("library", "post-training-pitfalls")].opens == 1
    assert by[("library", "trainer-data-formats")].opens == 1
    assert by[("library", "create-skill")].consults == 0  # the refused write is no read
    assert by[("created", "my-lesson")].opens == 1  # cat, not the shell's write
    assert {r.detail for r in usage.reads if r.source == "open"} >= {"cat"}
    assert [c.name for c in usage.created] == ["my-lesson"] and usage.created[0].valid
    kept = run_dir / RECORD_DIR / "created" / "my-lesson" / "SKILL.md"
    assert kept.read_text() == MY_SKILL


def _exec_log(ws: Path) -> str:
    lines = [
        '100 1000.000000 execve("/usr/bin/cat", ["cat", "skills/monitor-training-run/SKILL.md"],'
        ' 0x1 /* 9 vars */) = 0',
        '100 1000.001000 openat(AT_FDCWD, "skills/monitor-training-run/SKILL.md", O_RDONLY) = 3',
        '100 1000.002000 openat(AT_FDCWD, "skills/monitor-training-run/SKILL.md", O_RDONLY) = 3',
        f'101 1000.500000 openat(AT_FDCWD, "{ws}/skills/chat-template-alignment/SKILL.md", '
        'O_RDONLY|O_CLOEXEC <unfinished ...>',
        '102 1000.500100 openat(AT_FDCWD, "skills/not-a-skill/SKILL.md", O_RDONLY) = 3',
        '101 1000.600000 <... openat resumed>) = 4',
        '103 1001.000000 openat(AT_FDCWD, "skills/create-skill/SKILL.md", O_RDONLY) = -1 ENOENT '
        '(No such file or directory)',
        '104 1002.000000 openat(AT_FDCWD, "new-skills/my-lesson/SKILL.md", '
        'O_WRONLY|O_CREAT|O_TRUNC, 0666) = 3',
        '105 1003.000000 openat(AT_FDCWD, "skills", O_RDONLY|O_NONBLOCK|O_CLOEXEC|O_DIRECTORY) = 3',
        '100 1010.000000 openat(AT_FDCWD, "skills/monitor-training-run/SKILL.md", O_RDONLY) = 3',
        '100 1010.100000 +++ exited with 0 +++',
    ]
    return "\n".join(lines) + "\n"


def _claude(obj_type: str, content: list[dict], msg_id: str = "") -> dict:
    if obj_type == "assistant":
        return {"type": "assistant", "message": {
            "model": "claude-sonnet-4-5", "id": msg_id, "type": "message", "role": "assistant",
            "content": content, "usage": {"input_tokens": 3, "output_tokens": 20}},
            "parent_tool_use_id": None, "session_id": "s1"}
    return {"type": "user", "message": {"role": "user", "content": content},
            "parent_tool_use_id": None, "session_id": "s1"}


def _tool_result(call_id: str, text: str) -> dict:
    return {"tool_use_id": call_id, "type": "tool_result", "content": text}


def _transcripts(ws: Path) -> dict[str, list[tuple[float, dict]]]:
    """What four CLIs wrote (stream shapes of tests/fixtures/streams), by agent, with the time
    of each line: reads by file tools and by a shell, writes of the agent's own skill, and
    skill paths only in the model's text or a tool's output."""
    read = {"type": "tool_use", "id": "toolu_1", "name": "Read",
            "input": {"file_path": f"{ws}/skills/diagnose-silent-rl-failures/SKILL.md"}}
    return {
        "claude-code": [
            (0.5, {"type": "system", "subtype": "init", "cwd": str(ws), "session_id": "s1",
                   "model": "claude-sonnet-4-5"}),
            (1.5, {"type": "stream_event", "event": {"type": "content_block_start",
                                                     "content_block": {**read, "input": {}}}}),
            (2.5, _claude("assistant", [read], "m1")),
            (3.5, _claude("assistant", [read], "m1")),  # re-emitted
            (3.6, _claude("user", [_tool_result(
                "toolu_1", "mentions skills/fast-generation-vllm/SKILL.md")])),
            (4.0, _claude("assistant", [
                {"type": "tool_use", "id": "toolu_2", "name": "Bash",
                 "input": {"command": "cat skills/post-training-pitfalls/SKILL.md | head"}},
                {"type": "tool_use", "id": "toolu_3", "name": "Bash",
                 "input": {"command": "cat > new-skills/my-lesson/SKILL.md <<'EOF'\n...\nEOF"}},
            ], "m2")),
            (4.5, _claude("user", [_tool_result("toolu_2", "# Post-training pitfalls"),
                                   _tool_result("toolu_3", "")])),
            (5.0, _claude("assistant", [
                {"type": "tool_use", "id": "toolu_4", "name": "Write",
                 "input": {"file_path": f"{ws}/new-skills/my-lesson/SKILL.md",
                           "content": MY_SKILL}},
                {"type": "text", "text": "see skills/lora-and-checkpoints/SKILL.md later"}],
                "m3")),
            (5.5, _claude("user", [_tool_result("toolu_4", "File created successfully")])),
        ],
        "gemini": [
            (6.0, {"type": "tool_use", "tool_name": "read_file", "tool_id": "g1",
                   "parameters": {"file_path": "skills/fast-generation-vllm/SKILL.md"}}),
            (6.5, {"type": "tool_result", "tool_id": "g1", "status": "success",
                   "output": "# Fast generation"}),
        ],
        "openhands": [
            (7.0, {"id": "e1", "kind": "ActionEvent", "source": "agent",
                   "tool_name": "file_editor", "tool_call_id": "oh1", "llm_response_id": "r1",
                   "action": {"command": "view", "kind": "FileEditorAction",
                              "path": f"{ws}/skills/trainer-data-formats/SKILL.md"},
                   "thought": []}),
        ],
        "opencode": [
            (8.0, {"type": "tool_use", "sessionID": "ses_1", "part": {
                "id": "prt_1", "sessionID": "ses_1", "messageID": "msg_1", "type": "tool",
                "callID": "oc1", "tool": "read", "state": {
                    "status": "completed", "input": {"filePath": "skills/create-skill/x.md"},
                    "output": "", "title": "read", "metadata": {}}}}),
        ],
    }


def _agent_events(ws: Path) -> list[AgentEvent]:
    """The launchers' own parsers' reading of `_transcripts` (agent/events.jsonl)."""
    events: list[AgentEvent] = []
    for cli, lines in _transcripts(ws).items():
        parsed = get_agent(cli).parse_transcript([(t, json.dumps(obj)) for t, obj in lines])
        events += parsed.events
    return events


def _fixture_run(tmp_path: Path, *, with_opens: bool = True) -> tuple[Path, Path]:
    ws, run_dir = _run(tmp_path)
    prepare_skills(ws, run_dir)
    ws = ws.resolve()
    agent = run_dir / "agent"
    text = _exec_log(ws)
    if not with_opens:
        text = "\n".join(line for line in text.splitlines() if "open" not in line) + "\n"
    (agent / "exec.log").write_text(text)
    events = parse_exec_log(text, 999.0)
    (agent / "exec.jsonl").write_text("".join(e.model_dump_json() + "\n" for e in events))
    (agent / "events.jsonl").write_text("".join(e.model_dump_json() + "\n"
                                                for e in _agent_events(ws)))
    created = ws / CREATED_DIR
    (created / "my-lesson").mkdir()
    (created / "my-lesson" / "SKILL.md").write_text(MY_SKILL)
    (created / "my-lesson" / "leak").symlink_to("/etc/hostname")
    (created / "Bad_Name").mkdir()
    (created / "Bad_Name" / "SKILL.md").write_text("---\nname: other\n---\n")
    (created / "evil").symlink_to("/etc")
    return ws, run_dir


def test_reads_are_counted_from_a_fixture_trace_and_transcript(tmp_path: Path) -> None:
    _, run_dir = _fixture_run(tmp_path)
    usage = count_skill_reads(run_dir)
    assert usage.traced_opens and usage.transcript_read and not usage.warnings
    by = {(c.origin, c.skill): c for c in usage.per_skill}
    lib = {name: (c.opens, c.execs, c.transcript, c.consults)
           for (origin, name), c in by.items() if origin == "library"}
    assert lib["monitor-training-run"] == (2, 1, 0, 2)  # 3 opens: two within 2 s merged
    assert lib["chat-template-alignment"] == (1, 0, 0, 1)  # split by <unfinished ...>
    assert lib["diagnose-silent-rl-failures"] == (0, 0, 1, 1)  # one Read, re-emitted
    assert lib["post-training-pitfalls"] == (0, 0, 1, 1)  # a shell command (events.jsonl)
    assert lib["fast-generation-vllm"] == (0, 0, 1, 1)  # Gemini; not the tool result's text
    assert lib["trainer-data-formats"] == (0, 0, 1, 1)  # OpenHands view
    assert lib["create-skill"] == (0, 0, 1, 1)  # OpenCode read; the failed open is no read
    assert lib["lora-and-checkpoints"] == (0, 0, 0, 0)  # named only in the model's text
    assert ("created", "my-lesson") not in by  # written (Write, heredoc, O_CREAT), never read
    assert usage.total_consults == 8
    first = by[("library", "monitor-training-run")].first_s
    assert first == pytest.approx(1.0, abs=1e-3)  # the exec's time base (t0 = 999)
    assert by[("library", "diagnose-silent-rl-failures")].first_s == pytest.approx(2.5)
    created = {c.name: c for c in usage.created}
    assert set(created) == {"my-lesson", "Bad_Name"}
    assert created["my-lesson"].valid and created["my-lesson"].written_s == 5.0
    assert [f.path for f in created["my-lesson"].files] == ["SKILL.md"]  # the link is not kept
    assert not created["Bad_Name"].valid and len(created["Bad_Name"].problems) >= 2
    assert not (run_dir / RECORD_DIR / "created" / "my-lesson" / "leak").exists()
    assert load_skill_usage(run_dir) == usage
    consults = skill_consults(run_dir)
    assert consults["monitor-training-run"] == 2 and consults["lora-and-checkpoints"] == 0


def test_without_traced_opens_reads_come_from_command_lines(tmp_path: Path) -> None:
    _, run_dir = _fixture_run(tmp_path, with_opens=False)
    usage = count_skill_reads(run_dir)
    assert not usage.traced_opens and any("did not record opens" in w for w in usage.warnings)
    monitor = next(c for c in usage.per_skill if c.skill == "monitor-training-run")
    assert (monitor.opens, monitor.execs, monitor.consults) == (0, 1, 1)


def test_a_modified_library_is_reported(tmp_path: Path) -> None:
    ws, run_dir = _run(tmp_path)
    mount = prepare_skills(ws, run_dir)
    target = mount.library / "create-skill" / "SKILL.md"
    (mount.library / "create-skill").chmod(0o755)
    target.chmod(0o644)  # what an unsandboxed agent can do to its own files
    target.write_text("rewritten")
    (mount.library / "create-skill" / "extra.md").write_text("new")
    usage = count_skill_reads(run_dir)
    assert usage.library_modified == ["create-skill/SKILL.md", "create-skill/extra.md"]
    assert not usage.traced_execs and any("no exec trace" in w for w in usage.warnings)
    description, problems = check_skill(mount.library / "create-skill")
    assert problems and description == ""


def test_exec_log_keeps_calls_that_strace_split() -> None:
    """Parallel processes make strace split an execve over two lines; both execs count."""
    text = "\n".join([
        '7 10.000 execve("/usr/bin/cat", ["cat", "a"], 0x1 /* 3 vars */ <unfinished ...>',
        '8 10.001 execve("/usr/bin/cat", ["cat", "b"], 0x1 /* 3 vars */ <unfinished ...>',
        '8 10.002 openat(AT_FDCWD, "x", O_RDONLY) = 3',
        '7 10.003 <... execve resumed>) = 0',
        '8 10.004 <... execve resumed>) = 0',
        '7 10.100 +++ exited with 0 +++',
        '8 10.200 +++ exited with 1 +++'])
    events = parse_exec_log(text, 10.0)
    assert [(e.argv, e.start_s, e.exit_code) for e in events] == [
        (["cat", "a"], 0.0, 0), (["cat", "b"], 0.001, 1)]


# ---- reads in each CLI's own stream, as its launcher writes agent/events.jsonl ---------------
# Each CLI reads `trainer-data-formats` with its file tool (Codex, which has none, with `sed`)
# and `chat-template-alignment` with a shell `cat`; the model's text claims reads of
# `post-training-pitfalls` and of a skill that does not exist, and a command's output names
# `monitor-training-run`: neither is a read.
_CLAIM = ("I read skills/post-training-pitfalls/SKILL.md and skills/no-such-skill/SKILL.md; "
          "see new-skills/ghost/SKILL.md")
_OUTPUT = "hint: skills/monitor-training-run/SKILL.md"
_CAT = "cat skills/chat-template-alignment/SKILL.md"


def _codex(ws: Path) -> list[dict]:
    def shell(item: str, command: str) -> list[dict]:
        wrapped = f"/bin/bash -lc '{command}'"
        return [{"type": "item.started", "item": {
                    "id": item, "type": "command_execution", "command": wrapped,
                    "aggregated_output": "", "exit_code": None, "status": "in_progress"}},
                {"type": "item.completed", "item": {
                    "id": item, "type": "command_execution", "command": wrapped,
                    "aggregated_output": _OUTPUT, "exit_code": 0, "status": "completed"}}]

    return [{"type": "thread.started", "thread_id": "th1"}, {"type": "turn.started"},
            *shell("item_1", "sed -n 1,80p skills/trainer-data-formats/SKILL.md"),
            *shell("item_2", _CAT),
            {"type": "item.completed", "item": {"id": "item_3", "type": "agent_message",
                                                "text": _CLAIM}},
            {"type": "turn.completed", "usage": {"input_tokens": 900, "cached_input_tokens": 0,
                                                 "output_tokens": 40}}]


def _claude_code(ws: Path) -> list[dict]:
    return [
        {"type": "system", "subtype": "init", "cwd": str(ws), "session_id": "s1",
         "model": "claude-sonnet-4-5"},
        _claude("assistant", [{"type": "tool_use", "id": "toolu_r", "name": "Read", "input": {
            "file_path": f"{ws}/skills/trainer-data-formats/SKILL.md"}}], "m1"),
        _claude("user", [_tool_result("toolu_r", _OUTPUT)]),
        _claude("assistant", [{"type": "tool_use", "id": "toolu_b", "name": "Bash",
                               "input": {"command": _CAT, "description": "Read a skill"}}], "m2"),
        _claude("user", [_tool_result("toolu_b", _OUTPUT)]),
        _claude("assistant", [{"type": "text", "text": _CLAIM}], "m3"),
        {"type": "result", "subtype": "success", "is_error": False, "result": _CLAIM,
         "usage": {"input_tokens": 9, "output_tokens": 60}, "total_cost_usd": 0.01},
    ]


def _gemini(ws: Path) -> list[dict]:
    return [
        {"type": "init", "session_id": "g", "model": "gemini-2.5-pro"},
        {"type": "tool_use", "tool_name": "read_file", "tool_id": "read_file-1",
         "parameters": {"absolute_path": f"{ws}/skills/trainer-data-formats/SKILL.md"}},
        {"type": "tool_result", "tool_id": "read_file-1", "status": "success", "output": _OUTPUT},
        {"type": "tool_use", "tool_name": "run_shell_command", "tool_id": "run_shell_command-2",
         "parameters": {"command": _CAT, "description": "Read a skill"}},
        {"type": "tool_result", "tool_id": "run_shell_command-2", "status": "success",
         "output": _OUTPUT},
        {"type": "message", "role": "assistant", "content": _CLAIM, "delta": True},
        {"type": "result", "status": "success", "stats": {"input_tokens": 900,
                                                          "output_tokens": 40}},
    ]


def _opencode(ws: Path) -> list[dict]:
    def tool(call: str, name: str, given: dict) -> dict:
        return {"type": "tool_use", "sessionID": "ses_1", "part": {
            "id": f"prt_{call}", "sessionID": "ses_1", "messageID": "msg_1", "type": "tool",
            "callID": call, "tool": name, "state": {
                "status": "completed", "input": given, "output": _OUTPUT, "title": name,
                "metadata": {"output": _OUTPUT, "exit": 0}}}}

    return [tool("call_r", "read", {"filePath": f"{ws}/skills/trainer-data-formats/SKILL.md"}),
            tool("call_b", "bash", {"command": _CAT, "description": "Read a skill"}),
            {"type": "text", "sessionID": "ses_1", "part": {
                "id": "prt_t", "sessionID": "ses_1", "messageID": "msg_2", "type": "text",
                "text": _CLAIM}}]


def _openhands(ws: Path) -> list[dict]:
    def action(call: str, tool: str, given: dict) -> dict:
        return {"id": f"a-{call}", "kind": "ActionEvent", "source": "agent", "tool_name": tool,
                "tool_call_id": call, "llm_response_id": f"r-{call}", "action": given,
                "thought": [], "security_risk": "LOW"}

    def observation(call: str, tool: str) -> dict:
        return {"id": f"o-{call}", "kind": "ObservationEvent", "source": "environment",
                "tool_name": tool, "tool_call_id": call, "observation": {
                    "content": [{"type": "text", "text": _OUTPUT}], "error": False,
                    "kind": "TerminalObservation" if tool == "terminal" else
                    "FileEditorObservation", "exit_code": 0}}

    return [action("t1", "file_editor", {"command": "view", "kind": "FileEditorAction",
                                         "path": f"{ws}/skills/trainer-data-formats/SKILL.md"}),
            observation("t1", "file_editor"),
            action("t2", "terminal", {"command": _CAT, "kind": "TerminalAction",
                                      "is_input": False}),
            observation("t2", "terminal"),
            {"id": "m1", "kind": "MessageEvent", "source": "agent", "llm_message": {
                "role": "assistant", "content": [{"type": "text", "text": _CLAIM}]}}]


@pytest.mark.parametrize("cli, stream", [
    ("claude-code", _claude_code), ("codex", _codex), ("gemini", _gemini),
    ("opencode", _opencode), ("openhands", _openhands)])
def test_reads_in_each_cli_s_normalised_events_count_and_claimed_paths_do_not(
        tmp_path: Path, cli: str, stream) -> None:
    ws, run_dir = _run(tmp_path)
    mount = prepare_skills(ws, run_dir)
    agent_dir = run_dir / "agent"
    lines = [json.dumps(obj) for obj in stream(ws.resolve())]
    (agent_dir / "transcript.log").write_text("\n".join(lines) + "\n")
    (agent_dir / "transcript.times").write_text("\n".join(str(1.0 + i) for i in range(len(lines))))
    (agent_dir / "prompt.md").write_text(mount.instructions)  # names every skill's path
    assert get_agent(cli).write_events(agent_dir) > 0  # the launcher's own events.jsonl
    usage = count_skill_reads(run_dir)
    assert usage.transcript_read and not usage.traced_execs
    consults = {c.skill: (c.transcript, c.consults) for c in usage.per_skill}
    assert consults["trainer-data-formats"] == (1, 1), usage.reads
    assert consults["chat-template-alignment"] == (1, 1), usage.reads  # once: the command
    assert consults["post-training-pitfalls"] == (0, 0)  # only claimed in the model's text
    assert consults["monitor-training-run"] == (0, 0)  # only in a tool's output
    assert "no-such-skill" not in consults and "ghost" not in consults
    assert usage.total_consults == 2


def test_file_opens_keep_hostile_paths_whole() -> None:
    """Opened paths are the agent's to choose: a quote, `) = 3` or a newline inside one is
    strace-escaped and must come back as named, with the flags after it, not inside it."""
    from a2rl.capture import parse_file_opens

    odd = 'skills/x/a\\") = 3, O_DIRECTORY\\nb.md'
    text = "\n".join([
        '9 20.000 execve("/usr/bin/python3", ["python3", "r.py"], 0x1 /* 2 vars */) = 0',
        f'9 20.100 openat(AT_FDCWD, "{odd}", O_RDONLY|O_CLOEXEC) = 3',
        '9 20.200 openat2(AT_FDCWD, "skills/x/SKILL.md", {flags=O_RDONLY, resolve=0}, 24) = 4',
        '9 20.300 open("skills/x/out.md", O_WRONLY|O_CREAT|O_TRUNC, 0644) = 5',
        '9 20.400 openat(AT_FDCWD, "skills/x/gone.md", O_RDONLY) = -1 ENOENT (No such file)',
        '9 20.500 openat(AT_FDCWD, "/usr/lib/libc.so.6", O_RDONLY) = 6',
        '9 20.600 +++ exited with 0 +++'])
    opens, traced = parse_file_opens(text, 20.0, keep=lambda p: p.startswith("skills/"))
    assert traced
    assert [(o.path, o.t_s, o.for_reading, o.program) for o in opens] == [
        ('skills/x/a") = 3, O_DIRECTORY\nb.md', 0.1, True, "/usr/bin/python3"),
        ("skills/x/SKILL.md", 0.2, True, "/usr/bin/python3"),
        ("skills/x/out.md", 0.3, False, "/usr/bin/python3")]
    assert parse_file_opens(text.replace("open", "stat"), 20.0, keep=lambda p: True) == ([], False)
