"""Adversarial pass four: records the agent can blind or bend with names and arguments.

- a file name git C-quotes (accents, quotes, backslashes, control or non-UTF-8 bytes) must not
  hide the agent's code from the analysis;
- an argument that looks like the end of strace's argv list (`'], '`) must not hide the
  arguments after it from the labeller and the audit (a real strace run).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from a2rl.capture import CodeRecorder, parse_exec_log, snapshot_files

HOSTILE_NAMES = ["données.py", 'quo"te.py', "back\\slash.py", "ctl\x01name.py", "tab\tname.py"]


def test_quoted_file_names_keep_their_code_in_the_snapshot(tmp_path: Path) -> None:
    run, ws = tmp_path / "run", tmp_path / "run" / "workspace"
    (ws / "code").mkdir(parents=True)
    for i, name in enumerate(HOSTILE_NAMES):
        (ws / "code" / name).write_text(f"import trl  # file {i}\n")
    raw = os.fsencode(ws / "code") + b"/latin1-\xe9.py"  # not UTF-8 at all
    with open(raw, "wb") as f:
        f.write(b"x = 1\n")
    CodeRecorder(run, ws).snapshot("t0001", 1.0)
    commit = json.loads((run / "code-history.jsonl").read_text().splitlines()[-1])["commit"]
    files = snapshot_files(run, commit)
    for i, name in enumerate(HOSTILE_NAMES):
        assert files[f"code/{name}"] == f"import trl  # file {i}\n"
    assert [v for k, v in files.items() if k.startswith("code/latin1-")] == ["x = 1\n"]


@pytest.mark.skipif(shutil.which("strace") is None, reason="strace is not installed")
def test_an_argument_shaped_like_the_end_of_argv_hides_nothing(tmp_path: Path) -> None:
    from a2rl.extensions.exec_trace import traced_command  # the tracer's own command line

    log = tmp_path / "exec.log"
    t0 = time.time()
    argv = ["/bin/echo", "probe", "], ", "--hidden", "data/x.jsonl", '"], "', "tail"]
    done = subprocess.run(traced_command(argv, strace=shutil.which("strace") or "", log=log),
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    events = [e for e in parse_exec_log(log.read_text(), t0) if e.program == "/bin/echo"]
    assert [e.argv for e in events] == [argv]


def _own_group(argv: list[str], cwd: Path, env: dict[str, str] | None = None
               ) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(argv, cwd=cwd, env=env, start_new_session=True,
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    for _ in range(500):  # until the exec is done (its environment and command line are final)
        with open(f"/proc/{proc.pid}/cmdline", "rb") as fh:
            if fh.read().startswith(os.fsencode(argv[0])):
                break
        time.sleep(0.01)
    return proc


def _dead_pid() -> int:
    done = subprocess.Popen(["true"])
    done.wait()
    return done.pid


def test_repair_kills_the_run_s_marked_processes_and_no_bystander(tmp_path: Path) -> None:
    """An operator's shell whose working directory is the run folder and a `tail -f` of its
    summary are no leftovers; nor is a process whose proof a forged record copies from /proc.
    A process started with the run's mark is."""
    import datetime as dt

    from a2rl.runner._lifecycle import RUN_MARK_ENV, mark_sha256, process_proof, repair_run
    from a2rl.schema import RunConfig, RunRecord

    run_dir = tmp_path / "runs" / "arith" / "r1"
    (run_dir / "workspace").mkdir(parents=True)
    (run_dir / "summary.md").write_text("# run r1\n")
    plain = {k: v for k, v in os.environ.items() if k != RUN_MARK_ENV}
    shell = _own_group(["sh", "-c", "sleep 300"], run_dir, plain)
    tail = _own_group(["tail", "-f", str(run_dir / "summary.md")], tmp_path, plain)
    leftover = _own_group(["sleep", "301"], run_dir, {**plain, RUN_MARK_ENV: "mark-of-r1"})
    try:
        config = RunConfig(task="arith", agent="cmd:x", model="m", mode="free", budget_s=60,
                           sandbox="bwrap", eval_timeout_s=60, grace_s=1, port=0,
                           runs_dir=str(tmp_path / "runs"))
        record = RunRecord(run_id="r1", status="running", created_at=dt.datetime.now(dt.UTC),
                           config=config, versions={}, sandboxed=True, harness_pid=_dead_pid(),
                           agent_pgid=shell.pid, agent_proof=process_proof(shell.pid),
                           process_mark_sha256=mark_sha256("mark-of-r1"))
        (run_dir / "run.json").write_text(record.model_dump_json())
        notes: list[str] = []
        repaired, killed = repair_run(run_dir, notes)
        assert leftover.wait(timeout=60) == -9 and killed == [leftover.pid]
        assert shell.poll() is None and tail.poll() is None
        assert any(f"agent process group {shell.pid} not signalled" in n
                   and "does not carry the run's mark" in n for n in notes)
        assert "does not carry the run's mark" in (repaired.error or "")
    finally:
        for p in (shell, tail, leftover):
            if p.poll() is None:
                p.kill()
            p.wait()


def test_a_run_s_close_spares_a_tail_of_its_summary_in_another_terminal(tmp_path: Path) -> None:
    """The close kills only this harness's own descendants: a `tail -f` started elsewhere
    (here: a daemonised one, no longer this process's descendant) survives it."""
    from a2rl.runner._lifecycle import kill_leftover_groups

    run_dir = tmp_path / "arith" / "r1"
    run_dir.mkdir(parents=True)
    (run_dir / "summary.md").write_text("# run r1\n")
    pidfile = tmp_path / "tail.pid"
    subprocess.run(["setsid", "sh", "-c", f'tail -f "{run_dir}/summary.md" >/dev/null 2>&1 & '
                    f'echo $! > "{pidfile}"'], check=True, cwd=run_dir)
    tail = int(pidfile.read_text())
    try:
        kill_leftover_groups([run_dir])
        os.kill(tail, 0)  # still there
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(tail, 9)


def _agent_folder(root: Path) -> Path:
    """A `cmd:` agent's folder as users keep one: the script, a helper, a 0600 `.env` and a key
    in a 0700 `.ssh/` (only their owner may read them: as root, the agent is that owner)."""
    folder = root / "my-agent"
    (folder / ".ssh").mkdir(parents=True)
    (folder / "run.sh").write_text("#!/bin/sh\necho working\n")
    (folder / "run.sh").chmod(0o755)
    (folder / "helper.py").write_text("HELPER = 1\n")
    (folder / ".env").write_text("API_KEY=ENV-SECRET\n")
    (folder / ".env").chmod(0o600)
    (folder / ".ssh" / "id_ed25519").write_text("SSH-SECRET\n")
    (folder / ".ssh" / "id_ed25519").chmod(0o644)  # readable, but its folder is not
    (folder / ".ssh").chmod(0o700)
    return folder


@pytest.mark.parametrize("kind", ["bwrap", "podman"])
def test_secrets_beside_a_cmd_script_are_masked_in_the_sandbox(tmp_path: Path, kind: str) -> None:
    from a2rl._errors import A2RLError
    from a2rl.runner._precheck import check_in_sandbox, plan_command
    from a2rl.sandbox import get_sandbox, sandbox_masks

    try:
        box = get_sandbox(kind)
        box.probe()
    except A2RLError as exc:
        pytest.skip(f"{kind} cannot start here: {exc.message}")
    folder = _agent_folder(tmp_path)
    plan = plan_command(str(folder / "run.sh"), agent_dirs=[], cwd=tmp_path,
                        runs_dir=tmp_path / "runs")
    assert plan.mounts == [folder]
    check_in_sandbox(plan, box)  # the script itself stays runnable
    ws = tmp_path / "ws"
    ws.mkdir()
    targets = {"env": folder / ".env", "key": folder / ".ssh" / "id_ed25519",
               "helper": folder / "helper.py", "script": folder / "run.sh"}
    probe = "; ".join(f"echo {name}=$(cat {path} 2>/dev/null | head -c 40)"
                      for name, path in targets.items())
    try:
        argv = box.wrap(["sh", "-c", probe], workspace=ws, read_only=plan.mounts,
                        masks=sandbox_masks(mounted=plan.mounts),
                        env={"PATH": "/usr/bin:/bin", "HOME": "/tmp/home"})
        done = subprocess.run(argv, capture_output=True, text=True, timeout=300,
                              stdin=subprocess.DEVNULL,
                              env={"PATH": "/usr/bin:/bin", "HOME": str(Path.home())})
    finally:
        box.cleanup()
    seen = dict(line.split("=", 1) for line in done.stdout.splitlines() if "=" in line)
    assert set(seen) == set(targets), done.stdout + done.stderr
    assert "SECRET" not in done.stdout, seen  # the .env and the key are gone
    assert seen["helper"] == "HELPER = 1" and seen["script"].startswith("#!/bin/sh"), seen


def test_an_owner_only_cmd_script_is_refused_with_the_fix(tmp_path: Path) -> None:
    """The script itself only its owner may read: masked like its neighbours, so the run is
    refused before it starts, naming the chmod that fixes it."""
    from a2rl._errors import A2RLError
    from a2rl.runner._precheck import check_in_sandbox, plan_command
    from a2rl.sandbox import get_sandbox

    try:
        box = get_sandbox("bwrap")
        box.probe()
    except A2RLError as exc:
        pytest.skip(f"bwrap cannot start here: {exc.message}")
    folder = _agent_folder(tmp_path)
    (folder / "run.sh").chmod(0o700)
    plan = plan_command(f"bash {folder / 'run.sh'}", agent_dirs=[], cwd=tmp_path,
                        runs_dir=tmp_path / "runs")
    with pytest.raises(A2RLError) as refused:
        check_in_sandbox(plan, box)
    assert "not readable inside the sandbox" in refused.value.message
    assert f"chmod a+r {folder / 'run.sh'}" in (refused.value.fix or "")


@pytest.mark.parametrize("tail", [b"", b"\n", b"\n\n", b"\xe2\x82"])
def test_a_transcript_read_line_by_line_splits_and_decodes_like_the_whole_file(
        tmp_path: Path, tail: bytes) -> None:
    """The transcript is read a line at a time (a 200 MB one is never held twice): lines split
    at "\\n" only (not at U+2028, \\x1c or a bare \\r), invalid UTF-8 replaced exactly as when
    the whole file is decoded, also a sequence cut by a line end or the end of the file."""
    from a2rl.agents._stream import read_lines

    raw = (b'{"a": "x\xe2\x80\xa8y"}\r\n' b"bar\rprogress\n" b"cut \xe2\x82\n" b"\xff\xfe bad\n"
           b"sep\x1crecord\n" b"\n" b"caf\xc3\xa9") + tail
    path = tmp_path / "transcript.log"
    path.write_bytes(raw)
    whole = raw.decode("utf-8", "replace").split("\n")
    if whole and whole[-1] == "":
        whole.pop()
    expected = [(1.5 if i == 0 else 0.0, line.removesuffix("\r")) for i, line in enumerate(whole)]
    assert read_lines(path, ["1.5"]) == expected


def test_runs_rm_removes_a_run_holding_a_folder_deeper_than_the_recursion_limit(
        tmp_path: Path) -> None:
    """`a2rl runs rm` of a run whose agent wrote `mkdir -p a/a/a/…` 1,100 levels down (the
    recursive fwalk and rmtree it used raised RecursionError), read-only folders included, and
    nothing outside the run through a link."""
    from a2rl.runner.prune import remove

    runs = tmp_path / "runs"
    run = runs / "arith" / "20261205-000000-cmd-abcd"
    code = run / "workspace" / "code"
    code.mkdir(parents=True)
    keep = tmp_path / "keep.txt"
    keep.write_text("keep me\n")
    (code / "link").symlink_to(keep)
    fd = os.open(code, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(1100):
            os.mkdir("a", dir_fd=fd)
            nxt = os.open("a", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = nxt
    finally:
        os.close(fd)
    (run / "workspace" / "data").mkdir()
    (run / "workspace" / "data" / "train.jsonl").write_text("{}\n")
    (run / "workspace" / "data").chmod(0o555)
    assert remove([run], runs) == []
    assert not run.exists() and os.listdir(runs / "arith") == []
    assert keep.read_text() == "keep me\n"
