"""Live tracking through the real libraries: W&B in offline mode (its own transaction log, the
file `wandb sync` uploads, read back here) and MLflow with a file store. A scored submission
reaches the tracker while the run still goes; a missing package or key fails before the run
folder exists."""

from __future__ import annotations

import base64
import importlib.util
import json
import os
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from test_integration import config, needs_bwrap, run_dir_of

from a2rl.analysis import PHASES
from a2rl.runner import run
from a2rl.schema import RunRecord, TrackingConfig, load_run

SRC = Path(__file__).resolve().parent.parent.parent / "src"
# Copies the base model, submits it twice (the grader scores each before answering), then waits
# for the test's go-ahead file in its workspace (at most 5 minutes).
SUBMIT = ("curl -s -X POST \"$A2RL_GRADER_URL/submit\" -H \"Authorization: Bearer $A2RL_TOKEN\" "
          "-H 'Content-Type: application/json' -d '{\"model_path\": \"output/v1\"}'")
AGENT = (f"cmd:cp -r \"$MODEL_PATH\" output/v1 && {SUBMIT} && {SUBMIT} && "
         "for i in $(seq 600); do [ -e go ] && break; sleep 0.5; done")


def wandb_records(path: Path, kind: str) -> list[Any]:
    """The records of one kind (`history`, `run`, `summary`, …) of a W&B transaction log
    (.wandb: a leveldb-style log of protobuf records after a 7-byte header, in 32 KiB
    blocks)."""
    from wandb.proto import wandb_internal_pb2 as pb

    data = path.read_bytes()
    assert data[:4] == b":W&B"
    found, pos, block, buf = [], 7, 32768, b""
    while pos + 7 <= len(data):
        left = block - pos % block
        if left < 7:
            pos += left
            continue
        _crc, length, kind_byte = struct.unpack("<IHB", data[pos:pos + 7])
        if length == 0 and kind_byte == 0:
            pos += left
            continue
        chunk = data[pos + 7:pos + 7 + length]
        if len(chunk) < length:
            break  # the writer is mid-record
        pos += 7 + length
        buf = chunk if kind_byte == 2 else buf + chunk
        if kind_byte in (1, 4):
            rec = pb.Record()
            rec.ParseFromString(buf)
            buf = b""
            if rec.WhichOneof("record_type") == kind:
                found.append(getattr(rec, kind))
    return found


def wandb_history(path: Path) -> list[dict[str, str]]:
    """The history rows of a W&B transaction log, key → JSON value."""
    return [{".".join(i.nested_key) or i.key: i.value_json for i in h.item}
            for h in wandb_records(path, "history")]


def _wandb_logs(tmp_path: Path) -> list[Path]:
    """The transaction logs of the runs' W&B runs: in the run folder, or under $WANDB_DIR."""
    return sorted([*tmp_path.glob("runs/arith/*/wandb/offline-run-*/run-*.wandb"),
                   *tmp_path.glob("wandb-dir/wandb/offline-run-*/run-*.wandb")])


def _tracked_scores(to: str, tmp_path: Path) -> list[float]:
    if to == "wandb":
        scores = []
        for log in _wandb_logs(tmp_path):
            scores += [float(r["score"]) for r in wandb_history(log) if "score" in r]
        return scores
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=f"file:{tmp_path / 'mlruns'}")
    experiment = client.get_experiment_by_name("p")
    if experiment is None:
        return []
    runs = client.search_runs([experiment.experiment_id])
    return [m.value for r in runs for m in client.get_metric_history(r.info.run_id, "score")]


def _run_while_watching(tmp_path: Path, tiny_model: Path, agent: str, to: str,
                        monkeypatch: pytest.MonkeyPatch, ready: Callable[[], bool],
                        **tracking: Any) -> tuple[RunRecord, str | None]:
    """Run `agent` logging to `to` in a thread; once `ready()` holds, note run.json's status,
    then let the agent finish (its go-ahead file). Returns the record and that status (None:
    never ready)."""
    for var in ("WANDB_CONFIG_DIR", "WANDB_CACHE_DIR", "WANDB_DATA_DIR"):
        monkeypatch.setenv(var, str(tmp_path / "wandb-home"))
    monkeypatch.setenv("WANDB_SILENT", "true")
    # the test's own MLflow client reads the file store too, perhaps before the run's tracker
    # has started (MLflow 3 refuses a file store without this)
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    cfg = TrackingConfig(to=to, mode="offline" if to == "wandb" else None,  # type: ignore[arg-type]
                         tracking_uri=None if to == "wandb" else f"file:{tmp_path / 'mlruns'}",
                         **{"project": "p", **tracking})
    result: dict[str, Any] = {}
    thread = threading.Thread(target=lambda: result.update(rec=run(config(
        tmp_path, tiny_model, agent, budget_s=900, tracking=cfg))), daemon=True)
    thread.start()
    status_then = None
    deadline = time.monotonic() + 600  # a loaded machine may be slow; nothing waits on a timer
    while time.monotonic() < deadline and thread.is_alive():
        if ready():
            [run_json] = tmp_path.glob("runs/arith/*/run.json")
            status_then = load_run(run_json.parent).status
            break
        time.sleep(1)
    for ws in tmp_path.glob("runs/arith/*/workspace"):
        (ws / "go").touch()
    thread.join(timeout=600)
    return result["rec"], status_then


@needs_bwrap
@pytest.mark.parametrize("to", ["wandb", "mlflow"])
def test_a_scored_submission_reaches_the_tracker_while_the_run_goes(
        tmp_path: Path, tiny_model: Path, to: str, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[float] = []

    def ready() -> bool:
        seen[:] = _tracked_scores(to, tmp_path)
        return bool(seen)

    rec, status_then = _run_while_watching(tmp_path, tiny_model, AGENT, to, monkeypatch, ready)
    assert seen, "no scored submission reached the tracker while the agent waited"
    assert status_then == "running"
    assert rec.status == "finished" and rec.submissions[0].status == "baseline_copy"
    assert seen[0] == rec.submissions[0].score
    if to == "mlflow":
        from mlflow.tracking import MlflowClient

        client = MlflowClient(tracking_uri=f"file:{tmp_path / 'mlruns'}")
        experiment = client.get_experiment_by_name("p")
        assert experiment is not None
        [tracked] = client.search_runs([experiment.experiment_id])
        assert tracked.info.run_name == rec.run_id and tracked.info.status == "FINISHED"
        assert tracked.data.metrics["baseline"] == rec.baseline.score  # type: ignore[union-attr]
        assert tracked.data.params["task"] == "arith"
        assert tracked.data.params["task_params.heldout_seed"].startswith("hmac")  # redacted
    else:
        assert (run_dir_of(rec, tmp_path) / "wandb").is_dir()


def _cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "a2rl.cli", *args], capture_output=True,
                          text=True, env=env, timeout=120)


def test_a_missing_tracker_or_key_fails_before_the_run_folder(tmp_path: Path) -> None:
    blocked = tmp_path / "blocked"
    for name in ("wandb", "mlflow"):
        (blocked / name).mkdir(parents=True)
        (blocked / name / "__init__.py").write_text(f"raise ImportError('no {name} here')\n")
    base = {k: v for k, v in os.environ.items() if not k.startswith(("WANDB_", "A2RL_TOKEN"))}
    runs = tmp_path / "runs"
    for to in ("wandb", "mlflow"):
        out = _cli("run", "--agent", "cmd:true", "--log-to", to, "--runs-dir", str(runs),
                   env={**base, "PYTHONPATH": f"{blocked}{os.pathsep}{SRC}"})
        assert out.returncode == 2, out.stderr
        assert f"{to} is not installed" in out.stderr and "a2rl-bench[tracking]" in out.stderr
    # labels without a tracker, and a tag W&B would refuse: named with the fix
    out = _cli("run", "--agent", "cmd:true", "--log-group", "g", "--runs-dir", str(runs),
               env={**base, "PYTHONPATH": str(SRC)})
    assert out.returncode == 2 and "--log-group without --log-to" in out.stderr, out.stderr
    out = _cli("run", "--agent", "cmd:true", "--log-to", "mlflow", "--log-tag", "x" * 65,
               "--runs-dir", str(runs), env={**base, "PYTHONPATH": str(SRC)})
    assert out.returncode == 2 and "at most 64" in out.stderr, out.stderr
    # W&B online without a key: refused with the fix, before anything is created
    out = _cli("run", "--agent", "cmd:true", "--log-to", "wandb", "--runs-dir", str(runs),
               env={**base, "PYTHONPATH": str(SRC), "HOME": str(tmp_path), "NETRC": "/nonexistent"})
    assert out.returncode == 2 and "no API key" in out.stderr and "WANDB_MODE=offline" in out.stderr
    assert not runs.exists()
    # MLflow's own default store is a sqlite database: without sqlalchemy, refused with the fix
    if importlib.util.find_spec("sqlalchemy") is None:
        env = {k: v for k, v in base.items() if k != "MLFLOW_TRACKING_URI"}
        out = _cli("run", "--agent", "cmd:true", "--log-to", "mlflow", "--runs-dir", str(runs),
                   env={**env, "PYTHONPATH": str(SRC)})
        assert out.returncode == 2 and "needs sqlalchemy" in out.stderr, out.stderr
        assert "MLFLOW_TRACKING_URI=file:" in out.stderr
        assert not runs.exists()


# A training script the analysis reads as SFT (TRL's SFTTrainer), which waits 3 s and exits
# before it would import anything: the phase watch sees SFT while it runs.
TRAIN = b"""import time
time.sleep(3)
raise SystemExit(0)
from trl import SFTConfig, SFTTrainer
trainer = SFTTrainer(model="base", args=SFTConfig(output_dir="output/sft"), train_dataset=None)
trainer.train()
"""
PHASED_AGENT = ("cmd:mkdir -p code && echo " + base64.b64encode(TRAIN).decode() +
                " | base64 -d > code/train.py && python code/train.py && " + AGENT[4:])


def _tracked_phases(to: str, tmp_path: Path) -> list[tuple[str, dict[str, float]]]:
    """Each logged phase change in order: (phase, time per phase so far)."""
    if to == "wandb":
        out = []
        for log in _wandb_logs(tmp_path):
            for row in wandb_history(log):
                if "phase" in row:
                    by_key = {p.replace("/", "_"): p for p in PHASES}
                    seconds = {by_key[k.removeprefix("phase_s.")]: float(v)
                               for k, v in row.items() if k.startswith("phase_s.")}
                    out.append((json.loads(row["phase"]), seconds))
        return out
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=f"file:{tmp_path / 'mlruns'}")
    experiment = client.get_experiment_by_name("p")
    if experiment is None:
        return []
    out = []
    for r in client.search_runs([experiment.experiment_id]):
        history = {p: {m.step: m.value for m in client.get_metric_history(
            r.info.run_id, "phase_s." + p.replace("/", "_"))} for p in PHASES}
        for m in client.get_metric_history(r.info.run_id, "phase_index"):
            out.append((PHASES[int(m.value)], {p: h[m.step] for p, h in history.items()
                                               if m.step in h}))
    return out


@needs_bwrap
@pytest.mark.parametrize("to", ["wandb", "mlflow"])
def test_phase_changes_reach_the_tracker_while_the_agent_works(
        tmp_path: Path, tiny_model: Path, to: str, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """The agent trains (SFT by its script), submits, then waits: while it waits the tracker
    already holds the SFT phase with its time and the waiting phase it is in now. The run is
    labelled from the options and the tracker's own environment variables, and its series
    chart on one axis each (`_check_labels_and_axes`)."""
    seen: list[tuple[str, dict[str, float]]] = []

    def ready() -> bool:
        seen[:] = _tracked_phases(to, tmp_path)
        return bool(seen) and seen[-1][0] == "checkpoint/waiting" and "SFT" in [p for p, _ in seen]

    # the project from the tracker's variable; W&B writes under $WANDB_DIR, not the run folder
    monkeypatch.setenv("WANDB_PROJECT" if to == "wandb" else "MLFLOW_EXPERIMENT_NAME", "p")
    monkeypatch.setenv("WANDB_TAGS", "from-env")
    monkeypatch.setenv("WANDB_DIR", str(tmp_path / "wandb-dir"))
    (tmp_path / "wandb-dir").mkdir()
    rec, status_then = _run_while_watching(tmp_path, tiny_model, PHASED_AGENT, to, monkeypatch,
                                           ready, phase_every_s=0.5, project=None, entity="ent",
                                           group="grp", tags=["t1", "t2"], name="my-run")
    _check_labels_and_axes(to, tmp_path, rec, capsys.readouterr().out)
    assert rec.status == "finished" and rec.exec_traced, rec
    assert status_then == "running", seen
    phases = [p for p, _ in seen]
    assert all(a != b for a, b in zip(phases, phases[1:], strict=False)), phases
    assert set(phases) <= set(PHASES)
    assert seen[-1][1].get("SFT", 0.0) >= 2.0, seen


def _check_labels_and_axes(to: str, tmp_path: Path, rec: RunRecord, console: str) -> None:
    """Project, entity, group, tags and name as asked; each series on one increasing axis;
    each submission's interval, status and significance; flat keys; the console names where
    the run is logged."""
    subs = [s for s in rec.submissions if s.split != "test"]
    assert len(subs) == 2 and all(s.ci_low is not None for s in subs)
    expected_tags = {"t1", "t2", "arith", "cmd"} | ({"from-env"} if to == "wandb" else set())
    if to == "wandb":
        assert not list(tmp_path.glob("runs/arith/*/wandb")), "W&B wrote into the run folder"
        [log] = _wandb_logs(tmp_path)
        [meta] = wandb_records(log, "run")[:1]
        assert (meta.project, meta.entity, meta.run_group, meta.display_name) == \
            ("p", "ent", "grp", "my-run")
        assert expected_tags <= set(meta.tags), meta.tags
        rows = wandb_history(log)
        assert all("/" not in key for row in rows for key in row), rows
        scored = [r for r in rows if "score" in r]
        assert [float(r["seq"]) for r in scored] == [float(s.seq) for s in subs]
        for row, sub in zip(scored, subs, strict=True):
            assert float(row["ci_low"]) == sub.ci_low and float(row["ci_high"]) == sub.ci_high
            assert json.loads(row["status"]) == sub.status
            assert float(row["significant"]) == float(bool(sub.significant))
        hours = [float(r["elapsed_h"]) for r in rows if "phase_index" in r]
        assert hours == sorted(hours) and len(hours) >= 2, rows
        assert "logging to W&B offline in" in console and str(tmp_path / "wandb-dir") in console
        return
    from mlflow.tracking import MlflowClient

    store = tmp_path / "mlruns"
    client = MlflowClient(tracking_uri=f"file:{store}")
    experiment = client.get_experiment_by_name("p")
    assert experiment is not None
    [tracked] = client.search_runs([experiment.experiment_id])
    run_id, tags = tracked.info.run_id, tracked.data.tags
    assert tracked.info.run_name == "my-run" and tags["group"] == "grp" and tags["entity"] == "ent"
    assert expected_tags <= {k for k, v in tags.items() if v == "true"}, tags
    for sub in subs:
        assert tags[f"status.{sub.id}"] == sub.status
    # every key flat in the store (a `/` would be a folder), each at increasing steps
    metric_files = [p for p in (store / experiment.experiment_id / run_id / "metrics").rglob("*")]
    assert metric_files and all(p.is_file() for p in metric_files), metric_files
    for key in tracked.data.metrics:
        steps = [m.step for m in client.get_metric_history(run_id, key)]
        assert steps == sorted(steps), (key, steps)
    for key in ("score", "ci_low", "ci_high", "significant", "valid"):
        history = client.get_metric_history(run_id, key)
        assert [m.step for m in history] == [s.seq for s in subs], key
    assert [m.value for m in client.get_metric_history(run_id, "ci_low")] == \
        [s.ci_low for s in subs]
    assert [m.step for m in client.get_metric_history(run_id, "run.best")] == [subs[-1].seq]
    assert "phase_s.checkpoint_waiting" in tracked.data.metrics
    assert tracked.data.params["phase.7"] == "checkpoint/waiting" and tags["phase"] in PHASES
    assert f"logging to MLflow file:{store}, experiment p, run {run_id}" in console


def test_a_sweeps_runs_are_grouped_by_its_name(tmp_path: Path) -> None:
    """A matrix's `log:` takes the labels; the group defaults to the sweep's name."""
    from a2rl.sweep import load_matrix

    path = tmp_path / "grid-a.yaml"
    path.write_text("tasks: [arith]\nagents: ['cmd:true']\n"
                    "log: {to: mlflow, project: p, tags: [t1], name: n}\n")
    log = load_matrix(path).log
    assert log is not None and (log.group, log.project, log.tags, log.name) == \
        ("grid-a", "p", ["t1"], "n")
    path.write_text("name: s\ntasks: [arith]\nagents: ['cmd:true']\nlog: {to: wandb, group: mine}\n")
    log = load_matrix(path).log
    assert log is not None and log.group == "mine"
