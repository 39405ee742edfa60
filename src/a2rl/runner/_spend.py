"""The agent's spend while it runs (`--cost-limit`) and its cost when it stopped
(`RunRecord.cost`, see `a2rl.capture._cost`)."""

from __future__ import annotations

import time
from pathlib import Path

from a2rl._errors import A2RLError
from a2rl.agents import Agent, usage_totals
from a2rl.capture import (
    ResourceSamples,
    agent_cost,
    driver_model,
    llm_spend,
    unpriced_tail,
)
from a2rl.schema import AgentEvent, RunConfig, RunCost, price_for, read_jsonl

COST_CHECK_EVERY_S = 1.0
"""Least seconds between two reads of the agent's spend (a long transcript is read less often:
never more than a tenth of the time goes to reading it)."""


def has_parser(agent: Agent) -> bool:
    """Whether the agent's transcript becomes events while it runs (its tokens can be counted)."""
    return type(agent).live_events is not Agent.live_events


def check_cost_limit(config: RunConfig, agent: Agent) -> None:
    """--cost-limit needs an agent whose spend a2rl can read while it runs."""
    if config.cost_limit_usd is not None and not has_parser(agent):
        raise A2RLError(f"--cost-limit needs an agent whose LLM spend a2rl reads while it runs; "
                        f"{config.agent.split(':', 1)[0]!r} has no transcript parser",
                        "drop --cost-limit, or run a CLI agent (a2rl agents list: claude-code, "
                        "codex, opencode, gemini, openhands)")


def pricing_model(config: RunConfig, agent: Agent) -> str | None:
    """The model whose list price applies until the transcript names one: --driver, else the
    CLI's default driver."""
    return config.driver or getattr(agent, "default_driver", None)


def unpriced_note(config: RunConfig, agent: Agent) -> str | None:
    """What the operator should know when --cost-limit cannot price the driver itself."""
    model = pricing_model(config, agent)
    if config.cost_limit_usd is None or price_for(model) is not None:
        return None
    return (f"--cost-limit: the driver {model!r} is not in a2rl's price table: only the dollars "
            "the CLI itself reports count towards the limit")


def running_spend(events: list[AgentEvent], model: str | None) -> float | None:
    """The agent's spend so far: the CLI's own dollars (`a2rl.agents.usage_totals`) and the
    responses it has not priced yet at `model`'s list price; None when it cannot be told."""
    return llm_spend(usage_totals(events)[2], unpriced_tail(events), model)[0]


class CostWatch:
    """Reads the agent's spend from its live transcript; `reached()` says when it is at the
    limit. The transcript is parsed again only when it grew, at most every
    COST_CHECK_EVERY_S, and never more than a tenth of the time."""

    def __init__(self, agent: Agent, agent_dir: Path, limit_usd: float, model: str | None,
                 every_s: float = COST_CHECK_EVERY_S) -> None:
        self.agent, self.agent_dir, self.limit_usd, self.model = agent, agent_dir, limit_usd, model
        self.every_s = every_s
        self.spent: float | None = None
        self._next = 0.0
        self._size = -1

    def reached(self) -> bool:
        now = time.monotonic()
        if now < self._next:
            return False
        try:
            size = (self.agent_dir / "transcript.log").stat().st_size
        except OSError:
            size = 0
        if size == self._size:
            self._next = now + self.every_s
            return False
        self._size = size
        events = self.agent.live_events(self.agent_dir) or []
        self.spent = running_spend(events, driver_model(events) or self.model)
        self._next = time.monotonic() + max(self.every_s, 10 * (time.monotonic() - now))
        return self.spent is not None and self.spent >= self.limit_usd


def recorded_events(agent_dir: Path, n_events: int | None) -> list[AgentEvent] | None:
    """agent/events.jsonl as the launch wrote it (None: the agent has no parser, or it failed)."""
    path = agent_dir / "events.jsonl"
    if n_events is None or not path.exists():
        return None
    return read_jsonl(path, AgentEvent)


def agent_spend(config: RunConfig, agent: Agent, events: list[AgentEvent] | None, *,
                agent_s: float, samples: ResourceSamples) -> tuple[RunCost, str | None]:
    """The agent's cost, and the driver model the provider reported (from its events)."""
    reported = driver_model(events) if events else None
    has_usage = events is not None and any(e.kind == "usage" for e in events)
    return agent_cost(usage_totals(events) if events is not None and has_usage else None,
                      unpriced_tail(events or []), reported or pricing_model(config, agent),
                      agent_s=agent_s, samples=samples), reported
