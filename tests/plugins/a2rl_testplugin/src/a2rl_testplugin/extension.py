"""`--extension testplugin-stamp:word=...`: a run extension from outside a2rl. It writes a file
into the workspace (mounted read-only), hands the agent a variable, and at the close writes what
the run's record said, so a test can see that every kind of hook ran."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from a2rl.extensions import AgentLaunch, RunExtension, TaskPart


class StampExtension(RunExtension):
    name = "testplugin-stamp"

    def _word(self) -> str:
        return str(self.config.extensions[self.name].get("word", "none"))

    def prepare_workspace(self, part: TaskPart) -> Sequence[Path]:
        stamp = part.workspace / "stamp.txt"
        stamp.write_text(f"stamped {self._word()}\n")
        return [stamp]

    def agent_environment(self, launch: AgentLaunch) -> None:
        launch.env["A2RL_STAMP"] = self._word()

    def run_closing(self, part: TaskPart) -> None:
        (part.run_dir / "stamp-closed.json").write_text(json.dumps(
            {"status": part.record.status, "word": self._word()}))


def stamp_show(run_dir: Path) -> None:
    """`a2rl testplugin-stamp-show RUN_DIR`: a command the extension adds to the CLI; prints
    what the extension recorded at the run's close."""
    print("stamp:", (run_dir / "stamp-closed.json").read_text())
