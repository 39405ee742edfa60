"""The report's plotly figures, checked on the figure objects: time axes from 0 to the budget
with its end marked, best so far as a step line from the baseline at 0 (drawn even for one
submission), y ranges that hold the baseline with room around it, a legend entry for every
colour and none for a trace that draws nothing, counts as integers, and record text kept out
of plotly's label markup."""

from __future__ import annotations

import json
from typing import Any

import pytest

pytest.importorskip("plotly")

from a2rl.report import _figures as F  # noqa: E402
from a2rl.report._html import Page  # noqa: E402
from a2rl.schema import Experiment  # noqa: E402


def _sub(t_h: float, score: float | None, best: float | None, **kw: Any) -> dict[str, Any]:
    return {"run_id": "r1", "stack": "reference", "submission_id": "s0001", "seq": 1,
            "status": "scored", "elapsed_h": t_h, "elapsed_s": t_h * 3600, "score": score,
            "best_so_far": best, "baseline": 51.0, "route": "SFT-only", "tokens": 94100.0, **kw}


def _some(fig: Any) -> Any:
    assert fig is not None, "the figure has data: it must be drawn"
    return fig


def _legend_traces(fig: Any) -> list[Any]:
    return [t for t in fig.data if t.showlegend is not False]


def _budget_marks(fig: Any, budget_h: float) -> list[Any]:
    lines = [s for s in fig.layout.shapes if s.x0 == budget_h and s.x1 == budget_h]
    notes = [a.text for a in fig.layout.annotations]
    assert "budget end" in notes
    return lines


def test_trajectory_of_one_submission() -> None:
    fig = _some(F.trajectory([_sub(0.5, 52.0, 52.0)], 51.0, "t", budget_h=1.0))
    assert fig is not None
    assert list(fig.layout.xaxis.range) == pytest.approx([0.0, 1.03])
    assert _budget_marks(fig, 1.0)
    best = next(t for t in fig.data if t.name == "best so far")
    assert (list(best.x), list(best.y)) == ([0.0, 0.5], [51.0, 52.0])
    assert best.line.shape == "hv" and "lines" in best.mode
    lo, hi = fig.layout.yaxis.range
    assert lo <= 51.0 - F.MIN_PAD and hi >= 52.0 + F.MIN_PAD
    assert fig.layout.showlegend is True
    assert all(len(t.x) for t in _legend_traces(fig))


def test_trajectory_range_holds_every_score_and_the_baseline() -> None:
    subs = [_sub(0.2, None, None), _sub(0.6, 80.0, 80.0, seq=2), _sub(0.9, 20.0, 80.0, seq=3)]
    fig = _some(F.trajectory(subs, 10.0, "t", budget_h=2.0))
    lo, hi = fig.layout.yaxis.range
    assert (lo, hi) == pytest.approx((3.0, 87.0))  # a tenth of the 10–80 span each side
    low = _some(F.trajectory([_sub(0.5, 1.0, 1.0)], 0.0, "t", budget_h=1.0))
    assert list(low.layout.yaxis.range) == pytest.approx([0.0, 4.0])  # no negative scores
    best = next(t for t in fig.data if t.name == "best so far")
    assert list(best.x)[0] == 0.0 and list(best.y)[0] == 10.0
    assert list(fig.layout.xaxis.range) == pytest.approx([0.0, 2.06])


def test_route_timeline_legends_every_drawn_colour() -> None:
    exp = Experiment(path="output/v1", elapsed_s=600.0, parent=None, strategy="RL",
                     data_source="self-generated", stage="from base", command="python rl.py",
                     exit_code=0, duration_s=None, method="GRPO", framework="trl",
                     script="rl.py")
    phases = [{"phase": "exploration", "start_s": 0.0, "end_s": 1200.0}]
    fig = _some(F.route_timeline([_sub(0.5, 52.0, 52.0)], [exp], phases, "t", budget_h=10.0))
    assert fig is not None and fig.layout.showlegend is True
    names = {(t.legendgroup, t.name) for t in fig.data}
    assert names == {("route", "SFT-only"), ("experiments", "RL (GRPO)"),
                     ("phases", "exploration")}
    # the one-minute experiment in a 10 h axis is widened to a visible bar
    assert all(min(t.x) >= 10.0 / 150 for t in fig.data)
    assert all(t.legendgrouptitle.text == t.legendgroup for t in fig.data)
    assert list(fig.layout.xaxis.range)[0] == 0.0 and _budget_marks(fig, 10.0)


def test_scaling_axes() -> None:
    subs = [_sub(0.5, 52.0, 52.0), _sub(1.5, 60.0, 60.0, seq=2, tokens=188200.0),
            _sub(0.7, 40.0, 40.0, run_id="r2", stack="codex", baseline=30.0)]
    hours = _some(F.scaling(subs, "elapsed_h", "elapsed hours", "t", budget_h=2.0))
    assert hours is not None and list(hours.layout.xaxis.range) == pytest.approx([0.0, 2.06])
    assert _budget_marks(hours, 2.0)
    r1 = next(t for t in hours.data if t.name == "reference")
    assert (list(r1.x), list(r1.y)) == ([0.0, 0.5, 1.5], [51.0, 52.0, 60.0])
    lo, hi = hours.layout.yaxis.range
    assert lo <= 30.0 - F.MIN_PAD and hi >= 60.0 + F.MIN_PAD
    assert sorted(t.name for t in _legend_traces(hours)) == ["codex", "reference"]
    tokens = _some(F.scaling(subs, "tokens", "tokens", "t"))
    assert tokens.layout.xaxis.tickformat == ",d" and tokens.layout.xaxis.rangemode == "tozero"
    seq = _some(F.scaling(subs, "seq", "submissions", "t"))
    assert seq.layout.xaxis.dtick == 1


def test_one_phase_chart_keeps_its_legend() -> None:
    fig = _some(F.stacked_shares([{"group": "a", "phase": "SFT", "share_mean": 1.0, "n": 1}], "t"))
    assert fig is not None and fig.layout.showlegend is True and len(fig.data) == 1


def test_record_text_is_not_plotly_markup() -> None:
    href = '<a href="http://attacker.invalid/x">SFT</a>'
    fig = _some(F.trajectory([_sub(0.5, 52.0, 52.0, route=href)], 51.0, "t", budget_h=1.0))
    page = Page("p.html", "t")
    page.chart(fig)
    data = json.loads(str(page.charts[0]["json"]))  # the \u003c escapes decode to `<`
    names = [t["name"] for t in data["data"]]
    assert 'submission (&lt;a href="http://attacker.invalid/x">SFT&lt;/a>)' in names
    assert "<a " not in json.dumps(data) and "<extra></extra>" in json.dumps(data)


def test_a_refused_submission_marks_no_route_change() -> None:
    """A path refused before evaluation (`../../etc`) has no route: the copy before it and the
    trained model after it are one change (Copy→SFT-only), the refusal none."""
    subs = [_sub(0.1, 51.0, 51.0, route="Copy", status="baseline_copy"),
            _sub(0.3, None, 51.0, seq=2, route="Placeholder/Missing", status="rejected"),
            _sub(0.6, 55.0, 55.0, seq=3, route="SFT-only")]
    fig = _some(F.trajectory(subs, 51.0, "t", budget_h=1.0))
    changes = [a.text for a in fig.layout.annotations if "→" in (a.text or "")]
    assert changes == ["Copy→SFT-only ✓"]
