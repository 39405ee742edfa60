"""Entry point of the evaluation child process: `python -m a2rl.grader._eval_child -`.

Reads the job (JSON) from stdin: it carries the held-out seed, so it is never a file in the run.
Writes outcome.json (scores), details.jsonl (per item) and items.json (one value per item, for the
confidence interval) into the job's out_dir, and progress lines `{"done": n, "total": N}` on stdout
for the grader's progress bar. Log lines go to stderr, which the grader keeps as eval.log.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from pathlib import Path
from typing import TextIO

from a2rl.grader._artifact import verify_snapshot
from a2rl.grader._items import SplitError, heldout_seen, item_values, restrict_to_split
from a2rl.inference import select as select_engine
from a2rl.schema import EvalJob
from a2rl.tasks import task_from_spec


def _progress_channel() -> TextIO:
    """The real stdout, for progress lines only; fd 1 then points at stderr, so whatever an
    engine prints there (vLLM's banners, a library's warnings) lands in eval.log instead."""
    channel = os.fdopen(os.dup(1), "w", buffering=1)
    sys.stdout.flush()
    os.dup2(2, 1)
    return channel


def main(source: str) -> None:
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="%(asctime)s %(name)s %(message)s")
    channel = _progress_channel()
    text = sys.stdin.read() if source == "-" else Path(source).read_text()
    job = EvalJob.model_validate_json(text)
    # The run resolved its engine once (same engine for the baseline and every submission);
    # every load_engine() of the task's evaluation loads that one.
    select_engine(job.engine)
    if job.engine is not None:
        logging.getLogger("a2rl.eval").info("engine %s %s (%s, %s) under %s", job.engine.name,
                                            job.engine.version, job.engine.package,
                                            job.engine.device, job.engine.python)
    task = task_from_spec(job.task)
    items = (task.heldout_items() if job.split == "all"
             else restrict_to_split(task, job.split, job.test_fraction))

    def progress(done: int, total: int) -> None:
        channel.write(json.dumps({"done": done, "total": total}) + "\n")
        channel.flush()

    # The loaders open whatever files the snapshot names; it was checked when it was taken, and
    # is checked again here so that no file outside it is ever read (see _artifact).
    if job.snapshot:
        verify_snapshot(Path(job.model_dir))
    outcome = task.evaluate(Path(job.model_dir),
                            chat_template_from=Path(job.chat_template_from)
                            if job.chat_template_from else None,
                            on_progress=progress)
    if job.split != "all" and outcome.n_items != len(items):
        raise SplitError(f"task {task.name} scored {outcome.n_items} items instead of the "
                         f"{len(items)} of its {job.split} split: it does not read its items "
                         "through heldout_items()/heldout_episodes(), so it cannot be split; "
                         "run it with --final off")
    out = Path(job.out_dir)
    with (out / "details.jsonl").open("w") as fh:
        for row in outcome.details:
            fh.write(json.dumps(row) + "\n")
    (out / "items.json").write_text(
        item_values(outcome, items, heldout_seen(task, items)).model_dump_json())
    (out / "outcome.json").write_text(outcome.model_copy(update={"details": []}).model_dump_json())


def _exit_now() -> None:
    """Leave without the interpreter's teardown: every record is written and closed, and
    tearing down torch, transformers and the task's libraries took 1.4 s after the last one
    (measured on the 135M model, 2026-12-02), time the grader only waited. Engines are closed
    by the task's evaluate(); the grader kills whatever else is left in this process group."""
    sys.stdout.flush()
    sys.stderr.flush()
    logging.shutdown()
    os._exit(0)


if __name__ == "__main__":
    main(sys.argv[1])
    _exit_now()
