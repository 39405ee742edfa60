"""The live summary as a run extension (always on): one `LiveSummary` per task part."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from a2rl._console import safe
from a2rl.extensions import AgentLaunch, RunExtension, TaskPart, extensions

if TYPE_CHECKING:  # analysis reads run records, so it is imported lazily
    from a2rl.analysis import LiveSummary
    from a2rl.grader import Grader
    from a2rl.schema import RunAnalysis, RunConfig, RunRecord, SubmissionRecord


@extensions.register("summary")
class SummaryExtension(RunExtension):
    """Each finished submission becomes an iteration of the summary; at the close the
    run-level analysis."""

    name = "summary"
    hook_order = 40
    enabled_by_name = False

    def __init__(self, config: RunConfig) -> None:
        super().__init__(config)
        self._summaries: dict[Path, LiveSummary] = {}

    @classmethod
    def enabled(cls, config: RunConfig) -> bool:
        return True

    def grader_created(self, part: TaskPart, grader: Grader) -> None:
        from a2rl.analysis import LiveSummary

        self._summaries[part.run_dir] = LiveSummary(part.run_dir, part.task.level)

    def agent_started(self, part: TaskPart, launch: AgentLaunch) -> None:
        # a traced run: the raw exec log is read during the run, on the agent's clock
        summary = self._summaries.get(part.run_dir)
        if summary is not None and part.record.exec_traced:
            summary.builder.exec_t0 = launch.started_epoch

    def submission_finished(self, part: TaskPart, record: SubmissionRecord,
                            best: float | None) -> None:
        summary = self._summaries.get(part.run_dir)
        if summary is None:
            return
        try:
            summary.submission_finished(record)
        except Exception as exc:  # diagnostics must never break grading
            part.console.print(f"[yellow]summary for {safe(record.id)} failed: {safe(exc)}[/]")

    def analyze(self, part: TaskPart) -> RunAnalysis | None:
        """The live summary closed with the run-level analysis; a failure here never loses
        the run record (and `a2rl analyze` can redo it)."""
        summary = self._summaries.get(part.run_dir)
        if summary is None:
            return None
        try:
            analysis = summary.finish(part.task.heldout_items())
            part.console.print(f"analysis: route {safe(analysis.route)}; "
                               f"{len(analysis.findings)} audit finding(s); see "
                               f"{safe(part.run_dir / 'summary.md')}")
        except Exception as exc:  # analysis is diagnostics: report and go on
            part.console.print(f"[yellow]analysis failed ({type(exc).__name__}: {safe(exc)}); "
                               f"rerun with `a2rl analyze {safe(part.run_dir)}`[/]")
            return None
        return analysis

    def analysis_written(self, part: TaskPart, analysis: RunAnalysis) -> None:
        self.add_to_analysis(part.run_dir, part.record, analysis)

    @classmethod
    def add_to_analysis(cls, run_dir: Path, record: RunRecord, analysis: RunAnalysis) -> None:
        """The run's cost and provenance, after the overview of summary.md."""
        from a2rl.extensions.summary._cost import append_cost

        append_cost(run_dir, record)
