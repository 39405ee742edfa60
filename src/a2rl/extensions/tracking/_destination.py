"""Where a run is logged: project, entity, group, tags and name from the run's tracking config
(`--log-project`, `--log-entity`, `--log-group`, `--log-tag`, `--log-name`, a sweep's `log:`),
else from the tracker's own environment variables, else a2rl's defaults."""

from __future__ import annotations

import os
from dataclasses import dataclass

from a2rl._errors import A2RLError
from a2rl.schema import RunRecord, TrackingConfig

DEFAULT_PROJECT = "a2rl"
WANDB_TAG_MAX = 64
"""W&B refuses a tag longer than this."""


@dataclass(frozen=True)
class Destination:
    """The tracked run's place and labels."""

    project: str
    """W&B project / MLflow experiment."""
    entity: str | None
    """W&B entity (None: W&B's default for the key)."""
    group: str | None
    tags: list[str]
    name: str


def _env_tags(to: str) -> list[str]:
    raw = os.environ.get("WANDB_TAGS", "") if to == "wandb" else ""
    return [t.strip() for t in raw.split(",") if t.strip()]


def run_tags(record: RunRecord) -> list[str]:
    """The tags every tracked run carries: its task, agent (`cmd` for a shell command) and
    driver, so runs can be filtered by them."""
    c = record.config
    agent = "cmd" if c.agent.startswith("cmd:") else c.agent
    return [t for t in (c.task, agent, c.driver) if t]


def destination(cfg: TrackingConfig, record: RunRecord) -> Destination:
    env = os.environ
    if cfg.to == "wandb":
        project = cfg.project or env.get("WANDB_PROJECT") or DEFAULT_PROJECT
        entity = cfg.entity or env.get("WANDB_ENTITY") or None
        group = cfg.group or env.get("WANDB_RUN_GROUP") or None
        name = cfg.name or env.get("WANDB_NAME") or record.run_id
    else:
        project = cfg.project or env.get("MLFLOW_EXPERIMENT_NAME") or DEFAULT_PROJECT
        entity, group, name = cfg.entity, cfg.group, cfg.name or record.run_id
    tags = [t[:WANDB_TAG_MAX] for t in (*cfg.tags, *_env_tags(cfg.to), *run_tags(record))]
    return Destination(project=project, entity=entity, group=group,
                       tags=list(dict.fromkeys(tags)), name=name)


def check_labels(cfg: TrackingConfig) -> None:
    """Refuse labels a tracker would reject, before the run folder exists."""
    for tag in [*cfg.tags, *_env_tags(cfg.to)]:
        if not tag.strip():
            raise A2RLError("--log-tag: an empty tag", "give each --log-tag a name")
        if len(tag) > WANDB_TAG_MAX:
            raise A2RLError(f"--log-tag {tag[:40]!r}…: {len(tag)} characters; W&B takes at most "
                            f"{WANDB_TAG_MAX}", "use a shorter tag")
    for flag, value in (("--log-project", cfg.project), ("--log-name", cfg.name),
                        ("--log-group", cfg.group), ("--log-entity", cfg.entity)):
        if value is not None and (not value.strip() or any(ch in value for ch in "\n\r\0")):
            raise A2RLError(f"{flag} {value!r} is empty or spans lines",
                            f"give {flag} a one-line name")
