"""The scaffold as a run extension: its checks, its files in the workspace, its state attached
to the grader, its routes, the opens the exec trace records for the skills, and its close."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from a2rl._console import safe
from a2rl._errors import A2RLError
from a2rl.extensions import AgentLaunch, RunExtension, TaskPart, extensions

if TYPE_CHECKING:
    from fastapi import APIRouter

    from a2rl.extensions.scaffold import Scaffold
    from a2rl.grader import Grader
    from a2rl.schema import RunAnalysis, RunConfig, RunRecord


@extensions.register("scaffold")
class ScaffoldExtension(RunExtension):
    """`RunConfig.scaffold` (`--scaffold`): one `Scaffold` per task run, attached to its
    grader, reached by the agent through the grader's /scaffold/... routes."""

    name = "scaffold"
    hook_order = 20
    enabled_by_name = False
    submit_flags = {"evaluate": '"evaluate" needs a run with --scaffold evaluator'}

    def __init__(self, config: RunConfig) -> None:
        super().__init__(config)
        self._scaffolds: dict[Path, Scaffold] = {}

    @classmethod
    def enabled(cls, config: RunConfig) -> bool:
        return config.scaffold is not None

    @classmethod
    def check(cls, config: RunConfig) -> None:
        assert config.scaffold is not None
        if config.tasks:
            raise A2RLError("--scaffold runs one task at a time",
                            "drop --scaffold, or run each task of the multi run separately")
        if "skills" in config.scaffold.components:
            from a2rl.extensions.scaffold._workspace import skills_module

            skills_module()

    def _skills(self) -> bool:
        return self.config.scaffold is not None and "skills" in self.config.scaffold.components

    def prepare_workspace(self, part: TaskPart) -> Sequence[Path]:
        """Its tool and instructions, before the agent starts."""
        from a2rl.extensions.scaffold import Scaffold, install

        config = part.config.scaffold
        assert config is not None
        read_only = install(config, part.workspace)
        self._scaffolds[part.run_dir] = Scaffold(config, part.run_dir, part.workspace, part.task,
                                                 budget_s=part.config.agent_time_limit_s)
        return read_only

    def grader_created(self, part: TaskPart, grader: Grader) -> None:
        self._scaffolds[part.run_dir].attach(grader)

    def grader_routes(self, part: TaskPart) -> Sequence[APIRouter]:
        from a2rl.extensions.scaffold._endpoints import scaffold_router, submission_router

        scaffold = self._scaffolds[part.run_dir]
        return [submission_router(scaffold), scaffold_router(scaffold)]

    def agent_environment(self, launch: AgentLaunch) -> None:
        # With the skills the trace also records opens: reads of a skill are counted from
        # the files the agent's processes opened.
        if self._skills():
            from a2rl.extensions.scaffold._mount import TRACE_SYSCALLS

            launch.trace_syscalls += TRACE_SYSCALLS

    def analysis_written(self, part: TaskPart, analysis: RunAnalysis) -> None:
        self.add_to_analysis(part.run_dir, part.record, analysis)

    @classmethod
    def add_to_analysis(cls, run_dir: Path, record: RunRecord, analysis: RunAnalysis) -> None:
        """scaffold.json and the scaffold's section of summary.md."""
        from a2rl.extensions.scaffold._analysis import write_scaffold_analysis

        write_scaffold_analysis(run_dir, analysis)

    def grader_closed(self, part: TaskPart) -> None:
        scaffold = self._scaffolds.get(part.run_dir)
        if scaffold is None:
            return
        scaffold.close()
        if self._skills():
            _count_skill_reads(part)


def _count_skill_reads(part: TaskPart) -> None:
    """Skill consults and agent-written skills, counted while the workspace still exists (the
    created skills are copied out of it); a failure is reported, never raised: the run's
    record matters more."""
    from a2rl.extensions.scaffold._usage import count_skill_reads

    try:
        count_skill_reads(part.run_dir)
    except Exception as exc:  # noqa: BLE001 - diagnostics only
        part.console.print(f"[yellow]skill reads not counted: {safe(str(exc))}[/]")
