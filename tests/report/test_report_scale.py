"""`a2rl report` over many runs and again after a change: a rebuild renders only the runs whose
records changed (the cache in <site>/.a2rl-cache) and removes the pages of runs that are gone;
a broken run.json is listed, not fatal; cost and the gain it bought beside each stack on the
leaderboard; the scaling page keeps held-out sets apart as the leaderboard does; every table
sorts and filters in Chromium from file:// (a long one built from JSON); ids and task names an
agent or another harness chose reach the tables as text."""

from __future__ import annotations

import csv
import json
import re
import sys
from pathlib import Path

import pytest

pytest.importorskip("plotly")
pytest.importorskip("jinja2")
sys.path.insert(0, str(Path(__file__).parent.parent / "fixtures" / "results"))
from make_results import SPECS, Spec, write_run  # noqa: E402

from a2rl.report import build_report  # noqa: E402
from a2rl.schema import RunCost, load_run, write_json  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
EVIL = '<img src=x onerror="window.pwned=1">'


def _report(runs: Path, out: Path) -> dict[str, object]:
    build_report([runs], out)
    return dict(json.loads((out / "report.json").read_text()))


def _cost(run_dir: Path, usd: float | None, gpus: int, agent_gpu_hours: float) -> None:
    record = load_run(run_dir)
    record.cost = RunCost(usd=usd, gpus=gpus, agent_gpu_hours=agent_gpu_hours, eval_gpu_hours=0.5)
    write_json(run_dir / "run.json", record)


def _retarget(run_dir: Path, fingerprint: str) -> None:
    record = load_run(run_dir)
    assert record.task is not None and record.baseline is not None
    record.task.fingerprint = record.baseline.task_fingerprint = fingerprint
    write_json(run_dir / "run.json", record)


def test_cost_and_gain_per_dollar_and_gpu_hour_beside_each_stack(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    ref_a, ref_b, cc_a = (write_run(runs, s) for s in SPECS[:3])
    _cost(ref_a, 2.0, 1, 1.5)  # Δ 30 for $2 and 2 GPU-h (1.5 agent + 0.5 evaluation)
    _cost(ref_b, 6.0, 1, 3.5)  # Δ 40 for $6 and 4 GPU-h
    _cost(cc_a, None, 0, 0.0)  # dollars unknown, CPU only: 0.5 GPU-h of evaluation
    out = tmp_path / "report"
    _report(runs, out)
    cost = {r["stack"]: r for r in csv.DictReader((out / "tables" / "leaderboard_cost.csv").open())}
    ref = cost["reference"]
    assert ref["usd"].startswith("4.00 [") and ref["usd"].endswith("(n=2)")
    assert ref["gpu_hours"].startswith("3.00 [")
    assert ref["gain_per_usd"] == "+8.75 Δ/$ (n=2)"  # (30 + 40) / (2 + 6)
    assert ref["gain_per_gpu_hour"] == "+11.7 Δ/GPU-h (n=2)"  # 70 / 6
    cc = cost["claude-code · claude-sonnet-4-5"]
    assert (cc["usd"], cc["gain_per_usd"]) == ("—", "—")
    assert (cc["gpu_hours"], cc["gain_per_gpu_hour"]) == ("0.50 (n=1)", "+100 Δ/GPU-h (n=1)")
    board = (out / "leaderboard.html").read_text()
    assert "<th>Δ per $</th>" in board and "+8.75 Δ/$ (n=2)" in board
    cells = {(r["stack"], r["task"]): r for r in
             csv.DictReader((out / "tables" / "leaderboard.csv").open())}
    assert cells[("reference", "arith")]["gain_per_usd"] == "+8.75 Δ/$ (n=2)"
    runs_csv = {r["run_id"]: r for r in csv.DictReader((out / "tables" / "runs.csv").open())}
    assert (runs_csv[SPECS[0].run_id]["usd"], runs_csv[SPECS[0].run_id]["gpu_hours"]) == ("2.0", "2.0")
    assert runs_csv[SPECS[2].run_id]["usd"] == ""


def test_a_rebuild_renders_only_the_changed_runs(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    first = [write_run(runs, s) for s in SPECS[:3]]
    out = tmp_path / "report"
    assert _report(runs, out)["rebuilt"] == 3
    page = out / "runs" / f"{SPECS[0].run_id}.html"
    before = page.stat().st_mtime_ns
    assert _report(runs, out)["rebuilt"] == 0  # nothing changed: no run read again
    added = write_run(runs, SPECS[5])
    info = _report(runs, out)
    assert (info["runs"], info["rebuilt"]) == (4, 1)
    assert page.stat().st_mtime_ns == before
    assert SPECS[5].run_id in {r["run_id"] for r in csv.DictReader((out / "tables" / "runs.csv").open())}
    assert "humaneval" in (out / "leaderboard.html").read_text()
    # a changed record (the ledger gets a submission) rebuilds that run alone
    with (first[1] / "ledger.jsonl").open("a") as fh:
        fh.write((first[1] / "ledger.jsonl").read_text().splitlines()[-1] + "\n")
    assert _report(runs, out)["rebuilt"] == 1
    # a run folder gone: its page and its folder leave the site
    import shutil

    shutil.rmtree(added)
    info = _report(runs, out)
    assert (info["runs"], info["rebuilt"]) == (3, 0)
    assert not (out / "runs" / f"{SPECS[5].run_id}.html").exists()
    assert not (out / "runs" / SPECS[5].run_id).exists()
    # a broken run.json: listed on the overview, the others built as before
    broken = runs / "arith" / "20260309-000000-broken"
    broken.mkdir(parents=True)
    (broken / "run.json").write_text("{ not json")
    info = _report(runs, out)
    assert info["unreadable"] == [str(broken)] and info["runs"] == 3
    index = (out / "index.html").read_text()
    assert "Unreadable run directories" in index and "20260309-000000-broken" in index
    # a damaged cache entry is no error: that run is read again
    next((out / ".a2rl-cache" / "runs").glob("*.json")).write_text("[1, 2")
    assert _report(runs, out)["rebuilt"] == 1


def test_scaling_keeps_heldout_sets_apart(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    a, b = write_run(runs, SPECS[0]), write_run(runs, SPECS[1])
    _retarget(b, "hmac:another-installation-20-items")
    out = tmp_path / "report"
    _report(runs, out)
    page = (out / "scaling.html").read_text()
    heads = re.findall(r"<h2>(task [^<]*)</h2>", page)
    assert heads == ["task arith · set 1 · model smollm2-135m",
                     "task arith · set 2 · model smollm2-135m"]
    charts = dict(re.findall(r'<script type="application/json" id="(chart\d+)-data">(.*?)</script>',
                             page, re.S))
    drawn = []
    for head in heads:
        section = page.split(f"<h2>{head}</h2>")[1].split("<h2>")[0]
        ids = re.findall(r'data-figure="(chart\d+)"', section)
        assert len(ids) == 3
        drawn.append({name for cid in ids for name in (a.name, b.name) if name in charts[cid]})
    assert sorted(drawn, key=sorted) == [{a.name}, {b.name}]  # one set each, never both
    assert "Runs on different held-out sets" in page


def _hostile_runs(runs: Path) -> None:
    for s in SPECS[:6]:
        write_run(runs, s)
    evil = write_run(runs, Spec("20260310-090000-evil", "arith", "reference", None, "free", 10.0,
                                [(600, 20.0, "SFT-only", ["SFT"])]))
    record = load_run(evil)
    record.run_id = f"evil-{EVIL}"
    record.config.task = f"task-{EVIL}"
    write_json(evil / "run.json", record)


def test_tables_sort_and_filter_in_chromium(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if not Path(CHROMIUM).exists():
        pytest.skip("no chromium (scripts/ensure-system-deps.sh installs Debian's)")
    sync_api = pytest.importorskip("playwright.sync_api")
    from a2rl.report import _html

    monkeypatch.setattr(_html, "LAZY_ROWS", 3)  # the runs table (7 rows) comes as JSON
    runs = tmp_path / "runs"
    _hostile_runs(runs)
    out = tmp_path / "report"
    _report(runs, out)
    index = (out / "index.html").read_text()
    assert 'class="dt-lazy"' in index and EVIL not in index and "<img" not in index
    assert EVIL not in (out / "leaderboard.html").read_text()
    root = out.resolve().as_uri() + "/"
    errors: list[str] = []
    outside: list[str] = []
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_page()
        page.set_default_timeout(300_000)  # plotly.js per page on a loaded machine
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("request", lambda r: None if r.url.startswith(root) else outside.append(r.url))
        page.goto((out / "index.html").as_uri(), wait_until="load")
        table = page.locator("div.dt-lazy table")

        def column(name: str) -> list[str]:
            return page.evaluate("""([name]) => {
                const t = document.querySelector('div.dt-lazy table');
                const i = Array.from(t.tHead.rows[0].cells).findIndex(c => c.textContent === name);
                return Array.from(t.tBodies[0].rows).map(r => r.cells[i].textContent); }""", [name])

        assert len(column("run")) == 7
        assert page.evaluate("document.querySelectorAll('img, [onerror]').length") == 0
        assert page.evaluate("window.pwned === undefined")
        assert any(t == f"evil-{EVIL}" for t in column("run"))  # the id, shown as text
        table.locator("th", has_text="best").first.click()
        best = [float(v) for v in column("best")]
        assert best == sorted(best) and len(best) == 7
        table.locator("th", has_text="best").first.click()
        assert [float(v) for v in column("best")] == sorted(best, reverse=True)
        page.locator(".dt-filter").first.fill("CLAUDE-code")  # any case
        stacks = column("stack")
        assert len(stacks) == 3 and all("claude-code" in s for s in stacks)
        assert "(filtered from 7)" in page.locator(".dt-info").first.text_content()
        page.locator(".dt-filter").first.fill("no such text anywhere")
        assert column("run") == []
        # a table written into the page: the process metrics of every cell
        page.goto((out / "leaderboard.html").as_uri(), wait_until="load")
        process = page.locator("table").last
        process.locator("th", has_text="stack").first.click()
        stacks = page.evaluate("""() => Array.from(document.querySelectorAll('table'))
            .pop().tBodies[0].rows.length ? Array.from(Array.from(document.querySelectorAll('table'))
            .pop().tBodies[0].rows).map(r => r.cells[0].textContent) : []""")
        assert stacks == sorted(stacks, key=str.lower) and len(stacks) >= 4
        page.locator(".dt-filter").last.fill("reference")
        shown = page.evaluate("""() => Array.from(Array.from(document.querySelectorAll('table'))
            .pop().tBodies[0].rows).map(r => r.cells[0].textContent)""")
        assert shown and set(shown) == {"reference"}
        # the leaderboard's baseline row stays on top whatever the order
        board = page.locator("table").first
        board.locator("thead tr").last.locator("th").nth(1).click()
        assert board.locator("tbody tr").first.get_attribute("class") == "baseline"
        browser.close()
    assert errors == [] and outside == []


def test_every_chart_is_valid_plotly() -> None:
    """The charts are built unvalidated for speed: each builder's figure, validated here."""
    import plotly.graph_objects as go

    from a2rl.report import _figures as F
    from a2rl.results import Cell, Summary
    from a2rl.schema import Experiment

    subs = [{"run_id": f"r{i % 2}", "stack": f"stack {i % 2}", "submission_id": f"s{i}", "seq": i,
             "status": "scored" if i != 2 else "rejected", "elapsed_h": i / 2, "elapsed_s": i * 1800.0,
             "score": 50.0 + i, "best_so_far": 50.0 + i, "baseline": 48.0,
             "route": "SFT-only" if i % 2 else "GRPO", "tokens": 1000.0 * i} for i in range(1, 5)]
    exp = Experiment(path="output/v1", elapsed_s=600.0, parent=None, strategy="RL",
                     data_source="self-generated", stage="from base", command="python rl.py",
                     exit_code=0, duration_s=None, method="GRPO", framework="trl", script="rl.py")
    summary = Summary(2, 3.0, 1.0, 2.0, 4.0)
    cells = [Cell({"mode": m, "task": t}, [], [], {"result_improvement": summary})
             for m in ("free", "sft-only") for t in ("arith", "gsm8k")]
    figures = [
        F.trajectory(subs, 48.0, "t", 3.0), F.lineage([exp, exp], "l"),
        F.route_timeline(subs, [exp], [{"phase": "SFT", "start_s": 0.0, "end_s": 900.0}], "r", 3.0),
        *(F.scaling(subs, x, x, "s", 3.0) for x in ("elapsed_h", "tokens", "seq")),
        F.improvement_heatmap(cells, "h"),
        F.stacked_shares([{"group": "a", "phase": "SFT", "share_mean": 1.0, "n": 1}], "p"),
        F.attempted_adopted([{"method": "SFT", "attempted": 2, "adopted": 1}], "m"),
        F._fig("empty", barmode="stack"),
    ]
    for fig in figures:
        assert fig is not None
        go.Figure(fig.to_plotly_json())  # raises on any property plotly does not know
