"""Rich rendering of run records for `a2rl run`, `a2rl demo` and `a2rl runs show/list`; every
agent-influenced string goes through `safe()` (a2rl._console) before it is printed."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console
from rich.table import Table

from a2rl._console import safe

if TYPE_CHECKING:
    from a2rl.schema import RunAnalysis, RunRecord
    from a2rl.tasks import Task


def _fmt(x: float | None) -> str:
    return "—" if x is None else f"{x:.2f}"


def _agent_label(agent: str, width: int) -> str:
    """An agent spec on one line (a cmd: agent may be a whole multi-line script)."""
    one_line = " ".join(agent.split())
    return one_line if len(one_line) <= width else one_line[:width - 1] + "…"


def live_record(record: RunRecord, run_dir: Path) -> RunRecord:
    """The record as it stands now. run.json is rewritten only at the run's stages, so while a
    run is open (no `ended_at`) its submissions, best and improvement are read from the
    grader's append-only ledger, and the agent's time so far from when it started."""
    if record.ended_at is not None:
        return record
    from a2rl._util import utcnow
    from a2rl.schema import best_submission, current_submissions

    update: dict[str, object] = {}
    ledger = run_dir / "ledger.jsonl"
    if ledger.is_file():
        subs = current_submissions(ledger)
        best = best_submission(subs)
        base = record.baseline.score if record.baseline else None
        update.update(submissions=subs, best=best, improvement=None if best is None or base is None
                      or base != base else round(best.score - base, 4))
    if record.agent_started_at is not None and not record.timings.agent_s:
        ran = max(0.0, (utcnow() - record.agent_started_at).total_seconds())
        update["timings"] = record.timings.model_copy(update={"agent_s": ran})
    return record.model_copy(update=update) if update else record


def _cost_line(record: RunRecord) -> str | None:
    """What the run spent, in words: tokens, dollars (and where the figure comes from),
    GPU-hours; None when nothing was recorded."""
    cost = record.cost
    if cost is None:
        return None
    parts = []
    if cost.input_tokens is not None or cost.output_tokens is not None:
        parts.append(f"{cost.input_tokens or 0:,} input + {cost.output_tokens or 0:,} output tokens")
    if cost.usd is not None:
        parts.append(f"${cost.usd:.2f}" + (f" ({safe(cost.usd_source)})" if cost.usd_source else ""))
    if cost.gpus or cost.gpu_hours:
        parts.append(f"{cost.gpu_hours:.2f} GPU-hours ({cost.gpus} GPU(s); agent "
                     f"{cost.agent_gpu_hours:.2f}, evaluations {cost.eval_gpu_hours:.2f})")
    return "; ".join(parts) or None


def show_run(record: RunRecord, console: Console, run_dir: Path | None = None) -> None:
    if run_dir is not None:
        record = live_record(record, run_dir)
    head = Table.grid(padding=(0, 2))
    head.add_row("run", safe(record.run_id))
    head.add_row("status", f"{record.status}" + (f" ({record.exit_reason})"
                                                 if record.exit_reason else ""))
    c = record.config
    head.add_row("task / agent / mode",
                 safe(f"{c.task} / {_agent_label(c.agent, 60)} / {c.mode}"))
    if record.task and record.task.scorer:
        scorer = record.task.scorer
        if f"version {record.task.version}" not in scorer:  # a scorer line may name it already
            scorer += f" (task {record.task.name} v{record.task.version})"
        head.add_row("scorer", safe(scorer))
    if record.model:
        head.add_row("model", f"{safe(record.model.spec)}  [dim]{safe(record.model.content_hash[:12])}[/]")
    if record.agent_package or c.driver:
        head.add_row("agent CLI / driver", safe(f"{record.agent_package or '-'} / "
                     f"{c.driver or '(default)'}" + (f" at {c.driver_base_url}"
                                                     if c.driver_base_url else "")))
    network = (f"[bold red]network {c.network} (host network shared)[/]" if c.network == "full"
               else f"network {safe(c.network)}")
    if c.network == "allowlist" and record.allowed_hosts:
        network += " (" + safe(", ".join(record.allowed_hosts)) + ")"
    head.add_row("sandbox", (safe(c.sandbox) if record.sandboxed
                             else "[bold red]NONE (unsandboxed)[/]") + ", " + network)
    if c.tasks:
        head.add_row("multi", safe(f"one agent on {', '.join(c.tasks)} (runs/multi/{record.run_id})"))
    running = " so far" if record.status == "running" and record.ended_at is None else ""
    head.add_row("budget", f"{c.budget_s:.0f} s; agent ran {record.timings.agent_s:.0f} s{running}")
    if (cost := _cost_line(record)) is not None:
        head.add_row("cost", cost)
    b = record.baseline
    if b is not None and b.score is not None and b.score == b.score:  # NaN: imported, none
        ci = "" if b.ci_low is None or b.ci_high is None else \
            f" [{b.ci_low:.2f}, {b.ci_high:.2f}] (95% CI, {b.n_items} items)"
        head.add_row("baseline", _fmt(b.score) + ci + _unseen(b.unseen_score, b.n_unseen))
    else:
        head.add_row("baseline", "not recorded (no improvement can be computed)")
    dev = " on the dev split" if c.final == "hidden" else ""
    if record.best:
        gain = "" if record.improvement is None else f", improvement {record.improvement:+.2f}{dev}"
        head.add_row("best", f"[bold]{_fmt(record.best.score)}[/] ({safe(record.best.submission_id)})"
                     + gain + _unseen(record.best.unseen_score, None))
    else:
        head.add_row("best", "no valid submission")
    if c.final == "hidden":
        head.add_row("FINAL (hidden test)", final_line(record))
    if record.error:
        head.add_row("error", f"[red]{safe(record.error)}[/]")
    analysis = _read_analysis(run_dir) if run_dir else None
    if analysis is not None:
        head.add_row("route", safe(analysis.route) + (
            f" (methods in the best submission: {safe(', '.join(analysis.methods_in_best))})"
            if analysis.methods_in_best else ""))
    if run_dir:
        head.add_row("run directory", safe(run_dir))
        if (run_dir / "summary.md").exists():
            head.add_row("summary", safe(run_dir / "summary.md"))
    console.print(head)
    if analysis is not None and analysis.findings:
        findings = Table(title="audit findings")
        for col in ("severity", "basis", "finding", "evidence"):
            findings.add_column(col, overflow="fold")
        for f in sorted(analysis.findings, key=lambda f: f.kind):  # a question's answers together
            findings.add_row(safe(f.severity), safe(f.basis), safe(f"{f.kind}: {f.message}"),
                             safe("; ".join(f.evidence[:3])[:300]))
        console.print(findings)
    if record.submissions:
        table = Table(title="submissions")
        for col in ("id", "at (s)", "model_path", "status", "score", "95% CI", "Δ", "eval s"):
            table.add_column(col, overflow="ellipsis", min_width=4)
        table.add_column("note", overflow="fold")
        for s in record.submissions:
            note = ("cached from " + s.cached_from if s.cached_from else
                    (s.note or "") if s.valid else (s.error or "").split("\n")[0])
            if s.split == "test":
                note = f"hidden final of {s.final_of}"
            elif s.significant is False:
                note = ("within noise of the baseline; " + note).rstrip("; ")
            ci = "—" if s.ci_low is None or s.ci_high is None else \
                f"{s.ci_low:.1f}–{s.ci_high:.1f}"
            table.add_row(safe(s.id), _fmt(s.elapsed_s), safe(s.model_path), safe(s.status),
                          _fmt(s.score), ci,
                          "—" if s.improvement is None else f"{s.improvement:+.2f}",
                          _fmt(s.eval_seconds), safe(note[:120]))
        console.print(table)


def _unseen(score: float | None, n: int | None) -> str:
    """The score on the held-out items not in the train-visible data, when the task measures
    that overlap."""
    if score is None:
        return ""
    return f"; unseen items {_fmt(score)}" + (f" ({n} items not in the train data)" if n else "")


def _read_analysis(run_dir: Path) -> RunAnalysis | None:
    """analysis.json of a run, or None when it is missing or unreadable (an unfinished run, a
    run from an older a2rl): `runs show` works on every run kind."""
    from a2rl.schema import RunAnalysis

    path = run_dir / "analysis.json"
    try:
        return RunAnalysis.model_validate_json(path.read_bytes())
    except (OSError, ValueError):
        return None


def final_line(record: RunRecord) -> str:
    """The hidden-final headline in words: score with its interval against the base model on
    the same hidden split, which submission it was and who chose it."""
    f = record.final
    if f is None:
        return "[yellow]not evaluated (the run ended before the final evaluation)[/]"
    if f.status != "scored" or f.score is None:
        return f"[yellow]{safe(f.status)}[/]" + (f": {safe(f.error)}" if f.error else "")
    ci = "" if f.ci_low is None or f.ci_high is None else f" [{f.ci_low:.2f}, {f.ci_high:.2f}]"
    noise = {True: "significant", False: "within noise", None: "significance unknown"}[f.significant]
    return (f"[bold]{f.score:.2f}[/]{ci} vs base {_fmt(f.test_baseline)}"
            + ("" if f.improvement is None else f", improvement {f.improvement:+.2f}")
            + f" ({noise}); {safe(f.submission_id)} {safe(f.model_path)}, chosen by "
              f"{safe(f.chosen_by)}; it scored {_fmt(f.dev_score)} on the dev split")


def list_runs(runs_dir: Path, console: Console) -> None:
    from a2rl.schema import load_run

    table = Table(title=f"runs in {safe(runs_dir)}")
    # a run id is copied into `a2rl runs show/rm`: never wrapped, whatever the width
    table.add_column("task/run", no_wrap=True, overflow="ignore", min_width=12)
    # a terminal keeps the table on screen; a log or a pipe gets every column whole
    tty = console.is_terminal
    table.add_column("agent (mode)", max_width=16 if tty else None, overflow="ellipsis",
                     no_wrap=True)
    for col in ("status", "base", "best", "Δ", "subs", "sandbox"):
        table.add_column(col, overflow="ellipsis", min_width=4)
    found = sorted(runs_dir.glob("*/*/run.json")) if runs_dir.exists() else []
    for path in found:
        try:
            r = live_record(load_run(path.parent), path.parent)
        except Exception as exc:  # a damaged run.json must not hide the others
            table.add_row(safe(f"{path.parent.parent.name}/{path.parent.name}"), "?",
                          f"[red]unreadable: {type(exc).__name__}[/]", "", "", "", "", "")
            continue
        table.add_row(safe(f"{r.config.task}/{r.run_id}"),
                      safe(f"{_agent_label(r.config.agent, 24 if tty else 400)} ({r.config.mode})"),
                      safe(r.status), _fmt(r.baseline.score if r.baseline else None),
                      _fmt(r.best.score if r.best else None),
                      "—" if r.improvement is None else f"{r.improvement:+.2f}",
                      str(len(r.submissions)),
                      (safe(r.config.sandbox) if r.sandboxed else "[red]none[/]")
                      + (" [red]net full[/]" if r.config.network == "full" else ""))
    if not found:
        console.print(f"no runs under {safe(runs_dir)}")
        return
    console.print(table)


def show_task_options(cls: type[Task], console: Console) -> None:
    """`a2rl tasks show`: the task in one paragraph, then each option (--task-opt key=value)
    with its type, default and description (the field's docstring)."""
    import json

    from pydantic_core import PydanticUndefined

    doc = (cls.__dict__.get("__doc__") or "").strip().split("\n\n")[0]  # its own, not Task's
    console.print(safe(f"{cls.name} ({cls.level}, reward {cls.reward_kind}, version "
                       f"{cls.version})"), highlight=False)
    if doc:
        console.print(safe(" ".join(doc.split())), highlight=False)
    table = Table("option", "type", "default", "description", title="--task-opt key=value "
                  "(values are JSON: n_heldout=50, source='\"offline\"' or source=offline)")
    table.columns[0].no_wrap = True
    secret = cls.Params.secret_fields()
    for name, f in cls.Params.model_fields.items():
        if f.default_factory is not None:
            default = f.default_factory()  # type: ignore[call-arg]
        else:
            default = None if f.default is PydanticUndefined else f.default
        shown = "(required)" if f.is_required() else json.dumps(default, default=str)
        kind = (f.annotation.__name__ if isinstance(f.annotation, type)
                else str(f.annotation).replace("typing.", ""))
        desc = " ".join((f.description or "").split())
        if name in secret:
            desc += " Secret: kept out of the workspace and of run records."
        table.add_row(safe(name), safe(kind), safe(shown), safe(desc))
    console.print(table)
