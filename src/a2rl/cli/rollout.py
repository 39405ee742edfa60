"""`a2rl rollout`: a model's trajectories on the train episodes of an interactive task.
a2rl.cli registers the command."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from a2rl.cli._options import EngineOpt, _engine_options, _task_params


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

    from a2rl._console import make_console
    from a2rl._errors import A2RLError
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
    from a2rl.inference import use_engine_in_command

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
