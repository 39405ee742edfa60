"""OpenCode (npm `opencode-ai`, a native binary, executable `opencode`) as an a2rl agent.

Command line (checked against the pinned CLI, 1.18.33):

    opencode run --format json -m <provider>/<model> --auto [--continue] [--variant V] -- <prompt>

- `run` is the headless mode: one prompt, the agent loop until the model stops, then exit.
- `--format json`: one JSON event per line on stdout (`step_start`, `text`, `tool_use`,
  `step_finish`, `error`; `reasoning` only with --thinking), see `parse_events`.
- `--auto` approves any permission request not explicitly denied (in `run` mode a request that
  asks is otherwise auto-rejected); `~/.config/opencode/opencode.json` also sets
  `"permission": "allow"` for every tool, so nothing asks in the first place.
- `--continue` (re-prompt rounds) continues the most recent session; the private HOME holds only
  this run's session, so it is exactly this conversation (same session id in the stream).
- `--` before the prompt: the prompt is never read as an option. (`run` wraps a message that
  contains spaces in double quotes and backslash-escapes its inner quotes before sending it:
  the model sees `"…\\"x\\"…"`; that is the CLI's own behaviour for every user.)

Driver: `<provider>/<model>` as opencode names them (models.dev ids: `anthropic/claude-…`,
`openai/gpt-5`, `openrouter/<vendor>/<model>`, `google/gemini-…`); the model is also declared in
the config under its provider, so ids newer than the CLI's built-in catalogue work. Credentials:
only the variables opencode reads for that provider enter the sandbox (`PROVIDER_KEYS`, e.g.
ANTHROPIC_API_KEY for anthropic/, OPENROUTER_API_KEY for openrouter/). With --driver-base-url
(an OpenAI-style base ending in /v1) the config declares a custom provider `a2rl`
(`@ai-sdk/openai-compatible`: `POST <base>/chat/completions`, streamed, with
`stream_options.include_usage`), the whole driver string is the model id sent to the endpoint,
and the key (optional) is OPENAI_API_KEY, read by the config as `{env:OPENAI_API_KEY}`.

Offline and quiet: OPENCODE_DISABLE_MODELS_FETCH=1 (use the models.dev catalogue built into the
binary, no fetch of models.dev at start and hourly), OPENCODE_DISABLE_AUTOUPDATE=1 (plus
`"autoupdate": false`), OPENCODE_DISABLE_SHARE=1 (plus `"share": "disabled"`),
OPENCODE_DISABLE_LSP_DOWNLOAD=1 (no language-server downloads from GitHub). At start opencode
also `npm install`s `@opencode-ai/plugin` into each config folder (~/.config/opencode) unless
that folder already has `node_modules/` and a package.json whose dependencies all appear in
package-lock.json: home_files writes exactly that, so no registry request is made (observed: the
run is also ~8 s faster). Subagent plugins and the TUI are not used. opencode writes its
SQLite session store, logs and locks under ~/.local/share, ~/.local/state and ~/.cache (the
private HOME, writable). Memory file: AGENTS.md (read from the working directory).

Shell tool: `bash` (`{"command": str, "timeout"?: int ms, "workdir"?: str, "description"?:
str}`); its default timeout is 2 min, raised with OPENCODE_EXPERIMENTAL_BASH_DEFAULT_TIMEOUT_MS.
File tools: `write` and `edit` (`filePath`, absolute), `apply_patch` for GPT-5-family models.
Side requests: one session-title request per session (no tools, with the small model; the
driver itself for a custom provider); its tokens do not appear in the stream.

Options (--agent-opt): reprompt=1, reserve_s=<s> (see CLIAgent); variant=<v> (--variant, the
provider's reasoning effort: minimal/low/medium/high/max); small_model=<provider/model> (the
model of title requests); bash_timeout_ms=<ms> (default command timeout, default 1800000).

Usage accounting (`parse_events`): each `step_finish` (one per model response) carries the
response's tokens as opencode splits them: `input` (uncached prompt), `cache.read`,
`cache.write`, `output` (without reasoning), `reasoning`, and its `cost` estimate (USD, from
the catalogue's prices). One `usage` event per step: input_tokens = input + cache.read +
cache.write (the whole prompt, as the provider reported it), output_tokens = output + reasoning
(the whole completion), cost_usd = cost; the split goes in `extra`. Title requests and subagent
sessions (the `task` tool) are not in the stream, so they are not counted.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any, ClassVar

from a2rl._errors import A2RLError
from a2rl.agents._agent import AgentContext, AgentOption, DriverChoice
from a2rl.agents._cli import CLI_OPTIONS, CLIAgent, CLIPackage
from a2rl.agents._events import AgentEvent, ParseReport, ParseResult
from a2rl.agents._registry import agents
from a2rl.agents._stream import (
    TranscriptReader,
    as_int,
    finish_report,
    relative_path,
    set_output,
    tool_args,
)

PROVIDER_KEYS: dict[str, tuple[str, ...]] = {
    "anthropic": ("ANTHROPIC_API_KEY",),
    "openai": ("OPENAI_API_KEY",),
    "openrouter": ("OPENROUTER_API_KEY",),
    "google": ("GOOGLE_GENERATIVE_AI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY"),
    "groq": ("GROQ_API_KEY",),
    "deepseek": ("DEEPSEEK_API_KEY",),
    "xai": ("XAI_API_KEY",),
    "mistral": ("MISTRAL_API_KEY",),
    "togetherai": ("TOGETHER_API_KEY",),
    "fireworks-ai": ("FIREWORKS_API_KEY",),
    "cerebras": ("CEREBRAS_API_KEY",),
    "deepinfra": ("DEEPINFRA_API_KEY",),
    "moonshotai": ("MOONSHOT_API_KEY",),
    "zai": ("ZHIPU_API_KEY",),
    "opencode": ("OPENCODE_API_KEY",),
}
"""Environment variables opencode reads for each provider (from its built-in catalogue)."""
CUSTOM_PROVIDER = "a2rl"
CUSTOM_KEY = "OPENAI_API_KEY"
"""Key variable of the custom OpenAI-compatible provider used with --driver-base-url."""
PLUGIN = "@opencode-ai/plugin"
SHELL_TOOL = "bash"
EDIT_TOOLS = ("write", "edit", "multiedit", "apply_patch", "patch")


@agents.register("opencode")
class OpenCodeAgent(CLIAgent):
    """SST's OpenCode CLI, headless (`opencode run --format json`, permissions all allowed).
    Options: reprompt, reserve_s, variant, small_model, bash_timeout_ms (see the module
    docstring)."""
    api_hosts = ("api.anthropic.com", "api.openai.com", "openrouter.ai", "models.dev")

    name = "opencode"
    description = "OpenCode CLI (any models.dev provider, or an OpenAI-compatible endpoint)"
    package = CLIPackage("npm", "opencode-ai", "1.18.33", "opencode")
    credentials: ClassVar[tuple[str, ...]] = tuple(dict.fromkeys(
        k for keys in PROVIDER_KEYS.values() for k in keys))
    memory_file = "AGENTS.md"
    default_driver = "anthropic/claude-sonnet-4-5"
    agent_options = {**CLI_OPTIONS, "variant": AgentOption("--variant (reasoning effort)"),
                     "small_model": AgentOption("model of title requests"),
                     "bash_timeout_ms": AgentOption("default command timeout, ms", int)}

    def __init__(self) -> None:
        self.workspace_root: Path | None = None
        """Set by write_events (the run's workspace): file_edit paths are made relative to it."""

    # ---- driver and credentials ------------------------------------------------------------
    def provider_model(self, ctx: DriverChoice) -> tuple[str, str]:
        """(provider id, model id) as opencode's -m takes them."""
        driver = self.driver(ctx)
        if ctx.driver_base_url:
            return CUSTOM_PROVIDER, driver
        provider, _, model = driver.partition("/")
        if not model:
            raise A2RLError(f"opencode drivers are <provider>/<model>, got {driver!r}",
                            "e.g. --driver anthropic/claude-sonnet-4-5, openai/gpt-5, "
                            "openrouter/<vendor>/<model>")
        return provider, model

    def key_variables(self, ctx: DriverChoice) -> tuple[str, ...]:
        provider, _ = self.provider_model(ctx)
        if provider == CUSTOM_PROVIDER:
            return (CUSTOM_KEY,)
        return PROVIDER_KEYS.get(provider, (provider.upper().replace("-", "_") + "_API_KEY",))

    def credential_values(self, ctx: DriverChoice) -> dict[str, str]:
        """Only the driver's provider's key variables (those set) enter the sandbox."""
        names = self.key_variables(ctx)
        found = {k: os.environ[k] for k in names if os.environ.get(k)}
        if not found and not ctx.driver_base_url:
            raise A2RLError(
                f"opencode's driver {self.driver(ctx)!r} needs one of {', '.join(names)} in the "
                "environment",
                f"export {names[0]}=<key>, or point it at an OpenAI-compatible endpoint with "
                "--driver-base-url")
        return found

    # ---- command line, environment, config -------------------------------------------------
    def cli_argv(self, ctx: AgentContext, exe: str, prompt: str, *, resume: bool) -> list[str]:
        provider, model = self.provider_model(ctx)
        argv = [exe, "run", "--format", "json", "-m", f"{provider}/{model}", "--auto"]
        if resume:
            argv.append("--continue")
        if ctx.options.get("variant"):
            argv += ["--variant", ctx.options["variant"]]
        return argv + ["--", prompt]

    def cli_env(self, ctx: AgentContext) -> dict[str, str]:
        return {"OPENCODE_DISABLE_MODELS_FETCH": "1", "OPENCODE_DISABLE_AUTOUPDATE": "1",
                "OPENCODE_DISABLE_SHARE": "1", "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
                "OPENCODE_EXPERIMENTAL_BASH_DEFAULT_TIMEOUT_MS":
                    ctx.options.get("bash_timeout_ms", "1800000")}

    def config(self, ctx: AgentContext) -> dict[str, Any]:
        provider, model = self.provider_model(ctx)
        entry: dict[str, Any] = {"models": {model: {"name": model}}}
        if provider == CUSTOM_PROVIDER:
            entry.update(npm="@ai-sdk/openai-compatible", name="a2rl driver endpoint",
                         options={"baseURL": (ctx.driver_base_url or "").rstrip("/"),
                                  "apiKey": "{env:" + CUSTOM_KEY + "}"})
            entry["models"][model]["tool_call"] = True
        cfg: dict[str, Any] = {"$schema": "https://opencode.ai/config.json",
                               "model": f"{provider}/{model}", "autoupdate": False,
                               "share": "disabled", "permission": "allow",
                               "provider": {provider: entry}}
        if ctx.options.get("small_model"):
            cfg["small_model"] = ctx.options["small_model"]
        return cfg

    def home_files(self, ctx: AgentContext) -> dict[str, str]:
        # node_modules/ + a package.json whose dependencies the lock already lists: opencode's
        # start-up `npm install @opencode-ai/plugin` into its config folder finds nothing to do.
        deps = {"dependencies": {PLUGIN: self.package.version}}
        lock = {"name": "opencode-config", "lockfileVersion": 3, "requires": True,
                "packages": {"": deps}}
        base = ".config/opencode/"
        return {base + "opencode.json": json.dumps(self.config(ctx), indent=2) + "\n",
                base + "package.json": json.dumps(deps, indent=2) + "\n",
                base + "package-lock.json": json.dumps(lock, indent=2) + "\n",
                base + "node_modules/.a2rl-keep": ""}

    # ---- transcript ------------------------------------------------------------------------
    def write_events(self, agent_dir: Path) -> int:
        self.workspace_root = agent_dir.parent / "workspace"
        return super().write_events(agent_dir)

    def parse_events(self, lines: Iterable[tuple[float, str]]) -> list[AgentEvent]:
        return parse_stream(lines, self.workspace_root)

    def parse_transcript(self, lines: Iterable[tuple[float, str]]) -> ParseResult:
        report = ParseReport(parser=self.name)
        return finish_report(report, parse_stream(lines, self.workspace_root, report))


def _edited_paths(tool: str, state: dict[str, Any]) -> list[str]:
    inp = state.get("input") or {}
    meta = state.get("metadata") or {}
    if isinstance(inp.get("filePath"), str):
        return [inp["filePath"]]
    files = meta.get("files")  # apply_patch: one entry per file touched
    if isinstance(files, list):
        found = [f.get("filePath") or f.get("file") or f.get("path") for f in files
                 if isinstance(f, dict)]
        return [p for p in found if isinstance(p, str)]
    return []


_KNOWN = {"step_start", "text", "tool_use", "step_finish", "error", "reasoning"}


def parse_stream(lines: Iterable[tuple[float, str]], workspace: Path | None = None,
                 report: ParseReport | None = None) -> list[AgentEvent]:
    """opencode's `--format json` stream (all CLI rounds of the transcript) → AgentEvents.
    One turn per step (step_start … step_finish = one model response). Lines may carry a
    `[ISO-time] ` prefix; what cannot be read is counted in `report`, and `error` events are
    message events marked extra["error"] = "1" (and the report's cli_errors)."""
    reader = TranscriptReader(lines, report or ParseReport(parser="opencode"))
    roots = []
    if workspace is not None:
        roots = list(dict.fromkeys([str(workspace).rstrip("/"),
                                    str(workspace.resolve()).rstrip("/")]))
    events: list[AgentEvent] = []
    turn = -1
    for t, obj in reader.objects():
        kind = obj.get("type")
        if kind not in _KNOWN:
            reader.unknown(kind)
            continue
        if isinstance(obj.get("timestamp"), (int, float)) and not reader.stamped:
            t = reader.time_of(t, float(obj["timestamp"]) / 1000)  # epoch ms, without times
        part: dict[str, Any] = obj["part"] if isinstance(obj.get("part"), dict) else {}
        if kind == "step_start":
            turn += 1
            events.append(AgentEvent(kind="turn", turn=turn, t_s=t,
                                     extra={"session": str(obj.get("sessionID", ""))}))
        elif kind == "text":
            text = str(part.get("text") or "").strip()
            if text:
                events.append(AgentEvent(kind="message", turn=max(turn, 0), t_s=t,
                                         text=text[:500]))
        elif kind == "tool_use":
            events += _tool_events(t, max(turn, 0), obj, part, roots)
        elif kind == "step_finish":
            tokens = part.get("tokens") or {}
            cache = tokens.get("cache") or {}
            split = {"input": as_int(tokens.get("input")), "output": as_int(tokens.get("output")),
                     "reasoning": as_int(tokens.get("reasoning")),
                     "cache_read": as_int(cache.get("read")), "cache_write": as_int(cache.get("write"))}
            cost = part.get("cost")
            events.append(AgentEvent(
                kind="usage", turn=max(turn, 0), t_s=t,
                input_tokens=split["input"] + split["cache_read"] + split["cache_write"],
                output_tokens=split["output"] + split["reasoning"],
                cost_usd=float(cost) if isinstance(cost, (int, float)) else None,
                extra={**{k: str(v) for k, v in split.items()},
                       "reason": str(part.get("reason", ""))}))
        elif kind == "error":
            err = obj.get("error") or {}
            data = err.get("data") if isinstance(err, dict) else None
            msg = (data or {}).get("message") if isinstance(data, dict) else None
            text = str(msg or (err.get("name") if isinstance(err, dict) else err))
            reader.cli_error(text)
            events.append(AgentEvent(kind="message", turn=max(turn, 0), t_s=t,
                                     text=("error: " + text)[:500], extra={"error": "1"}))
    return events


def _tool_events(t: float, turn: int, obj: dict[str, Any], part: dict[str, Any],
                 roots: list[str]) -> list[AgentEvent]:
    """A tool part's events: its tool_call (arguments in extra["args"]; a finished part's
    output: `state.output` when completed, `state.error` with is_error when it failed), and
    its command or file edits."""
    tool = str(part.get("tool") or "")
    state = part.get("state") or {}
    status = str(state.get("status") or "")
    call = AgentEvent(kind="tool_call", turn=turn, t_s=t, name=tool,
                      extra={"status": status, "call_id": str(part.get("callID", "")),
                             **tool_args(state.get("input"))})
    out = [call]
    if status != "completed" and status != "error":
        return out
    set_output(call, state.get("output") if status == "completed" else state.get("error"),
               status == "error")
    if tool == SHELL_TOOL:
        command = (state.get("input") or {}).get("command")
        meta = state.get("metadata") or {}
        # the event is printed when the command ends; its epoch-ms start/end become run
        # seconds anchored at this line's time
        stamp, times = obj.get("timestamp"), state.get("time") or {}
        start_s = end_s = None
        if isinstance(stamp, (int, float)):
            if isinstance(times.get("start"), (int, float)):
                start_s = max(0.0, t - (stamp - times["start"]) / 1000)
            if isinstance(times.get("end"), (int, float)):
                end_s = max(0.0, t - (stamp - times["end"]) / 1000)
        exit_code = meta.get("exit")
        out.append(AgentEvent(kind="command", turn=turn,
                              t_s=start_s if start_s is not None else t,
                              end_s=end_s if end_s is not None else t,
                              command=str(command or ""),
                              exit_code=exit_code if isinstance(exit_code, int) else None,
                              is_error=status == "error" or exit_code not in (0, None),
                              extra={"status": status}))
        call.is_error = out[-1].is_error  # a command that exited non-zero failed
    elif tool in EDIT_TOOLS and status == "completed":
        for path in _edited_paths(tool, state):
            out.append(AgentEvent(kind="file_edit", turn=turn, t_s=t, name=tool,
                                  path=relative_path(path, roots)))
    return out
