"""The report's trajectory viewer (runs/<run>/trajectory.html) in headless Chromium from
file://: runs whose transcript is a real stream of each supported CLI (tests/fixtures/streams,
with per-line times and the first prompt, turned into agent/events.jsonl by the launcher's own
`write_events`) and an imported PostTrainBench run. The page must show the parser's number of
turns and tool calls, the first prompt, every tool output (errors marked) and the submissions
among the turns in time order, raise no console error, request nothing outside the report
folder, find a known command by search, and land a finding's link on the turn that holds its
evidence; the same after the folder is copied elsewhere. A synthetic 12-hour run of 5,000
turns checks that the transcript is paged (one chunk loaded at first, the others on demand).
Also: coloured diffs of the agent's code with checkpoints and harness files apart, a `cmd:`
agent's log at its lines' times, each evaluation's per-item page, and hostile agent text."""

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
sys.path.insert(0, str(Path(__file__).parent.parent / "fixtures" / "results"))
from make_results import SPECS, import_ptb, write_run  # noqa: E402

from a2rl.agents import get_agent  # noqa: E402
from a2rl.report import build_report  # noqa: E402
from a2rl.schema import AgentEvent, Finding, RunAnalysis  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run"]
STREAMS = Path(__file__).parent.parent / "fixtures" / "streams"
CLIS = [("claude-code", "claude_code/v2.1_background.jsonl"),
        ("codex", "codex/exec_current.jsonl"),
        ("gemini", "gemini/two_rounds.jsonl"),
        ("opencode", "opencode/run_basic.jsonl"),
        ("openhands", "openhands/pretty_v1_8.log")]


TRANSCRIPT_S = 1800.0
"""Each fixture stream's lines are spread over this many seconds (transcript.times)."""


def _prompt(agent: str) -> str:
    return (f"# Task for {agent}\n\nTrain the model in ./model to do arithmetic.\n"
            + "".join(f"- rule {k}: submit through the grader\n" for k in range(8)))


def _events(agent: str, rel: str, agent_dir: Path) -> list[AgentEvent]:
    """The stream as the launcher leaves it: transcript.log with its lines' times and the first
    prompt, parsed into events.jsonl by the launcher's own write_events."""
    text = (STREAMS / rel).read_text()
    n = len(text.split("\n")[:-1])
    (agent_dir / "transcript.log").write_text(text)
    (agent_dir / "transcript.times").write_text(
        "".join(f"{i * TRANSCRIPT_S / n:.3f}\n" for i in range(n)))
    (agent_dir / "prompt.md").write_text(_prompt(agent))
    launcher: Any = get_agent(agent)  # a CLI launcher: the base Agent has no parser
    launcher.write_events(agent_dir)
    return [AgentEvent.model_validate_json(ln)
            for ln in (agent_dir / "events.jsonl").read_text().splitlines()]


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
    events: list[AgentEvent] = dataclasses.field(default_factory=list)
    prompt: str | None = None


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Case]]:
    root = tmp_path_factory.mktemp("viewer")
    runs = root / "runs"
    cases: dict[str, Case] = {}
    for i, (agent, rel) in enumerate(CLIS):
        spec = dataclasses.replace(SPECS[0], run_id=f"20260301-0{i}0000-{agent}", agent=agent)
        run_dir = write_run(runs, spec)
        events = _events(agent, rel, run_dir / "agent")
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
                                  sum(e.kind == "tool_call" for e in events), command, turn,
                                  events, _prompt(agent))
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
                         sum(e.kind == "tool_call" for e in ptb_events), ptb_command, None,
                         ptb_events, next(e.text for e in ptb_events if e.kind == "prompt"))
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
        page.evaluate("A2RLTrajectory.drawAll()")
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


def _snippet(text: str) -> str:
    """A line of a tool output to look for on the page (whitespace as the browser keeps it)."""
    return max((ln.strip() for ln in text.splitlines()), key=len)[:60]


@pytest.mark.parametrize("kind", ["claude-code", "codex", "opencode", "imported"])
def test_viewer_shows_the_prompt_every_tool_output_and_submissions_in_time_order(
        site: tuple[Path, dict[str, Case]], browser: Any, kind: str) -> None:
    out, cases = site
    run_id, case = next((k, c) for k, c in cases.items()
                        if k.endswith(kind) or (kind == "imported" and k not in PHASED))
    outputs = [e for e in case.events if e.output is not None and e.output.strip()]
    assert outputs, f"the {kind} fixture has tool outputs"
    w = Watched(browser, out)
    page = w.page
    page.goto((out / case.page / "trajectory.html").as_uri())
    # the first prompt comes first, folded (its first lines shown, the whole on opening)
    first = page.locator("#traj-timeline .item").first
    first.wait_for()
    assert first.get_attribute("class") == "item item-prompt"
    assert case.prompt
    if len(case.prompt.splitlines()) > 6:
        assert page.locator(".item-prompt details").count() == 1
    assert case.prompt.splitlines()[0].strip() in (first.text_content() or "")
    page.evaluate("A2RLTrajectory.drawAll()")
    page.wait_for_function("document.querySelectorAll('.chunk.pending').length === 0")
    # every tool output, once; the failed ones marked
    shown = page.locator(".ev .out")
    assert shown.count() == len([e for e in case.events if e.output is not None]), run_id
    text = page.text_content("#traj-timeline") or ""
    for e in outputs:
        assert _snippet(e.output or "") in text, (run_id, e.output)
    errors = [e for e in outputs if e.is_error]
    assert page.locator(".ev .out-err").count() >= len(errors)
    if errors:
        assert page.locator(".item-turn.err .out-err").count() >= 1
    # one timeline in time order, the submissions among the turns they came between
    order = page.eval_on_selector_all(
        "#traj-timeline .item", "els => els.map(e => [e.className, Number(e.dataset.t)])")
    times = [t for _, t in order]
    assert times == sorted(times), run_id
    kinds = [c.split()[1] for c, _ in order]
    subs = [i for i, k in enumerate(kinds) if k == "item-sub"]
    assert len(subs) == len({s.id for s in _loaded_subs(out, run_id)}) >= 1
    if kind != "imported":  # the fixture's submissions fall inside the transcript's span
        for i in subs:
            assert "item-turn" in kinds[:i] and "item-turn" in kinds[i:], (run_id, kinds)
    w.check()
    page.close()


def _loaded_subs(out: Path, run_id: str) -> list[Any]:
    from a2rl.results import load_runs

    runs, _ = load_runs([out.parent / "runs"])
    return next(r.submissions for r in runs if r.record.run_id == run_id)


def test_agent_text_stays_text(tmp_path: Path, browser: Any) -> None:
    """Markup in a message, a command and a path is shown as its characters: no element made."""
    runs = tmp_path / "runs"
    run_dir = write_run(runs, SPECS[0])
    hostile = '<img src=x id=pwn><script>document.title="pwned"</script>'
    control = "\x1b[31mred\x1b[0m\x00\x07\u2029"
    events = [AgentEvent(kind="prompt", turn=0, t_s=0.0, text=f"<b id=pwn3>{hostile}</b>"),
              AgentEvent(kind="turn", turn=0, t_s=1.0),
              AgentEvent(kind="message", turn=0, t_s=1.0, text=hostile + "\u2028</script>"),
              AgentEvent(kind="tool_call", turn=0, t_s=2.0, name="Bash",
                         output=f"</script><script>document.title='pwned'</script>{control}",
                         is_error=True, extra={"call_id": "c1"}),
              AgentEvent(kind="command", turn=0, t_s=2.0, command=f"echo '{hostile}'",
                         exit_code=3, extra={"call_id": "c1"}),
              AgentEvent(kind="file_edit", turn=0, t_s=3.0, path='"><b id=pwn2>x')]
    (run_dir / "agent" / "events.jsonl").write_text(
        "".join(e.model_dump_json() + "\n" for e in events))
    out = tmp_path / "report"
    build_report([runs], out)
    page_path = next(out.glob("runs/*/trajectory.html"))
    w = Watched(browser, out)
    w.page.goto(page_path.as_uri())
    w.page.wait_for_selector("#turn-0")
    assert w.page.locator("#pwn, #pwn2, #pwn3").count() == 0
    assert "pwned" not in w.page.title()
    assert hostile in (w.page.text_content("#turn-0") or "")
    assert hostile in (w.page.text_content(".item-prompt") or "")
    # the failed command is marked, its output (shown once, under it) too, as text
    assert w.page.locator("#turn-0.err .ev-command.err .badge.bad").count() == 1
    assert w.page.locator("#turn-0 .out").count() == 1
    out_text = w.page.text_content("#turn-0 .ev-command .out-err") or ""
    assert "</script><script>" in out_text and "\x1b[31mred" in out_text
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
    from a2rl.capture import CodeRecorder

    if shutil.which("git") is None:
        pytest.skip("no git")
    runs = tmp_path / "runs"
    run_dir = write_run(runs, SPECS[0])
    code = run_dir / "workspace" / "code" / "train.py"
    recorder = CodeRecorder(run_dir, run_dir / "workspace")
    ws = run_dir / "workspace"
    code.write_text("lr = 1e-4\nepochs = 1\n")
    (ws / "CLAUDE.md").write_text("# instructions a2rl wrote\n")
    recorder.snapshot("s0001", 600.0)
    code.write_text("lr = 3e-5\nepochs = 1\n<b id=pwn>x</b>\n")
    (ws / "CLAUDE.md").write_text("# instructions a2rl wrote\nnotes the agent added\n")
    ckpt = ws / "output" / "v2"
    ckpt.mkdir(parents=True)
    (ckpt / "config.json").write_text('{"model_type": "llama"}\n')
    (ckpt / "model.safetensors").write_bytes(b"\x00weights")
    (ws / "output" / "checkpoint-50").mkdir()
    (ws / "output" / "checkpoint-50" / "trainer_log.txt").write_text("step 50\n")
    (ws / "code" / "config.json").write_text('{"lr": 3e-5}\n')  # the agent's own config
    recorder.snapshot("s0002", 1500.0)
    out = tmp_path / "report"
    build_report([runs], out)
    w = Watched(browser, out)
    w.page.goto(next(out.glob("runs/*/trajectory.html")).as_uri())
    w.page.wait_for_selector(".item-snap")
    diffs = w.page.locator(".item-snap .diff pre").all_text_contents()
    assert len(diffs) == 2
    assert "-lr = 1e-4" in diffs[1] and "+lr = 3e-5" in diffs[1]
    # coloured lines; the agent's code only (its own config.json is code, the checkpoint's
    # is not); checkpoint and harness files listed apart
    second = w.page.locator(".item-snap").nth(1)
    adds = second.locator(".d-add").all_text_contents()
    assert "+lr = 3e-5\n" in adds and "+<b id=pwn>x</b>\n" in adds
    assert second.locator(".d-del").all_text_contents() == ["-lr = 1e-4\n"]
    assert "+++ b/code/config.json" in diffs[1] and '+{"lr": 3e-5}' in diffs[1]
    assert "binary or too large" not in diffs[1]
    for apart in ("CLAUDE.md", "output/v2/config.json", "model.safetensors", "checkpoint-50"):
        assert apart not in diffs[1], apart
    notes = " ".join(second.locator(".note.apart").all_text_contents())
    assert "output/v2/config.json" in notes and "output/v2/model.safetensors" in notes
    assert "output/checkpoint-50/trainer_log.txt" in notes
    assert "files a2rl wrote, not the agent's code (1): CLAUDE.md" in notes
    assert "code changed (2)" in (second.text_content() or "")
    assert w.page.locator("#pwn").count() == 0
    # the budget's end closes the timeline
    assert w.page.locator("#traj-timeline .item").last.get_attribute("class") == "item item-budget"
    w.check()
    w.page.close()


def test_an_agent_without_a_parsed_transcript_shows_its_own_log(tmp_path: Path,
                                                                  browser: Any) -> None:
    """The reference agent and `cmd:` agents print a plain log: it is on the timeline, each
    block at the time its lines were recorded and each line with its time, a pause or a
    submission between two lines starting a new block (so a line written after a submission
    comes after it), agent text as text, and search finds a line. The instructions a2rl wrote
    into the workspace are its first prompt."""
    runs = tmp_path / "runs"
    run_dir = write_run(runs, SPECS[0])  # submissions at 600 s and 1,500 s
    (run_dir / "agent" / "events.jsonl").unlink(missing_ok=True)
    (run_dir / "workspace" / "instructions.md").write_text(
        "# Your task\n<i id=pwn2>train</i> the model\n")
    lines = ["[agent] recipe rft: 1952 train rows", "<b id=pwn>loss 0.48</b>", "",
             "[agent] submitted output/rft/c1", "[agent] waiting for the score",
             "[agent] s0001 scored 30.0", "[agent] training round 2"]
    (run_dir / "agent" / "transcript.log").write_text("\n".join(lines) + "\n")
    (run_dir / "agent" / "transcript.times").write_text(
        "4.0\n4.5\n5.0\n300.0\n598.0\n601.5\n603.0\n")
    out = tmp_path / "report"
    build_report([runs], out)
    w = Watched(browser, out)
    w.page.goto(next(out.glob("runs/*/trajectory.html")).as_uri())
    w.page.wait_for_selector(".item-log")
    blocks = w.page.locator(".item-log").all_text_contents()
    assert len(blocks) == 4, blocks
    assert "0:00:04" in blocks[0] and "2 line(s)" in blocks[0] and "<b id=pwn>" in blocks[0]
    assert "0:05:00" in blocks[1] and "submitted output/rft/c1" in blocks[1]
    # each line with its own time; the submission at 600 s between 598 s and 601.5 s
    assert "0:09:58  [agent] waiting for the score" in blocks[2]
    assert "0:10:02  [agent] s0001 scored 30.0" in blocks[3]
    assert "0:10:03  [agent] training round 2" in blocks[3]
    kinds = w.page.eval_on_selector_all("#traj-timeline .item", "els => els.map(e => e.className)")
    kinds = [k.split()[1] for k in kinds]
    assert kinds[:6] == ["item-prompt", "item-log", "item-log", "item-log", "item-sub",
                         "item-log"], kinds
    assert "<i id=pwn2>train</i>" in (w.page.text_content(".item-prompt") or "")
    assert w.page.locator("#pwn, #pwn2").count() == 0
    assert "6 lines of the agent's own log" in (w.page.text_content("#traj-counts") or "")
    w.page.fill("#traj-q", "submitted output")
    w.page.click("#traj-search button")
    w.page.wait_for_selector("#traj-results li")
    w.check()
    w.page.close()


def test_each_evaluation_has_a_paged_per_item_page_and_the_run_page_reads_h_mm_ss(
        tmp_path: Path, browser: Any) -> None:
    """evals/<id>/details.jsonl (a static task's rows and HumanEval's) become per-item pages,
    linked from the run page and from the submission in the viewer; the items are paged (one
    page file read at first), filtered by verdict, and a completion's markup stays text. The
    run page gives times and durations as h:mm:ss, a short phase included."""
    import json

    runs = tmp_path / "runs"
    run_dir = write_run(runs, SPECS[0])  # submissions s0001 at 600 s, s0002 at 1,500 s
    base = run_dir / "evals" / "baseline"
    base.mkdir(parents=True)
    hostile = "</script><img src=x id=pwn>\x1b[1m"
    (base / "details.jsonl").write_text("".join(json.dumps(
        {"id": f"item-{i}", "prompt": f"What is {i} + {i}?\n" * 12,
         "completion": hostile if i == 7 else f"The answer is {2 * i}.",
         "extracted": str(2 * i), "answer": str(2 * i), "score": float(i % 4 != 0)}) + "\n"
        for i in range(250)) + '{"torn": ')
    he = run_dir / "evals" / "s0001"
    he.mkdir(parents=True)
    (he / "details.jsonl").write_text(json.dumps(
        {"task_id": "HumanEval/0", "prompt": "def add(a, b):\n", "completions": ["  return a+b"],
         "status": ["passed"], "n_correct": 1, "score": 1.0}) + "\n")
    # a record the run did not write as a regular file in a plain folder is not published
    secret = tmp_path / "secret.jsonl"
    secret.write_text('{"id": "leaked", "completion": "leaked-secret-7f3"}\n')
    (run_dir / "evals" / "s0002").mkdir()
    (run_dir / "evals" / "s0002" / "details.jsonl").symlink_to(secret)
    (run_dir / "evals" / "linked").symlink_to(he)
    (run_dir / "evals" / "<b>").mkdir()
    (run_dir / "evals" / "<b>" / "details.jsonl").write_text('{"id": "odd"}\n')
    analysis = RunAnalysis.model_validate_json((run_dir / "analysis.json").read_text())
    analysis.commands = [{"argv": "python code/train.py", "start_s": 1.2, "end_s": 4.7,
                          "phase": "SFT", "exit_code": 0}]
    (run_dir / "analysis.json").write_text(analysis.model_dump_json())
    out = tmp_path / "report"
    build_report([runs], out)
    run_page = next(out.glob("runs/*.html"))
    html = run_page.read_text()
    # h:mm:ss on the run page: the phase of 3.5 s, the submissions, the run's duration
    assert re.search(r">SFT</a></td><td>0:00:01</td><td>0:00:05</td><td>0:00:04</td>", html)
    assert "<td>0:10:00</td>" in html and "<td>0:25:00</td>" in html
    assert "<th>elapsed h</th>" not in html and "0.00</td><td>0.00" not in html
    links = re.findall(r'href="([^"]+/evals/[^"]+\.html)">(\w+)</a> \((\d+) item', html)
    assert [(name, n) for _, name, n in links] == [("baseline", "250"), ("s0001", "1")]
    assert not any("leaked-secret-7f3" in f.read_text() for f in out.rglob("*.js"))
    w = Watched(browser, out)
    page = w.page
    page.goto(_resolve(run_page, links[0][0]))
    page.wait_for_selector(".eval-item")
    assert page.locator(".eval-item").count() == 100
    assert sum("page-" in u for u in w.requests) == 1
    assert page.text_content("#eval-where") == "items 1–100 of 250"
    assert page.text_content("#n-items") == "250"
    assert "187 right · 63 wrong" in (page.text_content("#eval-counts") or "")
    item7 = page.locator("#item-7")
    assert item7.get_attribute("class") == "item eval-item right"
    assert hostile in (item7.text_content() or "")
    assert page.locator("#pwn").count() == 0
    assert page.locator("#item-0 .badge.bad").text_content() == "wrong · score 0.0"
    assert page.locator("#item-0 .prompt details").count() == 1  # a long prompt is folded
    page.click("#eval-next")
    page.wait_for_selector("#item-100")
    assert page.text_content("#eval-where") == "items 101–200 of 250"
    page.select_option("#eval-which", "wrong")
    page.click("#eval-filter button")
    page.wait_for_selector("text=(filtered from 250)")
    assert page.locator(".eval-item.wrong").count() == 63
    assert page.locator(".eval-item.right").count() == 0
    # the viewer's submission s0001 links to its evaluation
    page.goto((run_page.parent / run_page.stem / "trajectory.html").as_uri())
    assert "baseline (250 items) · s0001 (1 item)" in (page.text_content("#traj-evals") or "")
    page.evaluate("A2RLTrajectory.drawAll()")
    page.wait_for_selector(".item-sub .eval-link")
    assert page.locator(".item-sub .eval-link").count() == 1  # s0002 has no per-item records
    page.click(".item-sub .eval-link")
    page.wait_for_selector(".eval-item")
    assert page.text_content(".eval-item .head code") == "HumanEval/0"
    assert "return a+b" in (page.text_content(".eval-item .completion") or "")
    w.check()
    page.close()
