"""Following a run from the terminal while it goes: `a2rl runs tail` prints a scored submission
before the run ends and then the run's result; `a2rl runs show` of the running run agrees with
its ledger; the run survives a closed pipe on its output (`a2rl run … | head -1`)."""

from __future__ import annotations

import os
import queue
import shlex
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from test_integration import needs_bwrap

from a2rl.schema import current_submissions, load_run, write_json
from conftest import TINY_TASK

SRC = Path(__file__).resolve().parent.parent.parent / "src"
# Copies the base model with one file changed (so the grader evaluates it: `scored`), submits
# it, prints a line, then waits for the test's go-ahead file in its workspace (at most 5 min).
AGENT = ("cmd:cp -r \"$MODEL_PATH\" output/v1 && chmod -R u+w output/v1 && "
         "echo >> output/v1/config.json && "
         "curl -s -X POST \"$A2RL_GRADER_URL/submit\" -H \"Authorization: Bearer $A2RL_TOKEN\" "
         "-H 'Content-Type: application/json' -d '{\"model_path\": \"output/v1\"}' && "
         "echo submitted-and-waiting && "
         "for i in $(seq 600); do [ -e go ] && break; sleep 0.5; done")


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    env["PYTHONPATH"] = str(SRC)
    return env


def _a2rl(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "a2rl.cli", *args], capture_output=True,
                          text=True, env=_env(), timeout=120)


def _task_opts() -> list[str]:
    return [f"--task-opt={k}={v}" for k, v in TINY_TASK.items()]


def _lines(proc: subprocess.Popen[str]) -> queue.Queue[str | None]:
    """The process's stdout lines as they come (None at its end)."""
    out: queue.Queue[str | None] = queue.Queue()

    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            out.put(line)
        out.put(None)

    threading.Thread(target=pump, daemon=True).start()
    return out


@needs_bwrap
def test_tail_shows_a_scored_submission_while_the_run_goes_piped_into_head(tmp_path: Path,
                                                            tiny_model: Path) -> None:
    runs = tmp_path / "runs"
    # the harness in its own process, as `a2rl run` (the tail tells a live harness by it),
    # its output into `head -1`: the pipe closes after the first line, the run goes on
    cmd = shlex.join([sys.executable, "-m", "a2rl.cli", "run", "--agent", AGENT, "--model",
                      str(tiny_model), *_task_opts(), "--budget", "15m", "--grace", "2",
                      "--runs-dir", str(runs)])
    errors = tmp_path / "harness.err"
    with errors.open("w") as err:
        harness = subprocess.Popen(["bash", "-c", f"{cmd} | head -1"], stdout=subprocess.PIPE,
                                   stderr=err, text=True, env=_env())
    deadline = time.monotonic() + 600  # a loaded machine may be slow; nothing waits on a timer
    while not list(runs.glob("arith/*/run.json")) and time.monotonic() < deadline:
        time.sleep(0.2)
    [run_json] = runs.glob("arith/*/run.json")
    run_dir = run_json.parent
    tail = subprocess.Popen([sys.executable, "-m", "a2rl.cli", "runs", "tail", run_dir.name,
                             "--runs-dir", str(runs), "--every", "0.3"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env())
    lines = _lines(tail)
    seen: list[str] = []
    status_then = shown = None
    try:
        while time.monotonic() < deadline:
            try:
                line = lines.get(timeout=1)
            except queue.Empty:
                continue
            assert line is not None, ("tail ended early", seen, tail.stderr and tail.stderr.read())
            seen.append(line)
            if "s0001 scored" in line:
                status_then = load_run(run_dir).status
                shown = _a2rl("runs", "show", str(run_dir))
                listed = _a2rl("runs", "list", "--runs-dir", str(runs))
                ledger = current_submissions(run_dir / "ledger.jsonl")
                break
        assert status_then == "running", seen
        # runs show of the running run: the ledger's submission and best, the agent's time
        assert shown is not None and shown.returncode == 0, shown
        [sub] = ledger
        assert sub.status == "scored" and sub.score is not None
        assert f"{sub.score:.2f} ({sub.id})" in shown.stdout, shown.stdout
        assert "no valid submission" not in shown.stdout and "so far" in shown.stdout
        assert "agent ran 0 s" not in shown.stdout
        row = next(r for r in listed.stdout.splitlines() if run_dir.name in r)
        assert f"{sub.score:.2f}" in row and "running" in row, listed.stdout
        # the tail's own line carries the interval and whether the gain is beyond noise
        [scored] = [x for x in seen if "s0001 scored" in x]
        assert f"{sub.score:.2f}" in scored and f"[{sub.ci_low:.2f}, {sub.ci_high:.2f}]" in scored
        assert any("agent started" in x for x in seen) and any("exec" in x for x in seen), seen
        assert any("submitted-and-waiting" in x or "curl" in x for x in seen), seen
    finally:
        (run_dir / "workspace" / "go").touch()
    # once the run is closed the tail prints its result and ends
    rest = []
    while (line := lines.get(timeout=600)) is not None:
        rest.append(line)
    assert tail.wait(timeout=60) == 0
    printed, _ = harness.communicate(timeout=600)
    rec = load_run(run_dir)
    assert rec.status == "finished" and rec.exit_reason == "agent_exited", (rec, errors.read_text())
    assert len(printed.splitlines()) == 1, printed
    assert "SystemExit" not in errors.read_text() and "BrokenPipe" not in errors.read_text()
    assert any(f"run {rec.run_id} finished" in x and f"best {sub.score:.2f}" in x
               for x in rest), rest


def test_tail_of_a_closed_run_prints_its_history_then_its_result(tmp_path: Path) -> None:
    """A recorded run (written here, shaped like a real one, agent text hostile): the tail
    prints its submissions and result and ends; no escape sequence reaches the terminal."""
    sys.path.insert(0, str(Path(__file__).parent.parent / "fixtures" / "results"))
    from make_results import make_results

    make_results(tmp_path, imported=False)
    run_dir = sorted((tmp_path / "runs" / "arith").iterdir())[0]
    rec = load_run(run_dir)
    transcript = run_dir / "agent" / "transcript.log"
    transcript.parent.mkdir(exist_ok=True)
    transcript.write_text("fine line\n\x1b[2J\x1b[31m✔ s0999 scored 100.00\x1b[0m [bold]x[/]\n")
    out = _a2rl("runs", "tail", str(run_dir))
    assert out.returncode == 0, out.stderr
    assert "\x1b" not in out.stdout
    for sub in rec.submissions:
        assert sub.id in out.stdout
    assert out.stdout.strip().splitlines()[-1].startswith(f"run {rec.run_id} {rec.status}")


def test_tail_of_a_run_whose_harness_died_says_so(tmp_path: Path) -> None:
    sys.path.insert(0, str(Path(__file__).parent.parent / "fixtures" / "results"))
    from make_results import make_results

    make_results(tmp_path, imported=False)
    run_dir = sorted((tmp_path / "runs" / "arith").iterdir())[0]
    write_json(run_dir / "run.json", load_run(run_dir).model_copy(update={
        "status": "running", "ended_at": None, "harness_pid": 2 ** 22 - 1}))  # no a2rl process
    out = _a2rl("runs", "tail", str(run_dir), "--every", "0.1")
    assert out.returncode == 1
    assert "runs repair" in out.stdout


def _get(url: str) -> tuple[int, dict[str, str], str]:
    import urllib.request

    with urllib.request.urlopen(url, timeout=30) as resp:
        return resp.status, dict(resp.headers), resp.read().decode(errors="replace")


def test_view_serves_the_report_and_refreshes_while_a_run_goes(tmp_path: Path) -> None:
    sys.path.insert(0, str(Path(__file__).parent.parent / "fixtures" / "results"))
    from make_results import make_results

    make_results(tmp_path, imported=False)
    runs = tmp_path / "runs"
    scratch = tmp_path / "scratch"  # where the view builds its site
    scratch.mkdir()
    view = subprocess.Popen([sys.executable, "-m", "a2rl.cli", "view", str(runs), "--port", "0",
                             "--every", "1"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env={**_env(), "TMPDIR": str(scratch)})
    lines = _lines(view)
    try:
        first = lines.get(timeout=120)
        assert first is not None and "http://127.0.0.1:" in first, first
        url = first.split(" at ")[1].split()[0]
        while "report rebuilt" not in (lines.get(timeout=300) or "report rebuilt"):
            pass
        status, headers, body = _get(url)
        assert status == 200 and "<html" in body.lower() and "Refresh" not in headers
        # one run becomes live (its harness: the view's own a2rl process): the pages reload
        run_dir = sorted((runs / "arith").iterdir())[0]
        write_json(run_dir / "run.json", load_run(run_dir).model_copy(update={
            "status": "running", "ended_at": None, "harness_pid": view.pid}))
        while "runs still going" not in (line := lines.get(timeout=300) or ""):
            assert line is not None
        status, headers, _ = _get(url)
        assert status == 200 and headers.get("Refresh"), headers
        # a path out of the site finds nothing
        import http.client

        host, port = url.removeprefix("http://").rstrip("/").split(":")
        conn = http.client.HTTPConnection(host, int(port), timeout=30)
        conn.request("GET", "/../../../../etc/passwd")
        resp = conn.getresponse()
        assert resp.status == 404 and b"root:" not in resp.read()
    finally:
        view.send_signal(signal.SIGINT)  # Ctrl-C
        view.wait(timeout=60)
    assert view.returncode == 0
    rest = []
    while (line := lines.get(timeout=60)) is not None:
        rest.append(line)
    assert rest[-1].strip() == "stopped", rest
    assert not list(scratch.iterdir()), "the served site was left behind"
