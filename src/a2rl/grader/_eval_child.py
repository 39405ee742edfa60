"""Entry point of the evaluation child process: `python -m a2rl.grader._eval_child job.json`.

Writes outcome.json (scores) and details.jsonl (per item) into the job's out_dir, and progress
lines `{"done": n, "total": N}` on stdout for the grader's progress bar. Log lines (e.g. the
rollout engine's step counter) go to stderr, which the grader keeps as the job's eval.log.
"""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path

from a2rl.grader._evaluation import EvalJob
from a2rl.tasks import task_from_spec


def main(job_file: str) -> None:
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="%(asctime)s %(name)s %(message)s")
    job = EvalJob.model_validate_json(Path(job_file).read_text())
    task = task_from_spec(job.task)

    def progress(done: int, total: int) -> None:
        print(json.dumps({"done": done, "total": total}), flush=True)

    outcome = task.evaluate(Path(job.model_dir),
                            chat_template_from=Path(job.chat_template_from)
                            if job.chat_template_from else None,
                            on_progress=progress)
    out = Path(job.out_dir)
    with (out / "details.jsonl").open("w") as fh:
        for row in outcome.details:
            fh.write(json.dumps(row) + "\n")
    (out / "outcome.json").write_text(outcome.model_copy(update={"details": []}).model_dump_json())


if __name__ == "__main__":
    main(sys.argv[1])
