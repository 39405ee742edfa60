"""Build the agent's workspace: everything the agent may see, and nothing it may not."""

from __future__ import annotations

import json
import os
import shutil
import stat
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from string import Template

from a2rl._errors import A2RLError
from a2rl.models import ResolvedModel
from a2rl.sandbox import bind_source, make_bind_point
from a2rl.tasks import Task
from a2rl.workspace._machine import NetworkFacts, machine_facts
from a2rl.workspace._model import copy_model, mount_source

MODES = ("free", "sft-only", "rl-oriented", "multi")
GRADER_ENV = "grader.env"
"""Mode multi: per task folder, the variables that point at that task's grader."""


@dataclass(frozen=True)
class Workspace:
    root: Path

    @property
    def model_dir(self) -> Path:
        """Where the agent finds the base model (MODEL_PATH)."""
        return self.root / "model"

    @property
    def model_files_dir(self) -> Path:
        """The host folder holding the model files the agent sees at `model_dir`: the mounted
        source of a bind point, else `model_dir` itself (a copy)."""
        return bind_source(self.model_dir)

    @property
    def data_dir(self) -> Path:
        return self.root / "data"

    @property
    def code_dir(self) -> Path:
        return self.root / "code"

    @property
    def output_dir(self) -> Path:
        return self.root / "output"


def check_mode(mode: str) -> str:
    if mode not in MODES:
        raise A2RLError(f"unknown mode {mode!r}", f"choose one of: {', '.join(MODES)}")
    return mode


def human_duration(seconds: float) -> str:
    s = int(round(seconds))
    h, m = s // 3600, s % 3600 // 60
    return f"{h} h {m:02d} min" if h else f"{m} min {s % 60:02d} s"


@dataclass(frozen=True)
class GradingProtocol:
    """What the instructions tell the agent about how its result is decided."""

    final: str = "off"
    """off: the best submission counts; hidden: dev feedback, one hidden final evaluation."""
    max_submissions: int | None = None
    min_interval_s: float | None = None
    evaluation: str | None = None
    """Which engine and devices evaluate (a2rl.inference._registry.instructions_line)."""

    def text(self) -> str:
        lines = ["- You may submit as often as you like" + (
            "" if self.max_submissions is None and not self.min_interval_s else
            ", within the limits below") + (
            ". Your result is your best submission." if self.final != "hidden" else
            ". Your result is decided by a hidden final evaluation (below).")]
        if self.final == "hidden":
            lines += [
                "- **Hidden final evaluation.** The scores you get back are measured on a *dev* "
                "part of the held-out items. When the run ends, ONE model is scored once on a "
                "separate hidden test part that no reply ever reflects, and that score is your "
                "result. Choose it with `POST $$A2RL_GRADER_URL/final` and the body "
                '`{"submission_id": "s0003"}` (or `{"model_path": "output/v3"}`), or add '
                '`"final": true` to a `/submit`; otherwise your best dev submission is used. '
                "Tuning against the dev score alone overfits it."]
        if self.max_submissions is not None:
            lines.append(f"- At most {self.max_submissions} submissions are evaluated; later "
                         "ones are rejected (rejected ones do not count).")
        if self.min_interval_s:
            lines.append(f"- Submissions closer than {self.min_interval_s:.0f} s to the previous "
                         "accepted one are rejected with the time to wait.")
        if self.evaluation:
            lines.append(self.evaluation.replace("$", "$$"))
        lines.append("- Every score comes with a 95% confidence interval (`ci_low`, `ci_high`) "
                     "over the items, and `significant: false` when the difference from the "
                     "baseline is within that noise.")
        return "\n".join(lines)


def render_instructions(mode: str, *, budget_s: float, workspace: Path,
                        protocol: GradingProtocol | None = None,
                        network: NetworkFacts | None = None) -> str:
    templates = resources.files("a2rl.workspace") / "templates"
    rules = (templates / f"{check_mode(mode)}.md").read_text().strip()
    common = Template((templates / "_common.md").read_text())
    grading = Template((protocol or GradingProtocol()).text()).substitute()
    return common.substitute(mode=mode, mode_rules=rules, budget_human=human_duration(budget_s),
                             workspace=str(workspace), machine=machine_facts(workspace, network),
                             grading_protocol=grading)


def _make_read_only(path: Path) -> None:
    """Belt and braces for --no-sandbox runs; the sandbox also mounts these read-only."""
    for root, dirs, files in os.walk(path):
        for name in files:
            p = Path(root) / name
            p.chmod(p.stat().st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
        for name in dirs:
            (Path(root) / name).chmod(0o555)
    path.chmod(0o555)


def build_workspace(root: Path, *, task: Task, base: ResolvedModel, mode: str, budget_s: float,
                    description: str, protocol: GradingProtocol | None = None,
                    network: NetworkFacts | None = None, mount_model: bool = True) -> Workspace:
    """Create `root` (must not exist): model/, train-visible data, docs, timer, code/, output/.

    With `mount_model` (a sandboxed backend), `model/` is a bind point over which the sandbox
    mounts the resolved model folder read-only: nothing is copied, and no link lets the agent
    write to the cache every later run starts from. Without it (`--sandbox none`), `model/` is
    a copy (see a2rl.workspace._model).
    """
    check_mode(mode)
    if root.exists():
        raise A2RLError(f"workspace {root} already exists", "use a new run id")
    ws = Workspace(root)
    root.mkdir(parents=True)
    if mount_model:
        make_bind_point(ws.model_dir, mount_source(base))
    else:
        copy_model(base, ws.model_dir)
    task.write_train_data(ws.data_dir)
    # The task's public options, so tools inside the workspace (a2rl rollout) rebuild the same
    # environment; the held-out seed is not among them.
    (ws.data_dir / "task.json").write_text(json.dumps({"task": task.name,
                                                       "params": task.params.public()}, indent=1))
    (root / "description.md").write_text(description)
    (root / "instructions.md").write_text(render_instructions(mode, budget_s=budget_s,
                                                              workspace=root, protocol=protocol,
                                                              network=network))
    timer = root / "timer.sh"
    timer.write_text((resources.files("a2rl.workspace") / "templates" / "timer.sh").read_text())
    timer.chmod(0o555)
    if not mount_model:
        _make_read_only(ws.model_dir)
    _make_read_only(ws.data_dir)
    for name in ("description.md", "instructions.md"):
        (root / name).chmod(0o444)
    ws.code_dir.mkdir()
    ws.output_dir.mkdir()
    return ws


def build_multi_root(root: Path, tasks: list[str], *, budget_s: float) -> Workspace:
    """Mode multi: the agent's working directory, holding one task workspace per folder (built
    by `build_workspace`), with the shared instructions, an index of the tasks and a timer."""
    templates = resources.files("a2rl.workspace") / "templates"
    lines = []
    for name in tasks:
        first = (root / name / "description.md").read_text().strip().splitlines()
        title = first[0].lstrip("# ").strip() if first else name
        lines.append(f"- `{name}/`: {title} (details in `{name}/description.md`)")
    text = Template((templates / "_multi_root.md").read_text()).substitute(
        n_tasks=len(tasks), budget_human=human_duration(budget_s), task_list="\n".join(lines))
    (root / "instructions.md").write_text(text)
    (root / "description.md").write_text(
        "# Several tasks at once\n\n" + "\n".join(lines) + "\n\n" +
        "\n\n".join(f"---\n\n## Task folder `{name}/`\n\n" +
                    (root / name / "description.md").read_text().strip() for name in tasks) +
        "\n")
    timer = root / "timer.sh"
    # every grader's clock started at the same moment: any task's grader tells the time
    timer.write_text(f"#!/usr/bin/env bash\nexec \"$(dirname \"$0\")/{tasks[0]}/timer.sh\"\n")
    for path in (root / "instructions.md", root / "description.md"):
        path.chmod(0o444)
    timer.chmod(0o555)
    return Workspace(root)


def write_grader_envs(root: Workspace, graders: dict[str, tuple[str, str]]) -> None:
    """Mode multi: `<task>/grader.env` (sourced by the agent and by each task's timer.sh)."""
    for name, (url, token) in graders.items():
        ws = Workspace(root.root / name)
        path = ws.root / GRADER_ENV
        path.write_text(f"export A2RL_GRADER_URL={url}\nexport A2RL_TOKEN={token}\n"
                        f"export TASK={name}\nexport MODEL_PATH={ws.model_dir}\n"
                        f"export DATA_PATH={ws.data_dir}\nexport OUTPUT_DIR={ws.output_dir}\n")
        path.chmod(0o444)


def remove_workspace_tree(path: Path) -> None:
    """rmtree that first restores write bits on the read-only parts."""
    for root, dirs, _ in os.walk(path):
        for d in dirs:
            (Path(root) / d).chmod(0o755)
    if path.exists():
        path.chmod(0o755)
        shutil.rmtree(path)
