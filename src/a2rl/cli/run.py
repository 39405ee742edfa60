"""`a2rl run` and `a2rl demo`: one run (the demo: the offline reference run), its options
checked before anything heavy starts. a2rl.cli registers the commands."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from a2rl.cli._options import (
    EngineOpt,
    EvalGpusOpt,
    LogEntityOpt,
    LogGroupOpt,
    LogNameOpt,
    LogProjectOpt,
    LogTagOpt,
    RunsDir,
    VllmMemoryOpt,
    _engine_options,
    _pairs,
    _runs_dir,
    _task_params,
    _tracking,
)


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
    sandbox: Annotated[str, typer.Option(help="Sandbox backend: bwrap, podman, none "
                                         "(unsandboxed, recorded), or one an installed "
                                         "plug-in registers.")] = "bwrap",
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
    extension: Annotated[list[str] | None, typer.Option(
        help="A run extension an installed plug-in registers, with its options: NAME or "
             "NAME:key=value,key=value (JSON values); repeatable.")] = None,
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
    log_project: LogProjectOpt = None,
    log_entity: LogEntityOpt = None,
    log_group: LogGroupOpt = None,
    log_tag: LogTagOpt = None,
    log_name: LogNameOpt = None,
    engine: EngineOpt = "auto",
    eval_gpus: EvalGpusOpt = None,
    vllm_memory: VllmMemoryOpt = None,
    cost_limit: Annotated[float | None, typer.Option(
        help="Stop the agent (exit reason cost_limit) once its recorded LLM spend reaches "
             "this many US dollars (CLI agents).")] = None,
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
                     **_scaffold_option(scaffold, scaffold_opt),
                     **_extension_option(extension),
                     **_cost_limit_option(cost_limit)},
            agent_dirs=[str(d.expanduser().absolute()) for d in agent_dir or []],
            study=study, log_to=log_to,
            log_labels={"project": log_project, "entity": log_entity, "group": log_group,
                        "tags": log_tag, "name": log_name})


def _cost_limit_option(usd: float | None) -> dict[str, object]:
    """--cost-limit as `RunConfig.cost_limit_usd` (checked here)."""
    if usd is not None and not usd > 0:
        from a2rl._errors import A2RLError

        raise A2RLError(f"--cost-limit {usd:g} is not a positive number of US dollars",
                        "e.g. --cost-limit 25 (or leave it out: no limit)")
    return {"cost_limit_usd": usd}


def _limit_options(procs: int | None, memory: str | None,
                   file_size: str | None) -> dict[str, object]:
    """--agent-procs/--agent-memory/--agent-file-size as RunConfig fields (checked here)."""
    from a2rl.sandbox import Limits

    Limits.from_options(procs, memory, file_size)
    return {"agent_procs": procs, "agent_memory": memory, "agent_file_size": file_size}


def _extension_option(values: list[str] | None) -> dict[str, object]:
    """--extension NAME[:key=value,...] as `RunConfig.extensions` (a name given twice gathers
    its options); which names exist is checked by the run, before any run folder exists."""
    import json

    from a2rl._errors import A2RLError

    found: dict[str, dict[str, object]] = {}
    for value in values or []:
        name, _, rest = value.partition(":")
        name = name.strip()
        if not name:
            raise A2RLError(f"--extension {value!r} names no extension",
                            "use --extension NAME or --extension NAME:key=value,key=value")
        options = found.setdefault(name, {})
        for pair in filter(None, (p.strip() for p in rest.split(","))):
            key, sep, raw = pair.partition("=")
            if not sep or not key.strip():
                raise A2RLError(f"--extension {value!r}: {pair!r} is not key=value",
                                "use --extension NAME:key=value,key=value")
            try:
                options[key.strip()] = json.loads(raw)
            except json.JSONDecodeError:
                options[key.strip()] = raw
    return {"extensions": found} if found else {}


def _scaffold_option(components: str | None, options: list[str] | None) -> dict[str, object]:
    """--scaffold / --scaffold-opt as the RunConfig field (validated before anything heavy)."""
    if components is None:
        if options:
            from a2rl._errors import A2RLError

            raise A2RLError("--scaffold-opt without --scaffold", "add --scaffold journal,...")
        return {}
    from a2rl.records import scaffold_config

    return {"scaffold": scaffold_config(components, _pairs(options, "--scaffold-opt"))}


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
            log_to: str | None = None, log_labels: dict[str, Any] | None = None) -> object:
    from a2rl._console import make_console
    from a2rl._errors import A2RLError
    from a2rl._util import parse_duration
    from a2rl.cli._show import show_run
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
                       agent_dirs=list(agent_dirs or []), tracking=_tracking(log_to, **(log_labels or {})),
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
