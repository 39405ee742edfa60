"""`a2rl report RESULTS... -o report/`: a static site that works offline from file:// (plotly.js
is copied into it, no CDN), plus every table as CSV and Markdown.

The site is self-contained: every link and asset is a file inside the report folder, so the
folder can be moved or zipped. Run records are copied in as `.txt` files (only the known record
files, and of an imported run only those its import manifest lists); nothing links into a run
directory or its workspace, so no file the agent left is ever opened as a page.

Everything an agent could have written (summary.md, findings' evidence, file names, argv, run
ids of imported runs) is escaped: HTML through jinja2's autoescape and markupsafe, Markdown
through markdown-it with raw HTML disabled and every link and image target refused (shown as
text, so no remote reference reaches a page), chart data as JSON with `<`, `>` and `&` escaped
inside `<script type="application/json">`. Every page carries a Content-Security-Policy that
runs only the report's own script files and loads nothing from outside it.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from a2rl._errors import A2RLError
from a2rl.report import _run_page
from a2rl.report._cache import Entry, RunCache, fingerprint, light, site_key
from a2rl.report._cost import COST_COLUMNS, cost_of, with_cost
from a2rl.report._html import (
    CSP,
    Page,
    _deps,
    _fmt,
    _table,
    data_table,
    figure_json,
    git_objects,
    in_hours,
    marks_html,
    render_template,
)
from a2rl.results import (
    Cell,
    LoadedRun,
    Policy,
    Summary,
    aggregate,
    baselines,
    change_rates,
    convergence,
    find_run_dirs,
    heldout_group,
    load_one,
    marks,
    methods_attempted_adopted,
    phase_distribution,
    run_row,
    submission_rows,
    sweep_labels,
    workspace_stats,
    write_table,
)

NAV = [("index.html", "Overview"), ("leaderboard.html", "Leaderboard"), ("modes.html", "Modes"),
       ("scaling.html", "Scaling"), ("trajectories.html", "Trajectories"),
       ("strategy.html", "Strategy"), ("scaffold.html", "Scaffold"),
       ("tables/", "Tables (CSV/MD)")]
LEVEL_ORDER = ("L1", "L2", "L3")
ASSETS = ("report.css", "report.js", "viewer.js", "trajectory.js", "trajectory.css",
          "evaluation.js")
"""The site's own assets (beside plotly.js): the overview pages', then the run viewers'."""
TRAJECTORY_RUNS_PER_PAGE = 25
"""Runs per page of the trajectories overview (two charts each); more runs, more pages."""


def _cell_html(s: Summary, delta: Summary | None = None, cell: Cell | None = None) -> Any:
    from markupsafe import Markup, escape

    if s.mean is None:
        text = f'— <span class="n">n={s.n}</span>'
    else:
        ci = "" if s.ci_low is None or s.ci_high is None else f" [{s.ci_low:.2f}, {s.ci_high:.2f}]"
        text = f"<b>{s.mean:.2f}</b>{escape(ci)} <span class=\"n\">n={s.n}</span>"
    if delta is not None and delta.mean is not None:
        dci = "" if delta.ci_low is None or delta.ci_high is None else \
            f" [{delta.ci_low:+.2f}, {delta.ci_high:+.2f}]"
        text += f'<br><span class="delta">Δ {delta.mean:+.2f}{escape(dci)}</span>'
    if cell is not None:
        if cell.excluded:
            text += f'<br><span class="n">{len(cell.excluded)} of {len(cell.runs)} run(s) not counted</span>'
        text += "".join(f'<span class="mark">{escape(m)}</span>'
                        for m in cell.mark_text().split(", ") if m)
    return Markup(text)


def _short_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:10]


def _safe_name(run_id: str, run_dir: Path, taken: set[str]) -> str:
    """The run page's file name, from the run's id alone, so that a build adding runs names the
    others' pages as before: the id when it is a plain file name, else the id with odd
    characters replaced and a hash of it; a second run with the same id adds a hash of its
    folder."""
    base = re.sub(r"[^A-Za-z0-9._-]", "_", run_id)[:120]
    if base != run_id or not base or base.startswith("."):
        base = f"{base.lstrip('.')[:100] or 'run'}-{_short_hash(run_id)}"
    name = base if base not in taken else f"{base}-{_short_hash(str(run_dir))}"
    taken.add(name)
    return name


class Site:
    """The site being built. Runs come in one at a time (`add_fresh` renders a changed run's
    page while its records are in memory, `add_cached` takes an unchanged run from the cache);
    `build` then writes the overview pages and tables from what every run left behind."""

    def __init__(self, out: Path, policy: Policy, bad: list[tuple[Path, str]]) -> None:
        self.out, self.policy, self.bad = out, policy, bad
        self.entries: list[Entry] = []
        self.subs: list[dict[str, Any]] = []
        self.page_of: dict[str, str] = {}
        self.taken: set[str] = set()
        self.pages: list[Page] = []
        self.written: list[Path] = []
        self.tables: list[str] = []

    def add_cached(self, entry: Entry) -> None:
        if entry.page:
            self.taken.add(Path(entry.page).stem)
            self.page_of.setdefault(entry.row["run_id"], entry.page)
        self.entries.append(entry)

    def add_fresh(self, run: LoadedRun, fingerprint: str) -> Entry:
        """Read `run` (all of its records) into an entry, and write its page when shown."""
        from a2rl.report import _figures as F

        row = with_cost(run_row(run), run.record)
        subs = submission_rows(run)
        entry = Entry(fingerprint, light(run), row, subs)
        if self.policy.shown(row):
            entry.page = f"runs/{_safe_name(row['run_id'], run.path, self.taken)}.html"
            self.page_of[row["run_id"]] = entry.page
            self.subs.extend(subs)
            with git_objects(run.path / "code-history.git"):
                page = _run_page.build(self, run, row,
                                       [s for s in self.subs if s["run_id"] == row["run_id"]])
            self.written.append(self.render(page))
            entry.figures = {
                "trajectory": figure_json(F.trajectory(subs, row["baseline"],
                                                       f"{row['run_id']}: scores",
                                                       in_hours(row["budget_s"]))),
                "lineage": figure_json(F.lineage(run.analysis.experiments if run.analysis
                                                 else [], f"{row['run_id']}: checkpoint lineage"))}
        self.entries.append(entry)
        return entry

    def _collect(self) -> None:
        """Every run's row in the tables' order (creation time, then id)."""
        self.entries.sort(key=lambda e: (e.row["created_at"], e.row["run_id"]))
        self.rows = [e.row for e in self.entries]
        self.shown = [(e.run, e.row) for e in self.entries if e.page]
        self.dropped = [e.row for e in self.entries if not e.page]
        self.subs = [s for e in self.entries if e.page for s in e.subs]
        self.cells = aggregate([row for _, row in self.shown], self.policy)
        self._heldout_columns()

    def _heldout_columns(self) -> None:
        """One column per (task, held-out set): a task whose runs were scored on different
        held-out sets gets a column per set (`arith · set 1`), never one pooled figure."""
        sets: dict[str, set[str]] = {}
        self.heldout_desc: dict[str, str] = {}
        for r, row in self.shown:
            g = heldout_group(row)
            sets.setdefault(row["task"], set()).add(g)
            t = r.record.task
            self.heldout_desc[g] = (
                f"task version {t.version}, {t.n_heldout} held-out items, fingerprint "
                f"{t.fingerprint}" if t else f"fingerprint {row['heldout']}" if row["heldout"]
                else "the run's record identifies no held-out set")
        self.column: dict[tuple[str, str], str] = {}
        for task, gs in sets.items():
            for i, g in enumerate(sorted(gs), 1):
                self.column[(task, g)] = task if len(gs) == 1 else f"{task} · set {i}"
        self.split_tasks = sorted(t for t, gs in sets.items() if len(gs) > 1)

    def col(self, cell: Cell) -> str:
        return self.column.get((cell.key["task"], cell.heldout), cell.key["task"])

    def heldout_note(self, p: Page) -> None:
        """Say which tasks are split by held-out set, and why, with each set's identity."""
        if not self.split_tasks:
            return
        p.text("h2", "Runs on different held-out sets")
        p.text("p", f"{', '.join(self.split_tasks)}: runs were scored on different held-out "
                    "sets (a different task version, an option that changes the items such as "
                    "n_heldout, or another installation's held-out draw). Their scores are not "
                    "comparable, so each set is its own column and nothing is pooled across sets.")
        counts: dict[tuple[str, str], int] = {}
        for _, row in self.shown:
            k = (row["task"], heldout_group(row))
            counts[k] = counts.get(k, 0) + 1
        p.html(_table(["column", "runs", "held-out set"],
                      [[label, counts.get(k, 0), self.heldout_desc.get(k[1], "")]
                       for k, label in sorted(self.column.items(), key=lambda kv: kv[1])
                       if k[0] in self.split_tasks]))

    # ---- tables on disk -------------------------------------------------------------------
    def save_table(self, name: str, rows: Sequence[dict[str, Any]]) -> None:
        write_table(rows, self.out / "tables" / f"{name}.csv")
        write_table(rows, self.out / "tables" / f"{name}.md")
        self.tables.append(name)

    def table_links(self, *names: str) -> str:
        from markupsafe import escape

        links = " · ".join(f'<a href="tables/{escape(n)}.csv">{escape(n)}.csv</a> '
                           f'<a href="tables/{escape(n)}.md">(.md)</a>' for n in names)
        return f'<p class="note">tables: {links}</p>'

    def run_link(self, row: dict[str, Any], root: str = "") -> Any:
        from markupsafe import Markup, escape

        return Markup(f'<a href="{root}{escape(self.page_of[row["run_id"]])}">'
                      f'{escape(row["run_id"])}</a>')

    # ---- pages -----------------------------------------------------------------------------
    def assets(self) -> None:
        """plotly.js and the site's own assets; report.js opens with the charts' template."""
        (self.out / "assets").mkdir(parents=True, exist_ok=True)
        from importlib.resources import files

        from plotly.offline import get_plotlyjs

        from a2rl.report._figures import template_json

        (self.out / "assets" / "plotly.min.js").write_text(get_plotlyjs())
        for name in ASSETS:
            data = files("a2rl.report").joinpath("assets", name).read_bytes()
            if name == "report.js":
                data = f"window.A2RL_PLOTLY_TEMPLATE = {template_json()};\n".encode() + data
            (self.out / "assets" / name).write_bytes(data)

    def build(self) -> list[Path]:
        """The overview pages and tables, from the runs added; returns every page of the site."""
        self._collect()
        self.save_table("runs", self.rows)
        self.save_table("submissions", self.subs)
        self.save_table("cells", [c.row() for c in self.cells])
        self.overview()
        self.leaderboard()
        self.modes()
        self.scaling()
        self.trajectories()
        self.strategy()
        self.scaffold()
        self.tables_index()
        overview = [self.render(p) for p in self.pages]
        return overview + sorted({self.out / e.page for e in self.entries if e.page})

    def render(self, page: Page) -> Path:
        _, markupsafe, _ = _deps()
        depth = page.path.count("/")
        html = render_template(
            "page.html",
            title=page.title, root="../" * depth, nav=NAV, here=page.path, csp=CSP,
            policy=self.policy.describe(), body=markupsafe.Markup("\n".join(page.parts)),
            charts=page.charts)
        path = self.out / page.path
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(html)
        return path

    def overview(self) -> None:
        p = Page("index.html", "a2rl results")
        shown = [row for _, row in self.shown]
        flagged = [row for row in shown if marks(row)]
        p.html(f"<p>{len(self.rows)} run(s) read; {len(shown)} shown; {len(flagged)} marked; "
               f"{len(self.dropped)} dropped by the policy; {len(self.cells)} cell(s) "
               "(agent stack × task × mode × model).</p>")
        p.html('<p class="note">Each cell\'s figures are mean [bootstrap 95% CI] over its counted '
               "runs, with n beside every figure. A marked run (audit flag or unsandboxed) is "
               "shown everywhere; whether it counts is the policy above "
               "(<code>--audit-policy</code>, <code>--unsandboxed-policy</code>); grey rows are "
               "shown but not counted.</p>")
        p.text("h2", "Runs")
        p.html(self.table_links("runs", "submissions", "cells"))
        p.html(data_table("runs-table", [
            "run", "task", "level", "stack", "mode", "model", "status", "baseline", "best", "Δ",
            "subs", "duration h", "$", "GPU-h", "route", "imported", "marks"],
            [[self.run_link(row), row["task"], row["level"], row["stack"], row["mode"],
              row["model"], row["status"], row["baseline"], row["best"], row["improvement"],
              row["submissions"], None if row["duration_s"] is None else row["duration_s"] / 3600,
              row["usd"], row["gpu_hours"], row["route"], row["imported"], marks_html(row)]
             for row in shown],
            ["" if self.policy.counted(row) else "excluded" for row in shown]))
        if self.dropped:
            p.text("h2", "Dropped by the policy")
            p.html(data_table("dropped-table", ["run", "task", "stack", "marks"],
                              [[r["run_id"], r["task"], r["stack"], marks_html(r)]
                               for r in self.dropped]))
        if self.bad:
            p.text("h2", "Unreadable run directories")
            p.html(data_table("bad-table", ["folder", "problem"],
                              [[str(path), why] for path, why in self.bad]))
        problems = [(r.record.run_id, msg) for r, _ in self.shown for msg in r.problems]
        if problems:
            p.text("h2", "Incomplete records")
            p.html(data_table("problems-table", ["run", "problem"], problems))
        self.pages.append(p)

    def _levels(self, tasks: Sequence[str]) -> list[tuple[str, list[str]]]:
        level = {self.column.get((row["task"], heldout_group(row)), row["task"]):
                 row["level"] or "?" for _, row in self.shown}
        groups: dict[str, list[str]] = {}
        for t in sorted(tasks):
            groups.setdefault(level.get(t, "?"), []).append(t)
        order = list(LEVEL_ORDER) + sorted(k for k in groups if k not in LEVEL_ORDER)
        return [(lv, groups[lv]) for lv in order if lv in groups]

    def leaderboard(self) -> None:
        from markupsafe import Markup, escape

        p = Page("leaderboard.html", "Leaderboard")
        p.html('<p class="note">Rows: agent stacks (scaffold · driver); columns: tasks grouped '
               "by level; each cell: the run's result (its best submission, or the hidden final "
               "score of a --final hidden run), mean [95% CI] over the counted runs, and Δ vs the "
               "baseline below it. The baseline row is the base model's score. Beside each "
               "stack, what its counted runs cost: dollars (the agent's LLM spend) and GPU-hours "
               "(agent and evaluations) per run, mean [95% CI] (n = runs that recorded it), and "
               "the gain they bought: their summed Δ over their summed dollars or GPU-hours "
               "(runs that recorded both; — where none did or nothing was spent).</p>")
        p.html(self.table_links("leaderboard", "leaderboard_cost"))
        self.heldout_note(p)
        base = {(self.column.get((t, g), t), model): s for (t, model, g), s in
                baselines([row for _, row in self.shown], self.policy).items()}
        flat: list[dict[str, Any]] = []
        costs: list[dict[str, Any]] = []
        for model, mode in sorted({(c.key["model"], c.key["mode"]) for c in self.cells}):
            cells = [c for c in self.cells if c.key["model"] == model and c.key["mode"] == mode]
            groups = self._levels(sorted({self.col(c) for c in cells}))
            tasks = [t for _, ts in groups for t in ts]
            header = "<tr><th></th>" + "".join(
                f'<th colspan="{len(ts)}">{escape(lv)}</th>' for lv, ts in groups) + \
                f'<th colspan="{len(COST_COLUMNS)}">cost</th></tr>'
            by = {(c.key["stack"], self.col(c)): c for c in cells}
            rows: list[list[Any]] = [[Markup("<b>baseline</b>")] + [
                _cell_html(base.get((t, model), Summary(0, None, None, None, None)))
                for t in tasks] + [""] * len(COST_COLUMNS)]
            classes = ["baseline"]
            for stack in sorted({c.key["stack"] for c in cells}):
                cost = cost_of([r for c in cells if c.key["stack"] == stack for r in c.counted])
                costs.append({"model": model, "mode": mode, "stack": stack, **cost})
                row: list[Any] = [stack]
                for t in tasks:
                    c = by.get((stack, t))
                    row.append(_cell_html(c.stats["result"], c.stats["result_improvement"], c)
                               if c else Markup('<span class="n">no runs</span>'))
                    if c:
                        flat.append({"model": model, "mode": mode, "stack": stack, "task": t,
                                     "heldout": c.heldout, "level": c.row()["levels"],
                                     "best": c.stats["result"].text(),
                                     "improvement": c.stats["result_improvement"].text(
                                         signed=True),
                                     "baseline": base[(t, model)].text() if (t, model) in base
                                     else "", "runs": len(c.runs), "counted": len(c.counted),
                                     "marks": c.mark_text(),
                                     **cost_of(c.counted, interval=False)})
                rows.append(row + [cost[k] for k in COST_COLUMNS.values()])
                classes.append("")
            p.text("h2", f"model {model} · mode {mode}")
            p.html(_table(["agent stack", *tasks, *COST_COLUMNS], rows, classes, header))
        self.save_table("leaderboard", flat)
        self.save_table("leaderboard_cost", costs)
        p.text("h2", "Process metrics per cell")
        p.html('<p class="note">Mean [95% CI] (n) over the counted runs; times in hours into the '
               "budget.</p>")
        process = []
        for c in self.cells:
            st = c.stats
            process.append({**c.key, "valid_rate": st["valid_rate"].text(2),
                            "time_to_first_improvement_h": _hours(st["time_to_first_improvement_s"]),
                            "time_to_best_h": _hours(st["time_to_best_s"]),
                            "submissions": st["submissions"].text(1), "marks": c.mark_text()})
        self.save_table("process_metrics", process)
        p.html(self.table_links("process_metrics"))
        p.html(_table(["stack", "task", "mode", "model", "valid rate", "first improvement h",
                       "best at h", "submissions", "marks"],
                      [list(r.values()) for r in process]))
        self.pages.append(p)

    def modes(self) -> None:
        p = Page("modes.html", "Mode ablation")
        p.html('<p class="note">Mean improvement over the baseline (best − baseline) per agent '
               "stack and mode, and the mode × task heatmap over all stacks; ▲/▼ mark the best and "
               "worst cells.</p>")
        p.html(self.table_links("modes"))
        rows = [row for _, row in self.shown]
        by_stack = self.cells  # the leaderboard's cells: the same figures on both pages
        flat = [{"model": c.key["model"], "stack": c.key["stack"], "mode": c.key["mode"],
                 "task": self.col(c), "heldout": c.heldout,
                 "improvement": c.stats["result_improvement"].text(signed=True),
                 "best": c.stats["result"].text(), "marks": c.mark_text()} for c in by_stack]
        self.save_table("modes", flat)
        tasks = sorted({self.col(c) for c in by_stack})
        self.heldout_note(p)
        table_rows: list[list[Any]] = []
        for (model, stack, mode) in sorted({(c.key["model"], c.key["stack"], c.key["mode"])
                                            for c in by_stack}):
            by = {self.col(c): c for c in by_stack
                  if (c.key["model"], c.key["stack"], c.key["mode"]) == (model, stack, mode)}
            table_rows.append([model, stack, mode] + [
                _cell_html(by[t].stats["result_improvement"], None, by[t]) if t in by else "—"
                for t in tasks])
        p.text("h2", "Improvement per stack and mode")
        p.html(_table(["model", "stack", "mode", *tasks], table_rows))
        from a2rl.report import _figures as F

        for model in sorted({row["model"] for row in rows}):
            cells = aggregate([r for r in rows if r["model"] == model], self.policy,
                              keys=("mode", "task"), metrics=("result_improvement",))
            p.text("h2", f"Mode × task improvement · {model}")
            p.chart(F.improvement_heatmap(cells, f"mean improvement (Δ) · {model}", self.col),
                    "no counted run has an improvement")
        self.pages.append(p)

    def scaling(self) -> None:
        from a2rl.report import _figures as F

        p = Page("scaling.html", "Scaling")
        p.html('<p class="note">Best score so far of every shown run against elapsed budget, '
               "against tokens of every model the agent's CLI called (runs whose launcher recorded "
               "usage; side calls and subagents included), and "
               "against the number of submissions. One section per task, held-out set and base "
               "model, as the leaderboard keeps them apart: scores on different held-out sets "
               "or from different base models are never drawn as one.</p>")
        p.html(self.table_links("submissions"))
        self.heldout_note(p)
        row_of = {row["run_id"]: row for _, row in self.shown}
        groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for s in self.subs:
            row = row_of[s["run_id"]]
            key = (self.column.get((row["task"], heldout_group(row)), row["task"]), row["model"])
            groups.setdefault(key, []).append(s)
        for (task, model), subs in sorted(groups.items()):
            ids = {s["run_id"] for s in subs}
            budgets = [row_of[i]["budget_s"] for i in ids if row_of[i]["budget_s"]]
            p.text("h2", f"task {task} · model {model}")
            p.chart(F.scaling(subs, "elapsed_h", "elapsed hours", f"{task}: best so far vs hours",
                              in_hours(max(budgets)) if budgets else None))
            p.chart(F.scaling(subs, "tokens", "tokens, all models (input + output)",
                              f"{task}: best so far vs tokens"), "no run of this task recorded tokens")
            p.chart(F.scaling(subs, "seq", "submissions", f"{task}: best so far vs submissions"))
        self.pages.append(p)

    def trajectories(self) -> None:
        """Each shown run's score trajectory and checkpoint lineage (charts the run's entry
        keeps), TRAJECTORY_RUNS_PER_PAGE runs a page."""
        from markupsafe import escape

        shown = [e for e in self.entries if e.page]
        chunks = [shown[i:i + TRAJECTORY_RUNS_PER_PAGE]
                  for i in range(0, len(shown), TRAJECTORY_RUNS_PER_PAGE)] or [[]]
        names = ["trajectories.html"] + [f"trajectories-{k}.html" for k in range(2, len(chunks) + 1)]
        pager = "" if len(chunks) == 1 else '<p class="pager">runs ' + "".join(
            f'<a href="{escape(name)}">{k * TRAJECTORY_RUNS_PER_PAGE + 1}–'
            f"{k * TRAJECTORY_RUNS_PER_PAGE + len(chunk)}</a>"
            for k, (name, chunk) in enumerate(zip(names, chunks, strict=True))) + "</p>"
        for name, chunk in zip(names, chunks, strict=True):
            p = Page(name, "Method-switch trajectories and checkpoint lineage")
            p.html('<p class="note">Per run: each submission\'s score (colour = route of the code '
                   "behind it, × = invalid, drawn at the baseline) and the best so far; dotted lines "
                   "mark route changes, green ✓ when the change raised the best score, red ✗ when "
                   "not. Below it, the checkpoint lineage: which checkpoint each training "
                   "experiment started from; red nodes are reverts to an older checkpoint or the "
                   "base model.</p>")
            p.html(pager.replace(f'<a href="{name}">', f'<a class="here" href="{name}">'))
            for e in chunk:
                row = e.row
                p.html(f"<h2>{self.run_link(row)}</h2>")
                p.text("p", f"{row['stack']} · {row['task']} · {row['mode']} · {row['model']}")
                p.html(str(marks_html(row)))
                p.chart_json(e.figures.get("trajectory"), "no submissions")
                p.chart_json(e.figures.get("lineage"), "no verified training experiment")
            p.html(pager)
            self.pages.append(p)

    def strategy(self) -> None:
        from a2rl.report import _figures as F

        runs = [r for r, _ in self.shown]
        p = Page("strategy.html", "Strategy analysis")
        p.html('<p class="note">The trajectory study\'s strategy analysis over verified training experiments '
               "(commands that updated parameters), grouped by agent stack. Every shown run counts "
               "here (these describe behaviour, not scores); marked runs are counted in each "
               "row's marks. C_G: the largest share of runs whose first experiment used one "
               "strategy k. R_change: strategy changes over adjacent experiment pairs, pooled; "
               "R_persist = 1 − R_change.</p>")
        conv = convergence(runs, self.policy)
        rates = change_rates(runs, self.policy)
        phases = phase_distribution(runs, self.policy)
        methods = methods_attempted_adopted(runs, self.policy)
        methods_g = methods_attempted_adopted(runs, self.policy, group=lambda r: run_row(r)["stack"])
        ws = workspace_stats(runs, self.policy)
        for name, rows in (("strategy_convergence", conv), ("strategy_change_rate", rates),
                           ("phase_time", phases), ("methods_attempted_adopted", methods),
                           ("methods_by_stack", methods_g), ("workspace_stats", ws)):
            self.save_table(name, rows)
        p.html(self.table_links("strategy_convergence", "strategy_change_rate", "phase_time",
                                "methods_attempted_adopted", "methods_by_stack", "workspace_stats"))
        p.text("h2", "Initial-strategy convergence C_G")
        p.html(_table(["group", "runs", "with experiments (n)", "top first strategy", "C_G",
                       "first strategies", "marks"],
                      [[c["group"], c["runs"], c["runs_with_experiments"], c["top_first_strategy"],
                        c["C_G"], c["first_strategies"], c["marks"]] for c in conv]))
        p.text("h2", "Strategy change rate and persistence")
        p.html(_table(["group", "runs", "adjacent pairs (n)", "changes", "R_change", "R_persist",
                       "per-run change rate", "marks"],
                      [[c["group"], c["runs"], c["adjacent_pairs"], c["strategy_changes"],
                        c["R_change"], c["R_persist"], c["per_run_change_rate"], c["marks"]]
                       for c in rates]))
        p.text("h2", "Phase-time distribution")
        p.chart(F.stacked_shares(phases, "mean share of phase time per stack"),
                "no run has phase times")
        p.html(_table(["group", "phase", "n", "mean share", "CI low", "CI high", "mean seconds"],
                      [[r["group"], r["phase"], r["n"], r["share_mean"], r["share_ci_low"],
                        r["share_ci_high"], r["seconds_mean"]] for r in phases]))
        p.text("h2", "Method attempted vs adopted")
        p.chart(F.attempted_adopted(methods, "methods: attempted vs in the best submission"),
                "no method detected")
        p.html(_table(["group", "method", "attempted (runs)", "adopted (runs)", "of runs",
                       "adoption rate"],
                      [[r["group"], r["method"], r["attempted"], r["adopted"], r["runs"],
                        r["adoption_rate"]] for r in methods + methods_g]))
        p.text("h2", "Workspace statistics")
        p.html(_table(["group", "runs", "submissions", "code files", "model versions",
                       "zero-score rate", "best@submission", "marks"],
                      [[w["group"], w["runs"]] + [
                          f"{_fmt(w[f'{m}_mean'])} (n={w[f'{m}_n']})"
                          for m in ("submissions", "code_files", "model_versions",
                                    "zero_score_rate", "best_at_submission")] + [w["marks"]]
                       for w in ws]))
        self.pages.append(p)

    def scaffold(self) -> None:
        from a2rl.report import _scaffold_page

        p = Page("scaffold.html", "Experience-driven scaffold")
        _scaffold_page.build(self, p)
        self.pages.append(p)

    def tables_index(self) -> None:
        from markupsafe import escape

        body = "".join(f'<li><a href="{escape(n)}.csv">{escape(n)}.csv</a> · '
                       f'<a href="{escape(n)}.md">{escape(n)}.md</a></li>' for n in self.tables)
        (self.out / "tables" / "index.html").write_text(
            f'<!doctype html><meta charset=utf-8><meta http-equiv="Content-Security-Policy" '
            f'content="{escape(CSP)}"><title>tables</title><ul>{body}</ul>')



def _hours(s: Summary) -> str:
    scaled = Summary(s.n, *(None if v is None else v / 3600
                            for v in (s.mean, s.sd, s.ci_low, s.ci_high)))
    return scaled.text(2)


def build_report(paths: Sequence[Path], out: Path, policy: Policy | None = None) -> list[Path]:
    """Read the runs under `paths` and write the site into `out`; returns the pages written.

    Runs are read one at a time and only their entry kept (see `_cache`), so memory does not
    grow with their transcripts. A run whose records are unchanged since the last build into
    `out` is taken from the cache with its page; the overview pages and tables are always
    written anew. A run folder that cannot be read is listed on the overview page."""
    _deps()
    policy = policy or Policy()
    out = out.absolute()
    if (out / "run.json").exists():
        raise A2RLError(f"{out} is a run directory", "write the report to a new folder")
    run_dirs = find_run_dirs(paths)
    cache = RunCache(out, site_key(policy.describe() + f"|{policy.audit}|{policy.unsandboxed}"))
    labels: dict[Path, dict[str, dict[str, str]]] = {}
    found: list[tuple[Path, str, Entry | None]] = []
    for run_dir in run_dirs:
        fp = fingerprint(run_dir, sweep_labels(run_dir, labels))
        found.append((run_dir, fp, cache.get(run_dir, fp)))
    bad: list[tuple[Path, str]] = []
    site = Site(out, policy, bad)
    out.mkdir(parents=True, exist_ok=True)
    site.assets()
    for run_dir, _, entry in found:
        if entry is not None:
            site.add_cached(entry)
            cache.keep(run_dir)
    for run_dir, fp, entry in found:
        if entry is not None:
            continue
        try:
            run = load_one(run_dir, labels)
        except A2RLError as exc:
            bad.append((run_dir, exc.message))
            continue
        except Exception as exc:  # noqa: BLE001 - any unreadable record is reported, not raised
            bad.append((run_dir, f"{type(exc).__name__}: {exc}"))
            continue
        cache.put(run_dir, site.add_fresh(run, fp))
    if not site.entries:
        raise A2RLError(f"no readable run under {', '.join(str(p) for p in paths)}"
                        + (f" ({len(bad)} unreadable)" if bad else ""),
                        "pass runs folders (./runs), run directories or a sweep's output folder")
    kept = {e.page for e in site.entries if e.page}
    _remove_stale(out, [p for p in cache.drop_stale() if p not in kept])
    pages = site.build()
    (out / "report.json").write_text(json.dumps(
        {"runs": len(site.entries), "unreadable": [str(p) for p, _ in bad],
         "rebuilt": len(site.written),
         "pages": [str(p.relative_to(out)) for p in pages],
         "policy": {"audit": policy.audit, "unsandboxed": policy.unsandboxed}}, indent=1))
    return pages


def _remove_stale(out: Path, pages: Sequence[str]) -> None:
    """Delete run pages (and their folders) of an earlier build whose run is gone: only files
    named as run pages are, directly under the site's runs/."""
    runs = (out / "runs").resolve()
    for page in pages:
        target = (out / page).resolve()
        if target.parent != runs or target.suffix != ".html" or target.stem in ("", ".", ".."):
            continue
        target.unlink(missing_ok=True)
        folder = runs / target.stem
        if folder.is_dir() and not folder.is_symlink():
            shutil.rmtree(folder)
