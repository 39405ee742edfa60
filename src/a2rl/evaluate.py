"""`a2rl eval` and `a2rl rescore`: a task's own scorer, run by the operator outside any run.

- `a2rl eval --task T --model M` evaluates a model on the held-out set exactly as the grader does
  (same task code, same decoding); `--predictions FILE` scores given completions instead (see
  `a2rl.tasks._core.offline` for the format). Per-item verdicts go to `$A2RL_HOME/evals/...` or
  `--out`, never into a workspace.
- `a2rl rescore RUN...` scores the completions an earlier run recorded (evals/<id>/details.jsonl)
  with the current scorer and appends the new scores beside the old ones (rescores.jsonl in the
  run directory); the ledger is never touched.

Both read held-out data, so both refuse to run inside an agent's sandbox.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError

from a2rl import __version__
from a2rl._errors import A2RLError
from a2rl._paths import cache_dir
from a2rl._util import atomic_write_text, utcnow
from a2rl.schema import EngineInfo
from a2rl.tasks import EvalOutcome, StaticTextTask, Task

RECORD_VERSION = "1"
SANDBOX_HOSTNAME = "a2rl-sandbox"
"""The hostname bubblewrap gives an agent's sandbox (a2rl.sandbox)."""
AGENT_ENV_VARS = ("A2RL_TOKEN", "A2RL_GRADER_URL", "A2RL_WORKSPACE")
"""Set for every agent process by the runner, never by the operator's own shell."""
RESCORES_FILE = "rescores.jsonl"


# ---- where it may run ------------------------------------------------------------------------

def agent_sandbox_reason() -> str | None:
    """Why this process looks like an agent's (None: it does not)."""
    if socket.gethostname() == SANDBOX_HOSTNAME:
        return f"the hostname is {SANDBOX_HOSTNAME!r} (an agent's sandbox)"
    present = [v for v in AGENT_ENV_VARS if os.environ.get(v)]
    if present:
        return f"{', '.join(present)} {'is' if len(present) == 1 else 'are'} set (an agent's environment)"
    return None


def refuse_in_agent_sandbox(command: str) -> None:
    reason = agent_sandbox_reason()
    if reason:
        raise A2RLError(f"`a2rl {command}` reads the held-out set and does not run for an agent: "
                        f"{reason}",
                        "agents measure their models with the grader (POST $A2RL_GRADER_URL/submit); "
                        f"operators run `a2rl {command}` from their own shell, outside any run")


def _inside_workspace(path: Path) -> Path | None:
    """The workspace `path` lies in (a folder holding data/task.json), if any."""
    for folder in (path, *path.parents):
        if (folder / "data" / "task.json").is_file():
            return folder
    return None


def _out_dir(out: Path | None, task: Task, label: str) -> Path:
    if out is None:
        stamp = time.strftime("%Y%m%d-%H%M%S")
        safe = "".join(c if c.isalnum() or c in "-_." else "-" for c in label)[:60]
        out = cache_dir("evals", task.name) / f"{stamp}-{safe}"
    out = out.absolute()
    ws = _inside_workspace(out)
    if ws is not None:
        raise A2RLError(f"--out {out} is inside the workspace {ws}",
                        "per-item verdicts hold held-out items and answers: write them outside "
                        "any workspace (leave --out out for $A2RL_HOME/evals)")
    return out


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _write_details(path: Path, rows: list[dict[str, Any]]) -> None:
    with path.open("w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")


# ---- a2rl eval -------------------------------------------------------------------------------

class EvalRecord(BaseModel):
    """`eval.json` beside `details.jsonl` in the folder `a2rl eval` writes."""

    version: str = RECORD_VERSION
    """Format version of this record."""
    task: str
    """Task name."""
    task_version: str
    """The task's version (its data, prompt and scorer) when this evaluation ran."""
    params: dict[str, Any]
    """The task options (secret ones left out)."""
    fingerprint: str
    """Identity of the evaluation (task, version, options, held-out items), as in the ledger."""
    source: Literal["model", "predictions"]
    """What was scored: a model's generations or a predictions file."""
    model: str | None = None
    """--model as given, and its resolved folder after a space; None for predictions."""
    chat_template_from: str | None = None
    """Folder whose chat template rendered the prompts (the grader uses the base model's)."""
    predictions: str | None = None
    """The predictions file; None for a model."""
    predictions_sha256: str | None = None
    """sha256 of the predictions file as it was read."""
    allow_missing: bool = False
    """Items without a prediction were scored as empty completions."""
    score: float
    """Task score (0–100), as the grader would report it."""
    n_items: int
    """Held-out items (or episodes) scored."""
    ci_low: float | None = None
    """Lower bound of the score's 95 % interval (0–100); None when the task gives no per-item
    values."""
    ci_high: float | None = None
    """Upper bound of the score's 95 % interval (0–100)."""
    ci_method: str | None = None
    """How the interval was computed (wilson, bootstrap or bootstrap-shifted; see the grader)."""
    metrics: dict[str, float]
    """Secondary metrics of the task."""
    engine: EngineInfo | None = None
    """The inference engine that generated the completions (None for --predictions)."""
    a2rl_version: str
    """a2rl's version."""
    created_at: dt.datetime
    """When the evaluation finished (UTC)."""
    seconds: float
    """Wall time of the evaluation."""


def _finish_eval(task: Task, outcome: EvalOutcome, out: Path, started: float,
                 **fields: Any) -> EvalRecord:
    from a2rl.grader import item_values, score_interval

    out.mkdir(parents=True, exist_ok=True)
    _write_details(out / "details.jsonl", outcome.details)
    interval = score_interval(item_values(outcome, []).values, outcome.score)
    record = EvalRecord(task=task.name, task_version=task.version, params=task.params.public(),
                        fingerprint=task.fingerprint(), score=outcome.score, n_items=outcome.n_items,
                        ci_low=interval.low if interval else None,
                        ci_high=interval.high if interval else None,
                        ci_method=interval.method if interval else None,
                        metrics=outcome.metrics, a2rl_version=__version__, created_at=utcnow(),
                        seconds=round(time.monotonic() - started, 2), **fields)
    atomic_write_text(out / "eval.json", record.model_dump_json(indent=2))
    return record


def eval_model(task: Task, model: str, *, chat_template_from: str | None = None,
               out: Path | None = None,
               on_progress: Callable[[int, int], None] | None = None) -> tuple[EvalRecord, Path]:
    """Evaluate a model (alias, folder or hub id) as the grader would; write its verdicts."""
    from a2rl.inference import selected
    from a2rl.models import resolve_model

    refuse_in_agent_sandbox("eval")
    for spec in (model, chat_template_from):
        if spec and spec.startswith((".", "/", "~")) and not Path(spec).expanduser().exists():
            raise A2RLError(f"model folder {spec} does not exist",
                            "check the path, or give an embedded alias (smollm2-135m) or a hub id")
    resolved = resolve_model(model)
    template = resolve_model(chat_template_from).path if chat_template_from else resolved.path
    folder = _out_dir(out, task, Path(model).name or model)
    started = time.monotonic()
    outcome = task.evaluate(resolved.path, chat_template_from=template, on_progress=on_progress)
    record = _finish_eval(task, outcome, folder, started, source="model",
                          model=f"{model} {resolved.path}", chat_template_from=str(template),
                          engine=selected())
    return record, folder


def eval_predictions(task: Task, predictions: Path, *, allow_missing: bool = False,
                     out: Path | None = None,
                     on_progress: Callable[[int, int], None] | None = None) -> tuple[EvalRecord, Path]:
    """Score a predictions file with the task's scorer; write its verdicts."""
    from a2rl.tasks import read_predictions

    refuse_in_agent_sandbox("eval")
    preds = read_predictions(predictions)
    digest = _sha256(predictions)
    started = time.monotonic()
    folder = _out_dir(out, task, predictions.stem)
    outcome = task.score_offline(preds, allow_missing=allow_missing, on_progress=on_progress)
    record = _finish_eval(task, outcome, folder, started, source="predictions",
                          predictions=str(predictions.absolute()), predictions_sha256=digest,
                          allow_missing=allow_missing)
    return record, folder


def write_prompts(task: Task, path: Path) -> int:
    """The held-out prompts of a static task, one JSON object a line (`id`, `messages`,
    `assistant_prefix`), for producing a predictions file with one's own inference stack."""
    refuse_in_agent_sandbox("eval")
    if not isinstance(task, StaticTextTask):
        raise A2RLError(f"task {task.name!r} is interactive: its prompts depend on the episode so far",
                        f"evaluate a model with a2rl eval --task {task.name} --model M, or give "
                        "recorded turns (`completions` per episode id) with --predictions")
    if _inside_workspace(path.absolute()):
        raise A2RLError(f"{path} is inside a workspace", "write held-out prompts outside any workspace")
    items = task.heldout_items()
    path.parent.mkdir(parents=True, exist_ok=True)
    _write_details(path, [{"id": i, "messages": task.messages(item),
                           "assistant_prefix": task.assistant_prefix(item)}
                          for i, item in zip(task.item_ids(), items, strict=True)])
    return len(items)


# ---- a2rl rescore ----------------------------------------------------------------------------

class RescoreRecord(BaseModel):
    """One line of `rescores.jsonl` in a run directory: an evaluation the run recorded, scored
    again from its stored completions. Appended, never rewritten; the ledger stays as it was."""

    version: str = RECORD_VERSION
    """Format version of this record."""
    run_id: str
    """The run."""
    submission_id: str
    """Ledger id of the submission, or `baseline` for the base model's evaluation."""
    rescored_at: dt.datetime
    """When this rescore ran (UTC)."""
    old_score: float | None
    """The score the run recorded (ledger / baseline.json)."""
    old_task_version: str | None
    """The task version the run was scored with (run.json)."""
    old_fingerprint: str | None
    """The evaluation identity the run recorded."""
    old_metrics: dict[str, float] = Field(default_factory=dict)
    """Secondary metrics of the recorded evaluation (evals/<id>/outcome.json), when kept."""
    new_score: float | None = None
    """The score from the current scorer; None when this evaluation could not be rescored."""
    new_task_version: str
    """The task version now."""
    new_fingerprint: str | None = None
    """The evaluation identity now."""
    new_metrics: dict[str, float] = Field(default_factory=dict)
    """Secondary metrics from the current scorer."""
    n_items: int | None = None
    """Items rescored."""
    cached_from: str | None = None
    """For a submission the grader answered from its cache: the submission whose stored
    completions gave its new score."""
    details: str | None = None
    """New per-item verdicts, relative to the run directory."""
    a2rl_version: str
    """a2rl's version now."""
    error: str | None = None
    """Why it was not rescored, and what to do about it."""


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise A2RLError(f"cannot read {path}: {exc}", "the run directory is incomplete or damaged") from exc


def _read_rows(path: Path) -> list[Any]:
    rows = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise A2RLError(f"{path}:{number} is not valid JSON", "the stored evaluation is "
                                "damaged; it cannot be rescored") from exc
    return rows


def _ledger_state(run_dir: Path) -> list[dict[str, Any]]:
    """The last state of every submission, in arrival order (the ledger is append-only). Read
    as plain JSON, for the few fields rescoring needs, so that runs recorded by older or newer
    a2rl versions (other record fields) can be rescored too."""
    path = run_dir / "ledger.jsonl"
    latest: dict[str, dict[str, Any]] = {}
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:
                continue  # a torn line of a crash; the ledger's own reader skips it too
            if isinstance(rec, dict) and isinstance(rec.get("id"), str):
                latest[rec["id"]] = rec
    return sorted(latest.values(), key=lambda r: int(r.get("seq") or 0))


def _rescore_eval(eval_dir: Path, run_dir: Path, stamp: str, name: str
                  ) -> tuple[Task, EvalOutcome, str]:
    from a2rl.schema import EvalJob
    from a2rl.tasks import predictions_from_rows, task_from_spec

    details = eval_dir / "details.jsonl"
    if not details.exists():
        raise A2RLError(f"{details.relative_to(run_dir)} is missing: the completions were not kept",
                        "only evaluations that finished and wrote their records can be rescored")
    try:
        job = EvalJob.model_validate_json((eval_dir / "job.json").read_text())
    except (OSError, ValidationError) as exc:
        raise A2RLError(f"cannot read {eval_dir.relative_to(run_dir)}/job.json: {exc}",
                        "the stored evaluation is incomplete; it cannot be rescored") from exc
    task = task_from_spec(job.task)
    preds = predictions_from_rows(_read_rows(details), str(details.relative_to(run_dir)))
    outcome = task.score_offline(preds)
    out = run_dir / "rescores" / stamp
    out.mkdir(parents=True, exist_ok=True)
    _write_details(out / f"{name}.details.jsonl", outcome.details)
    return task, outcome, str((out / f"{name}.details.jsonl").relative_to(run_dir))


def rescore_run(run_dir: Path) -> list[RescoreRecord]:
    """Rescore the baseline and every evaluated submission of one run; append the records."""
    from a2rl.tasks import task_class

    refuse_in_agent_sandbox("rescore")
    run = _read_json(run_dir / "run.json")
    info, baseline = run.get("task") or {}, run.get("baseline")
    if not info.get("name"):
        raise A2RLError(f"run {run.get('run_id', run_dir.name)} never got as far as its task",
                        "nothing to rescore")
    new_version = task_class(info["name"]).version
    stamp = time.strftime("%Y%m%d-%H%M%S")
    base: dict[str, Any] = {"run_id": str(run.get("run_id", run_dir.name)),
                            "old_task_version": info.get("version"),
                            "new_task_version": new_version, "a2rl_version": __version__}
    records: list[RescoreRecord] = []
    done: dict[str, RescoreRecord] = {}

    def rescore(sub_id: str, old_score: float | None, old_fp: str | None) -> RescoreRecord:
        eval_dir = run_dir / "evals" / sub_id
        old = _read_json(eval_dir / "outcome.json") if (eval_dir / "outcome.json").exists() else {}
        fields: dict[str, Any] = {**base, "submission_id": sub_id, "rescored_at": utcnow(),
                                  "old_score": old_score, "old_fingerprint": old_fp,
                                  "old_metrics": old.get("metrics", {})}
        try:
            task, outcome, details = _rescore_eval(eval_dir, run_dir, stamp, sub_id)
        except A2RLError as exc:
            return RescoreRecord(**fields, error=f"{exc.message}; {exc.fix}" if exc.fix else exc.message)
        return RescoreRecord(**fields, new_score=outcome.score, new_fingerprint=task.fingerprint(),
                             new_metrics=outcome.metrics, n_items=outcome.n_items, details=details)

    if isinstance(baseline, dict):
        if baseline.get("cached") and not (run_dir / "evals" / "baseline" / "details.jsonl").exists():
            records.append(RescoreRecord(
                **base, submission_id="baseline", rescored_at=utcnow(), old_score=baseline.get("score"),
                old_fingerprint=baseline.get("task_fingerprint"),
                error="the baseline came from the cache, so this run kept no completions for it"))
        else:
            records.append(rescore("baseline", baseline.get("score"), baseline.get("task_fingerprint")))
    for sub in _ledger_state(run_dir):
        if sub.get("status") != "scored":
            continue  # rejected, failed, baseline copies: no evaluation of their own
        sub_id, cached_from = sub["id"], sub.get("cached_from")
        if sub.get("cached") and cached_from:
            src = done.get(cached_from)
            rec = RescoreRecord(**base, submission_id=sub_id, rescored_at=utcnow(),
                                old_score=sub.get("score"), old_fingerprint=sub.get("task_fingerprint"),
                                cached_from=cached_from,
                                new_score=src.new_score if src else None,
                                new_fingerprint=src.new_fingerprint if src else None,
                                new_metrics=src.new_metrics if src else {},
                                n_items=src.n_items if src else None,
                                details=src.details if src else None,
                                error=None if src and src.error is None else
                                f"its score was reused from {cached_from}, which was not rescored")
        else:
            rec = rescore(sub_id, sub.get("score"), sub.get("task_fingerprint"))
        done[sub_id] = rec
        records.append(rec)
    with (run_dir / RESCORES_FILE).open("a", encoding="utf-8") as fh:
        for rec in records:
            fh.write(rec.model_dump_json() + "\n")
    return records


# ---- console ---------------------------------------------------------------------------------

def show_eval(record: EvalRecord, folder: Path) -> None:
    from rich.markup import escape
    from rich.table import Table

    from a2rl._console import make_console

    console = make_console()
    what = record.model.split(" ")[0] if record.model else record.predictions
    ci = ("" if record.ci_low is None or record.ci_high is None else
          f" [{record.ci_low:.2f}, {record.ci_high:.2f}] (95% CI, {record.ci_method})")
    console.print(f"[bold]{record.task}[/] v{record.task_version}: score [bold]{record.score:.2f}[/]"
                  f"{ci} on {record.n_items} held-out items ({escape(what or '')})", highlight=False)
    if record.engine is not None:
        e = record.engine
        console.print(f"engine: {e.name} {e.version or ''} ({e.package}, {e.device})", highlight=False)
    if record.metrics:
        table = Table("metric", "value")
        for key, value in record.metrics.items():
            table.add_row(key, f"{value:g}")
        console.print(table)
    console.print(f"per-item verdicts: {folder / 'details.jsonl'}; record: {folder / 'eval.json'}",
                  highlight=False)


def show_rescore(run_dir: Path, records: list[RescoreRecord]) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    table = Table("submission", "old score", "old version", "new score", "new version", "change",
                  title=f"rescored {run_dir.name}")
    for r in records:
        change = (f"{r.new_score - r.old_score:+.2f}" if r.new_score is not None
                  and r.old_score is not None else "")
        new = f"{r.new_score:.2f}" if r.new_score is not None else f"[red]not rescored[/]: {r.error}"
        table.add_row(r.submission_id + (f" (= {r.cached_from})" if r.cached_from else ""),
                      "" if r.old_score is None else f"{r.old_score:.2f}", r.old_task_version or "?",
                      new, r.new_task_version, change)
    console.print(table)
    console.print(f"recorded in {run_dir / RESCORES_FILE} (the ledger is unchanged)", highlight=False)
