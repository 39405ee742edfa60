"""Option types and option parsing that several commands share: the runs folder, finding a run
by id or path, the inference engine options, key=value options and --log-to. Each check runs
before anything heavy is imported."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from a2rl.schema import RunConfig, default_text, run_options

if TYPE_CHECKING:
    from a2rl.schema import TrackingConfig


def _declared_help(name: str) -> str:
    """The help of the run option `name` as RunConfig declares it (every command that takes
    the option shows the same words), with what its default means where the command leaves
    the value unset (Typer shows the others)."""
    info, option = run_options(RunConfig)[name]
    if option.default_text is None:
        return option.help
    return f"{option.help} (default: {default_text(info, option)})"


RunsDir = Annotated[Path | None, typer.Option(help=_declared_help("runs_dir"))]
# Inference engine options (logic in a2rl.inference._registry).
EngineOpt = Annotated[str, typer.Option(help=_declared_help("engine"))]
VllmMemoryOpt = Annotated[float | None, typer.Option(help=_declared_help("vllm_memory"))]


def _engine_options(engine: str, eval_gpus: str | None,
                    vllm_memory: float | None) -> dict[str, object]:
    """--engine/--eval-gpus/--vllm-memory, checked before anything heavy starts."""
    from a2rl._errors import A2RLError

    if engine not in ("auto", "transformers", "vllm"):
        from a2rl.inference import engine_names

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


LogProjectOpt = Annotated[str | None, typer.Option(help="W&B project / MLflow experiment "
                                                  "(default $WANDB_PROJECT / "
                                                  "$MLFLOW_EXPERIMENT_NAME, else a2rl).")]
LogEntityOpt = Annotated[str | None, typer.Option(help="W&B entity, team or user (default "
                                                 "$WANDB_ENTITY).")]
LogGroupOpt = Annotated[str | None, typer.Option(help="W&B group / MLflow tag `group` (default "
                                                "$WANDB_RUN_GROUP).")]
LogTagOpt = Annotated[list[str] | None, typer.Option(help="A tag of the tracked run; repeatable "
                                                    "(task, agent and driver are added).")]
LogNameOpt = Annotated[str | None, typer.Option(help="The tracked run's name (default "
                                               "$WANDB_NAME, else the run id).")]


def _tracking(log_to: str | None, *, project: str | None = None, entity: str | None = None,
              group: str | None = None, tags: list[str] | None = None,
              name: str | None = None) -> TrackingConfig | None:
    """--log-to (with --log-project/-entity/-group/-tag/-name) as the run config's tracker,
    checked (labels, package, key, store) before the run folder exists."""
    from a2rl._errors import A2RLError

    if log_to is None:
        given = [f for f, v in (("--log-project", project), ("--log-entity", entity),
                                ("--log-group", group), ("--log-tag", tags),
                                ("--log-name", name)) if v]
        if given:
            raise A2RLError(f"{', '.join(given)} without --log-to",
                            "add --log-to wandb or --log-to mlflow")
        return None
    from a2rl.extensions.tracking import check_tracking
    from a2rl.schema import TrackingConfig

    cfg = TrackingConfig(to=log_to, project=project, entity=entity,  # type: ignore[arg-type]
                         group=group, tags=list(tags or []), name=name)
    check_tracking(cfg)
    return cfg
