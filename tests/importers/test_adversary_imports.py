"""Hostile input to `a2rl import` and `a2rl runs rm/prune/repair`.

A results folder handed over for import is untrusted: its files may be links to the
importing user's credentials, FIFOs that block a reader forever, devices, or sparse files of
many gigabytes. A run folder's run.json is input too: its run id, task names and agent process
group may name things outside the run. Each test builds such input and checks that nothing
outside the run is read, deleted or signalled, and that every refusal is named.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

HERE = Path(__file__).parent.parent / "fixtures" / "imports"
PTB = HERE / "posttrainbench" / "claude_claude-opus-4-6_10h" / "gsm8k_Qwen_Qwen3-1.7B-Base_40123"
RDA = HERE / "rdagent" / "workspace" / "gsm8k" / "20260301T090000_claude"
SECRETS = {".docker/config.json": "docker-auth-7f3a91c2e",
           ".codex/auth.json": "codex-token-b84d02f6a",
           ".config/gcloud/application_default_credentials.json": "gcloud-refresh-5c19e7d40"}
TEN_GB = 10 << 30


def _home(tmp_path: Path) -> Path:
    """A stand-in home folder holding credential files, outside every imported folder."""
    home = tmp_path / "home"
    for rel, secret in SECRETS.items():
        (home / rel).parent.mkdir(parents=True, exist_ok=True)
        (home / rel).write_text(json.dumps({"auth": secret}) + "\n")
    return home


def _special_files(folder: Path) -> list[str]:
    """A FIFO, a character device (where this user may make one) and a 10 GB sparse file in
    `folder`; returns their names relative to it."""
    made = []
    os.mkfifo(folder / "pipe.txt")
    made.append("pipe.txt")
    try:
        os.mknod(folder / "dev.txt", stat.S_IFCHR | 0o600, os.makedev(1, 3))  # like /dev/null
        made.append("dev.txt")
    except (PermissionError, OSError):
        pass
    with (folder / "huge.txt").open("wb") as fh:
        fh.truncate(TEN_GB)
    made.append("huge.txt")
    return made


def _import(harness: str, folder: Path, runs: Path) -> subprocess.CompletedProcess[str]:
    # a subprocess with a generous guard: a reader that blocks on a FIFO fails the test
    # instead of hanging it
    return subprocess.run([sys.executable, "-m", "a2rl.cli", "import", harness, str(folder),
                           "--runs-dir", str(runs), "--no-analyze"],
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "COLUMNS": "400"})


def _assert_no_secret(root: Path) -> None:
    for path in root.rglob("*"):
        if path.is_file() and not path.is_symlink():
            data = path.read_bytes()
            for secret in SECRETS.values():
                assert secret.encode() not in data, (secret, path)
        assert not path.is_symlink() or root.name == "report", path


def _manifest(run_dir: Path) -> dict:
    from a2rl.importers._source import MANIFEST

    manifest = json.loads((run_dir / MANIFEST).read_text())
    written = sorted(p.relative_to(run_dir).as_posix() for p in run_dir.rglob("*")
                     if p.is_file() and p.name != MANIFEST)
    assert manifest["files"] == written  # every file of the run is one the import wrote
    return manifest


def _refused_everywhere(out: str, run_dir: Path, names: list[str]) -> None:
    from a2rl.schema import load_run

    record = load_run(run_dir)
    assert record.imported is not None
    manifest = _manifest(run_dir)
    refused = {r["path"] for r in manifest["refused"]}
    read = {r["path"] for r in manifest["read"]}
    flat = " ".join(out.split())
    for name in names:
        assert name in refused, (name, manifest["refused"])
        assert name not in read
        assert any(r.startswith(f"{name}: ") for r in record.imported.refused), name
        assert f"refused: {name}: " in flat, (name, out)


def test_posttrainbench_import_follows_no_link_and_opens_no_special_file(tmp_path: Path) -> None:
    home = _home(tmp_path)
    folder = tmp_path / "results" / PTB.parent.name / PTB.name
    shutil.copytree(PTB, folder)
    # files the importer reads by name, and files of the task folder it copies
    (folder / "contamination_judgement.txt").unlink()
    (folder / "contamination_judgement.txt").symlink_to(home / ".codex/auth.json")
    (folder / "time_taken.txt").unlink()
    os.mkfifo(folder / "time_taken.txt")  # a reader that opens it blocking waits forever
    (folder / "output.log").unlink()
    with (folder / "output.log").open("wb") as fh:
        fh.truncate(TEN_GB)
    task = folder / "task"
    (task / "docker_config.json").symlink_to(home / ".docker/config.json")
    (task / "gcloud").symlink_to(home / ".config/gcloud")
    (task / "bad\x07name.py").write_text("print('x')\n")
    specials = [f"task/{n}" for n in _special_files(task)]
    runs = tmp_path / "runs"

    done = _import("posttrainbench", folder, runs)
    assert done.returncode == 0, done.stderr
    [run_dir] = [p.parent for p in runs.glob("*/*/run.json")]
    _assert_no_secret(run_dir)
    _refused_everywhere(done.stdout, run_dir, [
        "contamination_judgement.txt", "time_taken.txt", "output.log",
        "task/docker_config.json", "task/gcloud",
        *[s for s in specials if not s.endswith("huge.txt")]])
    manifest = _manifest(run_dir)
    reasons = {r["path"]: r["reason"] for r in manifest["refused"]}
    assert "symbolic link" in reasons["contamination_judgement.txt"]
    assert "FIFO" in reasons["time_taken.txt"]
    assert str(TEN_GB) in reasons["output.log"]
    assert any("control characters" in r for r in reasons.values())
    if "task/dev.txt" in reasons:
        assert "character device" in reasons["task/dev.txt"]
    # the rest of the run came in: the score, the trace, the regular scripts
    from a2rl.schema import load_run

    record = load_run(run_dir)
    assert record.best is not None and record.best.score == 64.82
    assert (run_dir / "workspace" / "train_sft.py").is_file()
    assert {r["path"] for r in manifest["read"]} >= {"solve_out.txt", "metrics.json",
                                                     "task/train_sft.py"}
    assert "contamination_judgement.txt" not in record.imported.harness_notes  # type: ignore[union-attr]

    # the published report holds none of it either
    from typer.testing import CliRunner

    from a2rl.cli import app

    site = tmp_path / "report"
    result = CliRunner().invoke(app, ["report", str(runs), "-o", str(site)])
    assert result.exit_code == 0, result.output
    assert any(site.rglob("*.html"))
    _assert_no_secret(site)


def test_rdagent_import_takes_no_linked_stream_and_refuses_a_sparse_one(tmp_path: Path) -> None:
    home = _home(tmp_path)
    folder = tmp_path / "workspace" / "gsm8k" / RDA.name
    shutil.copytree(RDA, folder)
    (folder / "agent.jsonl").unlink()  # the stream: a link to the host's credentials
    (folder / "agent.jsonl").symlink_to(home / ".docker/config.json")
    with (folder / "agent.log").open("wb") as fh:  # the next stream it would take
        fh.truncate(TEN_GB)
    (folder / "agent_log.txt").symlink_to(home / ".codex/auth.json")
    os.mkfifo(folder / "solve_out.txt")
    (folder / "code" / "creds.json").symlink_to(
        home / ".config/gcloud/application_default_credentials.json")
    (folder / "code" / "home").symlink_to(home)
    specials = [f"code/{n}" for n in _special_files(folder / "code")]
    runs = tmp_path / "runs"

    done = _import("rdagent", folder, runs)
    assert done.returncode == 0, done.stderr
    [run_dir] = [p.parent for p in runs.glob("*/*/run.json")]
    _assert_no_secret(run_dir)
    _refused_everywhere(done.stdout, run_dir, [
        "agent.jsonl", "agent.log", "agent_log.txt", "solve_out.txt", "code/creds.json",
        "code/home", *[s for s in specials if not s.endswith("huge.txt")]])
    from a2rl.schema import load_run

    record = load_run(run_dir)
    assert not (run_dir / "agent" / "transcript.log").exists()
    assert any("agent's stream" in u for u in record.imported.unrecovered)  # type: ignore[union-attr]
    scores = json.loads((RDA / "scores.json").read_text())
    assert len(record.submissions) == len(scores) > 0
    assert (run_dir / "workspace" / "scores.json").is_file()


def test_a_symlinked_scores_file_is_refused_with_the_fix(tmp_path: Path) -> None:
    from a2rl._errors import A2RLError
    from a2rl.importers import rdagent

    home = _home(tmp_path)
    folder = tmp_path / "ws" / "gsm8k" / RDA.name
    shutil.copytree(RDA, folder)
    (folder / "scores.json").unlink()
    (folder / "scores.json").symlink_to(home / ".docker/config.json")
    with pytest.raises(A2RLError) as err:
        rdagent.import_run(folder, tmp_path / "runs")
    assert "symbolic link" in str(err.value) and "regular file" in (err.value.fix or "")
    assert not any((tmp_path / "runs").rglob("run.json"))


def test_a_results_tree_is_searched_without_following_links(tmp_path: Path) -> None:
    from a2rl.importers._common import find_runs

    outside = tmp_path / "elsewhere" / "run"
    shutil.copytree(PTB, outside)
    tree = tmp_path / "results" / "claude_x_1h"
    tree.mkdir(parents=True)
    shutil.copytree(PTB, tree / "real_run")
    (tree / "linked_run").symlink_to(outside)
    (tree / "marker_link").mkdir()
    (tree / "marker_link" / "solve_out.txt").symlink_to(outside / "solve_out.txt")
    assert find_runs(tmp_path / "results", "solve_out.txt") == [tree / "real_run"]


# -- runs rm / prune / repair on crafted records ----------------------------------------------

def _record(runs: Path, task: str, run_id: str, *, record_id: str | None = None,
            tasks: list[str] | None = None, status: str = "failed", ended: bool = True,
            pgid: int | None = None) -> Path:
    from a2rl._util import utcnow
    from a2rl.schema import RunConfig, RunRecord

    cfg = RunConfig(task=task, tasks=tasks or [], agent="cmd:true", model="m", mode="free",
                    budget_s=60, sandbox="bwrap", eval_timeout_s=60, grace_s=1, port=0,
                    runs_dir=str(runs))
    now = utcnow()
    rec = RunRecord(run_id=record_id or run_id, status=status,  # type: ignore[arg-type]
                    created_at=now, ended_at=now if ended else None, config=cfg, versions={},
                    sandboxed=True, agent_pgid=pgid)
    path = runs / task / run_id
    (path / "workspace").mkdir(parents=True)
    (path / "run.json").write_text(rec.model_dump_json())
    return path


def _precious(tmp_path: Path) -> Path:
    precious = tmp_path / "precious"
    (precious / "keep").mkdir(parents=True)
    (precious / "keep" / "data.txt").write_text("irreplaceable\n")
    return precious


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "a2rl.cli", *args], capture_output=True,
                          text=True, timeout=300, env={**os.environ, "COLUMNS": "400"},
                          stdin=subprocess.DEVNULL)


def test_rm_and_prune_delete_nothing_a_record_places_outside_the_runs_dir(
        tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    precious = _precious(tmp_path)
    # a multi run whose record's run id climbs out of runs/multi/ to the precious folder
    climb = _record(runs, "arith", "r-climb", record_id="../../precious", tasks=["arith"])
    # a multi run whose record names a task `..` (runs/../r-up would be tmp/r-up)
    up = tmp_path / "r-up"
    (up / "keep").mkdir(parents=True)
    member = _record(runs, "arith", "r-up", tasks=["arith", ".."])
    done = _cli("runs", "rm", str(climb), str(member), "--yes", "--runs-dir", str(runs))
    assert done.returncode == 1, done.stdout + done.stderr
    err = " ".join(done.stderr.split())
    assert "refused:" in err and "'../../precious'" in err and "'..'" in err
    assert not climb.exists() and not member.exists()  # the runs themselves went
    assert (precious / "keep" / "data.txt").read_text() == "irreplaceable\n"
    assert (up / "keep").is_dir()

    # prune --failed finds the same records by itself
    _record(runs, "arith", "r-climb2", record_id="../../precious", tasks=["arith"])
    _record(runs, "gsm8k", "r-up2", tasks=["gsm8k", "..", "../.."])
    done = _cli("runs", "prune", "--failed", "--yes", "--runs-dir", str(runs))
    assert done.returncode == 1 and "refused:" in done.stderr, done.stdout + done.stderr
    assert not list(runs.glob("*/*/run.json"))
    assert (precious / "keep" / "data.txt").is_file() and (up / "keep").is_dir()


def test_a_symlinked_run_folder_is_refused_not_followed(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    precious = _precious(tmp_path)
    outside = _record(tmp_path / "elsewhere", "arith", "r-out")  # a run folder outside
    (runs / "arith").mkdir(parents=True)
    (runs / "arith" / "r-link").symlink_to(outside)
    (runs / "gsm8k").symlink_to(outside.parent)  # a task folder that is a link
    done = _cli("runs", "prune", "--failed", "--yes", "--runs-dir", str(runs))
    assert done.returncode == 1, done.stdout + done.stderr
    err = " ".join(done.stderr.split())
    assert "r-link is a symbolic link" in err and "gsm8k is a symbolic link" in err
    assert (outside / "run.json").is_file() and (runs / "arith" / "r-link").is_symlink()
    assert (precious / "keep" / "data.txt").is_file()
    # a run folder passed by path from outside the runs dir is refused too
    done = _cli("runs", "rm", str(outside), "--yes", "--runs-dir", str(runs))
    assert done.returncode == 1 and "not a run folder inside the runs dir" in \
        " ".join(done.stderr.split())
    assert (outside / "run.json").is_file()


def test_remove_rechecks_each_folder_and_deletes_through_no_link(tmp_path: Path) -> None:
    from a2rl.runner.prune import remove

    runs = tmp_path / "runs"
    precious = _precious(tmp_path)
    good = _record(runs, "arith", "r-good")
    (good / "workspace" / "model").mkdir()
    (good / "workspace" / "model").chmod(0o555)  # read-only, as workspaces hold them
    (runs / "gsm8k").symlink_to(precious.parent)  # runs/gsm8k/precious is tmp/precious
    refused = remove([good, runs / "gsm8k" / "precious", runs / ".." / "precious"], runs)
    assert not good.exists() and len(refused) == 2
    assert (precious / "keep" / "data.txt").is_file()


def _sleeper() -> subprocess.Popen[bytes]:
    """An unrelated live process group (`setsid sleep`), as another user job would be."""
    proc = subprocess.Popen(["setsid", "sleep", "300"], stdin=subprocess.DEVNULL)
    for _ in range(200):  # setsid forks when it leads a group: wait for the sleep's own pid
        try:
            with open(f"/proc/{proc.pid}/cmdline", "rb") as fh:
                if fh.read().startswith(b"sleep"):
                    break
        except OSError:
            break
        time.sleep(0.01)
    return proc


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def test_repair_signals_no_process_group_it_cannot_prove_is_the_run_s(tmp_path: Path) -> None:
    from a2rl.runner._lifecycle import RUN_MARK_ENV, mark_sha256, process_proof
    from a2rl.schema import RunRecord
    from a2rl.schema._run import ProcessProof

    proc = _sleeper()
    try:
        pgid = os.getpgid(proc.pid)
        assert pgid == proc.pid and pgid != os.getpgrp()
        runs = tmp_path / "runs"
        bare = _record(runs, "arith", "r-bare", status="running", ended=False, pgid=pgid)
        done = _cli("runs", "repair", str(bare), "--runs-dir", str(runs))
        assert done.returncode == 0, done.stdout + done.stderr
        out = " ".join(done.stdout.split())
        assert f"agent process group {pgid} not signalled" in out and "no proof" in out
        assert _group_alive(pgid) and proc.poll() is None
        rec = RunRecord.model_validate_json((bare / "run.json").read_text())
        assert rec.exit_reason == "harness_died" and "not signalled" in (rec.error or "")

        # a proof of another process (the pid reused): start time differs
        real = process_proof(pgid)
        assert real is not None
        for fake in (real.model_copy(update={"start_ticks": real.start_ticks - 1}),
                     real.model_copy(update={"cmdline_sha256": "0" * 64})):
            run = _record(runs, "arith", f"r-{fake.start_ticks}-{fake.cmdline_sha256[:4]}",
                          status="running", ended=False, pgid=pgid)
            rec = RunRecord.model_validate_json((run / "run.json").read_text())
            rec.agent_proof = ProcessProof.model_validate(fake.model_dump())
            (run / "run.json").write_text(rec.model_dump_json())
            done = _cli("runs", "repair", str(run), "--runs-dir", str(runs))
            assert done.returncode == 0 and "not signalled" in done.stdout, done.stderr
            assert _group_alive(pgid) and proc.poll() is None

        # the matching proof, computed from /proc as anyone can: not the run's without its mark
        run = _record(runs, "arith", "r-forged", status="running", ended=False, pgid=pgid)
        rec = RunRecord.model_validate_json((run / "run.json").read_text())
        rec.agent_proof, rec.process_mark_sha256 = real, mark_sha256("the run's own mark")
        (run / "run.json").write_text(rec.model_dump_json())
        done = _cli("runs", "repair", str(run), "--runs-dir", str(runs))
        assert done.returncode == 0 and "does not carry the run's mark" in done.stdout, done.stdout
        assert _group_alive(pgid) and proc.poll() is None

        # the matching proof of a leader started with the run's mark: the group is the run's
        marked = subprocess.Popen(["sleep", "300"], start_new_session=True,
                                  env={**os.environ, RUN_MARK_ENV: "the run's own mark"})
        run = _record(runs, "arith", "r-proven", status="running", ended=False, pgid=marked.pid)
        rec = RunRecord.model_validate_json((run / "run.json").read_text())
        rec.agent_proof, rec.process_mark_sha256 = process_proof(marked.pid), \
            mark_sha256("the run's own mark")
        (run / "run.json").write_text(rec.model_dump_json())
        done = _cli("runs", "repair", str(run), "--runs-dir", str(runs))
        assert done.returncode == 0 and "not signalled" not in done.stdout, done.stdout
        assert marked.wait(timeout=60) == -signal.SIGKILL
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_a_posttrainbench_folder_without_task_imports_whole_or_not_at_all(
        tmp_path: Path) -> None:
    """No `task/` (or a `task` that is a file): the run comes in without a workspace, the
    loss named in the record, never a crash that leaves a folder without run.json. A failure
    half-way (a metrics.json that is no JSON) leaves no run folder behind."""
    from a2rl.schema import load_run

    for variant in ("missing", "a file"):
        folder = tmp_path / variant / PTB.parent.name / PTB.name
        shutil.copytree(PTB, folder)
        shutil.rmtree(folder / "task")
        if variant == "a file":
            (folder / "task").write_text("not a folder\n")
        runs = tmp_path / f"runs-{variant.replace(' ', '-')}"
        done = _import("posttrainbench", folder, runs)
        assert done.returncode == 0, done.stdout + done.stderr
        [run_dir] = [p.parent for p in runs.glob("*/*/run.json")]
        record = load_run(run_dir)
        assert record.best is not None and record.best.score == 64.82
        assert any("no task/ folder" in u for u in record.imported.unrecovered)  # type: ignore[union-attr]
        assert (run_dir / "workspace").is_dir() and (run_dir / "code-history.jsonl").is_file()
        _manifest(run_dir)

    broken = tmp_path / "broken" / PTB.parent.name / PTB.name
    shutil.copytree(PTB, broken)
    shutil.rmtree(broken / "task")
    (broken / "metrics.json").write_text("{not json")
    runs = tmp_path / "runs-broken"
    done = _import("posttrainbench", broken, runs)
    assert done.returncode != 0 and "is not JSON" in " ".join(done.stderr.split()), done.stderr
    assert "Traceback" not in done.stderr
    assert not [p for p in runs.rglob("*") if p.is_file()], list(runs.rglob("*"))
