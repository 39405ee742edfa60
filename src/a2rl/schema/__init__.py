"""Every format a2rl persists, in one place at the bottom of the dependency graph.

Each record is a pydantic model with a docstring per field; the top-level files carry a format
`version`. Nothing here imports another a2rl package except `_errors` and `_util`, so the
grader, the runner, the recorders, the agents and the analysis can all depend on it.
`a2rl schema [NAME]` prints the JSON schema of each record.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel

from a2rl._errors import A2RLError
from a2rl.schema._analysis import (
    ANALYSIS_FORMAT,
    Experiment,
    FailureType,
    Finding,
    IterationSummary,
    JudgeAnswer,
    JudgeAsk,
    JudgeRecord,
    ProcessMetrics,
    RunAnalysis,
    Severity,
)
from a2rl.schema._engine import EngineInfo, EngineRequest
from a2rl.schema._events import OUTPUT_CAP, AgentEvent, EventKind, ExecEvent, ParseReport
from a2rl.schema._grader import (
    BASELINE_FORMAT,
    EVAL_JOB_FORMAT,
    SUBMISSION_FORMAT,
    TERMINAL_STATUSES,
    VALID_STATUSES,
    BaselineRecord,
    BestSoFar,
    EvalJob,
    FinalDesignation,
    FinalMode,
    FinalResult,
    ItemValues,
    KeepArtifacts,
    Split,
    StatusResponse,
    SubmissionRecord,
    SubmissionStatus,
    SubmitResponse,
    TaskSpec,
)
from a2rl.schema._jsonl import append_jsonl, iter_jsonl, read_json, read_jsonl, write_json
from a2rl.schema._option import (
    Check,
    Duration,
    RunOption,
    default_text,
    duration_text,
    matrix_key,
    option_problem,
    run_options,
)
from a2rl.schema._prices import PRICES, PRICES_DATE, Price, model_key, price_for
from a2rl.schema._run import (
    RUN_FORMAT,
    ExitReason,
    ImportInfo,
    ModelInfo,
    ProcessProof,
    Provenance,
    RunConfig,
    RunCost,
    RunRecord,
    StudyRef,
    TaskInfo,
    Timings,
    TrackingConfig,
)
from a2rl.schema._scaffold import (
    COMPONENTS,
    DATA_SOURCES,
    JOURNAL_KINDS,
    PARADIGMS,
    SCAFFOLD_FORMAT,
    STAGE_STRUCTURES,
    CheckpointEvent,
    CheckpointOutcome,
    Component,
    DataSource,
    Decision,
    EvaluatorReport,
    JournalEntry,
    JournalKind,
    LevelAdoption,
    LLMCall,
    Paradigm,
    Plan,
    PlanEvent,
    PlanOutcome,
    PlanReview,
    PlanStatus,
    ScaffoldAnalysis,
    ScaffoldConfig,
    ScaffoldNotice,
    StageStructure,
    Strategy,
    StrategyChange,
    Suggestion,
    SuggestionOutcome,
    TrainOutput,
    parse_components,
    scaffold_config,
)
from a2rl.schema._skills import (
    SKILLS_FORMAT,
    CreatedSkill,
    ReadSource,
    SkillConsults,
    SkillFile,
    SkillInfo,
    SkillManifest,
    SkillOrigin,
    SkillRead,
    SkillUsage,
)

SCHEMAS: dict[str, tuple[type[BaseModel], str]] = {
    "run": (RunRecord, "run.json"),
    "submission": (SubmissionRecord, "ledger.jsonl (one line per state change)"),
    "baseline": (BaselineRecord, "baseline.json and the baseline cache"),
    "evaluation-job": (EvalJob, "job.json of an evaluation folder"),
    "analysis": (RunAnalysis, "analysis.json"),
    "judge": (JudgeRecord, "judge.json (a2rl analyze --judge)"),
    "iteration": (IterationSummary, "summary.jsonl (one line per iteration)"),
    "agent-event": (AgentEvent, "agent/events.jsonl"),
    "exec-event": (ExecEvent, "agent/exec.jsonl"),
    "parse-report": (ParseReport, "agent/parse_report.json"),
    "submit-response": (SubmitResponse, "POST /submit answer"),
    "status-response": (StatusResponse, "GET /status answer"),
    "final-result": (FinalResult, "final.json (hidden-final runs)"),
    "final-designation": (FinalDesignation, "POST /final answer"),
    "items": (ItemValues, "items.json of an evaluation"),
    "journal-entry": (JournalEntry, "scaffold/journal.jsonl"),
    "evaluator-report": (EvaluatorReport, "scaffold/evaluations.jsonl"),
    "plan-event": (PlanEvent, "scaffold/plans.jsonl"),
    "checkpoint-event": (CheckpointEvent, "scaffold/checkpoints.jsonl"),
    "skill-library": (SkillManifest, "scaffold/skills/library.json (--scaffold skills)"),
    "skill-usage": (SkillUsage, "scaffold/skills/usage.json (--scaffold skills)"),
    "scaffold-analysis": (ScaffoldAnalysis, "scaffold.json (scaffold runs)"),
}
"""Record name → (model, where it is stored)."""


def load_run(run_dir: Path) -> RunRecord:
    """run.json of a run directory. A missing, unreadable or malformed file is an A2RLError
    that names it and says what to do."""
    path = run_dir / "run.json"
    if not path.is_file():
        raise A2RLError(f"{run_dir} is not a run directory: it has no file run.json",
                        "pass a run directory (<runs dir>/<task>/<run id>) or a run id; "
                        "`a2rl runs list` shows the runs")
    try:
        return read_json(path, RunRecord)
    except (OSError, UnicodeDecodeError) as exc:
        raise A2RLError(f"{path} cannot be read: {exc}",
                        "check that the file is readable and is a run record "
                        "(`a2rl schema run` prints its format)") from exc


def current_submissions(ledger: Path) -> list[SubmissionRecord]:
    """Current state of each submission in a ledger (its last line per id), in arrival order."""
    latest: dict[str, SubmissionRecord] = {}
    for rec in read_jsonl(ledger, SubmissionRecord):
        latest[rec.id] = rec
    return sorted(latest.values(), key=lambda r: r.seq)


def best_submission(submissions: list[SubmissionRecord], split: str | None = None
                    ) -> BestSoFar | None:
    """Best valid score of `submissions` (current states); hidden-final test records never
    count (they are not feedback). Ties go to the earlier submission."""
    valid = [r for r in submissions if r.valid and r.score is not None
             and r.split != "test" and (split is None or r.split == split)]
    if not valid:
        return None
    top = max(valid, key=lambda r: (r.score, -r.seq))
    return BestSoFar(submission_id=top.id, score=float(top.score or 0.0),
                     unseen_score=top.unseen_score)


__all__ = [
    "ANALYSIS_FORMAT", "BASELINE_FORMAT", "COMPONENTS", "DATA_SOURCES", "EVAL_JOB_FORMAT",
    "JOURNAL_KINDS", "OUTPUT_CAP", "PARADIGMS", "PRICES", "PRICES_DATE", "RUN_FORMAT",
    "SCAFFOLD_FORMAT", "SCHEMAS", "SKILLS_FORMAT", "STAGE_STRUCTURES", "SUBMISSION_FORMAT",
    "TERMINAL_STATUSES", "VALID_STATUSES", "AgentEvent", "BaselineRecord", "BestSoFar", "Check",
    "CheckpointEvent", "CheckpointOutcome", "Component", "CreatedSkill", "DataSource", "Decision",
    "Duration", "EngineInfo", "EngineRequest", "EvalJob", "EvaluatorReport", "EventKind",
    "ExecEvent",
    "ExitReason", "Experiment", "FailureType", "FinalDesignation", "FinalMode", "FinalResult",
    "Finding", "ImportInfo", "ItemValues", "IterationSummary", "JournalEntry", "JournalKind",
    "JudgeAnswer", "JudgeAsk", "JudgeRecord",
    "KeepArtifacts", "LLMCall", "LevelAdoption", "ModelInfo", "Paradigm", "ParseReport", "Plan",
    "PlanEvent", "PlanOutcome", "PlanReview", "PlanStatus", "Price", "ProcessMetrics",
    "ProcessProof", "Provenance", "ReadSource", "RunAnalysis", "RunConfig", "RunCost", "RunOption",
    "RunRecord",
    "ScaffoldAnalysis", "ScaffoldConfig", "ScaffoldNotice", "Severity", "SkillConsults",
    "SkillFile", "SkillInfo", "SkillManifest", "SkillOrigin", "SkillRead", "SkillUsage", "Split",
    "StageStructure", "StatusResponse", "Strategy", "StrategyChange", "StudyRef",
    "SubmissionRecord", "SubmissionStatus", "SubmitResponse", "Suggestion", "SuggestionOutcome",
    "TaskInfo", "TaskSpec", "Timings", "TrackingConfig", "TrainOutput", "append_jsonl",
    "best_submission", "current_submissions", "default_text", "duration_text", "iter_jsonl",
    "load_run",
    "matrix_key", "model_key", "option_problem", "parse_components", "price_for", "read_json",
    "read_jsonl", "run_options", "scaffold_config", "write_json"
]
