"""`RunRecord.provenance`: the agent CLI's version as it answered inside the run's sandbox, the
driver's model id as the provider reported it, a2rl's version and the task data's fingerprint."""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

from a2rl.agents import AgentContext, CLIAgent
from a2rl.capture import data_fingerprint, version_line
from a2rl.extensions import AgentLaunch
from a2rl.sandbox import Masks
from a2rl.schema import Provenance

VERSION_TIMEOUT_S = 60.0
_ENV_KEPT = ("PATH", "HOME", "LANG", "LC_ALL", "TZ")


def cli_version(launch: AgentLaunch, ctx: AgentContext) -> str | None:
    """`<cli> --version` run inside the run's sandbox, as the agent's CLI will run (its install
    mounted read-only, its settings, none of its credentials); None for agents that are not a
    pinned CLI, or when it does not answer."""
    agent = launch.agent
    if not isinstance(agent, CLIAgent):
        return None
    try:
        exe = str(agent.executable())
        env = {k: launch.env[k] for k in _ENV_KEPT if k in launch.env}
        env.update(agent.cli_env(ctx))
    except Exception:  # noqa: BLE001 - provenance never stops a run
        return None
    with tempfile.TemporaryDirectory(prefix="a2rl-version-") as ws:
        argv = launch.sandbox.wrap([exe, "--version"], workspace=Path(ws),
                                   read_only=agent.sandbox_mounts(), masks=Masks(), env=env)
        try:
            done = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True,
                                  text=True, errors="replace", timeout=VERSION_TIMEOUT_S,
                                  env={**os.environ, **env})
        except (OSError, subprocess.SubprocessError):
            return None
    if done.returncode != 0:
        return None
    return version_line(done.stdout) or version_line(done.stderr)


def record_provenance(launch: AgentLaunch, ctx: AgentContext) -> None:
    """Each part's provenance before the agent starts (the driver's reported model comes when it
    stopped)."""
    version = cli_version(launch, ctx)
    for part in launch.parts:
        record = part.record
        fingerprint = None
        if record.task is not None:
            try:
                fingerprint = data_fingerprint(part.workspace / "data", record.task.fingerprint)
            except OSError:
                fingerprint = None
        record.provenance = Provenance(a2rl_version=record.versions.get("a2rl-bench"),
                                       agent_cli_version=version,
                                       task_data_sha256=fingerprint)
