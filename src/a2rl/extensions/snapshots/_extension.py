"""Snapshots as a run extension: the agent's code and models at each submission, every
`RunConfig.snapshot_every_s` seconds and when the grader stops taking submissions."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from a2rl.extensions import AgentLaunch, RunExtension, TaskPart, extensions
from a2rl.extensions.snapshots._recorder import RunRecorder

if TYPE_CHECKING:
    from a2rl.schema import RunConfig, SubmissionRecord


@extensions.register("snapshots")
class SnapshotsExtension(RunExtension):
    """One `RunRecorder` per task part, on the grader's clock."""

    name = "snapshots"
    hook_order = 30
    enabled_by_name = False

    def __init__(self, config: RunConfig) -> None:
        super().__init__(config)
        self._recorders: dict[Path, RunRecorder] = {}

    @classmethod
    def enabled(cls, config: RunConfig) -> bool:
        return True

    def agent_starting(self, part: TaskPart, launch: AgentLaunch) -> None:
        assert part.grader is not None
        self._recorders[part.run_dir] = RunRecorder(part.run_dir, part.workspace,
                                                    part.grader.elapsed,
                                                    every_s=part.config.snapshot_every_s)

    def agent_started(self, part: TaskPart, launch: AgentLaunch) -> None:
        self._recorders[part.run_dir].start()

    def submission_received(self, part: TaskPart, record: SubmissionRecord) -> None:
        recorder = self._recorders.get(part.run_dir)
        if recorder is not None:
            recorder.record(record.id)

    def submissions_closed(self, part: TaskPart) -> None:
        recorder = self._recorders.pop(part.run_dir, None)
        if recorder is not None:
            recorder.stop()  # the final snapshot
            if recorder.failure is not None:
                part.record.error = "; ".join(x for x in (
                    part.record.error, f"the final code snapshot was not taken: {recorder.failure}")
                    if x)

    def launch_closed(self, launch: AgentLaunch) -> None:
        for recorder in self._recorders.values():
            recorder.stop()
        self._recorders.clear()
