"""`a2rl analyze` reads a long run's transcript and event log as streams: what it finds in them
(the scripts a transcript shows being run, the audit's transcript lines, token usage, turns)
equals what the whole text says, and its memory does not grow with their size."""

from __future__ import annotations

import json
import random
import re
import sys
import tracemalloc
from pathlib import Path

import pytest

from a2rl.analysis import analyze_run
from a2rl.analysis._run_evidence import read_agent_log
from a2rl.analysis._transcript_lines import TranscriptLines, executed_scripts
from a2rl.schema import AgentEvent

sys.path.insert(0, str(Path(__file__).parent.parent / "fixtures" / "results"))
from make_results import SPECS, write_run  # noqa: E402

# Hostile line ends: CRLF, lone CR, form feed, NEL, line and paragraph separators, a vertical
# tab, an undecodable byte, blank lines, no newline at the end.
ODD_TEXT = (b"one\r\ntwo\rthree\x0cfour\xc2\x85five\xe2\x80\xa8six\xe2\x80\xa9seven\x0beight\n"
            b"\n\nbad \xff byte\n\x1cgroup\x1dsep\n   \nlast")


def test_transcript_lines_are_the_whole_text_s_lines(tmp_path: Path) -> None:
    path = tmp_path / "transcript.log"
    path.write_bytes(ODD_TEXT)
    assert list(TranscriptLines(path)) == [
        "one", "two", "three", "four", "five", "six", "seven", "eight", "", "", "bad \ufffd byte",
        "", "group", "sep", "   ", "last"]
    assert list(TranscriptLines(tmp_path / "missing.log")) == []


FILES = {p: "" for p in ("code/train.py", "code/rl.py", "code/sft.py", "code/eval.py",
                         "code/gen.py", "code/never.py", "notes.md")}


@pytest.mark.parametrize(("text", "ran"), [
    ("$ python code/train.py --lr 1e-4\n", {"code/train.py"}),
    # a launch goes on past its line: the interpreter, a flag or blank lines before the script
    ("python3.11 -u\n\n   code/sft.py\n", {"code/sft.py"}),
    ("torchrun --nproc_per_node=2\x0crl.py\nok\n", {"code/rl.py"}),
    ("accelerate launch\r\ncode/gen.py", {"code/gen.py"}),
    ("deepspeed\n-x\n\n--y\neval.py\n", {"code/eval.py"}),
    # a word between the launcher and the script ends the launch
    ("python\nnow run code/never.py\n", set()),
    ("python -m pip install x.py\n", set()),
    ("cat code/train.py; python notes.md\n", set()),
])
def test_executed_scripts_streamed(tmp_path: Path, text: str, ran: set[str]) -> None:
    path = tmp_path / "transcript.log"
    path.write_text(text, newline="")
    assert executed_scripts(TranscriptLines(path), FILES) == ran


def test_executed_scripts_match_the_whole_text_on_random_transcripts(tmp_path: Path) -> None:
    """On transcripts made of launch-like words and every kind of whitespace, the streamed
    search finds what one search over the whole text finds."""
    whole_text = re.compile(r"(?:python[\d.]*|accelerate launch|torchrun|deepspeed)\s+"
                            r"(?:-\S+\s+)*(\S+\.py)")
    words = ["python", "python3.10", "torchrun", "accelerate launch", "deepspeed", "-u", "--lr",
             "3e-5", "train.py", "rl.py", "sft.py", "x", "echo", "launch"]
    spaces = [" ", "\n", "\n\n", "\t", "\x0c", " \n ", "\r\n"]
    rng = random.Random(7)
    files = {f"code/{n}": "" for n in ("train.py", "rl.py", "sft.py")}
    for i in range(300):
        text = "".join(rng.choice(words) + rng.choice(spaces) for _ in range(rng.randint(1, 25)))
        path = tmp_path / f"t{i}.log"
        path.write_text(text, newline="")
        names = {Path(m).name for m in whole_text.findall(path.read_text())}
        assert executed_scripts(TranscriptLines(path), files) == \
            {p for p in files if Path(p).name in names}, repr(text)


def _events(run_dir: Path) -> list[dict[str, object]]:
    """A long run's event log in small: turns of a message, a shell call with a large output,
    the command and the turn's usage."""
    out: list[dict[str, object]] = []
    for turn in range(6):
        t = 100.0 * turn + 5
        out += [{"kind": "message", "turn": turn, "t_s": t, "text": "thinking " * 500},
                {"kind": "tool_call", "turn": turn, "t_s": t + 1, "name": "Bash",
                 "output": "loss 0.1\n" * 1500, "output_chars": 90_000, "extra": {"id": str(turn)}},
                {"kind": "command", "turn": turn, "t_s": t + 2, "end_s": t + 50,
                 "command": f"python code/train.py --step {turn}", "exit_code": 0},
                {"kind": "usage", "turn": turn, "t_s": t + 60, "input_tokens": 1000 + turn,
                 "output_tokens": 10 * turn, "cost_usd": 0.25}]
    (run_dir / "agent" / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in out))
    return out


def test_the_event_log_is_read_without_its_bulk(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    (run_dir / "agent").mkdir(parents=True)
    written = _events(run_dir)
    with (run_dir / "agent" / "events.jsonl").open("a") as fh:
        fh.write('{"kind": "usage", "turn": "torn\n')  # a torn last line is skipped
    log = read_agent_log(run_dir)
    assert log is not None and len(log.events) == len(written)
    for ev, raw in zip(log.events, written, strict=True):
        assert ev._asdict() == {"kind": raw["kind"], "turn": raw["turn"], "t_s": raw["t_s"],
                                "end_s": raw.get("end_s"), "name": raw.get("name"),
                                "command": raw.get("command"), "exit_code": raw.get("exit_code"),
                                "path": None}
    assert log.usage == {"input_tokens": 6015.0, "output_tokens": 150.0, "cost_usd": 1.5}
    assert list(log.usage) == ["input_tokens", "output_tokens", "cost_usd"]  # analysis.json's order
    assert read_agent_log(tmp_path) is None


def test_streamed_reading_holds_no_whole_file(tmp_path: Path) -> None:
    """A 4 MB transcript and a 4 MB event log are read with far less memory than either."""
    transcript = tmp_path / "transcript.log"
    with transcript.open("w") as fh:
        for i in range(40_000):
            fh.write(f"step {i} loss {1 / (i + 1):.6f} python code/train.py --lr 3e-5 " + "." * 44 + "\n")
    run_dir = tmp_path / "run"
    (run_dir / "agent").mkdir(parents=True)
    big = AgentEvent(kind="tool_call", turn=0, t_s=0.0, output="x" * 16_000).model_dump_json()
    (run_dir / "agent" / "events.jsonl").write_text((big + "\n") * 250)
    assert transcript.stat().st_size > 4e6 and (run_dir / "agent" / "events.jsonl").stat().st_size > 4e6
    tracemalloc.start()
    try:
        ran = executed_scripts(TranscriptLines(transcript), {"code/train.py": ""})
        lines = sum(1 for _ in TranscriptLines(transcript))
        log = read_agent_log(run_dir)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert ran == {"code/train.py"} and lines == 40_000 and log is not None and len(log.events) == 250
    assert peak < 1e6, peak


def test_analyze_run_reads_the_streams_as_the_whole_text(tmp_path: Path) -> None:
    """A run analyzed end to end: its usage is the sum of the event log's usage events, its
    turns start at each turn's first event, the final iteration names the script the transcript
    ran (over two lines), and the audit quotes the transcript's probe at its line number."""
    spec = SPECS[2]
    run_dir = write_run(tmp_path / "runs", spec)
    events = _events(run_dir)
    (run_dir / "agent" / "transcript.log").write_bytes(
        b"start\r\nplan\x0cthen\n$ python3 -u\n    code/train.py\n\xff\n$ cat ../../ledger.jsonl\n")
    analysis = analyze_run(run_dir, heldout=[])
    usage = [e for e in events if e["kind"] == "usage"]
    assert analysis.usage == {"input_tokens": sum(1000 + t for t in range(6)),
                              "output_tokens": sum(10 * t for t in range(6)), "cost_usd": 1.5}
    assert [(t["turn"], t["start_s"]) for t in analysis.turns] == \
        [(turn, 100.0 * turn + 5) for turn in range(6)] and len(usage) == 6
    assert analysis.iterations[-1].scripts == ["code/train.py"]
    probe = next(f for f in analysis.findings if f.kind == "harness-probe")
    assert probe.evidence == ["transcript:7: $ cat ../../ledger.jsonl"]
    assert json.loads((run_dir / "analysis.json").read_text())["usage"] == analysis.usage
    assert "tokens in/out 6015/150 (all models), cost $1.50" in (run_dir / "summary.md").read_text()
