"""`a2rl eval` and `a2rl rescore`: scoring outside a run, with a task's own scorer. a2rl.cli
registers the commands."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from a2rl.cli._options import EngineOpt, RunsDir, VllmMemoryOpt, _engine_options, _find_run, _task_params


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
        from a2rl.inference import use_engine_in_command

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
