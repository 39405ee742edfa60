"""A new user's first hour without dead ends: each mistake gets one message naming the problem
and the fix (exit code 2, no traceback), no `failed` run is left behind by a mistake caught up
front, custom `cmd:` agents find their scripts, and what is recorded is never lost."""

from __future__ import annotations

import datetime as dt
import io
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console

from a2rl._errors import A2RLError
from a2rl.cli import main
from conftest import TINY_TASK

needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap missing")


def cli(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], *args: str,
        cwd: Path | None = None) -> tuple[int, str, str]:
    """`a2rl ARGS` in this process (as the console script runs it): exit code, stdout, stderr."""
    monkeypatch.setattr(sys, "argv", ["a2rl", *args])
    monkeypatch.setenv("COLUMNS", "200")  # long temporary paths must not wrap in messages
    if cwd is not None:
        monkeypatch.chdir(cwd)
    code = 0
    try:
        main()
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    out = capsys.readouterr()
    return code, out.out, out.err


def one_clean_error(code: int, err: str, *needles: str) -> None:
    assert code == 2, err
    assert err.count("error:") == 1 and err.count("fix:") == 1, err
    assert "Traceback" not in err and "pydantic.dev" not in err and "type=" not in err, err
    for needle in needles:
        assert needle in " ".join(err.split()), (needle, err)


def tiny_run_args(model: Path, runs: Path, *extra: str) -> list[str]:
    opts = [a for k, v in TINY_TASK.items() for a in ("--task-opt", f"{k}={v}")]
    return ["run", "--model", str(model), *opts, "--budget", "60", "--runs-dir", str(runs),
            *extra]


# -- options ----------------------------------------------------------------------------------

def test_bad_task_options_name_the_valid_keys_and_no_agent_option(monkeypatch, capsys,
                                                                   tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    code, _, err = cli(monkeypatch, capsys, "run", "--task-opt", "foo=1", "--task-opt",
                       "n_heldout=many", "--runs-dir", str(runs))
    one_clean_error(code, err, "foo: unknown option", "n_heldout: Input should be a valid integer",
                    "valid --task-opt keys: dataset, generator, n_train, n_heldout, heldout_seed",
                    "a2rl tasks show arith")
    code, _, err = cli(monkeypatch, capsys, "run", "--task-opt", "n_heldout", "--runs-dir",
                       str(runs))
    one_clean_error(code, err, "--task-opt 'n_heldout' is not key=value", "--task-opt n_heldout=50")
    assert "steps" not in err and "agent-opt" not in err
    code, _, err = cli(monkeypatch, capsys, "run", "--task-opt", "heldout_seed=-1", "--runs-dir",
                       str(runs))
    one_clean_error(code, err, "heldout_seed must be 0 or more (got -1)")
    assert not runs.exists()  # nothing was created for a mistake


def test_tasks_show_lists_each_option_with_default_and_docstring(monkeypatch, capsys) -> None:
    code, out, _ = cli(monkeypatch, capsys, "tasks", "show", "arith")
    assert code == 0
    rows = {line.split("│")[1].strip(): line for line in out.splitlines() if line.count("│") >= 4}
    assert {"dataset", "generator", "n_train", "n_heldout", "heldout_seed"} <= set(rows)
    assert "200" in rows["n_heldout"] and "Held-out items (the evaluation set)." in rows["n_heldout"]
    assert "Secret" in out  # the held-out seed is marked as such
    code, out, _ = cli(monkeypatch, capsys, "tasks")
    names = [line.split()[0] for line in out.splitlines() if line.strip()]
    assert code == 0 and {"aime2025", "alfworld", "arith", "humaneval"} <= set(names)
    listed = [n for n in names if n in {"aime2025", "alfworld", "arith", "humaneval"}]
    assert listed == sorted(listed)  # one line per task, alphabetical
    code, _, err = cli(monkeypatch, capsys, "tasks", "show", "nope")
    one_clean_error(code, err, "unknown task 'nope'", "choose one of")


def test_version(monkeypatch, capsys) -> None:
    from a2rl import __version__

    code, out, _ = cli(monkeypatch, capsys, "--version")
    assert code == 0 and out.strip() == f"a2rl {__version__}"


@pytest.mark.parametrize("args, needles", [
    (["--port", "99999"], ["--port 99999 is not a TCP port", "leave it out"]),
    (["--eval-timeout", "0"], ["--eval-timeout must be positive (got 0 s)"]),
    (["--grace", "-1"], ["--grace must be 0 or more seconds (got -1)"]),
    (["--model", "./no/such/model"], ["unknown model './no/such/model'", "[smollm2-135m]"]),
])
def test_limits_are_checked_before_any_run_folder(monkeypatch, capsys, tmp_path: Path,
                                                  args: list[str], needles: list[str]) -> None:
    runs = tmp_path / "runs"
    code, _, err = cli(monkeypatch, capsys, "run", "--agent", "cmd:true", *args,
                       "--runs-dir", str(runs))
    one_clean_error(code, err, *needles)  # bracketed text survives (no markup)
    assert not runs.exists()


def test_port_in_use_and_unwritable_runs_dir_fail_before_the_baseline(monkeypatch, capsys,
                                                                     tmp_path: Path,
                                                                     tiny_model: Path) -> None:
    blocker = socket.socket()
    blocker.bind(("127.0.0.1", 0))
    blocker.listen(1)
    port = blocker.getsockname()[1]
    runs = tmp_path / "runs"
    try:
        code, _, err = cli(monkeypatch, capsys, *tiny_run_args(tiny_model, runs, "--agent",
                                                               "cmd:true", "--port", str(port)))
    finally:
        blocker.close()
    one_clean_error(code, err, f"port {port} on 127.0.0.1 is already in use", "another --port")
    assert not runs.exists()
    (tmp_path / "a-file").write_text("")
    code, _, err = cli(monkeypatch, capsys, *tiny_run_args(tiny_model, tmp_path / "a-file" / "runs",
                                                           "--agent", "cmd:true"))
    one_clean_error(code, err, "is a file, not a folder", "pass a folder for --runs-dir")
    if os.geteuid() != 0:  # root may write anywhere
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o555)
        code, _, err = cli(monkeypatch, capsys, *tiny_run_args(tiny_model, locked / "runs",
                                                               "--agent", "cmd:true"))
        one_clean_error(code, err, "is not writable")


# -- custom agents ----------------------------------------------------------------------------

def test_cmd_agent_script_is_found_mounted_and_made_absolute(tmp_path: Path) -> None:
    from a2rl.runner._precheck import plan_command

    runs = tmp_path / "runs"
    agent = tmp_path / "my-agent"
    agent.mkdir()
    script = agent / "agent.sh"
    script.write_text("#!/usr/bin/env bash\necho hi\n")
    plan = plan_command("bash my-agent/agent.sh --fast", agent_dirs=[], cwd=tmp_path,
                        runs_dir=runs)
    assert plan.command == f"bash {script} --fast" and plan.mounts == [agent]
    assert plan.program == "bash" and plan.script == str(script) and not plan.direct
    with pytest.raises(A2RLError, match="is not executable") as info:
        plan_command("./my-agent/agent.sh", agent_dirs=[], cwd=tmp_path, runs_dir=runs)
    assert info.value.fix and "chmod +x" in info.value.fix
    script.chmod(0o755)
    plan = plan_command("A=1 ./my-agent/agent.sh", agent_dirs=[], cwd=tmp_path, runs_dir=runs)
    assert plan.command == f"A=1 {script}" and plan.direct and plan.program == str(script)
    with pytest.raises(A2RLError, match="does not exist"):
        plan_command("bash ./nope/agent.sh", agent_dirs=[], cwd=tmp_path, runs_dir=runs)
    # workspace paths exist only inside the sandbox: left to the run
    assert plan_command("./timer.sh", agent_dirs=[], cwd=tmp_path, runs_dir=runs).mounts == []
    assert plan_command("python code/train.py", agent_dirs=[], cwd=tmp_path,
                        runs_dir=runs).script is None
    # beside the runs folder: only the script is mounted, never the runs
    beside = tmp_path / "agent.sh"
    beside.write_text("echo hi\n")
    runs.mkdir()
    plan = plan_command("bash agent.sh", agent_dirs=[], cwd=tmp_path, runs_dir=runs)
    assert plan.mounts == [beside] and "mounted only" in plan.notes[0]


def test_agent_dir_that_would_expose_the_runs_is_refused(tmp_path: Path, a2rl_home: Path) -> None:
    from a2rl.runner._precheck import plan_command

    runs = tmp_path / "runs"
    runs.mkdir()
    for bad, needle in [(tmp_path, "the runs folder"), (runs / "arith", "not a folder"),
                        (a2rl_home, "a2rl's home")]:
        with pytest.raises(A2RLError, match=needle):
            plan_command("true", agent_dirs=[bad], cwd=tmp_path, runs_dir=runs)
    (tmp_path / "tools").mkdir()
    assert plan_command("true", agent_dirs=[tmp_path / "tools"], cwd=tmp_path,
                        runs_dir=runs).mounts == [tmp_path / "tools"]


@needs_bwrap
def test_missing_agent_command_fails_before_the_baseline(monkeypatch, capsys, tmp_path: Path,
                                                         tiny_model: Path) -> None:
    runs = tmp_path / "runs"
    code, _, err = cli(monkeypatch, capsys, *tiny_run_args(
        tiny_model, runs, "--agent", "cmd:no-such-agent-xyz --go"))
    one_clean_error(code, err, "'no-such-agent-xyz' is not found inside the sandbox", "--agent-dir")
    assert not runs.exists()
    # a program in a folder the sandbox does not show: found once --agent-dir mounts it
    from a2rl.runner._precheck import check_in_sandbox, plan_command
    from a2rl.sandbox import start_sandbox

    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "agent.py").write_text("print('hi')\n")
    box = start_sandbox("bwrap")
    check_in_sandbox(plan_command(f"python3 {tools / 'agent.py'}", agent_dirs=[], cwd=tmp_path,
                                  runs_dir=runs), box)
    hidden = plan_command(f"python3 {tools / 'agent.py'}", agent_dirs=[], cwd=tmp_path,
                          runs_dir=runs)
    hidden.mounts = []  # as if it were not mounted
    with pytest.raises(A2RLError, match="not readable inside the sandbox"):
        check_in_sandbox(hidden, box)


@needs_bwrap
def test_cmd_agent_run_end_to_end_from_a_relative_script(tmp_path: Path, tiny_model: Path) -> None:
    """The README's form, `cmd:'./my_agent.sh'`, typed in the folder holding the script: it runs
    in the sandbox with a file from --agent-dir, and when it then fails at once the console
    shows its last lines; the analysis calls that a setup failure. Output goes to a file (as in
    a Slurm job): the baseline prints progress lines."""
    work = tmp_path / "project"
    (work / "agent").mkdir(parents=True)
    (work / "prompts").mkdir()
    (work / "prompts" / "system.txt").write_text("be brief\n")
    script = work / "agent" / "my_agent.sh"
    script.write_text(f"#!/usr/bin/env bash\necho \"prompt: $(cat {work}/prompts/system.txt)\"\n"
                      "echo working in $PWD\nno-such-trainer --epochs 3\n")
    script.chmod(0o755)
    runs = tmp_path / "runs"
    out = subprocess.run([sys.executable, "-m", "a2rl.cli", *tiny_run_args(
        tiny_model, runs, "--agent", "cmd:./agent/my_agent.sh", "--agent-dir", "prompts")],
        capture_output=True, text=True, timeout=600, cwd=work,
        env={**os.environ, "COLUMNS": "200", "A2RL_PROGRESS_EVERY": "0"})
    assert out.returncode == 0, out.stderr
    text = " ".join(out.stdout.split())
    assert "exit 127: the shell did not find the command" in text
    assert "prompt: be brief" in text and "no-such-trainer: command not found" in text
    assert "scoring the baseline (arith): " in out.stdout and "6/6 (100%)" in out.stdout
    (run_dir,) = (runs / "arith").iterdir()
    from a2rl.schema import load_run

    record = load_run(run_dir)
    assert record.agent_exit_code == 127 and record.config.agent_dirs == [str(work / "prompts")]
    assert str(script) in (record.agent_command or "")  # made absolute for the sandbox
    summary = (run_dir / "summary.jsonl").read_text()
    assert "harness/setup failure" in summary and "early coding failure" not in summary


# -- records: rm / prune, listing, markup ------------------------------------------------------

def _fake_run(runs: Path, run_id: str, *, status: str = "finished", ended: bool = True,
              pid: int | None = None, days_old: float = 0, tasks: list[str] | None = None,
              task: str = "arith") -> Path:
    from a2rl.schema import RunConfig, RunRecord

    created = dt.datetime.now(dt.UTC) - dt.timedelta(days=days_old)
    cfg = RunConfig(task=task, tasks=tasks or [], agent="cmd:true", model="m", mode="free",
                    budget_s=60, sandbox="bwrap", eval_timeout_s=60, grace_s=1, port=0,
                    runs_dir=str(runs))
    rec = RunRecord(run_id=run_id, status=status, created_at=created,  # type: ignore[arg-type]
                    ended_at=created if ended else None, config=cfg, versions={},
                    sandboxed=True, harness_pid=pid)
    path = runs / task / run_id
    (path / "workspace" / "model").mkdir(parents=True)
    (path / "workspace" / "model" / "w.safetensors").write_text("x")
    (path / "workspace" / "model").chmod(0o555)  # as the workspace builder leaves it
    (path / "run.json").write_text(rec.model_dump_json())
    return path


def _dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def test_runs_rm_never_removes_a_live_run_and_asks_first(monkeypatch, capsys,
                                                         tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    done = _fake_run(runs, "20260101-000000-cmd-aaaa")
    live = _fake_run(runs, "20260101-000000-cmd-bbbb", status="running", ended=False,
                     pid=os.getpid())
    code, _, err = cli(monkeypatch, capsys, "runs", "rm", live.name, done.name, "--yes",
                       "--runs-dir", str(runs))
    one_clean_error(code, err, "is still running", "nothing was removed")
    assert done.exists() and live.exists()
    code, out, _ = cli(monkeypatch, capsys, "runs", "rm", done.name, "--dry-run",
                       "--runs-dir", str(runs))
    assert code == 0 and "would remove arith/20260101-000000-cmd-aaaa (finished)" in out
    assert done.exists()
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))  # not a terminal: no prompt possible
    code, _, err = cli(monkeypatch, capsys, "runs", "rm", done.name, "--runs-dir", str(runs))
    one_clean_error(code, err, "needs a confirmation", "--yes")
    code, out, _ = cli(monkeypatch, capsys, "runs", "rm", "20260101-000000-cmd-a", "--yes",
                       "--runs-dir", str(runs))
    assert code == 0 and "removed 1 run(s)" in out and not done.exists() and live.exists()


def test_runs_prune_by_failure_and_age_keeps_live_runs(monkeypatch, capsys,
                                                       tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    failed = _fake_run(runs, "r-failed", status="failed")
    died = _fake_run(runs, "r-died", status="running", ended=False, pid=_dead_pid())
    live = _fake_run(runs, "r-live", status="running", ended=False, pid=os.getpid(),
                     days_old=30)
    old = _fake_run(runs, "r-old", days_old=10)
    new = _fake_run(runs, "r-new")
    multi = [_fake_run(runs, "r-multi", task=t, tasks=["arith", "gsm8k"], days_old=10)
             for t in ("arith", "gsm8k")]
    (runs / "multi" / "r-multi" / "workspace").mkdir(parents=True)
    code, _, err = cli(monkeypatch, capsys, "runs", "prune", "--runs-dir", str(runs))
    one_clean_error(code, err, "needs a filter", "--failed", "--older-than")
    code, _, err = cli(monkeypatch, capsys, "runs", "prune", "--older-than", "soon",
                       "--runs-dir", str(runs))
    one_clean_error(code, err, "--older-than 'soon'")
    code, out, _ = cli(monkeypatch, capsys, "runs", "prune", "--failed", "--yes",
                       "--runs-dir", str(runs))
    assert code == 0 and "r-died (running, harness gone)" in out
    assert not failed.exists() and not died.exists() and live.exists() and old.exists()
    code, out, _ = cli(monkeypatch, capsys, "runs", "prune", "--older-than", "7d", "--yes",
                       "--runs-dir", str(runs))
    assert code == 0 and not old.exists() and new.exists() and live.exists()
    assert not any(p.exists() for p in multi) and not (runs / "multi" / "r-multi").exists()


def test_runs_list_keeps_run_ids_whole_at_80_columns(tmp_path: Path) -> None:
    from a2rl.cli._show import list_runs

    runs = tmp_path / "runs"
    run_id = "20261201-115353-claude-code-ab12"
    _fake_run(runs, run_id, task="deepsearchqa")
    console = Console(file=io.StringIO(), width=80)
    list_runs(runs, console)
    text = console.file.getvalue()  # type: ignore[attr-defined]
    assert f"deepsearchqa/{run_id}" in text


def test_bracketed_text_survives_every_print(monkeypatch, capsys, tmp_path: Path) -> None:
    from a2rl._console import safe

    console = Console(file=io.StringIO(), width=200)
    console.print(safe("  [warning] contamination: [bold]x[/] in [smollm2-135m]"))
    assert "[warning] contamination: [bold]x[/] in [smollm2-135m]" in console.file.getvalue()  # type: ignore[attr-defined]
    code, _, err = cli(monkeypatch, capsys, "run", "--mode", "[free]", "--runs-dir",
                       str(tmp_path))
    one_clean_error(code, err, "unknown mode '[free]'", "choose one of: free")


def test_progress_lines_when_not_a_terminal() -> None:
    from a2rl._console import LineProgress, progress_for

    buf = io.StringIO()
    console = Console(file=buf, width=200)
    progress = progress_for(console, every_s=0)
    assert isinstance(progress, LineProgress)
    with progress:
        bar = progress.add_task("scoring the baseline (gsm8k)", total=None)
        for done in range(1, 5):
            progress.update(bar, completed=done, total=4)
    lines = [ln for ln in buf.getvalue().splitlines() if ln.strip()]
    assert lines[0].endswith("scoring the baseline (gsm8k): started, 0m00s")
    assert "scoring the baseline (gsm8k): 4/4 (100%)" in lines[-1] and len(lines) == 5
    quiet = io.StringIO()
    with progress_for(Console(file=quiet), every_s=3600) as slow:
        bar = slow.add_task("evaluating s0001", total=100)
        for done in range(1, 100):
            slow.update(bar, completed=done)
    assert len(quiet.getvalue().splitlines()) == 1  # one line, then at most one per period


def test_baseline_copy_is_a_note_not_an_error() -> None:
    from a2rl.schema import SubmissionRecord

    rec = SubmissionRecord(id="s0001", seq=1, received_at=dt.datetime.now(dt.UTC),
                           model_path="output/v0", status="baseline_copy", score=10.0,
                           baseline=10.0, task_fingerprint="f", note="identical")
    assert rec.valid and rec.error is None and rec.note == "identical"
    src = (Path(__file__).parent.parent.parent / "src/a2rl/grader/_grader.py").read_text()
    block = src[src.index('status="baseline_copy"'):][:600]
    assert "note=" in block and "error=" not in block


def test_rejected_submission_names_the_submitted_path(tmp_path: Path) -> None:
    from a2rl.grader._artifact import SubmissionRejected, open_submission, snapshot_submission

    ws = tmp_path / "ws"
    folder = ws / "output" / "v1"
    folder.mkdir(parents=True)
    (folder / "config.json").write_text('{"model_type": "llama"}')
    (folder / "model.safetensors").write_bytes(b"garbage")
    (folder / "tokenizer.json").write_text("{}")
    fd = os.open(ws, os.O_RDONLY)
    try:
        with pytest.raises(SubmissionRejected) as info, \
                open_submission("output/v1", fd, ws) as (dir_fd, rel):
            snapshot_submission(dir_fd, rel, tmp_path / "artifacts", 1 << 30)
    finally:
        os.close(fd)
    text = str(info.value)
    assert text.startswith("output/v1: model.safetensors") and ".staging" not in text


def test_instructions_state_network_pip_and_memory_backed_tmp(tmp_path: Path) -> None:
    from a2rl.workspace import render_instructions
    from a2rl.workspace._machine import NetworkFacts

    def machine(net: NetworkFacts) -> str:
        text = render_instructions("free", budget_s=600, workspace=tmp_path, network=net)
        return text[text.index("## The machine"):text.index("## Your workspace")]

    allow = machine(NetworkFacts("allowlist"))
    assert "`pip install` cannot reach PyPI" in allow and "recording proxy" in allow
    assert "**memory-backed** (tmpfs)" in allow and "HF_HOME=$PWD/code/.hf" in allow
    assert "GiB free for `code/` and `output/`" in allow and "$$" not in allow
    pypi = machine(NetworkFacts("allowlist", extra_hosts=("pypi.org", "files.pythonhosted.org")))
    assert "`pip install` reaches PyPI" in pypi and "(pypi.org, files.pythonhosted.org)" in pypi
    none = machine(NetworkFacts("none"))
    assert "Network: none" in none and "`pip install` do not work" in none
    bare = machine(NetworkFacts("full", sandboxed=False))
    assert "host's own network" in bare and "No sandbox" in bare and "memory-backed" not in bare
