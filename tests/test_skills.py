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
from a2rl.extensions.exec_trace import strace_available, traced_command
from a2rl.extensions.scaffold._skills import (
    CREATED_DIR,
    LIBRARY_DIR,
    RECORD_DIR,
    check_skill,
    count_skill_reads,
    library_source,
    load_skill_usage,
    mount_skills,
    parse_front_matter,
    prepare_skills,
    read_library,
    skill_consults,
)
from a2rl.recording import parse_exec_log

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


def _transcript(ws: Path) -> list[dict]:
    read = {"type": "tool_use", "id": "toolu_1", "name": "Read",
            "input": {"file_path": f"{ws}/skills/diagnose-silent-rl-failures/SKILL.md"}}
    return [
        {"type": "stream_event", "event": {"type": "content_block_start", "content_block":
                                           {**read, "input": {}}}},
        {"type": "assistant", "message": {"id": "m1", "content": [read]}},
        {"type": "assistant", "message": {"id": "m1", "content": [read]}},  # re-emitted
        {"type": "assistant", "message": {"id": "m2", "content": [
            {"type": "tool_use", "id": "toolu_2", "name": "Bash",
             "input": {"command": "cat skills/post-training-pitfalls/SKILL.md | head"}},
            {"type": "tool_use", "id": "toolu_3", "name": "Write",
             "input": {"file_path": f"{ws}/new-skills/my-lesson/SKILL.md", "content": MY_SKILL}},
            {"type": "text", "text": "see skills/lora-and-checkpoints/SKILL.md later"}]}},
        {"type": "user", "message": {"content": [
            {"type": "tool_result", "tool_use_id": "toolu_1",
             "content": "mentions skills/fast-generation-vllm/SKILL.md"}]}},
        {"type": "tool_use", "tool_name": "read_file", "tool_id": "g1",  # Gemini CLI
         "parameters": {"file_path": "skills/fast-generation-vllm/SKILL.md"}},
        {"kind": "ActionEvent", "tool_name": "file_editor", "tool_call_id": "oh1",  # OpenHands
         "action": {"command": "view", "path": f"{ws}/skills/trainer-data-formats/SKILL.md"}},
        {"type": "tool_use", "part": {"tool": "read", "callID": "oc1",  # OpenCode
                                      "state": {"input": {"filePath": "skills/create-skill/x.md"}}}},
        {"type": "response_item", "payload": {"type": "function_call", "name": "shell",  # Codex
                                              "call_id": "c1", "arguments": json.dumps(
            {"command": ["bash", "-lc", "cat skills/monitor-training-run/SKILL.md"]})}},
    ]


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
    lines = [json.dumps(obj) for obj in _transcript(ws)] + ["plain stderr line", "{broken"]
    (agent / "transcript.log").write_text("\n".join(lines) + "\n")
    (agent / "transcript.times").write_text("\n".join(str(1.5 + i) for i in range(len(lines))))
    (agent / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in [
        {"kind": "command", "turn": 1, "t_s": 3.0,
         "command": "cat skills/post-training-pitfalls/SKILL.md | head"},
        {"kind": "command", "turn": 2, "t_s": 4.0,
         "command": "cat > new-skills/my-lesson/SKILL.md <<'EOF'\n...\nEOF"},
        {"kind": "file_edit", "turn": 2, "t_s": 5.0, "path": "new-skills/my-lesson/SKILL.md"},
    ]))
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
