"""Logging a run to Weights & Biases or MLflow while it goes.

`check_tracking` runs before the run folder exists (the library is importable, W&B has a key
or runs offline, an MLflow store is usable and writable), so a 12-hour run never fails at its end
for a tracker. `LiveTracker` is fed by the runner: the baseline once it is scored, each
submission as the grader finishes it (charted against its sequence number `seq`), each change
of the agent's phase (`phase`, `phase_index` and the time per phase so far `phase_s.*`, charted
against the agent's hours `elapsed_h`), and at the close the summary (baseline, best,
improvement, hidden final, time per phase) with run.json and summary.md as artifacts.
Scores come from the grader's records only; the phase is labelled as the run's analysis labels
it (the exec trace or the agent's event log, read against the workspace's scripts). A tracker
failure is printed and never fails the run.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from a2rl._errors import A2RLError
from a2rl._util import descendants, keep_process
from a2rl.records import RunRecord, SubmissionRecord, TrackingConfig, load_run

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
    _module(cfg.to)
    if cfg.to == "wandb":
        if _wandb_mode(cfg) in ("online", "run") and not _has_wandb_key():
            raise A2RLError("--log-to wandb: W&B has no API key on this machine",
                            "run `wandb login` or export WANDB_API_KEY; or log offline "
                            "(WANDB_MODE=offline, `wandb sync` later)")
        return
    _check_mlflow(cfg)


def _flat(prefix: str, value: Any, out: dict[str, Any]) -> None:
    if isinstance(value, dict):
        for k, v in value.items():
            _flat(f"{prefix}.{k}" if prefix else str(k), v, out)
    elif isinstance(value, list):
        out[prefix] = ",".join(str(v) for v in value)
    else:
        out[prefix] = value


def _params(record: RunRecord) -> dict[str, Any]:
    config = record.config.model_dump(mode="json", exclude={"runs_dir", "tracking"})
    params: dict[str, Any] = {}
    _flat("", {**config, "model_hash": record.model.content_hash if record.model else None,
               "task_version": record.task.version if record.task else None,
               "sandboxed": record.sandboxed, "flags": record.flags}, params)
    return params


def _step(sub: SubmissionRecord) -> dict[str, float] | None:
    if sub.score is None or sub.split == "test":
        return None
    step = {"score": float(sub.score), "seq": float(sub.seq)}
    if sub.improvement is not None:
        step["improvement"] = float(sub.improvement)
    if sub.elapsed_s is not None:
        step["elapsed_h"] = sub.elapsed_s / 3600
    return step


def _summary(record: RunRecord, run_dir: Path) -> dict[str, float]:
    summary: dict[str, float] = {"submissions": float(len(record.submissions))}
    if record.baseline and record.baseline.score == record.baseline.score:  # NaN: none
        summary["baseline"] = float(record.baseline.score)
    if record.best and record.best.score is not None:
        summary["best"] = float(record.best.score)
    if record.improvement is not None:
        summary["improvement"] = float(record.improvement)
    final = record.final
    if final is not None and final.score is not None:
        summary["final_test_score"] = float(final.score)
    analysis = run_dir / "analysis.json"
    if analysis.exists():
        from a2rl.records import RunAnalysis

        try:
            a = RunAnalysis.model_validate_json(analysis.read_bytes())
        except ValueError:
            a = None
        if a is not None:
            for phase, seconds in a.phase_seconds.items():
                summary[f"phase_s.{phase}"] = float(seconds)
    return summary


def run_payload(run_dir: Path) -> tuple[str, dict[str, Any], list[dict[str, float]],
                                        dict[str, float]]:
    """(name, params, per-submission steps, summary metrics) of one recorded run."""
    record = load_run(run_dir)
    steps = [s for s in (_step(sub) for sub in record.submissions) if s is not None]
    return record.run_id, _params(record), steps, _summary(record, run_dir)


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
    """One run's tracker session; every method is safe to call from the grader's threads."""

    def __init__(self, cfg: TrackingConfig, run_dir: Path, record: RunRecord, say: _Say) -> None:
        self.cfg, self.run_dir, self.say = cfg, run_dir, say
        self._lock = threading.Lock()
        self._closed = False
        params = _params(record)
        if cfg.to == "wandb":
            wandb = _module("wandb")
            kwargs: dict[str, Any] = {"project": cfg.project, "name": record.run_id,
                                      "config": params, "reinit": "create_new",
                                      "dir": str(run_dir)}
            if cfg.mode:
                kwargs["mode"] = cfg.mode
            self._wandb = wandb.init(**kwargs)
            self.id = str(self._wandb.id)
            # W&B's service serves every run of this process and keeps a log open in the
            # first run's folder: the cleanup after that run must not kill it
            for pid in _wandb_services():
                keep_process(pid)
            # Rows carry their own x values (W&B's step counts rows): submissions are charted
            # by sequence number, phases by the agent's hours.
            self._wandb.define_metric("seq")
            self._wandb.define_metric("elapsed_h")
            for key in ("score", "improvement", "baseline", "baseline_items"):
                self._wandb.define_metric(key, step_metric="seq")
            for key in ("phase_index", "phase_s.*"):
                self._wandb.define_metric(key, step_metric="elapsed_h")
        else:
            mlflow = _module("mlflow")
            uri = _mlflow_uri(cfg)
            if uri is not None and _mlflow_store(uri) is not None:
                # MLflow 3 refuses a file store unless this is set; the user named one
                os.environ.setdefault("MLFLOW_ALLOW_FILE_STORE", "true")
            self._client = mlflow.tracking.MlflowClient(tracking_uri=uri)
            experiment = self._client.get_experiment_by_name(cfg.project)
            experiment_id = (experiment.experiment_id if experiment is not None
                             else self._client.create_experiment(cfg.project))
            run = self._client.create_run(experiment_id, run_name=record.run_id)
            self.id = str(run.info.run_id)
            # MLflow params are strings of at most 6000 characters, logged in batches of 100
            items = [(k, str(v)[:6000]) for k, v in params.items()]
            from mlflow.entities import Param

            for i in range(0, len(items), 100):
                self._client.log_batch(self.id, params=[Param(k, v) for k, v in items[i:i + 100]])

    def _metrics(self, values: dict[str, float], step: int,
                 tags: dict[str, str] | None = None) -> None:
        """One row: W&B logs it with its x values inside; MLflow at `step`, with `tags`."""
        with self._lock:
            if self._closed:
                return
            try:
                if self.cfg.to == "wandb":
                    # commit: the row is written now (the offline log, the live chart), not
                    # when the next row arrives
                    self._wandb.log({**values, **(tags or {})}, commit=True)
                else:
                    for key, value in values.items():
                        self._client.log_metric(self.id, key, value, step=step)
                    for key, text in (tags or {}).items():
                        self._client.set_tag(self.id, key, text)
            except Exception as exc:  # a tracker problem never fails the run
                self.say(f"logging to {self.cfg.to} failed: {type(exc).__name__}: {exc}")

    def baseline(self, score: float, n_items: int) -> None:
        self._metrics({"baseline": float(score), "baseline_items": float(n_items), "seq": 0.0},
                      step=0)

    def submission(self, sub: SubmissionRecord) -> None:
        step = _step(sub)
        if step is not None:
            self._metrics(step, step=sub.seq)

    def phase(self, now: PhaseNow) -> None:
        """The agent's phase changed: the new phase and the time per phase so far."""
        values = {"phase_index": float(now.index), "elapsed_h": now.at_s / 3600,
                  **{f"phase_s.{p}": float(s) for p, s in now.seconds.items()}}
        self._metrics(values, step=int(now.at_s), tags={"phase": now.phase})

    def finish(self) -> None:
        """The summary and the run's records; ends the tracker's run."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            try:
                record = load_run(self.run_dir)
                summary = _summary(record, self.run_dir)
                artifacts = [p for p in (self.run_dir / "run.json", self.run_dir / "summary.md")
                             if p.is_file() and not p.is_symlink()]
                failed = record.status == "failed"
                if self.cfg.to == "wandb":
                    for key, value in summary.items():
                        self._wandb.summary[key] = value
                    for path in artifacts:
                        self._wandb.save(str(path), base_path=str(self.run_dir), policy="now")
                    self._wandb.finish(exit_code=1 if failed else 0)
                else:
                    for key, value in summary.items():
                        self._client.log_metric(self.id, key, value)
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
