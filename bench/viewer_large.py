"""Benchmark: the trajectory viewer on a 12-hour run with a 100 MB transcript: how long
`a2rl report` takes to build it and how long Chromium takes to open the page from file://
(target: the first turns on screen within 3 s; the page must not grow with the transcript).

    python bench/viewer_large.py [--mb 100] [--hours 12] [--dir /tmp/a2rl-viewer-large] [--keep]

The run is a Claude Code stream-json transcript (assistant turns with a message and a Bash
call, each answered by a tool result: training logs, listings, tracebacks, one output in ten
far over the event cap) of `--mb` megabytes whose lines are spread over `--hours`
(transcript.times), with the first prompt in agent/prompt.md and a submission every hour. The
launcher's own `write_events` parses it into agent/events.jsonl, as after a real run, and
`a2rl report` builds the site in its own process. The page is then opened in headless
Chromium (/usr/bin/chromium) three times, fresh each time: the figures are the medians of the
time to the load event, to the first contentful paint and to the first turn drawn (all from
the navigation's start, the page's own clock), the time to jump to the last turn, and the
time a search takes (it reads every chunk).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "results"))
from _common import load, result  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run"]
OPEN_S = 3.0
MODEL = "claude-sonnet-4-5-20250929"


def _output(i: int) -> tuple[str, bool]:
    """Tool output of turn `i` and whether it failed: a training log most of the time, a
    traceback every 13th turn, a huge dump every 10th."""
    if i % 13 == 0:
        return ("Traceback (most recent call last):\n"
                + "".join(f'  File "code/train.py", line {k}, in step_{k}\n    loss = model(batch)\n'
                          for k in range(40))
                + f"RuntimeError: CUDA out of memory at step {i}\n", True)
    lines = 900 if i % 10 == 0 else 90
    return ("".join(f"step {i}.{k} loss {1.0 / (k + 1):.5f} lr 3e-05 grad_norm {k % 7}.25 "
                    f"tokens/s {900 + k}\n" for k in range(lines)), False)


def write_transcript(agent_dir: Path, mb: float, hours: float) -> int:
    """A stream-json transcript of about `mb` MB over `hours`; returns the number of turns."""
    target = int(mb * 1e6)
    lines: list[str] = [json.dumps({"type": "system", "subtype": "init", "cwd": "/home/agent/ws",
                                    "model": MODEL, "session_id": "bench"})]
    size, i = len(lines[0]), 0
    while size < target:
        text = (f"Turn {i}: the last run's loss plateaued; I will lower the learning rate and "
                "train again on the curated split. " * 3)
        call = {"type": "assistant", "message": {
            "id": f"msg_{i:06d}", "model": MODEL, "role": "assistant", "type": "message",
            "content": [{"type": "text", "text": text},
                        {"type": "tool_use", "id": f"toolu_{i:06d}", "name": "Bash",
                         "input": {"command": f"python code/train.py --step {i} --lr 3e-5"}}],
            "usage": {"input_tokens": 3000 + i, "output_tokens": 120}}, "session_id": "bench"}
        out, failed = _output(i)
        reply = {"type": "user", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": f"toolu_{i:06d}", "content": out,
             "is_error": failed}]}, "session_id": "bench"}
        for obj in (call, reply):
            lines.append(json.dumps(obj))
            size += len(lines[-1]) + 1
        i += 1
    (agent_dir / "transcript.log").write_text("\n".join(lines) + "\n")
    span = hours * 3600 - 600
    (agent_dir / "transcript.times").write_text(
        "".join(f"{k * span / len(lines):.3f}\n" for k in range(len(lines))))
    (agent_dir / "prompt.md").write_text("# Task\n\nTrain the model in ./model.\n" * 40)
    return i


def make_run(root: Path, mb: float, hours: float) -> tuple[Path, int]:
    from make_results import SPECS, write_run

    from a2rl.agents import get_agent

    spec = dataclasses.replace(SPECS[2], run_id="20260301-110000-cc-large", budget_s=hours * 3600,
                               subs=[(3600.0 * h - 300, 10.0 + h, "SFT-only", ["SFT"])
                                     for h in range(1, int(hours) + 1)])
    run_dir = write_run(root / "runs", spec)
    turns = write_transcript(run_dir / "agent", mb, hours)
    started = time.monotonic()
    n_events = get_agent("claude-code").write_events(run_dir / "agent")  # type: ignore[attr-defined]
    print(f"parsed into {n_events} events in {time.monotonic() - started:.1f} s")
    return run_dir, turns


def open_page(page_path: Path, last_turn: int) -> dict[str, float]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page()
        page.set_default_timeout(120_000)
        page.goto(page_path.as_uri(), wait_until="load")
        page.wait_for_selector("#turn-0")
        times = page.evaluate("""() => {
            const nav = performance.getEntriesByType('navigation')[0];
            const fcp = performance.getEntriesByName('first-contentful-paint')[0];
            return {load: nav.loadEventEnd, fcp: fcp ? fcp.startTime : -1,
                    first_turn: performance.now()};
        }""")
        started = time.monotonic()
        page.evaluate(f"location.hash = '#turn-{last_turn}'")
        page.wait_for_selector(f"#turn-{last_turn}.target")
        times["jump_last"] = (time.monotonic() - started) * 1000
        started = time.monotonic()  # a search reads every chunk (drawing none)
        page.fill("#traj-q", f"--step {last_turn} ")
        page.click("#traj-search button")
        page.wait_for_selector("#traj-results li")
        times["search"] = (time.monotonic() - started) * 1000
        browser.close()
    return {k: v / 1000 for k, v in times.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mb", type=float, default=100.0)
    ap.add_argument("--hours", type=float, default=12.0)
    ap.add_argument("--dir", type=Path, default=Path("/tmp/a2rl-viewer-large"))
    ap.add_argument("--opens", type=int, default=3)
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    if not Path(CHROMIUM).exists():
        sys.exit(f"no {CHROMIUM}: scripts/ensure-system-deps.sh installs Debian's")
    shutil.rmtree(args.dir, ignore_errors=True)
    args.dir.mkdir(parents=True)
    try:
        run_dir, turns = make_run(args.dir, args.mb, args.hours)
        transcript_mb = (run_dir / "agent" / "transcript.log").stat().st_size / 1e6
        events_mb = (run_dir / "agent" / "events.jsonl").stat().st_size / 1e6
        exe = Path(sys.executable).with_name("a2rl")
        cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "a2rl.cli"]
        started = time.monotonic()
        subprocess.run(cmd + ["report", str(args.dir / "runs"), "-o", str(args.dir / "report")],
                       check=True, stdout=subprocess.DEVNULL)
        build_s = time.monotonic() - started
        page_path = next((args.dir / "report").glob("runs/*/trajectory.html"))
        chunks = list(page_path.parent.glob("trajectory/chunk-*.js"))
        data_mb = sum(c.stat().st_size for c in chunks) / 1e6
        opens = [open_page(page_path, turns - 1) for _ in range(args.opens)]
        med = {k: statistics.median(o[k] for o in opens) for k in opens[0]}
        print(f"{transcript_mb:.1f} MB transcript over {args.hours:g} h: {turns} turns, "
              f"{events_mb:.1f} MB of events; report built in {build_s:.1f} s; page "
              f"{page_path.stat().st_size / 1e3:.1f} kB + {len(chunks)} chunks "
              f"({data_mb:.1f} MB, one read at first); opened (median of {len(opens)}): load "
              f"event {med['load']:.2f} s, first contentful paint {med['fcp']:.2f} s, first "
              f"turn drawn {med['first_turn']:.2f} s, jump to the last turn "
              f"{med['jump_last']:.2f} s, search of the whole run {med['search']:.2f} s "
              f"({load()})")
        note = f"{transcript_mb:.0f} MB transcript, {turns} turns over {args.hours:g} h"
        result("viewer_open_first_turn_s", med["first_turn"], "s", target=f"<= {OPEN_S}",
               ok=med["first_turn"] <= OPEN_S, note=note)
        result("viewer_load_event_s", med["load"], "s", note=note)
        result("viewer_jump_to_last_turn_s", med["jump_last"], "s", note=note)
        result("viewer_search_all_s", med["search"], "s", note=note)
        result("viewer_report_build_s", build_s, "s", note=note)
    finally:
        if not args.keep:
            shutil.rmtree(args.dir, ignore_errors=True)


if __name__ == "__main__":
    main()
