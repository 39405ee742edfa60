"""`a2rl report` over a run whose agent planted markup: HTML, scripts, event handlers and remote
references in file names and contents, its command line, stdout (transcript, grader log),
summary.md, rejected model paths, route and experiment labels, a workspace index.html and a
record replaced by a symbolic link. Every page (and every record copy) opened in Chromium
makes no request outside the report folder, logs no console error and holds no element the
agent wrote; the same after the folder is moved. Plus the held-out-set split of the tables."""

from __future__ import annotations

import csv
import re
import shutil
import sys
from html import unescape
from pathlib import Path

import pytest

pytest.importorskip("plotly")
pytest.importorskip("jinja2")
sys.path.insert(0, str(Path(__file__).parent.parent / "fixtures" / "results"))
from make_results import Spec, write_run  # noqa: E402

from a2rl.capture import CodeRecorder  # noqa: E402
from a2rl.report import build_report  # noqa: E402
from a2rl.results import load_runs  # noqa: E402
from a2rl.schema import RunAnalysis, append_jsonl, load_run, write_json  # noqa: E402

HOST = "attacker.invalid"


def evil(where: str) -> str:
    return (f'<img src="http://{HOST}/{where}.png" onerror="window.pwned=\'{where}\'">'
            f"<script>window.pwned='{where}'</script><svg onload=\"window.pwned='{where}'\"/>"
            f'<a href="http://{HOST}/{where}">x</a>')


def hostile_run(runs_dir: Path) -> Path:
    spec = Spec("20260305-090000-evil", "arith", "cmd:python agent.py " + evil("argv"), None,
                "free", 10.0,
                [(600, 30.0, f'<a href="http://{HOST}/route">SFT</a>', ["SFT"]),
                 (1500, None, "SFT-only", ["SFT"])],
                [(100, "full SFT", "curated", "from base", None, f"output/{evil('experiment')}")],
                {"exploration": 300, evil("phase"): 200}, findings=[("contamination", "warning")])
    run_dir = write_run(runs_dir, spec)
    ws = run_dir / "workspace"
    (ws / "index.html").write_text(f"<!doctype html>{evil('workspace')}")
    (ws / "code" / f'<img src="http:{HOST}" onerror=alert(1)>.py').write_text(evil("file"))
    recorder = CodeRecorder(run_dir, ws)
    recorder.snapshot("s0001", 600.0)
    recorder.snapshot("final", 1800.0)
    (run_dir / "agent" / "transcript.log").write_text(f"stdout: {evil('stdout')}\n")
    (run_dir / "grader.log").write_text(f"{evil('grader')}\n")
    # a record the agent replaced by a link to a file outside the run
    (run_dir / "agent" / "exec.jsonl").symlink_to("/etc/passwd")
    (run_dir / "summary.md").write_text(
        f"# summary\n\n{evil('summary-html')}\n\n![beacon](http://{HOST}/md-image.png)\n\n"
        f"[a link](http://{HOST}/md-link) <http://{HOST}/autolink> "
        f'<div onload="x" onerror="y">handlers</div>\n')
    record = load_run(run_dir)
    rejected = record.submissions[1].model_copy(update=dict(
        id="s0003", seq=3, model_path=f"../{evil('rejected-path')}", status="rejected",
        error=f"model path outside the workspace: {evil('rejected-error')}"))
    append_jsonl(run_dir / "ledger.jsonl", rejected)
    analysis = RunAnalysis.model_validate_json((run_dir / "analysis.json").read_text())
    analysis.findings[0].evidence = [evil("evidence")]
    analysis.findings[0].message = evil("finding")
    analysis.iterations[0].methods = [evil("method")]
    write_json(run_dir / "analysis.json", analysis)
    return run_dir


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("hostile")
    hostile_run(root / "runs")
    out = root / "report"
    build_report([root / "runs"], out)
    return out


def _pages(site: Path) -> list[Path]:
    return sorted(site.rglob("*.html"))


def test_pages_are_self_contained_and_carry_a_csp(report: Path) -> None:
    pages = _pages(report)
    assert {"index.html", "leaderboard.html", "tables/index.html"} <= {
        p.relative_to(report).as_posix() for p in pages}
    for page in pages:
        html = page.read_text()
        csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', html)
        assert csp and "script-src 'self'" in unescape(csp[1]), page
        assert re.search(r"<script>", html) is None, f"{page}: inline script"
        for target in re.findall(r'(?:src|href)="([^"#]*)"', html):
            assert "://" not in target and not target.startswith("//"), (page, target)
            resolved = (page.parent / target).resolve()
            assert resolved.is_relative_to(report.resolve()) and resolved.exists(), (page, target)
    run_page = next(report.glob("runs/*evil*.html")).read_text()
    assert "workspace" not in re.findall(r'href="([^"]*)"', run_page).__str__()
    # no copy of the workspace's page and no copy through the planted link
    assert not list(report.rglob("index.html.html")) and not list(report.rglob("exec.jsonl*"))
    assert any(p.name == "index.html.txt" for p in report.rglob("*.txt"))
    # token counts as integers: 2 submissions × 44 000 tokens
    assert "<td>88000</td>" in run_page and "88000.00" not in run_page


def _check_in_browser(site: Path) -> int:
    chromium = shutil.which("chromium") or "/usr/bin/chromium"
    if not Path(chromium).exists():
        pytest.skip("no chromium (scripts/ensure-system-deps.sh installs Debian's)")
    sync_api = pytest.importorskip("playwright.sync_api")
    root_uri = site.resolve().as_uri() + "/"
    files = _pages(site) + sorted(site.glob("runs/*/records/*.txt"))
    assert len(files) > 9
    outside: list[str] = []
    errors: list[str] = []
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=[
            "--no-sandbox", "--disable-background-networking", "--disable-component-update",
            "--disable-sync", "--no-first-run"])
        page = browser.new_page()
        page.set_default_timeout(300_000)  # plotly.js per page on a loaded machine
        page.on("request", lambda r: None if r.url.startswith(root_uri) else outside.append(r.url))
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        for f in files:
            page.goto(f.as_uri(), wait_until="load")
            found = page.evaluate("""() => ({
                pwned: window.pwned === undefined ? null : String(window.pwned),
                planted: document.querySelectorAll('img, image, [onerror], [onload]').length,
                targets: Array.from(document.querySelectorAll('[href], [src], a'))
                    .map(e => e.getAttribute('href') || e.getAttribute('xlink:href')
                              || e.getAttribute('src'))
                    .filter(t => t).map(t => new URL(t, location.href).href),
                scripts: Array.from(document.scripts).filter(s => s.type !== 'application/json')
                    .map(s => s.getAttribute('src') || 'inline'),
            })""")
            rel = f.relative_to(site).as_posix()
            assert found["pwned"] is None, f"{rel}: agent script ran ({found['pwned']})"
            assert found["planted"] == 0, f"{rel}: {found['planted']} planted element(s)"
            assert all(t.startswith(root_uri) for t in found["targets"]), \
                f"{rel}: links out of the folder {[t for t in found['targets'] if HOST in t]}"
            # only a2rl's own scripts, and the viewer's data chunks (JSON literals it writes)
            assert all(s.endswith(("assets/plotly.min.js", "assets/report.js",
                                   "assets/viewer.js", "assets/trajectory.js"))
                       or re.fullmatch(r"trajectory/chunk-\d+\.js", s)
                       for s in found["scripts"]), f"{rel}: scripts {found['scripts']}"
        browser.close()
    assert outside == [], f"requests outside the report folder: {outside[:5]}"
    assert errors == [], f"console errors: {errors[:5]}"
    return len(files)


def test_hostile_run_in_chromium_before_and_after_moving(report: Path, tmp_path: Path) -> None:
    n = _check_in_browser(report)
    moved = tmp_path / "elsewhere" / "copy"
    shutil.copytree(report, moved)
    shutil.move(report, tmp_path / "gone")  # nothing may still point at the old place
    try:
        assert _check_in_browser(moved) == n
    finally:
        shutil.move(tmp_path / "gone", report)


def _retarget(run_dir: Path, fingerprint: str | None, n_heldout: int) -> None:
    record = load_run(run_dir)
    if fingerprint is None:
        record.task = None
        record.baseline = None
    else:
        assert record.task is not None and record.baseline is not None
        record.task.fingerprint = fingerprint
        record.task.n_heldout = n_heldout
        record.baseline.task_fingerprint = fingerprint
    write_json(run_dir / "run.json", record)


def test_runs_on_different_heldout_sets_are_shown_apart(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    subs = [(600, 30.0, "SFT-only", ["SFT"])]
    write_run(runs, Spec("20260306-090000-a", "arith", "reference", None, "free", 33.5, subs))
    write_run(runs, Spec("20260306-100000-b", "arith", "reference", None, "free", 34.0, subs))
    other = write_run(runs, Spec("20260306-110000-c", "arith", "reference", None, "free", 45.0,
                                 [(600, 60.0, "SFT-only", ["SFT"])]))
    bare = write_run(runs, Spec("20260306-120000-d", "arith", "reference", None, "free", 20.0,
                                [(600, 70.0, "SFT-only", ["SFT"])]))
    _retarget(other, "hmac:another-installation-20-items", 20)
    _retarget(bare, None, 0)
    loaded, _ = load_runs([runs])
    assert {r.record.run_id: r.record.task.fingerprint if r.record.task else None
            for r in loaded}["20260306-110000-c"] == "hmac:another-installation-20-items"
    out = tmp_path / "report"
    build_report([runs], out)
    board = list(csv.DictReader((out / "tables" / "leaderboard.csv").open()))
    by_task = {r["task"]: r for r in board}
    assert set(by_task) == {"arith · set 1", "arith · set 2", "arith · set 3"}
    # the two runs on the demo's set pool (30, 30); the others stand alone
    assert sorted((r["best"], r["baseline"]) for r in board) == [
        ("30.00 [30.00, 30.00] (n=2)", "33.75 [33.50, 34.00] (n=2)"), ("60.00 (n=1)", "45.00 (n=1)"),
        ("70.00 (n=1)", "20.00 (n=1)")]
    page = (out / "leaderboard.html").read_text()
    assert "Runs on different held-out sets" in page and "not comparable" in page
    assert "20 held-out items, fingerprint hmac:another-installation-20-items" in page
    assert "identifies no held-out set" in page
    assert "(n=3)" not in page and "(n=4)" not in page
    assert "arith · set 2" in (out / "modes.html").read_text()


def test_imported_run_publishes_only_what_its_import_wrote(tmp_path: Path) -> None:
    from make_results import import_ptb

    run_dir = import_ptb(tmp_path / "runs")
    # a file that appeared after the import (no importer wrote it): not a record of the run
    (run_dir / "grader.log").write_text(evil("late-file"))
    out = tmp_path / "report"
    build_report([tmp_path / "runs"], out)
    published = {p.name for p in out.glob("runs/*/records/*.txt")}
    assert {"run.json.txt", "import_manifest.json.txt", "analysis.json.txt"} <= published
    assert "grader.log.txt" not in published
    assert not any(HOST in p.read_text() for p in out.rglob("*.txt"))
