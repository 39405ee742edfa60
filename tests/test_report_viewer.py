"""The report's trajectory viewer (runs/<run>/trajectory.html) in headless Chromium from
file://: runs whose transcript is a real stream of each supported CLI (tests/fixtures/streams,
parsed by the CLI's own parser as the launcher does) and an imported PostTrainBench run. The
page must show the parser's number of turns and tool calls, raise no console error, request
nothing outside the report folder, find a known command by search, and land a finding's link
on the turn that holds its evidence; the same after the folder is copied elsewhere. A
synthetic 12-hour run of 5,000 turns checks that the transcript is paged (one chunk loaded at
first, the others on demand)."""

from __future__ import annotations

import dataclasses
import html as html_lib
import re
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("plotly")
pytest.importorskip("jinja2")
sync_api = pytest.importorskip("playwright.sync_api")
sys.path.insert(0, str(Path(__file__).parent / "fixtures" / "results"))
from make_results import SPECS, import_ptb, write_run  # noqa: E402

from a2rl.agents import get_agent  # noqa: E402
from a2rl.records import AgentEvent, Finding, RunAnalysis  # noqa: E402
from a2rl.report import build_report  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run"]
STREAMS = Path(__file__).parent / "fixtures" / "streams"
CLIS = [("claude-code", "claude_code/v2.1_background.jsonl"),
        ("codex", "codex/exec_current.jsonl"),
        ("gemini", "gemini/two_rounds.jsonl"),
        ("opencode", "opencode/run_basic.jsonl"),
        ("openhands", "openhands/pretty_v1_8.log")]


def _events(agent: str, rel: str) -> list[AgentEvent]:
    lines = (STREAMS / rel).read_text().split("\n")[:-1]
    launcher: Any = get_agent(agent)  # a CLI launcher: the base Agent has no parser
    return launcher.parse_transcript([(float(i), ln) for i, ln in enumerate(lines)]).events


def _unique_command(events: list[AgentEvent]) -> tuple[str, int]:
    """A command line and the first turn whose events hold it (a finding's link goes there)."""
    for e in events:
        if e.kind != "command" or not e.command or len(e.command) < 4:
            continue
        holders = {x.turn for x in events
                   if any(e.command in (v or "") for v in (x.command, x.path, x.text))}
        return e.command, min(holders)
    raise AssertionError("the fixture has no command to look for")

PHASED: set[str] = set()
"""Runs whose analysis gives each turn a phase."""


@dataclasses.dataclass
class Case:
    page: str
    turns: int
    tools: int
    command: str | None
    command_turn: int | None


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Case]]:
    root = tmp_path_factory.mktemp("viewer")
    runs = root / "runs"
    cases: dict[str, Case] = {}
    for i, (agent, rel) in enumerate(CLIS):
        spec = dataclasses.replace(SPECS[0], run_id=f"20260301-0{i}0000-{agent}", agent=agent)
        run_dir = write_run(runs, spec)
        events = _events(agent, rel)
        (run_dir / "agent" / "transcript.log").write_text((STREAMS / rel).read_text())
        (run_dir / "agent" / "events.jsonl").write_text(
            "".join(e.model_dump_json() + "\n" for e in events))
        command, turn = _unique_command(events)
        analysis = RunAnalysis.model_validate_json((run_dir / "analysis.json").read_text())
        analysis.findings = [Finding(kind="harness-probe", severity="warning",
                                     message="looked at harness state",
                                     evidence=[f"transcript:7: {command}"])]
        turns = sorted({e.turn for e in events})
        analysis.turns = [{"turn": n, "start_s": 0.0, "phase": "exploration" if k < 2 else "SFT"}
                          for k, n in enumerate(turns)]
        (run_dir / "analysis.json").write_text(analysis.model_dump_json())
        PHASED.add(spec.run_id)
        cases[spec.run_id] = Case(f"runs/{spec.run_id}", len({e.turn for e in events}),
                                  sum(e.kind == "tool_call" for e in events), command, turn)
    ptb = import_ptb(runs)
    ptb_events = [AgentEvent.model_validate_json(ln) for ln in
                  (ptb / "agent" / "events.jsonl").read_text().splitlines()]
    assert ptb_events, "the imported fixture has a parsed transcript"
    ptb_command, ptb_turn = _unique_command(ptb_events)
    out = root / "report"
    build_report([runs], out)
    pages = {p.parent.name: p for p in out.glob("runs/*/trajectory.html")}
    ptb_id = next(k for k in pages if k not in cases)
    cases[ptb_id] = Case(f"runs/{ptb_id}", len({e.turn for e in ptb_events}),
                         sum(e.kind == "tool_call" for e in ptb_events), ptb_command, None)
    assert set(pages) == set(cases)
    return out, cases


@pytest.fixture(scope="module")
def browser() -> Any:
    if not Path(CHROMIUM).exists():
        pytest.skip("no /usr/bin/chromium (scripts/ensure-system-deps.sh installs Debian's)")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield b
        b.close()


class Watched:
    """A page with every console error, page error and request outside `folder` recorded."""

    def __init__(self, browser: Any, folder: Path) -> None:
        self.page = browser.new_page()
        self.page.set_default_timeout(60_000)
        self.errors: list[str] = []
        self.outside: list[str] = []
        self.requests: list[str] = []
        prefix = folder.resolve().as_uri() + "/"

        def console(m: Any) -> None:
            if m.type == "error":
                self.errors.append(m.text)

        self.page.on("console", console)
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))

        def req(r: Any) -> None:
            self.requests.append(r.url)
            if not r.url.startswith(prefix):
                self.outside.append(r.url)

        self.page.on("request", req)

    def check(self) -> None:
        assert not self.errors, self.errors
        assert not self.outside, self.outside


def _resolve(page: Path, href: str) -> str:
    """The file:// URL a relative link of `page` points to."""
    from urllib.parse import urljoin

    return urljoin(page.as_uri(), html_lib.unescape(href))


def _check_site(browser: Any, out: Path, cases: dict[str, Case]) -> None:
    for run_id, case in cases.items():
        w = Watched(browser, out)
        page = w.page
        page.goto((out / case.page / "trajectory.html").as_uri())
        page.wait_for_selector(".item-turn")
        assert page.text_content("#n-turns") == str(case.turns)
        assert page.text_content("#n-tools") == str(case.tools)
        page.evaluate("A2RLTrajectory.loadAll()")
        page.wait_for_function("document.querySelectorAll('.chunk.pending').length === 0")
        assert page.locator(".item-turn").count() == case.turns, run_id
        assert page.locator(".ev-tool_call").count() == case.tools, run_id
        # search finds the command
        assert case.command
        page.fill("#traj-q", case.command)
        page.click("#traj-search button")
        page.wait_for_selector("#traj-results li")
        assert case.command in " ".join(page.locator("#traj-results li").all_text_contents())
        # The finding's link on the run page lands on the turn holding its evidence; the
        # links are read from the page's HTML and opened, which spares loading the run page
        # (and its 3.5 MB of plotly.js) in the browser for every case.
        run_page = out / f"{case.page}.html"
        html = run_page.read_text()
        links = re.findall(r'<a class="evidence" href="([^"]+)"', html)
        if case.command_turn is not None:
            assert len(links) == 1, run_id
            assert links[0].endswith(f"#turn-{case.command_turn}")
            page.goto(_resolve(run_page, links[0]))
            page.wait_for_selector(".item.target")
            assert page.get_attribute(".item.target", "id") == f"turn-{case.command_turn}"
            assert case.command in (page.text_content(".item.target") or "")
        # each phase on the run page links to its first turn, which carries the phase label
        phases = re.findall(r'<a href="([^"]+#turn-[0-9]+)">(exploration|SFT)</a>', html)
        if run_id in PHASED:
            assert [p for _, p in phases] == ["exploration", "SFT"], run_id
            page.goto(_resolve(run_page, phases[1][0]))
            page.wait_for_selector(".item.target")
            assert page.text_content(".item.target .phase") == "SFT"
        # a submission's route label opens the viewer at that submission
        routes = re.findall(r'href="([^"]+trajectory\.html#t=[^"]+)"', html)
        assert routes, run_id
        page.goto(_resolve(run_page, routes[0]))
        page.wait_for_selector(".item.target.item-sub")
        w.check()
        page.close()


def test_viewer_on_real_cli_streams_and_an_imported_run(
        site: tuple[Path, dict[str, Case]], browser: Any) -> None:
    out, cases = site
    _check_site(browser, out, cases)


def test_viewer_after_the_folder_moves(site: tuple[Path, dict[str, Case]], browser: Any,
                                       tmp_path: Path) -> None:
    out, cases = site
    moved = tmp_path / "elsewhere" / "report"
    shutil.copytree(out, moved)
    _check_site(browser, moved, cases)


def test_agent_text_stays_text(tmp_path: Path, browser: Any) -> None:
    """Markup in a message, a command and a path is shown as its characters: no element made."""
    runs = tmp_path / "runs"
    run_dir = write_run(runs, SPECS[0])
    hostile = '<img src=x id=pwn><script>document.title="pwned"</script>'
    events = [AgentEvent(kind="turn", turn=0, t_s=1.0),
              AgentEvent(kind="message", turn=0, t_s=1.0, text=hostile + "\u2028</script>"),
              AgentEvent(kind="command", turn=0, t_s=2.0, command=f"echo '{hostile}'",
                         exit_code=3),
              AgentEvent(kind="file_edit", turn=0, t_s=3.0, path='"><b id=pwn2>x')]
    (run_dir / "agent" / "events.jsonl").write_text(
        "".join(e.model_dump_json() + "\n" for e in events))
    out = tmp_path / "report"
    build_report([runs], out)
    page_path = next(out.glob("runs/*/trajectory.html"))
    w = Watched(browser, out)
    w.page.goto(page_path.as_uri())
    w.page.wait_for_selector("#turn-0")
    assert w.page.locator("#pwn, #pwn2").count() == 0
    assert "pwned" not in w.page.title()
    assert hostile in (w.page.text_content("#turn-0") or "")
    # the failed command is marked
    assert w.page.locator("#turn-0.err .ev-command.err .badge.bad").count() == 1
    w.check()
    w.page.close()


def test_a_12_hour_run_of_5000_turns_is_paged(tmp_path: Path, browser: Any) -> None:
    runs = tmp_path / "runs"
    spec = dataclasses.replace(SPECS[0], budget_s=43_200.0,
                               subs=[(3600.0 * h, 10.0 + h, "SFT-only", ["SFT"])
                                     for h in range(1, 12)])
    run_dir = write_run(runs, spec)
    n = 5000
    lines = []
    for i in range(n):
        t = i * 43_000 / n
        for e in (AgentEvent(kind="turn", turn=i, t_s=t),
                  AgentEvent(kind="message", turn=i, t_s=t, text=f"step {i}: " + "x" * 200),
                  AgentEvent(kind="tool_call", turn=i, t_s=t + 1, name="Bash",
                             command=f"python code/train.py --step {i}"),
                  AgentEvent(kind="command", turn=i, t_s=t + 1, end_s=t + 5,
                             command=f"python code/train.py --step {i}",
                             exit_code=1 if i % 97 == 0 else 0)):
            lines.append(e.model_dump_json() + "\n")
    (run_dir / "agent" / "events.jsonl").write_text("".join(lines))
    out = tmp_path / "report"
    started = time.monotonic()
    build_report([runs], out)
    build_s = time.monotonic() - started
    page_path = next(out.glob("runs/*/trajectory.html"))
    chunks = sorted(page_path.parent.glob("trajectory/chunk-*.js"))
    assert len(chunks) == n // 200
    w = Watched(browser, out)
    started = time.monotonic()
    w.page.goto(page_path.as_uri())
    w.page.wait_for_selector("#turn-199")
    load_s = time.monotonic() - started
    # only the first chunk was read; the rest waits for a scroll, an anchor or a search
    assert sum("chunk-" in u for u in w.requests) == 1
    assert w.page.locator(".item-turn").count() == 200
    assert w.page.text_content("#n-turns") == str(n)
    w.page.goto(page_path.as_uri() + "#turn-4321")
    w.page.wait_for_selector("#turn-4321.target")
    w.page.goto(page_path.as_uri() + f"#t={4321 * 43_000 / n:.2f}")
    w.page.wait_for_selector("#turn-4321.target")
    w.check()
    w.page.close()
    print(f"5000 turns over 12 h: report built in {build_s:.1f} s, viewer's first chunk "
          f"shown {load_s:.2f} s after navigation, {len(chunks)} chunks")


def test_code_snapshots_show_the_diff_between_consecutive_ones(tmp_path: Path,
                                                               browser: Any) -> None:
    from a2rl.recording import CodeRecorder

    if shutil.which("git") is None:
        pytest.skip("no git")
    runs = tmp_path / "runs"
    run_dir = write_run(runs, SPECS[0])
    code = run_dir / "workspace" / "code" / "train.py"
    recorder = CodeRecorder(run_dir, run_dir / "workspace")
    code.write_text("lr = 1e-4\nepochs = 1\n")
    recorder.snapshot("s0001", 600.0)
    code.write_text("lr = 3e-5\nepochs = 1\n")
    recorder.snapshot("s0002", 1500.0)
    out = tmp_path / "report"
    build_report([runs], out)
    w = Watched(browser, out)
    w.page.goto(next(out.glob("runs/*/trajectory.html")).as_uri())
    w.page.wait_for_selector(".item-snap")
    diffs = w.page.locator(".item-snap .diff pre").all_text_contents()
    assert len(diffs) == 2
    assert "-lr = 1e-4" in diffs[1] and "+lr = 3e-5" in diffs[1]
    # the budget's end closes the timeline
    assert w.page.locator("#traj-timeline .item").last.get_attribute("class") == "item item-budget"
    w.check()
    w.page.close()


def test_an_agent_without_a_parsed_transcript_shows_its_own_log(tmp_path: Path,
                                                                  browser: Any) -> None:
    """The reference agent and `cmd:` agents print a plain log: it is on the timeline, each
    block at the time its lines were recorded, a pause starting a new block, agent text as
    text, and search finds a line."""
    runs = tmp_path / "runs"
    run_dir = write_run(runs, SPECS[0])
    (run_dir / "agent" / "events.jsonl").unlink(missing_ok=True)
    lines = ["[agent] recipe rft: 1952 train rows", "<b id=pwn>loss 0.48</b>", "",
             "[agent] submitted output/rft/c1"]
    (run_dir / "agent" / "transcript.log").write_text("\n".join(lines) + "\n")
    (run_dir / "agent" / "transcript.times").write_text("4.0\n4.5\n5.0\n300.0\n")
    out = tmp_path / "report"
    build_report([runs], out)
    w = Watched(browser, out)
    w.page.goto(next(out.glob("runs/*/trajectory.html")).as_uri())
    w.page.wait_for_selector(".item-log")
    blocks = w.page.locator(".item-log").all_text_contents()
    assert len(blocks) == 2, blocks
    assert "0:00:04" in blocks[0] and "2 line(s)" in blocks[0] and "<b id=pwn>" in blocks[0]
    assert "0:05:00" in blocks[1] and "submitted output/rft/c1" in blocks[1]
    assert w.page.locator("#pwn").count() == 0
    assert "3 lines of the agent's own log" in (w.page.text_content("#traj-counts") or "")
    w.page.fill("#traj-q", "submitted output")
    w.page.click("#traj-search button")
    w.page.wait_for_selector("#traj-results li")
    w.check()
    w.page.close()
