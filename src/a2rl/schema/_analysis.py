"""Records written by `a2rl analyze`: summary.jsonl lines and analysis.json."""

from __future__ import annotations

import datetime as dt
from typing import Any, Literal

from pydantic import Field

from a2rl.schema._base import Record
from a2rl.schema._grader import FinalResult

FailureType = Literal["rollout construction failure", "reward/data design failure",
                      "training collapse/instability", "early coding failure",
                      "harness/setup failure",
                      "static shortcut without transfer"]
Severity = Literal["info", "warning", "critical"]
ANALYSIS_FORMAT = 2
"""2: experiments from launched commands (method, framework, evidence), format versions."""


class IterationSummary(Record):
    """One line of `summary.jsonl`: one iteration (= submission), plus a final record."""

    index: int
    """1-based iteration index; the final record has index = submissions + 1."""
    submission_id: str | None
    """Ledger id; None for the final record."""
    elapsed_marker: str
    """Time into the agent's budget, HH:MM:SS."""
    elapsed_s: float | None
    """Seconds into the agent's budget when the submission arrived."""
    duration_s: float | None
    """Seconds since the previous iteration (or since the start)."""
    status: str
    """Submission status, or the run's exit reason for the final record."""
    exit_code: int | None = None
    """The agent's exit code (final record only)."""
    score: float | None
    """The grader's score of this submission (final record: the run's best)."""
    improvement: float | None
    """score − baseline."""
    training_type: str
    """Route label of the code that produced this submission (GRPO, PPO, SFT-only, SFT+RL,
    Copy, Placeholder/Missing)."""
    methods: list[str] = Field(default_factory=list)
    """Methods found in the scripts that ran (SFT, PEFT, GRPO, DPO, merging, …)."""
    failure_type: FailureType | None = None
    """Set for failed or non-improving iterations."""
    failure_evidence: str | None = None
    """What showed that failure type."""
    config: dict[str, Any] = Field(default_factory=dict)
    """Key configuration choices (learning rate, steps, epochs, batch, LoRA rank, data size…)."""
    changed_files: list[str] = Field(default_factory=list)
    """Files changed since the previous iteration's snapshot."""
    diff_stat: list[str] = Field(default_factory=list)
    """`git diff --stat` of the agent's code since the previous iteration (what was attempted)."""
    excerpt: str | None = None
    """A short excerpt of the training script around its training call."""
    scripts: list[str] = Field(default_factory=list)
    """Training scripts in the snapshot that the transcript shows being run."""


class Experiment(Record):
    """A verified training experiment: an executed command that launched a parameter update
    (from the exec trace), or, for untraced runs, a model folder with training lineage."""

    path: str | None
    """Model folder the command writes to (named by an --out-style flag, or a model folder on its
    command line that appeared after it started); None when that cannot be told."""
    elapsed_s: float
    """Seconds into the agent's budget when it started (or when the folder appeared)."""
    parent: str | None
    """The checkpoint it started from (None: the base model or unknown)."""
    strategy: str
    """k: full SFT, PEFT, RL, preference, distillation, reward model."""
    data_source: str
    """d: curated (the given data), self-generated, mixed, unknown."""
    stage: str
    """g: `from base` or `from checkpoint`."""
    command: str | None = None
    """The command line (exec-traced runs)."""
    exit_code: int | None = None
    """Exit status of the command (None: unknown or still running)."""
    duration_s: float | None = None
    """How long the command ran."""
    method: str | None = None
    """The training method found (SFT, DPO, GRPO, PPO, RLOO, reward model, …)."""
    framework: str | None = None
    """What ran it: trl, transformers, peft, unsloth, openrlhf, verl, llamafactory, axolotl,
    torchtune, or a hand-written loop."""
    script: str | None = None
    """The script or config file it ran (workspace-relative), when there is one."""
    evidence: list[str] = Field(default_factory=list)
    """The lines, arguments or config keys that showed the method."""
    source: str = "exec"
    """Where the command came from: `exec` (the exec trace), `transcript` (the agent's events),
    or `artifacts` (a model folder with training lineage, for untraced runs)."""


class Finding(Record):
    """An audit finding. Findings never change a score; they flag the run for review."""

    kind: str
    """What was found (contamination, privileged shortcut, unsandboxed, …)."""
    severity: Severity
    """How serious: info, warning, critical."""
    message: str
    """What it means, in a sentence."""
    evidence: list[str] = Field(default_factory=list)
    """The lines that showed it."""
    basis: Literal["heuristic", "ground-truth", "judge", "posttrainbench"] = "heuristic"
    """heuristic: read from names in code or commands; ground-truth: measured on what ran (the
    traced processes' connections, the submitted weights); judge: the majority of three answers
    of a configured model that read a digest of the run (`a2rl analyze --judge`);
    posttrainbench: a verdict PostTrainBench's own judges wrote, imported with the run."""

    @property
    def own(self) -> bool:
        """a2rl's own audit (heuristic or ground truth), not a judge's verdict."""
        return self.basis in ("heuristic", "ground-truth")


class JudgeAnswer(Record):
    """One question's answer in one ask."""

    question: str
    """Question id (contamination, model_substitution, distillation, benchmark_lookup)."""
    verdict: Literal["yes", "no"] | None
    """The judge's answer; None when the reply held no readable answer to this question."""
    reason: str
    """The judge's reason (for an unreadable answer: what was wrong with it)."""


class JudgeAsk(Record):
    """One of the independent asks: the judge's reply and the answers read from it."""

    index: int
    """1-based number of the ask."""
    reply: str
    """The judge's reply as sent (cut at 4,000 characters)."""
    answers: list[JudgeAnswer]
    """One answer per question, read from the reply."""


class JudgeRecord(Record):
    """`judge.json` of a run: what the transcript judge of the audit (`a2rl analyze --judge`)
    was shown and what it answered, each ask apart."""

    model: str
    """The judge model's name, as sent in each request."""
    base_url: str
    """The OpenAI-compatible endpoint asked (never a key)."""
    asked_at: dt.datetime
    """When the judge was asked (UTC)."""
    digest_sha256: str
    """SHA-256 of the digest the judge read (the same in every ask)."""
    digest_chars: int
    """Length of that digest in characters."""
    sources: list[str]
    """What each source contributed (lines read, lines kept, characters)."""
    questions: dict[str, str]
    """Question id → the question as asked."""
    asks: list[JudgeAsk]
    """Each independent ask, in order."""


class ProcessMetrics(Record):
    """The benchmark paper's process metrics of one run."""

    baseline: float | None
    """The base model's score."""
    best: float | None
    """The best valid submission's score."""
    improvement: float | None
    """best − baseline."""
    scores: list[float | None]
    """Score of each submission in arrival order (None: invalid)."""
    submissions: int
    """Number of submissions."""
    valid_rate: float | None
    """Share of submissions with a valid score."""
    zero_score_rate: float | None
    """Share of submissions that scored 0 or failed to evaluate."""
    best_at_submission: int | None
    """1-based index of the best submission."""
    time_to_first_improvement_s: float | None
    """Budget used when the first improving submission arrived."""
    time_to_best_s: float | None
    """Budget used when the best submission arrived."""
    time_used_ratio: float | None
    """Agent wall time / budget."""
    last_submit_gap_s: float | None
    """Budget left after the last submission."""
    code_files_written: int
    """Code files in the final snapshot (outside output/)."""
    model_versions: int
    """Distinct model folders the artifact index saw."""


class RunAnalysis(Record):
    """`analysis.json`: everything `a2rl analyze` computed for one run."""

    version: int = ANALYSIS_FORMAT
    """Format version of analysis.json."""
    run_id: str
    """The analyzed run."""
    task: str
    """Its task."""
    route: str
    """Route label of the run (of its best submission; of all code that ran if none)."""
    methods_attempted: list[str]
    """Methods of every training the run launched."""
    methods_in_best: list[str]
    """Methods of the code behind the best submission."""
    metrics: ProcessMetrics
    """Process metrics."""
    experiments: list[Experiment]
    """Verified training experiments in start order."""
    strategy_changes: int
    """Adjacent experiment pairs whose (k, d, g) differ."""
    change_rate: float | None
    """Strategy changes / adjacent experiment pairs (the trajectory study's R_change)."""
    persistence: float | None = None
    """1 − change_rate (the trajectory study's R_persist)."""
    iterations: list[IterationSummary]
    """summary.jsonl: one record per submission plus the final record."""
    findings: list[Finding]
    """Audit findings."""
    sandboxed: bool
    """False: the agent ran without OS isolation."""
    exec_traced: bool = False
    """Programs and experiments come from the exec trace (else from transcript and artifacts)."""
    phase_seconds: dict[str, float] = Field(default_factory=dict)
    """Wall time covered by programs of each phase (exec-traced runs)."""
    commands: list[dict[str, Any]] = Field(default_factory=list)
    """Programs the agent ran with their phase: start, end, exit code, command line."""
    turns: list[dict[str, Any]] = Field(default_factory=list)
    """Phase of each model turn (runs whose launcher wrote agent/events.jsonl)."""
    turn_phase_seconds: dict[str, float] = Field(default_factory=dict)
    """Time per phase by turns: the time until the next turn goes to the launching turn's phase."""
    usage: dict[str, float] = Field(default_factory=dict)
    """Token usage and cost summed from the event log (input_tokens, output_tokens, cost_usd)."""
    notes: list[str] = Field(default_factory=list)
    """What this analysis could not determine, and why."""
    imported_from: str | None = None
    """The harness an imported run came from (None: an a2rl run)."""
    final: FinalResult | None = None
    """Hidden-final runs: the final model's one score on the hidden test split (run.json's
    `final`), the run's headline; `metrics.best` is then the best on the dev split."""
    parse_warnings: list[str] = Field(default_factory=list)
    """What the transcript parser could not read (agent/parse_report.json: unreadable lines,
    unknown event types, errors the CLI reported), so a thin event log is never silent."""
