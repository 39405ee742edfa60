"""The Agent Trajectory Interchange Format (ATIF, Harbor's RFC 0001) as pydantic models.

ATIF is one JSON object per agent run: the agent's identity, an ordered list of steps (a
system prompt, a user message, or one agent turn with its tool calls, the observations those
calls returned and the turn's token metrics) and totals over the run. Written here from the
specification's tables (versions 1.0 to 1.4; the optional fields later versions add are
accepted and ignored), with its rules checked on validation:

- `step_id`s run 1, 2, 3, … in order;
- model name, reasoning, tool calls and metrics belong to agent steps only;
- every observation result that names a call (`source_call_id`) names one of its step's calls;
- timestamps are ISO 8601.

Unknown fields are ignored (later versions add optional ones); `extra` objects carry what the
format has no field for.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from a2rl.importers._common import parse_time

SCHEMA_VERSION = "ATIF-v1.4"
"""The version a2rl writes: every field it fills exists since this version."""
_VERSION = re.compile(r"^ATIF-v1\.\d+$")


class _Part(BaseModel):
    model_config = ConfigDict(extra="ignore")


class ToolCall(_Part):
    """One function or tool the agent invoked in its turn."""

    tool_call_id: str
    """Unique id of the call; observation results name it in `source_call_id`."""
    function_name: str
    """The tool's name (`Bash`, `bash_command`, `str_replace_editor`, …)."""
    arguments: dict[str, Any]
    """The call's arguments, a JSON object (empty when the tool takes none)."""


class SubagentTrajectoryRef(_Part):
    """A pointer to the trajectory of a sub-agent the call delegated to."""

    session_id: str
    trajectory_path: str | None = None
    extra: dict[str, Any] | None = None


class ObservationResult(_Part):
    """What one call (or an action without a call) returned."""

    source_call_id: str | None = None
    """The call this result answers (None: an action that was not a tool call)."""
    content: str | None = None
    """The returned text."""
    subagent_trajectory_ref: list[SubagentTrajectoryRef] | None = None

    @field_validator("content", mode="before")
    @classmethod
    def _text_of_parts(cls, value: Any) -> Any:
        return text_of(value)


class Observation(_Part):
    results: list[ObservationResult]


class Metrics(_Part):
    """One agent turn's LLM use."""

    prompt_tokens: int | None = None
    """Every input token of the turn, cached ones included."""
    completion_tokens: int | None = None
    """Tokens the model generated (reasoning and tool calls included)."""
    cached_tokens: int | None = None
    """The part of `prompt_tokens` served from a prompt cache."""
    cost_usd: float | None = None
    prompt_token_ids: list[int] | None = None
    completion_token_ids: list[int] | None = None
    logprobs: list[float] | None = None
    extra: dict[str, Any] | None = None


class FinalMetrics(_Part):
    """Totals over the whole trajectory."""

    total_prompt_tokens: int | None = None
    total_completion_tokens: int | None = None
    total_cached_tokens: int | None = None
    total_cost_usd: float | None = None
    total_steps: int | None = None
    extra: dict[str, Any] | None = None


class Agent(_Part):
    """The agent system that made the trajectory."""

    name: str
    version: str
    model_name: str | None = None
    """The default LLM of the run (a step's own `model_name` overrides it)."""
    extra: dict[str, Any] | None = None


class Step(_Part):
    """A system prompt, a user message, or one agent turn (inference, actions, observations)."""

    step_id: int = Field(ge=1)
    timestamp: str | None = None
    """ISO 8601 time of the step."""
    source: Literal["system", "user", "agent"]
    model_name: str | None = None
    reasoning_effort: str | float | None = None
    message: str
    """The system prompt, the user's message or the agent's reply (may be empty)."""
    reasoning_content: str | None = None
    tool_calls: list[ToolCall] | None = None
    observation: Observation | None = None
    metrics: Metrics | None = None
    extra: dict[str, Any] | None = None

    @field_validator("message", "reasoning_content", mode="before")
    @classmethod
    def _text_of_parts(cls, value: Any) -> Any:
        return text_of(value)

    @field_validator("timestamp")
    @classmethod
    def _iso(cls, value: str | None) -> str | None:
        if value is not None:
            parse_time(value)
        return value

    @model_validator(mode="after")
    def _agent_only(self) -> Step:
        if self.source != "agent":
            named = [f for f in ("model_name", "reasoning_effort", "reasoning_content",
                                 "tool_calls", "metrics") if getattr(self, f) is not None]
            if named:
                raise ValueError(f"{', '.join(named)} only belong to agent steps, not to a "
                                 f"{self.source} step")
        calls = {c.tool_call_id for c in self.tool_calls or []}
        for result in self.observation.results if self.observation else []:
            if result.source_call_id is not None and result.source_call_id not in calls:
                raise ValueError(f"observation answers call {result.source_call_id!r}, which "
                                 "is not among the step's tool_calls")
        return self


class Trajectory(_Part):
    """A whole ATIF document (`trajectory.json`)."""

    schema_version: str
    """`ATIF-v1.<minor>`."""
    session_id: str
    agent: Agent
    steps: list[Step]
    notes: str | None = None
    final_metrics: FinalMetrics | None = None
    extra: dict[str, Any] | None = None

    @field_validator("schema_version")
    @classmethod
    def _version(cls, value: str) -> str:
        if not _VERSION.match(value):
            raise ValueError(f"{value!r} is no ATIF version (ATIF-v1.0 … ATIF-v1.x)")
        return value

    @model_validator(mode="after")
    def _ordered(self) -> Trajectory:
        for i, step in enumerate(self.steps, 1):
            if step.step_id != i:
                raise ValueError(f"step ids must run 1, 2, 3, …: step {i} has id {step.step_id}")
        return self

    def to_json(self) -> str:
        """The document as written to a file: fields without a value left out."""
        return self.model_dump_json(indent=2, exclude_none=True) + "\n"


def text_of(value: Any) -> Any:
    """A message as text: later ATIF versions allow a list of content parts (text and
    images); the text parts are joined and an image is named, not embedded."""
    if not isinstance(value, list):
        return value
    out: list[str] = []
    for part in value:
        if isinstance(part, str):
            out.append(part)
        elif isinstance(part, dict) and isinstance(part.get("text"), str):
            out.append(part["text"])
        elif isinstance(part, dict):
            out.append(f"[{part.get('type') or 'content'}]")
    return "\n".join(out)


def iso(t: dt.datetime) -> str:
    return t.astimezone(dt.UTC).isoformat().replace("+00:00", "Z")


__all__ = ["SCHEMA_VERSION", "Agent", "FinalMetrics", "Metrics", "Observation",
           "ObservationResult", "Step", "SubagentTrajectoryRef", "ToolCall", "Trajectory",
           "iso", "text_of"]
