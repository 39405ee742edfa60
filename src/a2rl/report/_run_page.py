"""A run's page (`runs/<run>.html`): its figures, phases, submissions, audit findings, links
to its trajectory viewer and evaluation pages, the copies of its records and code snapshots,
its summary.md and what its extensions add. Agent text reaches the page escaped, or as
Markdown with raw HTML and links shown as text."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from a2rl.report import _trajectory
from a2rl.report._html import Page, _fmt, _markdown, _read_record, _table, clock, in_hours, marks_html
from a2rl.report._published import MAX_RECORD_BYTES, export_snapshots, publish_records, publishable

if TYPE_CHECKING:
    from a2rl.extensions import ReportSection
    from a2rl.report._context import SiteContext
    from a2rl.results import LoadedRun


def build(site: SiteContext, r: LoadedRun, row: dict[str, Any], subs: list[dict[str, Any]]) -> Page:
    """The page of the shown run `r` (its table row `row`, its submissions' rows `subs`), with
    its trajectory viewer, evaluation pages and record copies written beside it."""
    from markupsafe import Markup, escape

    from a2rl.report import _figures as F

    path = site.page_of[row["run_id"]]
    p = Page(path, f"run {row['run_id']}")
    here = (site.out / path).parent
    folder = here / Path(path).stem
    if row["agent"].startswith("cmd:"):
        p.text("p", f"{row['stack']} = {row['agent']}")
    p.text("p", f"{row['stack']} · task {row['task']} ({row['level'] or '?'}) · mode "
                f"{row['mode']} · model {row['model']} · status {row['status']}"
                + (f" · imported from {row['imported']}" if row["imported"] else ""))
    p.html(str(marks_html(row)))
    traj = _trajectory.build(site, r, row, here)
    p.html(f'<p><a href="{escape(traj.href)}">Trajectory</a>: every turn, command, phase, '
           "submission and code change of the run on one timeline</p>")
    p.html(_trajectory.evaluations_list(traj))
    p.html(_table(["baseline", "best", "Δ", "final (hidden)", "submissions", "valid rate",
                   "first improvement", "best at", "duration", "route",
                   "tokens (all models)", "tokens (main model)"],
                  [[row["baseline"], row["best"], row["improvement"], row["final"],
                    row["submissions"], row["valid_rate"],
                    clock(row["time_to_first_improvement_s"]), clock(row["time_to_best_s"]),
                    clock(row["duration_s"]), row["route"], _int(row["tokens"]),
                    _int(row.get("tokens_main_model"))]]))
    base_rec, best_rec = r.record.baseline, r.record.best
    if (base_rec and base_rec.unseen_score is not None) or \
            (best_rec and best_rec.unseen_score is not None):
        # Tasks drawing train and held-out independently: the score on the held-out items
        # that do not also occur in the train-visible data.
        p.html(_table(["unseen items: baseline", "unseen items: best", "unseen items"],
                      [[base_rec.unseen_score if base_rec else None,
                        best_rec.unseen_score if best_rec else None,
                        base_rec.n_unseen if base_rec else None]]))
    p.text("h2", "Score trajectory")
    p.chart(F.trajectory(subs, row["baseline"], "scores and best so far", in_hours(row["budget_s"])),
            "no submissions")
    p.text("h2", "Route timeline")
    a = r.analysis
    phases = a.commands if a and a.commands else []
    p.chart(F.route_timeline(subs, a.experiments if a else [], phases, "route, experiments, "
                             "phases", in_hours(row["budget_s"])), "nothing timed to show")
    p.chart(F.lineage(a.experiments if a else [], "checkpoint lineage"),
            "no verified training experiment")
    p.text("h2", "Phases")
    p.html(_trajectory.phases_table(traj))
    p.text("h2", "Submissions")
    p.html(_table(["id", "elapsed", "status", "score", "CI", "Δ", "best so far", "route",
                   "failure type"],
                  [[s["submission_id"], clock(s["elapsed_s"]), s["status"], s["score"],
                    "—" if s["ci_low"] is None else f"[{s['ci_low']:.2f}, {s['ci_high']:.2f}]",
                    s["improvement"], s["best_so_far"],
                    Markup(f'<a href="{escape(traj.anchor(s["elapsed_s"]))}">'
                           f'{escape(_fmt(s["route"]))}</a>'), s["failure_type"]]
                   for s in subs]))
    p.text("h2", "Audit findings")
    findings = a.findings if a else []
    if findings:
        p.html(_table(["kind", "basis", "severity", "message", "evidence", "in the trajectory"],
                      [[f.kind, f.basis, f.severity, f.message,
                        Markup("<pre>" + str(escape("\n".join(f.evidence[:10]))) + "</pre>"),
                        Markup(f'<a class="evidence" href="{escape(href)}">turn '
                               f'{escape(href.rpartition("-")[2])}</a>')
                        if (href := traj.finding_anchor(f)) else "—"]
                       for f in sorted(findings, key=lambda f: f.kind)]))  # a question's answers together
    else:
        p.text("p", "no findings" if a else "not analyzed (run `a2rl analyze`)")
    p.text("h2", "Records")
    p.html('<p class="note">Copies of the run\'s records, as text.</p>')
    p.html("<p>" + " · ".join(publish_records(r, folder, here)) + "</p>")
    snaps = export_snapshots(r, folder, here)
    if snaps:
        p.text("h2", "Code snapshots")
        p.html(_table(["tag", "elapsed", "files", "changed"], snaps))
    summary = _read_record(r.path, "summary.md", MAX_RECORD_BYTES) \
        if "summary.md" in publishable(r) else None
    if summary is not None:
        p.text("h2", "summary.md")
        p.html('<div class="summary-md">' + _markdown(summary.decode(errors="replace"))
               + "</div>")
    for section in _extension_sections(r):
        p.text("h2", section.title)
        p.html('<div class="summary-md">' + _markdown(section.markdown) + "</div>")
    return p


def _int(v: float | None) -> int | None:
    """A count kept as a float in the records (token sums), shown as the integer it is."""
    return None if v is None else round(v)


def _extension_sections(r: LoadedRun) -> list[ReportSection]:
    """What the run's extensions add to its page (their text may quote the agent: it goes
    through `_markdown`, which shows raw HTML and links as text). An extension that fails is
    said in a section of its own rather than losing the page."""
    from a2rl.extensions import report_sections

    try:
        return report_sections(r.record, r.path)
    except Exception as exc:  # noqa: BLE001 - a plug-in's failure must not lose the report
        from a2rl.extensions import ReportSection

        return [ReportSection("Extensions", f"an extension's report section failed: "
                                            f"{type(exc).__name__}: {exc}")]
