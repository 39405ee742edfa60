"""Logging a run to Weights & Biases or MLflow while it goes.

`check_tracking` runs before the run folder exists (the labels are acceptable, the library is
importable, W&B has a key or runs offline, an MLflow store is usable and writable), so a
12-hour run never fails at its end for a tracker. `LiveTracker` is fed by the runner: the
baseline once it is scored, each submission as the grader finishes it (score, interval, gain,
significance, status; charted against its sequence number `seq`), each change of the agent's
phase (its name, `phase_index` and the time per phase so far `phase_s.*`, charted against the
agent's hours `elapsed_h`), and at the close the summary (`run.*`: best, gain, hidden final,
time per phase, cost) with run.json and summary.md as artifacts. Where the run is logged
(`_destination`) and what each row holds (`_rows`) live beside it. Scores come from the
grader's records only; the phase is labelled as the run's analysis labels it. A tracker
failure is printed and never fails the run.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from a2rl._errors import A2RLError
from a2rl._util import descendants, keep_process
from a2rl.extensions.tracking._destination import check_labels, destination
from a2rl.extensions.tracking._rows import (
    PHASE_KEYS,
    SEQ_KEYS,
    params,
    phase_row,
    submission_row,
    summary,
)
from a2rl.schema import RunRecord, SubmissionRecord, TrackingConfig, load_run

if TYPE_CHECKING:
    from a2rl.analysis import PhaseNow


class _Say(Protocol):
    def __call__(self, text: str) -> None: ...


def _module(name: str) -> Any:
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        package = "mlflow-skinny (or mlflow)" if name == "mlflow" else name
        raise A2RLError(f"--log-to {name}: {name} is not installed",
                        f"pip install 'a2rl-bench[tracking]' (or {package}), or drop --log-to"
                        ) from exc


def _wandb_mode(cfg: TrackingConfig) -> str:
    return cfg.mode or os.environ.get("WANDB_MODE", "online")


def _has_wandb_key() -> bool:
    if os.environ.get("WANDB_API_KEY"):
        return True
    netrc = Path(os.environ.get("NETRC", Path.home() / ".netrc"))
    try:
        return "api.wandb.ai" in netrc.read_text(errors="replace")
    except OSError:
        return False


def _mlflow_uri(cfg: TrackingConfig) -> str | None:
    """The store the MLflow client will use: the config's, else MLFLOW_TRACKING_URI, else
    None (MLflow's own default)."""
    return cfg.tracking_uri or os.environ.get("MLFLOW_TRACKING_URI") or None


def _mlflow_store(uri: str) -> Path | None:
    """The folder of a file-based MLflow store (None: a database or a server)."""
    if uri.startswith("file:"):
        return Path(uri.removeprefix("file://").removeprefix("file:"))
    if "://" not in uri and not uri.startswith("sqlite:"):
        return Path(uri)
    return None


def _mlflow_default_uri() -> str:
    from mlflow.tracking import get_tracking_uri

    return str(get_tracking_uri())


def _check_mlflow(cfg: TrackingConfig) -> None:
    uri = _mlflow_uri(cfg) or _mlflow_default_uri()
    if uri.startswith(("sqlite:", "postgresql", "mysql", "mssql")) \
            and importlib.util.find_spec("sqlalchemy") is None:
        raise A2RLError(f"--log-to mlflow: the MLflow store {uri} is a database, which needs "
                        "sqlalchemy (not installed with mlflow-skinny)",
                        "pip install mlflow (the full package), or use a file store or a "
                        "server: export MLFLOW_TRACKING_URI=file:./mlruns (or http://HOST:5000)")
    store = _mlflow_store(uri)
    if store is not None:
        probe = store if store.exists() else store.parent
        if not os.access(probe, os.W_OK):
            raise A2RLError(f"--log-to mlflow: the MLflow store {store} is not writable",
                            "set MLFLOW_TRACKING_URI (or the sweep's log.tracking_uri) to a "
                            "writable folder or a tracking server")


def check_tracking(cfg: TrackingConfig) -> None:
    """Refuse a tracker that could not log (before the run folder exists)."""
    check_labels(cfg)
    _module(cfg.to)
    if cfg.to == "wandb":
        if _wandb_mode(cfg) in ("online", "run") and not _has_wandb_key():
            raise A2RLError("--log-to wandb: W&B has no API key on this machine",
                            "run `wandb login` or export WANDB_API_KEY; or log offline "
                            "(WANDB_MODE=offline, `wandb sync` later)")
        return
    _check_mlflow(cfg)


def _wandb_services() -> list[int]:
    """This process's descendants that are W&B's service process (`wandb-core`, started for
    this process's pid)."""
    me = str(os.getpid())
    found = []
    for pid in descendants(os.getpid()):
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
        except OSError:
            continue
        if Path(argv[0]).name == "wandb-core" and me in argv:
            found.append(pid)
    return found


class LiveTracker:
    """One run's tracker session; every method is safe to call from the grader's threads.
    `where` names the tracked run (W&B's URL or offline folder; MLflow's store, experiment
    and run id)."""

    def __init__(self, cfg: TrackingConfig, run_dir: Path, record: RunRecord, say: _Say) -> None:
        self.cfg, self.run_dir, self.say = cfg, run_dir, say
        self._lock = threading.Lock()
        self._closed = False
        self._last_seq = 0
        self._last_phase_step = -1
        self.dest = destination(cfg, record)
        if cfg.to == "wandb":
            self._open_wandb(record)
        else:
            self._open_mlflow(record)

    def _open_wandb(self, record: RunRecord) -> None:
        wandb = _module("wandb")
        d = self.dest
        kwargs: dict[str, Any] = {"project": d.project, "name": d.name, "tags": d.tags,
                                  "config": params(record), "reinit": "create_new"}
        if d.entity:
            kwargs["entity"] = d.entity
        if d.group:
            kwargs["group"] = d.group
        # W&B's own folder when set (named here too: W&B reads its variables once a process),
        # else the run's
        kwargs["dir"] = os.environ.get("WANDB_DIR") or str(self.run_dir)
        if self.cfg.mode:
            kwargs["mode"] = self.cfg.mode
        self._wandb = wandb.init(**kwargs)
        self.id = str(self._wandb.id)
        # W&B's service serves every run of this process and keeps a log open in the first
        # run's folder: the cleanup after that run must not kill it
        for pid in _wandb_services():
            keep_process(pid)
        # Rows carry their own x values (W&B's step counts rows): submissions are charted by
        # sequence number, phases by the agent's hours.
        self._wandb.define_metric("seq")
        self._wandb.define_metric("elapsed_h")
        for key in SEQ_KEYS:
            self._wandb.define_metric(key, step_metric="seq")
        for key in PHASE_KEYS:
            self._wandb.define_metric(key, step_metric="elapsed_h")
        url = getattr(self._wandb, "url", None)
        self.where = (f"W&B run {url}" if url else
                      f"W&B offline in {self._wandb.settings.sync_dir} (upload: wandb sync "
                      f"{self._wandb.settings.sync_dir})") + self._labels()

    def _open_mlflow(self, record: RunRecord) -> None:
        mlflow = _module("mlflow")
        from mlflow.entities import Param

        uri = _mlflow_uri(self.cfg)
        if uri is not None and _mlflow_store(uri) is not None:
            # MLflow 3 refuses a file store unless this is set; the user named one
            os.environ.setdefault("MLFLOW_ALLOW_FILE_STORE", "true")
        self._client = mlflow.tracking.MlflowClient(tracking_uri=uri)
        d = self.dest
        experiment = self._client.get_experiment_by_name(d.project)
        experiment_id = (experiment.experiment_id if experiment is not None
                         else self._client.create_experiment(d.project))
        tags = {t: "true" for t in d.tags}
        tags.update({k: v for k, v in (("group", d.group), ("entity", d.entity),
                                       ("a2rl.tags", ",".join(d.tags))) if v})
        run = self._client.create_run(experiment_id, run_name=d.name, tags=tags)
        self.id = str(run.info.run_id)
        # MLflow params are strings of at most 6000 characters, logged in batches of 100
        items = [(k, str(v)[:6000]) for k, v in params(record).items()]
        for i in range(0, len(items), 100):
            self._client.log_batch(self.id, params=[Param(k, v) for k, v in items[i:i + 100]])
        self.where = (f"MLflow {uri or _mlflow_default_uri()}, experiment "
                      f"{d.project}, run {self.id}") + self._labels()

    def _labels(self) -> str:
        d = self.dest
        return "".join(f"; {k} {v}" for k, v in (("entity", d.entity), ("group", d.group),
                                                 ("tags", ", ".join(d.tags))) if v)

    def _row(self, values: dict[str, float], step: int, *, text: dict[str, str] | None = None,
             tags: dict[str, str] | None = None) -> None:
        """One row. W&B: the values with their x value inside, and `text` as strings. MLflow:
        the values at `step` in one batch, `text` and `tags` as run tags."""
        with self._lock:
            if self._closed:
                return
            try:
                if self.cfg.to == "wandb":
                    # commit: the row is written now (the offline log, the live chart), not
                    # when the next row arrives
                    self._wandb.log({**values, **(text or {})}, commit=True)
                else:
                    from mlflow.entities import Metric, RunTag

                    now = int(time.time() * 1000)
                    self._client.log_batch(
                        self.id, metrics=[Metric(k, v, now, step) for k, v in values.items()],
                        tags=[RunTag(k, v) for k, v in {**(text or {}), **(tags or {})}.items()])
            except Exception as exc:  # a tracker problem never fails the run
                self.say(f"logging to {self.cfg.to} failed: {type(exc).__name__}: {exc}")

    def baseline(self, score: float, n_items: int) -> None:
        self._row({"baseline": float(score), "baseline_items": float(n_items), "seq": 0.0},
                  step=0)

    def submission(self, sub: SubmissionRecord) -> None:
        """A finished submission at its sequence number: score and interval, gain, whether it
        is beyond noise, valid; its status (MLflow: the tag `status.<id>`)."""
        found = submission_row(sub)
        if found is None:
            return
        row, status = found
        self._last_seq = max(self._last_seq, sub.seq)
        self._row(row, step=sub.seq, text={"status": status} if self.cfg.to == "wandb" else None,
                  tags={f"status.{sub.id}": status})

    def phase(self, now: PhaseNow) -> None:
        """The agent's phase changed: its index, its name, the time per phase so far. MLflow's
        step is the agent's second (increasing: two changes in one second take the next)."""
        step = max(int(now.at_s), self._last_phase_step + 1)
        self._last_phase_step = step
        self._row(phase_row(now.index, now.at_s, now.seconds), step=step,
                  text={"phase": now.phase})

    def finish(self) -> None:
        """The summary, each key once (W&B: the run summary; MLflow: metrics at the last
        submission's step), the status, and the run's records; ends the tracker's run."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            try:
                record = load_run(self.run_dir)
                result = summary(record, self.run_dir)
                labels = {"status": record.status, "exit_reason": record.exit_reason or ""}
                artifacts = [p for p in (self.run_dir / "run.json", self.run_dir / "summary.md")
                             if p.is_file() and not p.is_symlink()]
                failed = record.status == "failed"
                if self.cfg.to == "wandb":
                    for key, value in {**result, **labels}.items():
                        self._wandb.summary[f"run.{key}"] = value
                    for path in artifacts:
                        self._wandb.save(str(path), base_path=str(self.run_dir), policy="now")
                    self._wandb.finish(exit_code=1 if failed else 0)
                else:
                    from mlflow.entities import Metric, RunTag

                    now = int(time.time() * 1000)
                    self._client.log_batch(
                        self.id, metrics=[Metric(f"run.{k}", v, now, self._last_seq)
                                          for k, v in result.items()],
                        tags=[RunTag(f"run.{k}", v) for k, v in labels.items()])
                    for path in artifacts:
                        self._client.log_artifact(self.id, str(path))
                    self._client.set_terminated(self.id, "FAILED" if failed else "FINISHED")
            except Exception as exc:
                self.say(f"logging to {self.cfg.to} failed: {type(exc).__name__}: {exc}")


def open_tracker(cfg: TrackingConfig | None, run_dir: Path, record: RunRecord,
                 say: _Say) -> LiveTracker | None:
    """A tracker for this run, or None (none asked for, or it could not start: said)."""
    if cfg is None:
        return None
    try:
        return LiveTracker(cfg, run_dir, record, say)
    except Exception as exc:
        say(f"logging to {cfg.to} could not start: {type(exc).__name__}: {exc}")
        return None
