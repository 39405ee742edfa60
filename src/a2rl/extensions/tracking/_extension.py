"""Live tracking as a run extension (`RunConfig.tracking`, `--log-to`): a tracker per task part,
opened once the part's record is complete, fed the baseline and each finished submission, and
finished after run.json and the analysis are written; while the agent works a `PhaseWatch`
logs each change of its phase. The tracker is checked (package, key, store) by the CLI before
the run folder exists."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from a2rl._console import safe
from a2rl.extensions import AgentLaunch, RunExtension, TaskPart, extensions
from a2rl.extensions.tracking._live import LiveTracker, open_tracker
from a2rl.extensions.tracking._phase_watch import PhaseWatch

if TYPE_CHECKING:
    from a2rl.schema import BaselineRecord, RunConfig, SubmissionRecord


@extensions.register("tracking")
class TrackingExtension(RunExtension):
    """W&B or MLflow while the run goes; a tracker failure is printed, never fails the run."""

    name = "tracking"
    hook_order = 50
    enabled_by_name = False

    def __init__(self, config: RunConfig) -> None:
        super().__init__(config)
        self._trackers: dict[Path, LiveTracker] = {}
        self._watches: dict[Path, PhaseWatch] = {}

    @classmethod
    def enabled(cls, config: RunConfig) -> bool:
        return config.tracking is not None

    def setup_done(self, part: TaskPart) -> None:
        tracker = open_tracker(part.config.tracking, part.run_dir, part.record,
                               lambda text: part.console.print(safe(text), style="yellow"))
        if tracker is not None:
            self._trackers[part.run_dir] = tracker
            part.console.print(f"logging to {safe(tracker.where)}", highlight=False, soft_wrap=True)

    def baseline_scored(self, part: TaskPart, baseline: BaselineRecord) -> None:
        if tracker := self._trackers.get(part.run_dir):
            tracker.baseline(baseline.score, baseline.n_items)

    def agent_started(self, part: TaskPart, launch: AgentLaunch) -> None:
        tracker = self._trackers.get(part.run_dir)
        if tracker is None or launch.started_epoch is None or part.config.tracking is None:
            return
        watch = PhaseWatch(tracker, part.run_dir, agent=launch.agent, agent_dir=launch.agent_dir,
                           started_epoch=launch.started_epoch,
                           traced=bool(part.record.exec_traced), hide=launch.trace_hide,
                           every_s=part.config.tracking.phase_every_s,
                           say=lambda text: part.console.print(safe(text), style="yellow"))
        self._watches[part.run_dir] = watch
        watch.start()

    def agent_exited(self, launch: AgentLaunch) -> None:
        for part in launch.parts:
            if watch := self._watches.get(part.run_dir):
                watch.stop()

    def submission_finished(self, part: TaskPart, record: SubmissionRecord,
                            best: float | None) -> None:
        if tracker := self._trackers.get(part.run_dir):
            tracker.submission(record)

    def run_closing(self, part: TaskPart) -> None:
        if watch := self._watches.pop(part.run_dir, None):
            watch.stop()
        if tracker := self._trackers.get(part.run_dir):
            tracker.finish()
