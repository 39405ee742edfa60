"""The report's charts, as plotly figures (rendered in the browser by the plotly.js copied into
the site). Every figure takes plain rows, so it is built the same from a2rl and imported runs.

Each figure is assembled as one plain dict and handed to `go.Figure` whole, unvalidated
(building it through plotly's incremental methods, `add_vline` above all, and validating every
property costs a hundred times more, which a corpus of a thousand runs pays thousands of
times). The figures carry an empty template: the
site's report.js applies TEMPLATE (plotly_white) to every chart, so its several kilobytes are
shipped once rather than in each figure."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import plotly.graph_objects as go

from a2rl.results import Cell
from a2rl.schema import Experiment

TEMPLATE = "plotly_white"
"""The plotly template report.js applies to every chart of the site."""
# showlegend: plotly hides the legend of a one-trace figure, and every colour needs its key
_LAYOUT: dict[str, Any] = dict(margin=dict(l=60, r=20, t=50, b=50), height=420,
                               legend=dict(font=dict(size=10)), showlegend=True)
MIN_PAD = 3.0
"""Score axes reach at least this far (in score points) beyond the lowest and highest value."""


def template_json() -> str:
    """TEMPLATE as plotly.js reads it (a figure's `layout.template`)."""
    import json

    import plotly.io as pio

    return json.dumps(pio.templates[TEMPLATE].to_plotly_json())


def score_range(values: Sequence[float | None]) -> list[float] | None:
    """A y range holding every value (the baseline among them) with room around it: a tenth of
    the span, at least MIN_PAD points each side, never below 0 when no value is negative."""
    vals = [float(v) for v in values if v is not None]
    if not vals:
        return None
    lo, hi = min(vals), max(vals)
    pad = max(MIN_PAD, (hi - lo) / 10)
    return [lo - pad if lo < 0 else max(0.0, lo - pad), hi + pad]


class _Fig:
    """A figure being assembled as plain data: its traces, layout, lines and notes."""

    def __init__(self, title: str, **layout: Any) -> None:
        self.data: list[dict[str, Any]] = []
        self.layout: dict[str, Any] = {**_LAYOUT, "title": dict(text=title, font=dict(size=14)),
                                       "template": {}, **layout}
        self.shapes: list[dict[str, Any]] = []
        self.annotations: list[dict[str, Any]] = []

    def add(self, trace_type: str, **trace: Any) -> None:
        self.data.append({"type": trace_type, **trace})

    def axis(self, name: str, **props: Any) -> None:
        self.layout.setdefault(name, {}).update(props)

    def vline(self, x: float, text: str, color: str, dash: str, *, left: bool = False,
              font_size: int | None = None) -> None:
        """A vertical line across the plot at `x`, its note at the top (left of it or right)."""
        self.shapes.append(dict(type="line", x0=x, x1=x, xref="x", y0=0, y1=1, yref="y domain",
                                line=dict(color=color, dash=dash)))
        note = dict(x=x, xref="x", y=1, yref="y domain", text=text, showarrow=False,
                    xanchor="right" if left else "left", yanchor="top")
        if font_size:
            note["font"] = dict(size=font_size)
        self.annotations.append(note)

    def hline(self, y: float, text: str, color: str, dash: str) -> None:
        """A horizontal line across the plot at `y`, its note above its right end."""
        self.shapes.append(dict(type="line", x0=0, x1=1, xref="x domain", y0=y, y1=y, yref="y",
                                line=dict(color=color, dash=dash)))
        self.annotations.append(dict(x=1, xref="x domain", y=y, yref="y", text=text,
                                     showarrow=False, xanchor="right", yanchor="bottom"))

    def figure(self) -> go.Figure:
        """The figure, not validated: plotly's validation of each property costs most of a
        run page's time, and the dicts are this module's own (tests/report/test_report_scale.py
        validates what every builder makes)."""
        layout = dict(self.layout)
        if self.shapes:
            layout["shapes"] = self.shapes
        if self.annotations:
            layout["annotations"] = self.annotations
        return Figure({"data": self.data, "layout": layout})


class Figure(go.Figure):
    """A plotly figure that keeps the plain dict it was made from (`plain`), which the pages
    embed as it is (plotly's own JSON export copies and walks every value again). A figure of
    this module is not changed after it is built."""

    def __init__(self, plain: dict[str, Any]) -> None:
        super().__init__(plain, _validate=False)
        self._plain = plain

    @property
    def plain(self) -> dict[str, Any]:
        return self._plain


def _fig(title: str, **layout: Any) -> go.Figure:
    """An empty figure with the report's layout, for pages that add their traces to it."""
    return go.Figure(_Fig(title, **layout).figure().plain)


def _time_axis(fig: _Fig, budget_h: float | None, xs: Sequence[float]) -> None:
    """Hours from 0 to the budget (or the last point when later), the budget's end marked."""
    end = max([budget_h or 0.0, *xs]) or 1.0
    fig.axis("xaxis", range=[0, end * 1.03])
    if budget_h:
        fig.vline(budget_h, "budget end", "#555", "dash", left=True, font_size=10)


def _step_from_baseline(pts: Sequence[tuple[float, float]], baseline: float | None
                        ) -> tuple[list[float], list[float]]:
    """Best so far as a step line: from the baseline at 0, up at each new best."""
    xs = [p[0] for p in pts]
    ys = [p[1] for p in pts]
    if baseline is not None:
        xs, ys = [0.0, *xs], [baseline, *ys]
    return xs, ys


def improvement_heatmap(cells: Sequence[Cell], title: str,
                        column: Callable[[Cell], str] | None = None) -> go.Figure | None:
    """Mode × task mean improvement over the counted runs, the best and worst cells marked.
    `column` names each cell's column (a task split by held-out set has one per set)."""
    col = column or (lambda c: str(c.key["task"]))
    modes = sorted({c.key["mode"] for c in cells})
    tasks = sorted({col(c) for c in cells})
    z: list[list[float | None]] = []
    text: list[list[str]] = []
    by = {(c.key["mode"], col(c)): c for c in cells}
    for mode in modes:
        zrow: list[float | None] = []
        trow: list[str] = []
        for task in tasks:
            c = by.get((mode, task))
            s = c.stats["result_improvement"] if c else None
            zrow.append(s.mean if s else None)
            trow.append("no runs" if s is None else s.text(1, signed=True)
                        + (f"<br>{c.mark_text()}" if c and c.mark_text() else ""))
        z.append(zrow)
        text.append(trow)
    filled = [(v, i, j) for i, row in enumerate(z) for j, v in enumerate(row) if v is not None]
    if not filled:
        return None
    best = max(filled)
    worst = min(filled)
    if best != worst:
        text[best[1]][best[2]] = "▲ best<br>" + text[best[1]][best[2]]
        text[worst[1]][worst[2]] = "▼ worst<br>" + text[worst[1]][worst[2]]
    # the colour bar is its key
    fig = _Fig(title, height=max(300, 90 * len(modes) + 150), showlegend=False)
    fig.add("heatmap", z=z, x=tasks, y=modes, text=text, texttemplate="%{text}",
            colorscale="RdBu", zmid=0, colorbar=dict(title=dict(text="Δ")),
            hovertemplate="%{y} × %{x}: %{text}<extra></extra>")
    fig.axis("xaxis", title=dict(text="task"))
    fig.axis("yaxis", title=dict(text="mode"))
    return fig.figure()


PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2",
           "#17becf", "#7f7f7f", "#bcbd22")


def scaling(subs: Sequence[dict[str, Any]], x: str, x_title: str, title: str,
            budget_h: float | None = None) -> go.Figure | None:
    """Best score so far of each run against `x` (elapsed hours, tokens or submissions),
    one step line per run from its baseline at 0, coloured by agent stack; hours run from 0
    to the budget, its end marked. The runs of one stack are one trace, their lines apart
    (a gap between runs), so a chart of a thousand runs stays quick to build and to draw."""
    fig = _Fig(title)
    stacks = sorted({s["stack"] for s in subs})
    color = {st: PALETTE[i % len(PALETTE)] for i, st in enumerate(stacks)}
    values: list[float] = []
    xs: list[float] = []
    runs: dict[str, list[dict[str, Any]]] = {}
    for s in subs:
        runs.setdefault(s["run_id"], []).append(s)
    lines: dict[str, tuple[list[float | None], list[float | None], list[str | None]]] = {}
    for run_id, rows in runs.items():
        pts = [(r[x], r["best_so_far"]) for r in rows
               if r.get(x) is not None and r.get("best_so_far") is not None]
        if not pts:
            continue
        px, py = _step_from_baseline(pts, rows[0].get("baseline"))
        values += py
        xs += px
        lx, ly, names = lines.setdefault(rows[0]["stack"], ([], [], []))
        if lx:  # a gap: the previous run's line ends here
            lx.append(None)
            ly.append(None)
            names.append(None)
        lx += px
        ly += py
        names += [run_id] * len(px)
    for stack in stacks:
        if stack in lines:
            lx, ly, names = lines[stack]
            fig.add("scatter", x=lx, y=ly, text=names, mode="lines+markers",
                    line=dict(shape="hv", color=color[stack]), name=stack, connectgaps=False,
                    hovertemplate=f"%{{text}}<br>{x_title} %{{x}}<br>best so far "
                                  "%{y:.2f}<extra></extra>")
    if not fig.data:
        return None
    fig.axis("xaxis", title=dict(text=x_title))
    if x == "elapsed_h":
        _time_axis(fig, budget_h, xs)
    else:  # counts: tokens and submissions are integers
        fig.axis("xaxis", rangemode="tozero", tickformat=",d")
        if x == "seq":
            fig.axis("xaxis", dtick=1)
    fig.axis("yaxis", title=dict(text="best score so far"), range=score_range(values))
    return fig.figure()


def trajectory(subs: Sequence[dict[str, Any]], baseline: float | None, title: str,
               budget_h: float | None = None) -> go.Figure | None:
    """One run's per-submission scores (coloured by the route of the code behind each) and its
    best so far, a step line from the baseline at 0; each route change is marked ✓ when it
    raised the best score, ✗ when not. Hours run from 0 to the budget, its end marked."""
    if not subs:
        return None
    fig = _Fig(title)
    xs = [s["elapsed_h"] if s.get("elapsed_h") is not None else s["seq"] for s in subs]
    x_title = "elapsed hours" if all(s.get("elapsed_h") is not None for s in subs) else "submission"
    floor = baseline if baseline is not None else 0.0
    routes = [s.get("route") or "?" for s in subs]
    for route in sorted(set(routes)):
        idx = [i for i, r in enumerate(routes) if r == route]
        fig.add("scatter",
                x=[xs[i] for i in idx],
                y=[subs[i]["score"] if subs[i]["score"] is not None else floor for i in idx],
                mode="markers", name=f"submission ({route})",
                marker=dict(size=11, symbol=["circle" if subs[i]["score"] is not None else "x"
                                             for i in idx]),
                text=[f"{subs[i]['submission_id']} {subs[i]['status']}" for i in idx],
                hovertemplate="%{text}<br>score %{y}<extra></extra>")
    best_pts = [(x, s["best_so_far"]) for x, s in zip(xs, subs, strict=True)
                if s.get("best_so_far") is not None]
    bx, by = _step_from_baseline(best_pts, baseline)
    if best_pts:
        fig.add("scatter", x=bx, y=by, mode="lines+markers",
                line=dict(shape="hv", width=2, color="black"),
                marker=dict(size=4, color="black"), name="best so far")
    if baseline is not None:
        fig.hline(baseline, f"baseline {baseline:.2f}", "gray", "dash")
    # Route changes between submissions whose code was evaluated: one refused before any
    # evaluation (its path, its size) is no route and changes none.
    prev: int | None = None
    prev_best: float | None = None
    for i, s in enumerate(subs):
        if s.get("status") == "rejected":
            continue
        if prev is not None and routes[i] != routes[prev]:
            ok = s.get("best_so_far") is not None and (prev_best is None
                                                       or s["best_so_far"] > prev_best)
            fig.vline(xs[i], f"{routes[prev]}→{routes[i]} {'✓' if ok else '✗'}",
                      "green" if ok else "red", "dot", font_size=10)
        prev, prev_best = i, s.get("best_so_far")
    fig.axis("xaxis", title=dict(text=x_title))
    if x_title == "elapsed hours":
        _time_axis(fig, budget_h, xs)
    else:
        fig.axis("xaxis", range=[0, max(xs) + 0.5], dtick=1)
    fig.axis("yaxis", title=dict(text="score"), range=score_range(
        [*(s["score"] for s in subs), *by, floor]))
    return fig.figure()


def lineage(experiments: Sequence[Experiment], title: str) -> go.Figure | None:
    """Checkpoint lineage tree: each training experiment is a node at its start time, joined
    to the checkpoint it started from (the base model when none). A revert is a start from a
    checkpoint older than the newest one: marked red."""
    if not experiments:
        return None
    fig = _Fig(title, height=max(260, 55 * len(experiments) + 140))
    pos: dict[str, tuple[float, int]] = {"base": (0.0, 0)}
    latest: str | None = None
    edge_x: list[float | None] = []
    edge_y: list[float | None] = []
    nodes: list[tuple[float, int, str, bool, str]] = []
    for i, e in enumerate(experiments, 1):
        parent = e.parent if e.parent in pos else "base"
        revert = latest is not None and parent != latest
        x = e.elapsed_s / 3600
        px, py = pos[parent]
        edge_x += [px, x, None]
        edge_y += [py, i, None]
        label = e.path or f"experiment {i}"
        pos[label] = (x, i)
        nodes.append((x, i, label, revert, f"{e.strategy} · {e.data_source} · {e.stage}"
                      + (f" · {e.method}" if e.method else "")))
        if e.exit_code in (0, None) and e.path:
            latest = label
    fig.add("scatter", x=edge_x, y=edge_y, mode="lines", line=dict(color="#999"),
            hoverinfo="skip", showlegend=False)
    fig.add("scatter", x=[0.0], y=[0], mode="markers+text", text=["base model"],
            textposition="middle right", marker=dict(size=14, color="black"), name="base model")
    for revert, name, color in ((False, "checkpoint", "#1f77b4"), (True, "revert", "#d62728")):
        sel = [n for n in nodes if n[3] == revert]
        if sel:
            fig.add("scatter", x=[n[0] for n in sel], y=[n[1] for n in sel],
                    mode="markers+text", text=[n[2] for n in sel], textposition="middle right",
                    name=name, marker=dict(size=12, color=color),
                    customdata=[n[4] for n in sel],
                    hovertemplate="%{text}<br>%{customdata}<extra></extra>")
    fig.axis("xaxis", title=dict(text="start (hours into the budget)"))
    fig.axis("yaxis", title=dict(text="experiment"), autorange="reversed", dtick=1)
    return fig.figure()


def route_timeline(subs: Sequence[dict[str, Any]], experiments: Sequence[Experiment],
                   phases: Sequence[dict[str, Any]], title: str,
                   budget_h: float | None = None) -> go.Figure | None:
    """One run over time: the route of the code behind each submission (from the previous
    submission to this one), each training experiment, and the phase of each program run.
    Every colour has a legend entry, grouped by lane; a bar too short to see is widened to
    a visible sliver so that no legend entry names a bar that is not drawn."""
    bars: list[tuple[str, float, float, str]] = []  # lane, start h, length h, label
    prev = 0.0
    for s in subs:
        if s.get("elapsed_s") is None:
            continue
        t = s["elapsed_s"] / 3600
        bars.append(("route", prev, max(t - prev, 1e-3), s.get("route") or "?"))
        prev = t
    for e in experiments:
        bars.append(("experiments", e.elapsed_s / 3600, (e.duration_s or 60) / 3600,
                     f"{e.strategy} ({e.method or '?'})"))
    for p in phases:
        start, end = p.get("start_s"), p.get("end_s")
        if isinstance(start, (int, float)) and isinstance(end, (int, float)) and end > start:
            bars.append(("phases", start / 3600, (end - start) / 3600, str(p.get("phase", "?"))))
    if not bars:
        return None
    fig = _Fig(title, barmode="overlay", height=360)
    end = max([budget_h or 0.0, *(b[1] + b[2] for b in bars)])
    sliver = end / 150
    for lane in ("route", "experiments", "phases"):
        for label in sorted({b[3] for b in bars if b[0] == lane}):
            sel = [b for b in bars if b[0] == lane and b[3] == label]
            fig.add("bar", y=[b[0] for b in sel], x=[max(b[2], sliver) for b in sel],
                    base=[b[1] for b in sel], orientation="h", name=label, legendgroup=lane,
                    legendgrouptitle=dict(text=lane), customdata=[b[2] for b in sel],
                    hovertemplate=f"{label}<br>from %{{base:.2f}} h, "
                                  "%{customdata:.2f} h<extra></extra>")
    fig.axis("xaxis", title=dict(text="hours into the budget"))
    _time_axis(fig, budget_h, [end])
    return fig.figure()


def stacked_shares(rows: Sequence[dict[str, Any]], title: str) -> go.Figure | None:
    """Phase-time distribution: mean share of phase time per group, stacked."""
    if not rows:
        return None
    fig = _Fig(title, barmode="stack")
    groups = sorted({r["group"] for r in rows})
    for phase in sorted({r["phase"] for r in rows}):
        vals = {r["group"]: r["share_mean"] for r in rows if r["phase"] == phase}
        ns = {r["group"]: r["n"] for r in rows if r["phase"] == phase}
        fig.add("bar", x=groups, y=[vals.get(g, 0.0) for g in groups], name=phase,
                customdata=[ns.get(g, 0) for g in groups],
                hovertemplate=f"{phase}: %{{y:.1%}} (n=%{{customdata}})<extra></extra>")
    fig.axis("yaxis", title=dict(text="share of phase time"), tickformat=".0%")
    return fig.figure()


def attempted_adopted(rows: Sequence[dict[str, Any]], title: str) -> go.Figure | None:
    if not rows:
        return None
    fig = _Fig(title, barmode="group")
    methods = [r["method"] for r in rows]
    fig.add("bar", x=methods, y=[r["attempted"] for r in rows], name="attempted (runs)")
    fig.add("bar", x=methods, y=[r["adopted"] for r in rows], name="in best submission")
    fig.axis("yaxis", title=dict(text="runs"))
    return fig.figure()
