"""The run viewers' data files in headless Chromium from file://: the trajectory page and an
evaluation's per-item page read their script files through one shared loader
(assets/viewer.js). A data file that is gone (a report copied in part, a file deleted or
replaced by something else) is said on the page, naming the file that could not be read,
rather than leaving the page waiting; the files that are there still show."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("plotly")
pytest.importorskip("jinja2")
sync_api = pytest.importorskip("playwright.sync_api")
sys.path.insert(0, str(Path(__file__).parent.parent / "fixtures" / "results"))
from make_results import SPECS, write_run  # noqa: E402

from a2rl.report import build_report  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run"]


@pytest.fixture
def page(tmp_path: Path) -> Any:
    if not Path(CHROMIUM).exists():
        pytest.skip("no /usr/bin/chromium (scripts/ensure-system-deps.sh installs Debian's)")
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        pg = browser.new_page()
        pg.set_default_timeout(60_000)
        yield pg
        browser.close()


def _site(tmp_path: Path) -> tuple[Path, Path]:
    """A report of one run with a 250-item evaluation (three page files); its run folder."""
    run_dir = write_run(tmp_path / "runs", SPECS[0])
    details = run_dir / "evals" / "baseline" / "details.jsonl"
    details.parent.mkdir(parents=True)
    details.write_text("".join(json.dumps({"id": f"item-{i}", "prompt": f"What is {i} + {i}?",
                                           "completion": str(2 * i), "score": 1.0}) + "\n"
                               for i in range(250)))
    out = tmp_path / "report"
    build_report([tmp_path / "runs"], out)
    return out, next(p for p in (out / "runs").iterdir() if p.is_dir())


def test_both_viewers_load_through_the_shared_loader(tmp_path: Path, page: Any) -> None:
    """Each viewer reads viewer.js, then its own script, then only the data files it shows."""
    out, folder = _site(tmp_path)
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url.rpartition("/report/")[2]))
    page.goto((folder / "evals" / "baseline.html").as_uri())
    page.wait_for_selector(".eval-item")
    assert page.text_content("#eval-where") == "items 1–100 of 250"
    page.click("#eval-next")
    sync_api.expect(page.locator("#eval-where")).to_have_text("items 101–200 of 250")
    assert page.locator("#item-100").count() == 1
    evals = f"runs/{folder.name}/evals/baseline"
    assert [u for u in requests if u.endswith(".js")] == [
        "assets/viewer.js", "assets/evaluation.js", f"{evals}/page-0.js", f"{evals}/page-1.js"]
    requests.clear()
    page.goto((folder / "trajectory.html").as_uri())
    page.wait_for_selector("#turn-0")
    assert [u for u in requests if u.endswith(".js")] == [
        "assets/viewer.js", "assets/trajectory.js", f"runs/{folder.name}/trajectory/chunk-0.js"]
    assert (out / "assets" / "viewer.js").is_file()


def test_a_missing_data_file_is_named_on_the_page(tmp_path: Path, page: Any) -> None:
    _, folder = _site(tmp_path)
    # a page file replaced by a script that registers nothing, a chunk file deleted
    (folder / "evals" / "baseline" / "page-1.js").write_text("var unrelated = 1;\n")
    (folder / "trajectory" / "chunk-0.js").unlink()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto((folder / "evals" / "baseline.html").as_uri())
    page.wait_for_selector(".eval-item")
    page.click("#eval-next")
    sync_api.expect(page.locator("#eval-where")).to_have_text("page 1 could not be read")
    assert page.locator(".eval-item").count() == 100  # the first page stays shown
    page.fill("#eval-q", "What is 249")
    page.click("#eval-filter button")
    sync_api.expect(page.locator("#eval-where")).to_have_text("page 1 could not be read")
    page.goto((folder / "trajectory.html").as_uri())
    page.fill("#traj-q", "turn")
    page.click("#traj-search button")
    sync_api.expect(page.locator("#traj-search-status")).to_have_text("chunk 0 could not be read")
    assert page.locator("#traj-timeline .item").count() == 0
    sync_api.expect(page.locator("#traj-timeline section.chunk.pending")).to_have_text(
        "chunk 0 could not be read")
