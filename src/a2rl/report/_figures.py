"""The report's charts, as plotly figures (rendered in the browser by the plotly.js copied into
the site). Every figure takes plain rows, so it is built the same from a2rl and imported runs."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import plotly.graph_objects as go

from a2rl.records import Experiment
from a2rl.results import Cell

_LAYOUT = dict(template="plotly_white", margin=dict(l=60, r=20, t=50, b=50), height=420,
               legend=dict(font=dict(size=10)))


def _fig(title: str, **layout: Any) -> go.Figure:
    fig = go.Figure()
    fig.update_layout(title=dict(text=title, font=dict(size=14)), **{**_LAYOUT, **layout})
    return fig


def improvement_heatmap(cells: Sequence[Cell], title: str) -> go.Figure | None:
    """Mode × task mean improvement over the counted runs, the best and worst cells marked."""
    modes = sorted({c.key["mode"] for c in cells})
    tasks = sorted({c.key["task"] for c in cells})
    z: list[list[float | None]] = []
    text: list[list[str]] = []
    by = {(c.key["mode"], c.key["task"]): c for c in cells}
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
    fig = _fig(title, height=max(300, 90 * len(modes) + 150))
    fig.add_trace(go.Heatmap(z=z, x=tasks, y=modes, text=text, texttemplate="%{text}",
                             colorscale="RdBu", zmid=0, colorbar=dict(title="Δ"),
                             hovertemplate="%{y} × %{x}: %{text}<extra></extra>"))
    fig.update_xaxes(title="task")
    fig.update_yaxes(title="mode")
    return fig


def scaling(subs: Sequence[dict[str, Any]], x: str, x_title: str, title: str) -> go.Figure | None:
    """Best score so far of each run against `x` (elapsed hours, tokens or submissions),
    one line per run, coloured by agent stack."""
    fig = _fig(title)
    stacks = sorted({s["stack"] for s in subs})
    palette = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2",
               "#17becf", "#7f7f7f", "#bcbd22"]
    color = {st: palette[i % len(palette)] for i, st in enumerate(stacks)}
    shown: set[str] = set()
    runs: dict[str, list[dict[str, Any]]] = {}
    for s in subs:
        runs.setdefault(s["run_id"], []).append(s)
    for run_id, rows in runs.items():
        pts = [(r[x], r["best_so_far"]) for r in rows
               if r.get(x) is not None and r.get("best_so_far") is not None]
        if not pts:
            continue
        stack = rows[0]["stack"]
        fig.add_trace(go.Scatter(x=[p[0] for p in pts], y=[p[1] for p in pts],
                                 mode="lines+markers", line=dict(shape="hv", color=color[stack]),
                                 name=stack, legendgroup=stack, showlegend=stack not in shown,
                                 hovertemplate=f"{run_id}<br>{x_title} %{{x}}<br>best so far "
                                               "%{y:.2f}<extra></extra>"))
        shown.add(stack)
    if not fig.data:
        return None
    fig.update_xaxes(title=x_title)
    fig.update_yaxes(title="best score so far")
    return fig


def trajectory(subs: Sequence[dict[str, Any]], baseline: float | None, title: str
               ) -> go.Figure | None:
    """One run's per-submission scores (coloured by the route of the code behind each) and its
    best so far; each route change is marked ✓ when it raised the best score, ✗ when not."""
    if not subs:
        return None
    fig = _fig(title)
    xs = [s["elapsed_h"] if s.get("elapsed_h") is not None else s["seq"] for s in subs]
    x_title = "elapsed hours" if all(s.get("elapsed_h") is not None for s in subs) else "submission"
    floor = baseline if baseline is not None else 0.0
    routes = [s.get("route") or "?" for s in subs]
    for route in sorted(set(routes)):
        idx = [i for i, r in enumerate(routes) if r == route]
        fig.add_trace(go.Scatter(
            x=[xs[i] for i in idx],
            y=[subs[i]["score"] if subs[i]["score"] is not None else floor for i in idx],
            mode="markers", name=f"submission ({route})",
            marker=dict(size=11, symbol=["circle" if subs[i]["score"] is not None else "x"
                                         for i in idx]),
            text=[f"{subs[i]['submission_id']} {subs[i]['status']}" for i in idx],
            hovertemplate="%{text}<br>score %{y}<extra></extra>"))
    best_pts = [(x, s["best_so_far"]) for x, s in zip(xs, subs, strict=True)
                if s.get("best_so_far") is not None]
    if best_pts:
        fig.add_trace(go.Scatter(x=[p[0] for p in best_pts], y=[p[1] for p in best_pts],
                                 mode="lines", line=dict(shape="hv", width=2, color="black"),
                                 name="best so far"))
    if baseline is not None:
        fig.add_hline(y=baseline, line_dash="dash", line_color="gray",
                      annotation_text=f"baseline {baseline:.2f}")
    prev_best: float | None = None
    for i, s in enumerate(subs):
        if i and routes[i] != routes[i - 1]:
            ok = s.get("best_so_far") is not None and (prev_best is None
                                                       or s["best_so_far"] > prev_best)
            fig.add_vline(x=xs[i], line_dash="dot", line_color="green" if ok else "red",
                          annotation_text=f"{routes[i - 1]}→{routes[i]} {'✓' if ok else '✗'}",
                          annotation_font_size=10)
        prev_best = s.get("best_so_far")
    fig.update_xaxes(title=x_title)
    fig.update_yaxes(title="score")
    return fig


def lineage(experiments: Sequence[Experiment], title: str) -> go.Figure | None:
    """Checkpoint lineage tree: each training experiment is a node at its start time, joined
    to the checkpoint it started from (the base model when none). A revert is a start from a
    checkpoint older than the newest one: marked red."""
    if not experiments:
        return None
    fig = _fig(title, height=max(260, 55 * len(experiments) + 140))
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
    fig.add_trace(go.Scatter(x=edge_x, y=edge_y, mode="lines", line=dict(color="#999"),
                             hoverinfo="skip", showlegend=False))
    fig.add_trace(go.Scatter(x=[0.0], y=[0], mode="markers+text", text=["base model"],
                             textposition="middle right", marker=dict(size=14, color="black"),
                             name="base model"))
    for revert, name, color in ((False, "checkpoint", "#1f77b4"), (True, "revert", "#d62728")):
        sel = [n for n in nodes if n[3] == revert]
        if sel:
            fig.add_trace(go.Scatter(x=[n[0] for n in sel], y=[n[1] for n in sel],
                                     mode="markers+text", text=[n[2] for n in sel],
                                     textposition="middle right", name=name,
                                     marker=dict(size=12, color=color),
                                     customdata=[n[4] for n in sel],
                                     hovertemplate="%{text}<br>%{customdata}<extra></extra>"))
    fig.update_xaxes(title="start (hours into the budget)")
    fig.update_yaxes(title="experiment", autorange="reversed", dtick=1)
    return fig


def route_timeline(subs: Sequence[dict[str, Any]], experiments: Sequence[Experiment],
                   phases: Sequence[dict[str, Any]], title: str) -> go.Figure | None:
    """One run over time: the route of the code behind each submission (from the previous
    submission to this one), each training experiment, and the phase of each program run."""
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
    fig = _fig(title, barmode="overlay", height=330)
    for label in sorted({b[3] for b in bars}):
        sel = [b for b in bars if b[3] == label]
        fig.add_trace(go.Bar(y=[b[0] for b in sel], x=[b[2] for b in sel],
                             base=[b[1] for b in sel], orientation="h", name=label,
                             hovertemplate=f"{label}<br>from %{{base:.2f}} h, %{{x:.2f}} h"
                                           "<extra></extra>"))
    fig.update_xaxes(title="hours into the budget")
    return fig


def stacked_shares(rows: Sequence[dict[str, Any]], title: str) -> go.Figure | None:
    """Phase-time distribution: mean share of phase time per group, stacked."""
    if not rows:
        return None
    fig = _fig(title, barmode="stack")
    groups = sorted({r["group"] for r in rows})
    for phase in sorted({r["phase"] for r in rows}):
        vals = {r["group"]: r["share_mean"] for r in rows if r["phase"] == phase}
        ns = {r["group"]: r["n"] for r in rows if r["phase"] == phase}
        fig.add_trace(go.Bar(x=groups, y=[vals.get(g, 0.0) for g in groups], name=phase,
                             customdata=[ns.get(g, 0) for g in groups],
                             hovertemplate=f"{phase}: %{{y:.1%}} (n=%{{customdata}})"
                                           "<extra></extra>"))
    fig.update_yaxes(title="share of phase time", tickformat=".0%")
    return fig


def attempted_adopted(rows: Sequence[dict[str, Any]], title: str) -> go.Figure | None:
    if not rows:
        return None
    fig = _fig(title, barmode="group")
    methods = [r["method"] for r in rows]
    fig.add_trace(go.Bar(x=methods, y=[r["attempted"] for r in rows], name="attempted (runs)"))
    fig.add_trace(go.Bar(x=methods, y=[r["adopted"] for r in rows], name="in best submission"))
    fig.update_yaxes(title="runs")
    return fig
