"""The experience-driven scaffold's records (`--scaffold`): the journal, the evaluator's reports,
plan reviews and strategy-revision checkpoints.

Each lives in `runs/<task>/<run_id>/scaffold/` (outside the workspace, append-only JSON lines)
and is what the agent reads back through the grader's `/scaffold/...` endpoints. Strategy
vocabulary is the trajectory study's: k (training paradigm), d (data source), g (stage structure), with the
same values the analysis gives each detected experiment.
"""

from __future__ import annotations

import datetime as dt
from typing import Literal

from pydantic import ConfigDict, Field

from a2rl._errors import A2RLError
from a2rl.schema._base import Record

SCAFFOLD_FORMAT = 1

Component = Literal["journal", "skills", "evaluator", "plan-review", "revision"]
COMPONENTS: tuple[Component, ...] = ("journal", "skills", "evaluator", "plan-review", "revision")
"""Every switchable part of the scaffold, in the order the docs and reports list them."""

Paradigm = Literal["full SFT", "PEFT", "RL", "preference", "distillation", "reward model"]
DataSource = Literal["curated", "self-generated", "mixed"]
StageStructure = Literal["from base", "from checkpoint"]
PARADIGMS: tuple[Paradigm, ...] = ("full SFT", "PEFT", "RL", "preference", "distillation",
                                   "reward model")
DATA_SOURCES: tuple[DataSource, ...] = ("curated", "self-generated", "mixed")
STAGE_STRUCTURES: tuple[StageStructure, ...] = ("from base", "from checkpoint")

PlanStatus = Literal["none", "pending", "approved", "revise", "unreviewed"]
JournalKind = Literal["plan", "observation", "lesson", "eval_result", "eval_analysis"]
JOURNAL_KINDS: tuple[JournalKind, ...] = ("plan", "observation", "lesson", "eval_result",
                                          "eval_analysis")


class ScaffoldConfig(Record):
    """`--scaffold` and `--scaffold-opt key=value`: which components run and how."""

    model_config = ConfigDict(extra="forbid")

    components: list[Component]
    """The enabled components (an empty list is the autonomous baseline)."""
    llm_base_url: str | None = None
    """OpenAI-compatible base URL of the evaluator and the plan reviewer; None =
    $A2RL_SCAFFOLD_BASE_URL. The key comes from $A2RL_SCAFFOLD_API_KEY only (never recorded,
    never in the sandbox)."""
    llm_model: str | None = None
    """Model name sent to that endpoint; None = $A2RL_SCAFFOLD_MODEL."""
    llm_timeout_s: float = Field(default=120.0, gt=0)
    """Per-request time limit; a slower reply is recorded as a failure and the run goes on."""
    llm_retries: int = Field(default=1, ge=0)
    """Retries of a transient failure (HTTP 429/5xx, connection error, timeout)."""
    llm_max_tokens: int = Field(default=1200, ge=64)
    """Completion length the evaluator and reviewer may use."""
    reviewer: Literal["llm", "person"] = "llm"
    """Who reviews the plan: the LLM endpoint, or a person running `a2rl review <run>`."""
    evaluator_items: int = Field(default=8, ge=0)
    """Train-visible items the submitted model answers for the evaluator (0: score only)."""
    revision_every: int | None = Field(default=None, ge=1)
    """A revision checkpoint after every N finished submissions (None: off)."""
    revision_plateau: int | None = Field(default=3, ge=1)
    """A checkpoint after M finished submissions in a row without a new best (None: off)."""
    revision_fractions: list[float] = Field(default_factory=lambda: [0.5])
    """A checkpoint when this share of the budget is used (each in (0, 1))."""
    baseline_run: str | None = None
    """Run folder of the autonomous baseline (same agent, driver, task) whose inference tokens
    the analysis compares against."""


class Strategy(Record):
    """A strategy state in the trajectory study's terms."""

    model_config = ConfigDict(extra="forbid")

    k: Paradigm
    """Training paradigm."""
    d: DataSource
    """Data source: the given (curated) data, self-generated, or mixed."""
    g: StageStructure
    """Stage structure: from the base model, or from an earlier checkpoint."""


class StrategyChange(Record):
    """The part of a strategy a suggestion or decision changes (unset = unchanged)."""

    model_config = ConfigDict(extra="forbid")

    k: Paradigm | None = None
    """New training paradigm."""
    d: DataSource | None = None
    """New data source."""
    g: StageStructure | None = None
    """New stage structure."""

    def dimensions(self) -> dict[str, str]:
        return {name: value for name, value in (("k", self.k), ("d", self.d), ("g", self.g))
                if value is not None}


class JournalEntry(Record):
    """One line of `scaffold/journal.jsonl`."""

    version: int = SCAFFOLD_FORMAT
    """Format version."""
    seq: int
    """Position in the journal (1, 2, ...)."""
    id: str
    """`j0001`, ...; what later entries cite."""
    at: dt.datetime
    """When it was written (UTC)."""
    elapsed_s: float
    """Seconds of the agent's budget used when it was written."""
    kind: JournalKind
    """plan, observation, lesson, eval_result or eval_analysis."""
    author: Literal["agent", "evaluator", "harness"]
    """Who wrote it: the agent (through the tool), the evaluator agent, or the harness (the
    score of each finished submission)."""
    text: str
    """The entry itself (at most 8000 characters)."""
    strategy: Strategy | None = None
    """The strategy the entry is about, when the agent states one (plans especially)."""
    follows: list[str] = Field(default_factory=list)
    """Ids of evaluator suggestions (`s0002.1`) or entries this one acts on, as the agent says."""
    snapshot: str | None = None
    """Tag of the latest code snapshot (code-history.jsonl) when it was written."""
    code_digest: str | None = None
    """sha256 over the workspace's code/ files at writing time (ties the entry to the code)."""
    last_submission: str | None = None
    """The latest submission id at writing time (None: nothing submitted yet)."""


class Suggestion(Record):
    """One suggestion of the evaluator agent."""

    id: str
    """`<submission id>.<n>`, e.g. `s0002.1`."""
    level: Literal["execution", "strategy"]
    """execution: a change inside the current strategy (hyperparameters, bugs, formatting);
    strategy: a change of paradigm k, data source d or stage structure g."""
    text: str
    """What to do, in one or two sentences."""
    change: StrategyChange | None = None
    """Strategy-level: the dimensions it changes and to what."""
    target: str | None = None
    """Execution-level: the setting or code element it names (e.g. `learning_rate`)."""


class TrainOutput(Record):
    """The submitted model's answer to one train-visible item (what the evaluator sees)."""

    id: str
    """Item id in the train-visible data."""
    prompt: str
    """The item's chat as text (truncated)."""
    completion: str
    """The model's completion (truncated)."""
    score: float | None
    """The task's verdict on it (0–1), None when the task cannot score train items offline."""


class LLMCall(Record):
    """One request to the scaffold's LLM endpoint, as `scaffold/llm_calls.jsonl` logs it."""

    role: Literal["evaluator-expectation", "evaluator-diagnosis", "reviewer"]
    """Which part of the scaffold asked."""
    at: dt.datetime
    """When the request started (UTC)."""
    seconds: float
    """How long it took."""
    ok: bool
    """True when the reply parsed into what was asked for."""
    failure: Literal["unconfigured", "unreachable", "timeout", "http_error", "refused",
                     "malformed"] | None = None
    """Why it did not, when it did not."""
    error: str | None = None
    """A short description (never the key, never the prompt)."""
    input_tokens: int | None = None
    """Prompt tokens the endpoint reported."""
    output_tokens: int | None = None
    """Completion tokens the endpoint reported."""


class EvaluatorReport(Record):
    """One line of `scaffold/evaluations.jsonl`: the evaluator agent's view of one submission."""

    version: int = SCAFFOLD_FORMAT
    """Format version."""
    submission_id: str
    """The submission evaluated."""
    at: dt.datetime
    """When the report was finished (UTC)."""
    elapsed_s: float
    """Seconds of the agent's budget used then."""
    status: Literal["ok", "failed"]
    """failed: the evaluator's endpoint failed or answered out of format (see `error`)."""
    expectation: str | None = None
    """What the evaluator expected before it saw the score."""
    score: float | None = None
    """The grader's score it then received."""
    diagnosis: str | None = None
    """Its compact diagnosis."""
    suggestions: list[Suggestion] = Field(default_factory=list)
    """Typed suggestions; the agent decides what to do with them."""
    strategy_at: Strategy | None = None
    """The agent's strategy state (last stated) when the report was made."""
    outputs_shown: int = 0
    """Train-visible items whose outputs it saw."""
    error: str | None = None
    """Why it failed, when it did."""


class Plan(Record):
    """The fixed plan JSON the agent submits before its first training launch."""

    model_config = ConfigDict(extra="forbid")

    strategy: Strategy
    """Initial strategy k/d/g."""
    data: str
    """What data, from where, how much, how filtered."""
    budget_split: dict[str, float]
    """Share of the budget per phase (e.g. {"data": 0.2, "training": 0.6, "evaluation": 0.2});
    the shares sum to 1."""
    evaluation_plan: str
    """How the agent will measure progress before submitting."""


class PlanReview(Record):
    """The reviewer's answer, in a fixed JSON too."""

    model_config = ConfigDict(extra="forbid")

    verdict: Literal["approve", "revise"]
    """approve, or revise (submit a new plan)."""
    rationale: str
    """Why."""
    requested_changes: list[str] = Field(default_factory=list)
    """Revise: what to change."""


class PlanEvent(Record):
    """One line of `scaffold/plans.jsonl`: a plan the agent submitted, or its review."""

    version: int = SCAFFOLD_FORMAT
    """Format version."""
    plan_id: str
    """`p01`, `p02`, ..."""
    event: Literal["submitted", "reviewed", "review_failed"]
    """What happened."""
    at: dt.datetime
    """When (UTC)."""
    elapsed_s: float
    """Seconds of the agent's budget used then."""
    plan: Plan | None = None
    """submitted: the plan."""
    review: PlanReview | None = None
    """reviewed: the review."""
    reviewer: str | None = None
    """reviewed: `llm:<model>` or `person`."""
    error: str | None = None
    """review_failed: why (the run goes on; the plan counts as unreviewed)."""


class Decision(Record):
    """The agent's answer at a revision checkpoint."""

    model_config = ConfigDict(extra="forbid")

    action: Literal["keep", "switch"]
    """keep the current strategy, or switch."""
    reason: str
    """Why (required either way)."""
    strategy: Strategy | None = None
    """switch: the new strategy k/d/g (required)."""


class CheckpointEvent(Record):
    """One line of `scaffold/checkpoints.jsonl`: a checkpoint opened, or the agent's decision."""

    version: int = SCAFFOLD_FORMAT
    """Format version."""
    checkpoint_id: str
    """`c01`, `c02`, ..."""
    event: Literal["opened", "decided"]
    """opened by the harness; decided by the agent."""
    at: dt.datetime
    """When (UTC)."""
    elapsed_s: float
    """Seconds of the agent's budget used then."""
    triggers: list[str] = Field(default_factory=list)
    """opened: why, e.g. `every 2 submissions`, `plateau of 3 submissions`, `50% of budget`."""
    after_submission: str | None = None
    """opened: the latest finished submission then."""
    decision: Decision | None = None
    """decided: the decision."""


class ScaffoldNotice(Record):
    """What the scaffold adds to a /submit reply or a submission's poll result."""

    evaluator: EvaluatorReport | None = None
    """The evaluator's report on this submission (asked with `"evaluate": true`), once ready."""
    evaluator_status: Literal["not_requested", "pending", "done"] = "not_requested"
    """pending: poll GET /submissions/{id} (or /scaffold/evaluations/{id}) again."""
    pending_decision: CheckpointEvent | None = None
    """A revision checkpoint waiting for your decision (POST /scaffold/decision)."""
    plan_status: PlanStatus | None = None
    """Plan review: the state of your latest plan (None: plan review is off)."""


# ---- the analysis of a scaffold run (`scaffold.json`) ------------------------------------------

class SuggestionOutcome(Record):
    """One evaluator suggestion and whether the agent's later experiments followed it."""

    id: str
    """Suggestion id (`s0002.1`)."""
    level: Literal["execution", "strategy"]
    """Its type."""
    elapsed_s: float
    """When the agent received it (budget seconds)."""
    text: str
    """The suggestion."""
    change: dict[str, str] = Field(default_factory=dict)
    """Strategy-level: the suggested k/d/g values."""
    target: str | None = None
    """Execution-level: the setting or code element named."""
    adopted: bool
    """Strategy: a later experiment has the suggested values (and they differ from the state
    then). Execution: a later experiment keeps the strategy state and the code changed since
    (in a line naming the target, when one is given)."""
    evidence: str | None = None
    """The experiment (and code line) that shows adoption, or why it is not adopted."""
    claimed: bool = False
    """A later journal entry of the agent cites it (`follows`)."""


class LevelAdoption(Record):
    """Adoption counts of one suggestion level."""

    n: int
    """Suggestions of this level."""
    adopted: int
    """Of which adopted."""
    rate: float | None
    """adopted / n (None when n is 0)."""


class PlanOutcome(Record):
    """One plan and its review."""

    plan_id: str
    """`p01`, ..."""
    submitted_s: float
    """When it was submitted (budget seconds)."""
    strategy: Strategy
    """The plan's strategy."""
    outcome: Literal["approve", "revise", "pending", "review_failed"]
    """The review's verdict, pending (never reviewed), or review_failed."""
    reviewer: str | None = None
    """`llm:<model>` or `person`."""
    rationale: str | None = None
    """The reviewer's rationale, or the failure."""


class CheckpointOutcome(Record):
    """One revision checkpoint, the decision, and whether behaviour followed it."""

    checkpoint_id: str
    """`c01`, ..."""
    triggers: list[str]
    """Why it opened."""
    opened_s: float
    """When (budget seconds)."""
    decided_s: float | None = None
    """When the agent decided (None: never answered)."""
    action: Literal["keep", "switch"] | None = None
    """The decision."""
    reason: str | None = None
    """Its reason."""
    strategy: Strategy | None = None
    """switch: the new strategy."""
    followed: bool | None = None
    """switch: a later experiment has the new strategy; keep: the next experiment keeps the
    strategy then (None: no later experiment to tell)."""
    evidence: str | None = None
    """The experiment it was judged on."""


class ScaffoldAnalysis(Record):
    """`scaffold.json` of a scaffold run (written beside analysis.json)."""

    version: int = SCAFFOLD_FORMAT
    """Format version."""
    run_id: str
    """The run."""
    components: list[Component]
    """Enabled components."""
    journal_by_kind: dict[str, int] = Field(default_factory=dict)
    """Journal entries the agent wrote, per kind."""
    journal_by_author: dict[str, int] = Field(default_factory=dict)
    """Journal entries per author (agent, evaluator, harness)."""
    evaluations: int = 0
    """Evaluator reports (ok or failed)."""
    evaluation_failures: dict[str, int] = Field(default_factory=dict)
    """Failed scaffold LLM calls per failure kind (timeout, refused, malformed, ...)."""
    suggestions: list[SuggestionOutcome] = Field(default_factory=list)
    """Every suggestion with its adoption."""
    adoption: dict[str, LevelAdoption] = Field(default_factory=dict)
    """Per level (execution, strategy): counts and rate."""
    adoption_asymmetry: float | None = None
    """Execution adoption rate − strategy adoption rate (the trajectory study's Figure 4 gap)."""
    strategy_adoption_after_training: LevelAdoption | None = None
    """Strategy suggestions made after the first training launch, and their adoption."""
    plans: list[PlanOutcome] = Field(default_factory=list)
    """Every plan and its review."""
    approved_at_s: float | None = None
    """When a plan was first approved (None: never)."""
    first_training_s: float | None = None
    """When the first training experiment started (None: none detected)."""
    trained_before_approval: bool | None = None
    """A training experiment started before any approval (None: plan review off or no
    training)."""
    experiments_before_approval: int = 0
    """Training experiments started before approval."""
    plan_redirected: bool | None = None
    """The approved plan's strategy differs from the first one submitted."""
    checkpoints: list[CheckpointOutcome] = Field(default_factory=list)
    """Every revision checkpoint."""
    tokens: int | None = None
    """Inference tokens (input + output) of this run."""
    baseline_tokens: int | None = None
    """The same of the autonomous baseline run (config.scaffold.baseline_run)."""
    token_ratio: float | None = None
    """tokens / baseline_tokens."""
    journal_seconds: float = 0.0
    """Agent time in commands that wrote or read the journal (or other scaffold tools)."""
    skill_seconds: float = 0.0
    """Agent time in commands that read or wrote skills."""
    skill_reads: int = 0
    """Reads of skills: the skill library's own count when it ran, else commands naming
    skills/.../SKILL.md."""
    skill_consults: dict[str, int] = Field(default_factory=dict)
    """Skill → consults, as the skill library counts them (a2rl.extensions.scaffold._usage)."""
    created_skills: list[str] = Field(default_factory=list)
    """Skills the agent wrote."""
    scaffold_time_share: float | None = None
    """(journal_seconds + skill_seconds) / agent time."""


# ---- the run option ----------------------------------------------------------------------

def parse_components(text: str) -> list[str]:
    """`journal,skills,...` → the component list (`all` = every one; `none` or empty = off)."""
    names = [n.strip() for n in text.split(",") if n.strip()]
    if names in (["all"],):
        return list(COMPONENTS)
    if names in ([], ["none"]):
        return []
    unknown = [n for n in names if n not in COMPONENTS]
    if unknown:
        raise A2RLError(f"unknown scaffold component(s): {', '.join(unknown)}",
                        f"choose from {', '.join(COMPONENTS)} (comma-separated), or `all`")
    return [c for c in COMPONENTS if c in names]


def scaffold_config(components: str, options: dict[str, str]) -> ScaffoldConfig:
    """The ScaffoldConfig from `--scaffold` and `--scaffold-opt key=value` pairs."""
    fields = ScaffoldConfig.model_fields
    data: dict[str, object] = {"components": parse_components(components)}
    for key, value in options.items():
        if key not in fields or key == "components":
            raise A2RLError(f"unknown --scaffold-opt {key!r}",
                            "choose from " + ", ".join(k for k in fields if k != "components"))
        if key == "revision_fractions":
            data[key] = [float(v) for v in value.split(",") if v.strip()]
        elif value.lower() in ("none", "off", "") and key.startswith("revision_"):
            data[key] = None
        else:
            data[key] = value
    try:
        return ScaffoldConfig.model_validate(data)
    except ValueError as exc:
        raise A2RLError(f"bad --scaffold-opt: {exc}".splitlines()[0] + " " + str(exc)[:300],
                        "see `a2rl schema run` (config.scaffold) for the options") from exc
