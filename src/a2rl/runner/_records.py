"""`run.json`: the complete, self-describing record of one run."""

from __future__ import annotations

import datetime as dt
from typing import Any, Literal

from pydantic import BaseModel, Field, model_validator

from a2rl.grader import BaselineRecord, BestSoFar, SubmissionRecord

ExitReason = Literal["agent_exited", "budget_exhausted", "interrupted", "terminated",
                     "harness_error", "harness_died"]


class RunConfig(BaseModel):
    """What the user asked for (`a2rl run` options)."""

    task: str
    """Registered task name."""
    tasks: list[str] = Field(default_factory=list)
    """Mode `multi` only: every task of the run (this record's `task` is one of them)."""
    task_params: dict[str, Any] = Field(default_factory=dict)
    """Task options given with --task-opt (defaults filled in under `task.params`)."""
    agent: str
    """Agent name or `cmd:<shell command>`."""
    agent_options: dict[str, str] = Field(default_factory=dict)
    """--agent-opt key=value pairs."""
    model: str
    """--model as given: embedded alias, local folder or hub id."""
    mode: str
    """Operating mode: free, sft-only, rl-oriented or multi."""
    budget_s: float
    """The agent's budget in seconds on the grader's clock."""
    sandbox: Literal["bwrap", "podman", "none"]
    """The sandbox backend (--sandbox); none = --no-sandbox."""
    eval_timeout_s: float
    """Per-evaluation time limit."""
    grace_s: float
    """Seconds between SIGTERM and SIGKILL when the budget ends."""
    port: int
    """Grader port (0 = a free one)."""
    runs_dir: str
    """Parent folder of runs/<task>/<run_id>/."""
    snapshot_every_s: float = 300.0
    """Period of code snapshots between submissions (each submission also takes one)."""
    exec_trace: bool = True
    """Record every program the agent runs (strace); skipped with a note when strace is absent."""
    driver: str | None = None
    """--driver: the LLM driving a CLI agent (None: the launcher's default)."""
    driver_base_url: str | None = None
    """--driver-base-url: a compatible endpoint used instead of the provider's own."""
    network: Literal["allowlist", "full", "none"] = "allowlist"
    """Sandbox network: allowlist (own namespace; the grader and a loopback driver relayed in;
    egress only to allowed hosts through a recording proxy), none (no egress at all), or full
    (the host's network, loopback services included: flagged in every report)."""
    allow_hosts: list[str] = Field(default_factory=list)
    """--allow-host entries added to the derived allow-list (network allowlist)."""

    @model_validator(mode="after")
    def _unsandboxed_network(self) -> RunConfig:
        # Without a sandbox there is no network namespace to police: the default becomes
        # `full` (flagged); an explicit allowlist/none is refused when the run starts.
        if self.sandbox == "none" and "network" not in self.model_fields_set:
            self.network = "full"
        return self


class TaskInfo(BaseModel):
    name: str
    version: str
    level: str
    reward_kind: str
    params: dict[str, Any]
    """All task options after defaults (the held-out seed included: run.json is outside the
    workspace)."""
    fingerprint: str
    """Identity of the evaluation (task, version, options, held-out items)."""
    n_heldout: int


class ModelInfo(BaseModel):
    spec: str
    source: str
    """embedded, local or hub."""
    path: str
    """Resolved checkpoint the workspace copy was made from."""
    content_hash: str
    """Hash of the base weights; submissions with this hash are baseline copies."""
    model_type: str


class Timings(BaseModel):
    setup_s: float = 0.0
    """Model resolution + workspace building."""
    baseline_s: float = 0.0
    """Baseline scoring (not charged to the agent)."""
    agent_s: float = 0.0
    """From the agent's start to its exit (what the budget measures)."""
    drain_s: float = 0.0
    """Waiting for evaluations still in flight after the agent stopped."""
    total_s: float = 0.0


class RunRecord(BaseModel):
    """`run.json` in runs/<task>/<run_id>/ (outside the workspace). Rewritten atomically at each
    stage; the ledger next to it is the append-only source of truth for submissions."""

    run_id: str
    status: Literal["setting_up", "running", "finished", "failed"]
    created_at: dt.datetime
    ended_at: dt.datetime | None = None
    config: RunConfig
    versions: dict[str, str]
    """a2rl, Python and the ML stack's package versions."""
    task: TaskInfo | None = None
    model: ModelInfo | None = None
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
    repaired_at: dt.datetime | None = None
    """When `a2rl runs repair` closed this record after the harness died."""
    grader_url: str | None = None
    baseline: BaselineRecord | None = None
    submissions: list[SubmissionRecord] = Field(default_factory=list)
    """Final state of every submission (copied from ledger.jsonl at the end)."""
    best: BestSoFar | None = None
    """Best valid submission; the run's result."""
    improvement: float | None = None
    """best − baseline."""
    agent_started_at: dt.datetime | None = None
    exit_reason: ExitReason | None = None
    agent_exit_code: int | None = None
    timings: Timings = Field(default_factory=Timings)
    error: str | None = None
    """Why the run failed, when it did."""
