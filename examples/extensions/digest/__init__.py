"""digest: when each task part of a run closes, one line on how it went (task, status,
baseline, best score, submissions) in `digest.json` in its run folder. Turned on with
`a2rl run --extension digest` (`--extension digest:file=NAME` writes NAME instead)."""

from __future__ import annotations

import json

from a2rl._errors import A2RLError
from a2rl.extensions import RunExtension, TaskPart, extensions
from a2rl.schema import RunConfig


@extensions.register("digest")
class DigestExtension(RunExtension):
    name = "digest"

    @classmethod
    def check(cls, config: RunConfig) -> None:  # before any run folder exists
        file = str(config.extensions[cls.name].get("file", "digest.json"))
        if "/" in file or file in ("", ".", ".."):
            raise A2RLError(f"--extension {cls.name}:file={file} is not a file name",
                            f"e.g. --extension {cls.name}:file=digest.json")

    def run_closing(self, part: TaskPart) -> None:
        record = part.record
        line = {"task": record.config.task, "status": record.status,
                "baseline": record.baseline.score if record.baseline else None,
                "best": record.best, "submissions": len(record.submissions)}
        (part.run_dir / str(self.options.get("file", "digest.json"))).write_text(json.dumps(line))
