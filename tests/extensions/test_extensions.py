"""The run-extension protocol on a real run: an extension registered here (as a third-party one
would be, by name in `RunConfig.extensions`) sees every hook in pipeline order, its workspace
file is mounted read-only, its environment reaches the agent, and the agent reaches its grader
route with the run's token (and not without it)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from fastapi import APIRouter
from test_integration import config, needs_bwrap, run_dir_of

from a2rl._errors import A2RLError
from a2rl.extensions import (
    AgentLaunch,
    ReportSection,
    RunExtension,
    TaskPart,
    extensions,
    report_sections,
)
from a2rl.grader import Grader
from a2rl.runner import run
from a2rl.schema import BaselineRecord, RunAnalysis, RunConfig, RunRecord, SubmissionRecord, load_run

CALLS: list[str] = []
"""The hooks of the probe, in the order the runner called them (and its route's requests)."""
SEEN: dict[str, Any] = {}


@extensions.register("probe")
class Probe(RunExtension):
    name = "probe"

    def __init__(self, config: RunConfig) -> None:
        super().__init__(config)
        CALLS.append("init")

    @classmethod
    def check(cls, config: RunConfig) -> None:
        CALLS.append("check")
        if config.extensions["probe"].get("refuse"):
            raise A2RLError("the probe refuses this run", "drop refuse from its options")

    def prepare_workspace(self, part: TaskPart) -> Sequence[Path]:
        CALLS.append("prepare_workspace")
        note = part.workspace / "probe.txt"
        note.write_text("written by the probe\n")
        return [note]

    def setup_done(self, part: TaskPart) -> None:
        CALLS.append("setup_done")
        SEEN["model_in_record"] = part.record.model is not None

    def baseline_scored(self, part: TaskPart, baseline: BaselineRecord) -> None:
        CALLS.append("baseline_scored")
        SEEN["baseline"] = baseline.score

    def grader_created(self, part: TaskPart, grader: Grader) -> None:
        CALLS.append("grader_created")

    def grader_routes(self, part: TaskPart) -> Sequence[APIRouter]:
        CALLS.append("grader_routes")
        router = APIRouter(prefix="/probe")

        @router.get("/echo")
        def echo(word: str) -> dict[str, Any]:
            CALLS.append("route")
            assert part.grader is not None
            return {"word": word, "option": self.options["word"], "task": part.task.name,
                    "clock_running": part.grader.elapsed() > 0}

        return [router]

    def agent_environment(self, launch: AgentLaunch) -> None:
        CALLS.append("agent_environment")
        launch.env["PROBE_VAR"] = "from-the-probe"

    def wrap_command(self, launch: AgentLaunch) -> None:
        CALLS.append("wrap_command")
        SEEN["argv"] = list(launch.argv)

    def agent_starting(self, part: TaskPart, launch: AgentLaunch) -> None:
        CALLS.append("agent_starting")
        SEEN["status_at_start"] = part.record.status

    def agent_started(self, part: TaskPart, launch: AgentLaunch) -> None:
        CALLS.append("agent_started")
        SEEN["started_epoch"] = launch.started_epoch

    def submission_received(self, part: TaskPart, record: SubmissionRecord) -> None:
        CALLS.append("submission_received")

    def submission_finished(self, part: TaskPart, record: SubmissionRecord,
                            best: float | None) -> None:
        CALLS.append("submission_finished")
        SEEN["finished"] = record.status

    def agent_exited(self, launch: AgentLaunch) -> None:
        CALLS.append("agent_exited")

    def submissions_closed(self, part: TaskPart) -> None:
        CALLS.append("submissions_closed")

    def launch_closed(self, launch: AgentLaunch) -> None:
        CALLS.append("launch_closed")

    def grader_closed(self, part: TaskPart) -> None:
        CALLS.append("grader_closed")
        assert part.grader is not None
        SEEN["ledger"] = [r.status for r in part.grader.ledger.records()]

    def analysis_written(self, part: TaskPart, analysis: RunAnalysis) -> None:
        CALLS.append("analysis_written")
        SEEN["analysis_file"] = (part.run_dir / "analysis.json").exists()

    def run_closing(self, part: TaskPart) -> None:
        CALLS.append("run_closing")
        SEEN["closed_status"] = load_run(part.run_dir).status

    def close(self) -> None:
        CALLS.append("close")

    @classmethod
    def add_to_analysis(cls, run_dir: Path, record: RunRecord, analysis: RunAnalysis) -> None:
        (run_dir / "probe-analysis.txt").write_text(f"{analysis.route} {record.run_id}")

    @classmethod
    def report_sections(cls, run_dir: Path, record: RunRecord) -> list[ReportSection]:
        return [ReportSection("probe", f"{len(record.submissions)} submission(s)"),
                # what an extension quotes may be the agent's: shown as text, never markup
                ReportSection("probe quotes", "<script>alert(1)</script> "
                                              "![beacon](http://evil.example/x.png)")]


AUTH = '-H "Authorization: Bearer $A2RL_TOKEN"'
AGENT = ("cmd:curl -s -o /dev/null -w '%{http_code}' \"$A2RL_GRADER_URL/probe/echo?word=x\" "
         "> code/unauthorised.txt; "
         f"curl -s {AUTH} \"$A2RL_GRADER_URL/probe/echo?word=hi\" > code/probe.json; "
         "echo \"$PROBE_VAR\" > code/env.txt; "
         "(echo tampered >> probe.txt) 2>/dev/null; echo $? > code/write.txt; "
         f"cp -r \"$MODEL_PATH\" output/v1 && curl -s -X POST {AUTH} \"$A2RL_GRADER_URL/submit\" "
         "-d '{\"model_path\": \"output/v1\"}' > code/submit.json; "
         f"curl -s -X POST {AUTH} \"$A2RL_GRADER_URL/submit\" "
         "-d '{\"model_path\": \"output/v1\", \"evaluate\": true}' > code/evaluate.json")

ORDER = ["check", "init", "prepare_workspace", "setup_done", "baseline_scored", "grader_created",
         "grader_routes", "agent_environment", "wrap_command", "agent_starting", "agent_started",
         "route", "submission_received", "submission_finished", "agent_exited",
         "submissions_closed", "launch_closed", "grader_closed", "analysis_written",
         "run_closing", "close"]


@needs_bwrap
def test_hooks_run_in_pipeline_order_and_the_agent_reaches_the_route(
        tmp_path: Path, tiny_model: Path) -> None:
    CALLS.clear()
    SEEN.clear()
    rec = run(config(tmp_path, tiny_model, AGENT, budget_s=600,
                     extensions={"probe": {"word": "from-options"}}))
    rd = run_dir_of(rec, tmp_path)
    assert rec.status == "finished" and rec.exit_reason == "agent_exited", rec.error
    assert CALLS == ORDER
    ws = rd / "workspace"
    # the route, through the grader, with the run's token; without it refused
    assert json.loads((ws / "code" / "probe.json").read_text()) == {
        "word": "hi", "option": "from-options", "task": "arith", "clock_running": True}
    assert (ws / "code" / "unauthorised.txt").read_text() == "401"
    # its environment reached the agent, its file was mounted read-only
    assert (ws / "code" / "env.txt").read_text() == "from-the-probe\n"
    assert (ws / "code" / "write.txt").read_text().strip() != "0"
    assert (ws / "probe.txt").read_text() == "written by the probe\n"
    # what each hook saw
    assert SEEN["model_in_record"] and SEEN["baseline"] == rec.baseline.score  # type: ignore[union-attr]
    assert any(Path(a).name == "bwrap" for a in SEEN["argv"])  # the sandbox's command line
    assert SEEN["status_at_start"] == "running" and SEEN["started_epoch"] is not None
    assert SEEN["finished"] == "baseline_copy" and SEEN["ledger"] == ["baseline_copy"]
    assert SEEN["analysis_file"] and SEEN["closed_status"] == "finished"
    # a plain run refuses the scaffold's /submit field as it always did, and records nothing
    assert json.loads((ws / "code" / "submit.json").read_text())["status"] == "baseline_copy"
    assert json.loads((ws / "code" / "evaluate.json").read_text())["detail"] == \
        '"evaluate" needs a run with --scaffold evaluator'
    assert [s.status for s in rec.submissions] == ["baseline_copy"]
    # the options are part of the record; the report asks the extensions of the record
    on_disk = load_run(rd)
    assert on_disk.config.extensions == {"probe": {"word": "from-options"}}
    assert report_sections(on_disk, rd)[0] == ReportSection("probe", "1 submission(s)")
    # ... and its run page shows them, the quoted markup as text
    from a2rl.report import build_report

    pages = build_report([rd], tmp_path / "site")
    page = next(p for p in pages if p.name != "index.html" and on_disk.run_id in p.read_text()
                and "<h2>probe</h2>" in p.read_text()).read_text()
    assert "1 submission(s)" in page
    assert "<script>alert(1)</script>" not in page and "&lt;script&gt;" in page
    assert 'src="http://evil.example' not in page and 'href="http://evil.example' not in page
    # `a2rl analyze` again: the extensions of the record add their part to the new analysis
    from a2rl.analysis import analyze_run
    from a2rl.extensions import add_to_analysis

    analysis = analyze_run(rd)
    add_to_analysis(rd, analysis)
    assert (rd / "probe-analysis.txt").read_text() == f"{analysis.route} {on_disk.run_id}"


def test_an_unknown_misnamed_or_refusing_extension_fails_before_the_run_folder(tmp_path: Path,
                                                                      tiny_model: Path) -> None:
    with pytest.raises(A2RLError, match="unknown extension 'nope'") as exc:
        run(config(tmp_path, tiny_model, "cmd:true", extensions={"nope": {}}))
    assert "probe" in (exc.value.fix or "")
    with pytest.raises(A2RLError, match="built-in extension 'scaffold'"):
        run(config(tmp_path, tiny_model, "cmd:true", extensions={"scaffold": {}}))
    CALLS.clear()
    with pytest.raises(A2RLError, match="the probe refuses this run"):
        run(config(tmp_path, tiny_model, "cmd:true", extensions={"probe": {"refuse": True}}))
    assert CALLS == ["check"]
    assert not (tmp_path / "runs").exists()
