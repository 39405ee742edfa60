"""`a2rl report`: the static site built from a fixture results directory (synthetic runs in the
real record formats plus an imported PostTrainBench run), its tables, its escaping of
agent-written text, and every page opened in headless Chromium from file:// with no network:
no console error, every chart drawn with data, a screenshot of each page kept as an artifact
(under the test's tmp dir, and copied to $A2RL_TEST_ARTIFACTS when that is set)."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from a2rl.cli import app

pytest.importorskip("plotly")
pytest.importorskip("jinja2")
sys.path.insert(0, str(Path(__file__).parent.parent / "fixtures" / "results"))
from make_results import make_results  # noqa: E402

PAGES = {"index.html", "leaderboard.html", "modes.html", "scaling.html", "trajectories.html",
         "strategy.html", "scaffold.html"}


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("results")
    make_results(root, scaffold=True)
    out = root / "report"
    result = CliRunner().invoke(app, ["report", str(root / "runs"), "-o", str(out)])
    assert result.exit_code == 0, result.output
    return out


def test_site_pages_and_tables(site: Path) -> None:
    assert PAGES <= {p.name for p in site.glob("*.html")}
    run_pages = sorted(site.glob("runs/*.html"))
    assert len(run_pages) == 13
    for name in ("runs", "submissions", "cells", "leaderboard", "modes", "strategy_convergence",
                 "strategy_change_rate", "phase_time", "methods_attempted_adopted",
                 "workspace_stats"):
        assert (site / "tables" / f"{name}.csv").stat().st_size > 0
        assert (site / "tables" / f"{name}.md").read_text().startswith("| ")
    import csv

    board = {(r["stack"], r["task"], r["mode"]): r
             for r in csv.DictReader((site / "tables" / "leaderboard.csv").open())}
    # reference on arith: best 40 and 50 → mean 45, n printed beside it
    ref = board[("reference", "arith", "free")]
    assert (ref["level"], ref["best"], ref["improvement"]) == (
        "L1", "45.00 [40.00, 50.00] (n=2)", "+35.00 [+30.00, +40.00] (n=2)")
    # the contaminated claude-code run is marked and not counted: n=1 of 2 runs
    cc = board[("claude-code · claude-sonnet-4-5", "arith", "free")]
    assert (cc["best"], cc["runs"], cc["counted"], cc["marks"]) == (
        "60.00 (n=1)", "2", "1", "contamination×1")
    process = {(r["stack"], r["task"], r["mode"]): r
               for r in csv.DictReader((site / "tables" / "process_metrics.csv").open())}
    # reference/arith: best at 1500 s and 1600 s → 0.43 h; valid rate 1.0 in both runs
    ref = process[("reference", "arith", "free")]
    assert ref["time_to_best_h"].startswith("0.43 [0.42, 0.44] (n=2)")
    assert ref["valid_rate"] == "1.00 [1.00, 1.00] (n=2)"
    lb = (site / "leaderboard.html").read_text()
    assert lb.index("baseline") < lb.index("reference")  # baseline row on top
    assert ">L1<" in lb and ">L3<" in lb
    # no CDN: plotly.js is in the site
    assert (site / "assets" / "plotly.min.js").stat().st_size > 1_000_000
    for page in [*site.glob("*.html"), *run_pages]:
        assert 'src="http' not in page.read_text()


def test_scaffold_page(site: Path) -> None:
    """Per arm and per run, from the runs' scaffold.json: adoption by level (the trajectory study's
    asymmetry), journal kinds, skill consults, plan outcomes, checkpoint decisions."""
    import csv

    full = "claude-code · claude-sonnet-4-5 + journal,skills,evaluator,plan-review,revision"
    lean = "codex · gpt-5 + journal,evaluator"
    adoption = {(r["arm"], r["level"]): (r["n"], r["adopted"], r["rate"]) for r in
                csv.DictReader((site / "tables" / "scaffold_adoption.csv").open())}
    assert adoption == {(full, "execution"): ("3", "2", "0.6667"),
                        (full, "strategy"): ("3", "0", "0.0"),
                        (lean, "execution"): ("1", "0", "0.0"),
                        (lean, "strategy"): ("1", "1", "1.0")}
    runs = {r["run_id"]: r for r in
            csv.DictReader((site / "tables" / "scaffold_runs.csv").open())}
    assert len(runs) == 3  # only the runs with scaffold.json
    b = runs["20260302-100000-cc-scaffold-b"]
    assert (b["plans"], b["trained_before_approval"]) == ("p01 approve", "True")
    assert b["checkpoints"] == "c01 keep, c02 switch, not followed"
    assert runs["20260302-090000-cc-scaffold-a"]["checkpoints"] == "c01 switch, followed"
    page = (site / "scaffold.html").read_text()
    assert "1 of 2" in page  # one run of the full arm trained before its plan was approved
    assert "<b>agent</b>" not in page and "&lt;b&gt;agent&lt;/b&gt;" in page


def test_agent_text_is_escaped_and_links_resolve(site: Path) -> None:
    page = (site / "runs" / "20260301-110000-cc-a.html").read_text()
    assert "<img src=x" not in page and "&lt;img src=x onerror=alert(1)&gt;" in page
    assert "<script>alert" not in page
    # every link is relative and stays inside the report folder; the records are text copies
    import re

    links = re.findall(r'(?:href|src)="([^"#]+)"', page)
    targets = [(site / "runs" / h).resolve() for h in links]
    assert all(t.is_relative_to(site.resolve()) and t.exists() for t in targets), links
    transcript = next(t for t in targets if t.name == "agent__transcript.log.txt")
    assert transcript.read_text().endswith('<script>alert("agent text")</script>\n')
    assert not any("workspace" in h for h in links)
    imported = next(site.glob("runs/ptb-*.html")).read_text()
    assert "imported from posttrainbench" in imported
    # the imported run's code snapshot (made by the importer) is copied in as text
    snap = next(site.glob("runs/ptb-*/s0001/train_sft.py.txt"))
    assert "train_sft.py.txt" in imported and snap.read_text().strip()


def test_every_page_renders_in_chromium(site: Path, tmp_path: Path) -> None:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        pytest.skip("no chromium on PATH (scripts/ensure-system-deps.sh installs Debian's)")
    sync_api = pytest.importorskip("playwright.sync_api")
    shots = tmp_path / "screenshots"
    shots.mkdir()
    pages = sorted(site.glob("*.html")) + sorted(site.glob("runs/*.html"))
    checked: dict[str, int] = {}
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        # plotly.js (3.5 MB) per page: a loaded machine misses playwright's 30 s default
        page.set_default_timeout(300_000)
        errors: list[str] = []
        remote: list[str] = []
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))

        def only_files(route: object) -> None:
            req = route.request  # type: ignore[attr-defined]
            if req.url.startswith("file://"):
                route.continue_()  # type: ignore[attr-defined]
            else:  # the site must work offline: anything else is a failure
                remote.append(req.url)
                route.abort()  # type: ignore[attr-defined]

        page.route("**/*", only_files)
        for f in pages:
            errors.clear()
            page.goto(f.as_uri(), wait_until="load")
            charts = page.evaluate("""() => Array.from(document.querySelectorAll('div.chart'))
                .map(el => ({id: el.id, svg: !!el.querySelector('.main-svg'),
                  points: (el.data || []).reduce((n, t) => n + ((t.x || t.z || []).length), 0)}))""")
            rel = f.relative_to(site).as_posix()
            assert errors == [], f"{rel}: console errors {errors}"
            for c in charts:
                assert c["svg"] and c["points"] > 0, f"{rel}: chart {c['id']} drew no data"
            checked[rel] = len(charts)
            # whole pages for the overview pages; the top of each run page is enough
            page.screenshot(path=str(shots / (rel.replace("/", "__") + ".png")),
                            full_page="/" not in rel)
        browser.close()
    assert remote == []
    assert set(checked) >= PAGES and len(checked) == len(pages)
    # the chart pages carry charts; the per-run page of a run with submissions has its trajectory
    assert checked["scaling.html"] >= 3 and checked["trajectories.html"] >= 9
    assert checked["runs/20260301-170000-opencode-a.html"] == 0  # failed in setup: no chart
    assert checked["modes.html"] >= 1 and checked["strategy.html"] == 2
    assert checked["scaffold.html"] == 5  # adoption, journal, skills, plans, checkpoints
    assert checked["runs/20260301-110000-cc-a.html"] == 3
    assert len(list(shots.glob("*.png"))) == len(pages)
    if os.environ.get("A2RL_TEST_ARTIFACTS"):
        dest = Path(os.environ["A2RL_TEST_ARTIFACTS"]) / "report-screenshots"
        shutil.copytree(shots, dest, dirs_exist_ok=True)
