"""`run.json`: the complete, self-describing record of one run (a2rl's own or imported)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, model_validator

from a2rl.schema._analysis import Finding
from a2rl.schema._base import Record
from a2rl.schema._engine import EngineInfo, EngineRequest
from a2rl.schema._grader import (
    BaselineRecord,
    BestSoFar,
    FinalMode,
    FinalResult,
    KeepArtifacts,
    SubmissionRecord,
)
from a2rl.schema._option import Check, Duration, RunOption, option_problem, run_options
from a2rl.schema._scaffold import ScaffoldConfig

RUN_FORMAT = 1

ExitReason = Literal["agent_exited", "budget_exhausted", "interrupted", "terminated",
                     "harness_error", "harness_died", "cost_limit", "stopped"]


class ImportInfo(Record):
    """Where an imported run came from (`a2rl import`): another harness made it, so parts of
    a2rl's own record are missing or reconstructed."""

    harness: Literal["posttrainbench", "rdagent", "harbor"]
    """The harness that made the run."""
    source: str
    """The folder it was imported from (absolute path at import time)."""
    imported_at: dt.datetime
    """When `a2rl import` ran (UTC)."""
    agent_format: str | None = None
    """Which transcript parser read the agent's trace (None: no trace was readable)."""
    score_scale: str | None = None
    """How the harness's score was mapped onto a2rl's 0–100 scale."""
    unrecovered: list[str] = Field(default_factory=list)
    """What a2rl records that this harness does not provide (so the analysis lacks it)."""
    reconstructed: list[str] = Field(default_factory=list)
    """What was rebuilt from other evidence, and from which."""
    refused: list[str] = Field(default_factory=list)
    """Items of the source folder the import would not read, each `path: reason` (symbolic
    links, FIFOs, devices, sockets, files over the size limit, odd names); the run folder's
    import_manifest.json lists these and every file read."""
    harness_notes: dict[str, str] = Field(default_factory=dict)
    """Verdicts the harness itself wrote (e.g. PostTrainBench's contamination and
    disallowed-model judgements), verbatim and truncated; a2rl's own audit runs separately."""
    verdicts: list[Finding] = Field(default_factory=list)
    """The harness's own audit verdicts read as findings (basis `posttrainbench`: one per
    question each of its judges answered, with its justification), shown beside a2rl's."""


class StudyRef(Record):
    """The study a run joined (`a2rl run --study`, every cell of `a2rl sweep`): its held-out
    seeds and test-item options are the same on every machine. Never the seed itself."""

    name: str
    """The study's name (its file is `$A2RL_HOME/studies/<name>.json` or the sweep's)."""
    id: str
    """Random public id of the study (two studies of the same name differ in it)."""
    seeded: list[str] = Field(default_factory=list)
    """`task.option` names whose value came from the study's secret (held-out seeds)."""
    fixed_options: dict[str, Any] = Field(default_factory=dict)
    """Public task options the study fixes (`task.option` -> value)."""


class TrackingConfig(Record):
    """Where a run is logged while it goes (--log-to; a sweep's `log:`)."""

    to: Literal["wandb", "mlflow"]
    """Which tracker."""
    project: str | None = None
    """W&B project / MLflow experiment name (None: $WANDB_PROJECT / $MLFLOW_EXPERIMENT_NAME,
    else `a2rl`)."""
    entity: str | None = None
    """W&B entity (team or user; None: $WANDB_ENTITY, else W&B's default)."""
    group: str | None = None
    """W&B group / MLflow tag `group` (None: $WANDB_RUN_GROUP; a sweep sets its name)."""
    tags: list[str] = Field(default_factory=list)
    """W&B tags / MLflow tags (the task, agent and driver are always added)."""
    name: str | None = None
    """The tracked run's display name (None: the a2rl run id)."""
    tracking_uri: str | None = None
    """MLflow tracking URI (None: MLflow's default, ./mlruns)."""
    mode: Literal["online", "offline"] | None = None
    """W&B mode (offline: written locally, `wandb sync` later; None: W&B's own default)."""
    phase_every_s: float = Field(default=30.0, gt=0)
    """How often the agent's phase is read while it works (seconds); a change is logged."""


class RunConfig(Record):
    """What the user asked for (`a2rl run` options). Each field with a `RunOption` is a run
    option: `a2rl run`'s options, the sweep matrix's `run:` keys and the docs' option table are
    made from these declarations (`a2rl.schema._option`)."""


    task: Annotated[str, RunOption(
        "--task", "Task name (a2rl tasks); several, comma-separated, with --mode multi.",
        form="own", per_cell=True)] = "arith"
    """Registered task name."""
    tasks: list[str] = Field(default_factory=list)
    """Mode `multi` only: every task of the run (this record's `task` is one of them)."""
    task_params: Annotated[dict[str, Any], RunOption(
        "--task-opt", "key=value (JSON values) for the task; repeatable.", form="json-pairs",
        per_cell=True)] = Field(default_factory=dict)
    """Task options given with --task-opt (defaults filled in under `task.params`)."""
    agent: Annotated[str, RunOption("--agent", "Agent name, or cmd:'<shell command>'.",
                                    per_cell=True)] = "reference"
    """Agent name or `cmd:<shell command>`."""
    agent_options: Annotated[dict[str, str], RunOption(
        "--agent-opt", "key=value for the agent; repeatable.", form="pairs", per_cell=True)
    ] = Field(default_factory=dict)
    """--agent-opt key=value pairs."""
    model: Annotated[str, RunOption("--model", "Embedded alias, local HF folder or hub id.",
                                    per_cell=True)] = "smollm2-135m"
    """--model as given: embedded alias, local folder or hub id."""
    mode: Annotated[str, RunOption("--mode", "free, sft-only, rl-oriented or multi (several "
                                   "tasks at once).", per_cell=True)] = "free"
    """Operating mode: free, sft-only, rl-oriented or multi."""
    budget_s: Annotated[Duration, RunOption(
        "--budget", "The agent's time limit on the grader's clock: 12h, 30m, 90s or seconds.",
        form="duration", per_cell=True,
        check=Check(lambda v: v > 0, "must be positive (got {value:g} s)",
                    "pass e.g. --budget 12h, --budget 30m or --budget 900"))] = 12 * 3600.0
    """The agent's budget in seconds on the grader's clock (its time limit:
    `agent_time_limit_s`)."""
    sandbox: Annotated[str, RunOption(
        "--sandbox", "Sandbox backend: bwrap, podman, none (unsandboxed, recorded), or one an "
        "installed plug-in registers.")] = "bwrap"
    """The sandbox backend (--sandbox); none = --no-sandbox."""
    eval_timeout_s: Annotated[Duration, RunOption(
        "--eval-timeout", "Per-evaluation time limit.", form="duration",
        check=Check(lambda v: v > 0, "must be positive (got {value:g} s)",
                    "e.g. --eval-timeout 1h (the limit of one evaluation)"))] = 3600.0
    """Per-evaluation time limit."""
    grace_s: Annotated[Duration, RunOption(
        "--grace", "Time between SIGTERM and SIGKILL when the budget ends.", form="duration",
        check=Check(lambda v: v >= 0, "must be 0 or more seconds (got {value:g})",
                    "e.g. --grace 30 (seconds between SIGTERM and SIGKILL)"))] = 30.0
    """Seconds between SIGTERM and SIGKILL when the budget ends."""
    port: Annotated[int, RunOption(
        "--port", "Grader port (0 = pick a free one).", per_cell=True,
        check=Check(lambda v: 0 <= v <= 65535, "{value} is not a TCP port",
                    "give a port between 1024 and 65535, or leave it out (0 = a free one)"))
    ] = 0
    """Grader port (0 = a free one)."""
    runs_dir: Annotated[str, RunOption(
        "--runs-dir", "Folder holding runs/<task>/<run_id>.", form="own", cli_type=Path | None,
        per_cell=True, default_text="./runs or $A2RL_RUNS_DIR")]
    """Parent folder of runs/<task>/<run_id>/."""
    snapshot_every_s: Annotated[Duration, RunOption(
        "--snapshot-every", "Time between code snapshots (each submission also takes one).",
        form="duration", check=Check(lambda v: v > 0, "must be positive (got {value:g} s)",
                                     "e.g. --snapshot-every 5m"))] = 300.0
    """Period of code snapshots between submissions (each submission also takes one)."""
    exec_trace: Annotated[bool, RunOption(
        "--exec-trace", "Record every program the agent runs (strace; skipped with a note "
        "when strace is absent).")] = True
    """Record every program the agent runs (strace); skipped with a note when strace is absent."""
    driver: Annotated[str | None, RunOption(
        "--driver", "LLM driving a CLI agent (e.g. claude-sonnet-4-5, gpt-5-codex).",
        per_cell=True, default_text="the agent's own")] = None
    """--driver: the LLM driving a CLI agent (None: the launcher's default)."""
    driver_base_url: Annotated[str | None, RunOption(
        "--driver-base-url", "Compatible endpoint for the driver instead of the provider's "
        "own.", per_cell=True)] = None
    """--driver-base-url: a compatible endpoint used instead of the provider's own."""
    network: Annotated[Literal["allowlist", "full", "none"], RunOption(
        "--network", "Sandbox network: allowlist (own namespace; egress only to the agent's "
        "API host and --allow-host, through a recording proxy), none (no egress), or full "
        "(the host's network; flagged).", cli_type=str | None,
        default_text="allowlist (full without a sandbox)")] = "allowlist"
    """Sandbox network: allowlist (own namespace; the grader and a loopback driver relayed in;
    egress only to allowed hosts through a recording proxy), none (no egress at all), or full
    (the host's network, loopback services included: flagged in every report)."""
    allow_hosts: Annotated[list[str], RunOption(
        "--allow-host", "Network allowlist: also allow this host (host, host:port or "
        "*.domain); repeatable.", cli_type=list[str] | None)] = Field(default_factory=list)
    """--allow-host entries added to the derived allow-list (network allowlist)."""
    agent_procs: Annotated[int | None, RunOption(
        "--agent-procs", "Most processes and threads the agent may have.",
        default_text="4096")] = Field(default=None, ge=16)
    """--agent-procs: most processes and threads the agent may have (None: 4096)."""
    agent_memory: Annotated[str | None, RunOption(
        "--agent-memory", "The agent's memory limit, e.g. 64G.",
        default_text="twice the physical memory as address space; unlimited with GPUs")] = None
    """--agent-memory: the agent's memory limit, e.g. 64G (None: `a2rl.sandbox._limits`'s
    default: twice the physical memory as address space, unlimited with GPUs)."""
    agent_file_size: Annotated[str | None, RunOption(
        "--agent-file-size", "Largest file the agent may write, e.g. 500G.",
        default_text="256G")] = None
    """--agent-file-size: largest file the agent may write, e.g. 500G (None: 256G)."""
    final: Annotated[FinalMode, RunOption(
        "--final", "off: the result is the best submission; hidden: feedback from a dev "
        "split, one final model scored once on a hidden test split (the headline).",
        cli_type=str)] = "off"
    """--final: off (the run's result is its best submission), or hidden (feedback from a dev
    split; one final model scored once on a hidden test split is the headline)."""
    test_fraction: Annotated[float, RunOption(
        "--test-fraction", "With --final hidden: share of the held-out items in the test "
        "split.")] = Field(default=0.5, gt=0.0, lt=1.0)
    """--test-fraction: share of the held-out items in the hidden test split (final hidden)."""
    keep_artifacts: Annotated[KeepArtifacts, RunOption(
        "--keep-artifacts", "Evaluated snapshots kept on disk: all, scored, or best.",
        cli_type=str)] = "scored"
    """--keep-artifacts: which evaluated snapshots stay on disk (all, scored, best)."""
    max_submissions: Annotated[int | None, RunOption(
        "--max-submissions", "Cap on submissions accepted for evaluation.")
    ] = Field(default=None, ge=1)
    """--max-submissions: cap on submissions accepted for evaluation (None: no cap)."""
    min_interval_s: Annotated[Duration | None, RunOption(
        "--min-interval", "Least time between two accepted submissions (90s, 5m, …).",
        form="duration")] = Field(default=None, ge=0)
    """--min-interval: least seconds between two accepted submissions (None: no limit)."""
    scaffold: Annotated[ScaffoldConfig | None, RunOption(
        "--scaffold", "Experience-driven scaffold components, comma-separated: journal, "
        "skills, evaluator, plan-review, revision (or all). Off by default (the autonomous "
        "protocol).", form="own", cli_type=str | None, per_cell=True)] = None
    """--scaffold: the experience-driven scaffold's components and options (None: off, the
    autonomous protocol)."""
    agent_dirs: Annotated[list[str], RunOption(
        "--agent-dir", "Host folder the agent needs (its scripts, prompts), mounted read-only "
        "in the sandbox; repeatable. The folder of a script named in cmd:'…' is mounted "
        "automatically.", form="paths", cli_type=list[Path] | None)] = Field(default_factory=list)
    """--agent-dir: host folders mounted read-only into the sandbox (absolute paths)."""
    study: Annotated[StudyRef | None, RunOption(
        "--study", "Join a study (name under $A2RL_HOME/studies, or its file): its held-out "
        "seeds and grader key, as on every machine.", form="own", cli_type=str | None,
        per_cell=True)] = None
    """--study / a sweep cell: the study whose held-out seeds and grader key the run used."""
    engine: Annotated[EngineRequest, RunOption(
        "--engine", "Inference engine: auto (vLLM where installed and working, else "
        "transformers), transformers or vllm.", cli_type=str)] = "auto"
    """--engine: the inference engine of the evaluations (auto: vLLM where it is installed and
    works, else transformers); the one that ran is `RunRecord.engine`."""
    eval_gpus: Annotated[str | None, RunOption(
        "--eval-gpus", "CUDA_VISIBLE_DEVICES of the evaluation (e.g. 1, so it never shares "
        "the agent's GPU 0).", default_text="inherited")] = None
    """--eval-gpus: CUDA_VISIBLE_DEVICES of the evaluation child (None: inherited)."""
    vllm_memory: Annotated[float | None, RunOption(
        "--vllm-memory", "Share of GPU memory (RAM on CPU) vLLM reserves, 0-1.",
        default_text="0.85 on a GPU; 4 GiB on the CPU")] = Field(default=None, gt=0.0, le=1.0)
    """--vllm-memory: share of GPU memory (of RAM on CPU) vLLM reserves (None: its default)."""
    cost_limit_usd: Annotated[float | None, RunOption(
        "--cost-limit", "Stop the agent (exit reason cost_limit) once its recorded LLM spend "
        "reaches this many US dollars (CLI agents).")] = Field(default=None, gt=0)
    """--cost-limit: the agent is stopped (exit reason `cost_limit`) once its recorded LLM spend
    reaches this many US dollars (None: no limit)."""
    tracking: Annotated[TrackingConfig | None, RunOption(
        "--log-to", "Also log the run to wandb or mlflow (when installed).", form="own",
        cli_type=str | None)] = None
    """--log-to: the experiment tracker that receives the baseline, each scored submission and
    the result while the run goes (None: none)."""
    extensions: Annotated[dict[str, dict[str, Any]], RunOption(
        "--extension", "A run extension an installed plug-in registers, with its options: NAME "
        "or NAME:key=value,key=value (JSON values); repeatable.", form="own",
        cli_type=list[str] | None)] = Field(default_factory=dict)
    """Third-party run extensions (entry points of the `a2rl.extensions` group) this run uses,
    each name with its options (empty: only the built-in ones, which their own fields enable)."""

    @model_validator(mode="after")
    def _unsandboxed_network(self) -> RunConfig:
        # Without a sandbox there is no network namespace to police: the default becomes
        # `full` (flagged); an explicit allowlist/none is refused when the run starts.
        if self.sandbox == "none" and "network" not in self.model_fields_set:
            self.network = "full"
        return self

    @property
    def agent_time_limit_s(self) -> float:
        """The agent's time limit on the grader's clock, in seconds: its budget. When it ends
        the agent gets SIGTERM, and SIGKILL `grace_s` later."""
        return self.budget_s

    def check_new_run(self) -> None:
        """Raise the first option a new run cannot start with (each option's `Check`), named
        with its fix; an imported run's record need not pass."""
        for name, (_info, option) in run_options(RunConfig).items():
            problem = option_problem(getattr(self, name), option)
            if problem is not None:
                raise problem


class TaskInfo(Record):
    """The task as it was when the run started."""

    name: str
    """Registered task name."""
    version: str
    """Task version (a change means scores are not comparable)."""
    level: str
    """L1, L2 or L3 (static rule-based, static judge-based, interactive)."""
    reward_kind: str
    """How the task scores (exact match, unit tests, judge, environment reward)."""
    params: dict[str, Any]
    """All task options after defaults, with every secret one (the held-out seed) replaced by
    a keyed fingerprint (`hmac:…`): a reader of the record cannot regenerate the test set."""
    fingerprint: str
    """Identity of the evaluation (task, version, options, held-out items), keyed with the
    installation's grader key so it cannot be inverted to the seed."""
    scorer: str | None = None
    """What the score is: the reference scorer it reproduces and its version (e.g. lm-eval
    0.4.13 gsm8k exact_match, strict-match), or a2rl's own."""
    n_heldout: int
    """Held-out items the grader scores on."""


class ModelInfo(Record):
    """The base model M0."""

    spec: str
    """--model as given."""
    source: str
    """embedded, local or hub."""
    path: str
    """Resolved checkpoint the workspace copy was made from."""
    content_hash: str
    """Hash of the base weights; submissions with this hash are baseline copies."""
    model_type: str
    """`model_type` of its config.json."""


class Timings(Record):
    """Wall time of each stage of the run, in seconds."""

    setup_s: float = 0.0
    """Model resolution + workspace building."""
    baseline_s: float = 0.0
    """Baseline scoring (not charged to the agent)."""
    agent_s: float = 0.0
    """From the agent's start to its exit (what the budget measures)."""
    drain_s: float = 0.0
    """Waiting for evaluations still in flight after the agent stopped."""
    total_s: float = 0.0
    """From `a2rl run` to the final record."""


class RunCost(Record):
    """What a run spent (`RunRecord.cost`)."""

    input_tokens: int | None = None
    """LLM prompt tokens of the agent (cached ones included; None: not known)."""
    output_tokens: int | None = None
    """LLM completion tokens of the agent (reasoning included)."""
    usd: float | None = None
    """The agent's LLM spend in US dollars (None: not known)."""
    usd_source: str | None = None
    """Where `usd` comes from: `cli` (the CLI's own total) or `prices:<date>` (the dated price
    table in a2rl.schema._prices applied to the token counts)."""
    gpus: int = 0
    """GPUs visible to the agent (0: CPU only)."""
    agent_gpu_hours: float = 0.0
    """GPUs × the agent's wall time, in hours."""
    eval_gpu_hours: float = 0.0
    """GPU time of the evaluations (baseline not included), in hours."""
    gpu_util_mean: float | None = None
    """Mean GPU utilisation (0–100) sampled through NVML while the agent ran (None: no NVML)."""
    gpu_mem_peak_mb: float | None = None
    """Peak GPU memory used, MiB, sampled through NVML (None: no NVML)."""
    gpu_note: str | None = None
    """Why there are no GPU samples (no NVML, no GPU), said plainly."""
    peak_rss_mb: float | None = None
    """Peak resident memory of the agent's processes, MiB."""
    peak_rss_source: str | None = None
    """How `peak_rss_mb` was measured: `cgroup memory.peak` (the sandbox's own cgroup), `sampled
    RSS` (the agent's process tree, summed at each sample) or `getrusage floor` (the largest
    single child of the harness: a lower bound)."""
    disk_bytes: int | None = None
    """Bytes the run folder holds at the close (shared blobs counted once)."""

    @property
    def gpu_hours(self) -> float:
        return self.agent_gpu_hours + self.eval_gpu_hours


class Provenance(Record):
    """Versions and fingerprints as the run saw them (`RunRecord.provenance`)."""

    a2rl_version: str | None = None
    """a2rl's version."""
    agent_cli_version: str | None = None
    """The agent CLI's version as it answered inside the sandbox."""
    driver_model: str | None = None
    """The driver's model id as the provider reported it (may differ from --driver)."""
    task_data_sha256: str | None = None
    """Fingerprint of the task's train-visible and held-out data."""


class ProcessProof(Record):
    """What identifies a process beyond its pid (pids are reused): `a2rl runs repair` signals
    a recorded process only while all of these still match."""

    pid: int
    """The process id (its process group leader for the agent's group)."""
    start_ticks: int
    """Its start time, field 22 of /proc/<pid>/stat (clock ticks after boot)."""
    boot_id: str
    """/proc/sys/kernel/random/boot_id when it was recorded (start_ticks count from a boot)."""
    cmdline_sha256: str
    """SHA-256 of /proc/<pid>/cmdline (the command line itself may hold a key: never kept)."""


class RunRecord(Record):
    """`run.json` in runs/<task>/<run_id>/ (outside the workspace). Rewritten atomically at each
    stage; the ledger next to it is the append-only source of truth for submissions."""


    version: int = RUN_FORMAT
    """Format version of this record (files without it are version 1)."""

    run_id: str
    """Unique id of the run (the folder name)."""
    status: Literal["setting_up", "running", "finished", "failed", "stopped"]
    """Stage of the run; `finished` once the final record is written; `stopped` when the
    operator stopped it on purpose (a sweep's SIGTERM): not a failure, resumed by the sweep."""
    created_at: dt.datetime
    """When `a2rl run` started (UTC)."""
    ended_at: dt.datetime | None = None
    """When the run ended (UTC)."""
    config: RunConfig
    """What the user asked for."""
    versions: dict[str, str]
    """a2rl, Python and the ML stack's package versions."""
    task: TaskInfo | None = None
    """The task (None until it was resolved)."""
    model: ModelInfo | None = None
    """The base model (None until it was resolved)."""
    sandboxed: bool
    """False means the agent ran without OS isolation (--no-sandbox): flag the result."""
    agent_command: str | None = None
    """The command line started inside the sandbox (secrets never appear in it)."""
    agent_package: str | None = None
    """The CLI and its pinned version (e.g. `@openai/codex@0.171.0`) for CLI agents."""
    agent_events: int | None = None
    """Events parsed from the CLI's transcript into agent/events.jsonl (None: no parser)."""
    exec_traced: bool = False
    """True when agent/exec.jsonl lists every program the agent ran (strace)."""
    allowed_hosts: list[str] = Field(default_factory=list)
    """Network allowlist: the hosts the egress proxy let through (agent/network.jsonl logs
    every connection attempt)."""
    network_attempts: dict[str, int] = Field(default_factory=dict)
    """Network allowlist: connection attempts through the proxy, {"allowed": n, "denied": m}."""
    flags: list[str] = Field(default_factory=list)
    """What weakens the result's isolation: `unsandboxed`, `network_full`."""
    harness_pid: int | None = None
    """The a2rl process of this run (for `a2rl runs repair` after it died)."""
    agent_pgid: int | None = None
    """The agent's process group (killed by `a2rl runs repair` if it outlived the harness)."""
    agent_proof: ProcessProof | None = None
    """The agent group leader's identity when it started: repair signals `agent_pgid` only
    while its leader still matches it."""
    process_mark_sha256: str | None = None
    """SHA-256 of the mark in the environment of every process the harness started: repair
    signals only processes that carry it."""
    repaired_at: dt.datetime | None = None
    """When `a2rl runs repair` closed this record after the harness died."""
    grader_url: str | None = None
    """Where the agent reached the grader."""
    baseline: BaselineRecord | None = None
    """The base model's score on the same evaluation."""
    final: FinalResult | None = None
    """Hidden-final runs: the final model's one score on the hidden test split, the run's
    headline (`best` is then the best on the dev split the agent got feedback from)."""
    submissions: list[SubmissionRecord] = Field(default_factory=list)
    """Final state of every submission (copied from ledger.jsonl at the end)."""
    best: BestSoFar | None = None
    """Best valid submission; the run's result."""
    improvement: float | None = None
    """best − baseline."""
    agent_started_at: dt.datetime | None = None
    """When the agent's budget clock started (UTC)."""
    exit_reason: ExitReason | None = None
    """Why the agent stopped."""
    agent_exit_code: int | None = None
    """The agent's exit status."""
    timings: Timings = Field(default_factory=Timings)
    """Wall time per stage."""
    error: str | None = None
    """Why the run failed, when it did."""
    imported: ImportInfo | None = None
    """Set when another harness made the run and `a2rl import` brought it in."""
    cost: RunCost | None = None
    """What the run spent: LLM tokens and dollars, GPU-hours, peak memory and disk."""
    provenance: Provenance | None = None
    """What makes the run reproducible beyond its config (CLI version as it ran, the driver's
    model id as the provider reported it, the task's data fingerprint)."""
    engine: EngineInfo | None = None
    """The engine every evaluation of the run generated with (resolved once at the start):
    name, package and version, the interpreter and venv it ran in, device and memory share."""
