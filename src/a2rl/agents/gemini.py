"""Gemini CLI (`@google/gemini-cli`, executable `gemini`) as an a2rl agent.

Command line (checked against the pinned CLI, 0.61.0):

    gemini --output-format stream-json --approval-mode yolo -m <driver>
           --session-id <uuid> --prompt=<prompt>

- `--prompt` (`-p`) runs one prompt headless and exits (non-interactive mode). The `=` form
  keeps a prompt that starts with '-' from being read as an option (yargs rejects `-p -x`).
- `--output-format stream-json`: one JSON event per line on stdout: `init`, `message` (user
  prompt; assistant text as `delta` chunks), `tool_use` {tool_name, tool_id, parameters},
  `tool_result` {tool_id, status, output}, `error`, and a final `result` whose `stats` hold
  the token counts of the whole CLI process (per model and summed).
- `--approval-mode yolo` (= `--yolo`): every tool runs without approval.
- `--session-id` with a fixed UUID (derived from the workspace and grader URL), and
  `--resume <that uuid>` for re-prompt rounds: the continuation is exactly this conversation
  (kept under the private HOME, ~/.gemini/tmp/<project>/chats/).

Environment: GEMINI_API_KEY (GOOGLE_API_KEY is accepted and passed on as GEMINI_API_KEY: with
API-key auth the CLI reads only the former). GOOGLE_GEMINI_BASE_URL for --driver-base-url (the
CLI then calls `<base>/v1beta/models/<model>:streamGenerateContent?alt=sse`, and
`:generateContent` for side calls); http is allowed for loopback only.
GEMINI_CLI_NO_RELAUNCH=true: by default `gemini` re-spawns itself as a child node process (for
a larger heap) and the parent ignores SIGTERM without passing it on, so the harness's stop at
the budget's end would not reach the CLI; one process (node's default heap) stops at once.

~/.gemini/settings.json: auth type `gemini-api-key` (no login dialog); folder trust off (no trust
check: the workspace counts as trusted); usage statistics and telemetry
off; no auto-update or update notices; no IDE integration; checkpointing off (no shadow git
repository in HOME); loop detection off (polling a training log with the same command is
legitimate here, and a detected loop ends the CLI round); the shell tool's inactivity timeout
raised from 5 to 30 min (it cancels a command silent that long, e.g. a quiet training run).
With a base URL, the CLI's side calls (next-speaker check, loop check, compression,
summaries…) normally sent to Google's flash models are redirected to the driver
(`modelConfigs.customOverrides`), since a compatible endpoint rarely serves those ids.
Memory file: GEMINI.md (read from the working directory).

Options (--agent-opt): reprompt=1, reserve_s=<s> (see CLIAgent); loop_detection=1 (keep the
CLI's loop detection); shell_inactivity_s=<s> (tools.shell.inactivityTimeout, default 1800);
side_model=<id> (model of the side calls instead of the driver, with a base URL only).

Usage accounting (`parse_events`): the stream reports tokens only in each CLI round's final
`result` event (all model calls of that process, side calls included; a resumed round starts
from zero), so each `result` gives one `usage` event with its summed `input_tokens` /
`output_tokens` (prompt tokens include cached ones; the cached count goes in `extra`).
Turns: a model response starts at the first assistant text or `tool_use` after the prompt
or after tool results (parallel calls of one response share the turn). A shell command's exit
code is known only when it printed nothing ("Command exited with code: N"); otherwise it is
left unknown, since the stream shows the output, not the code. `error` events (loop detected,
maximum session turns exceeded, API errors) and a `result` with status error become message
events marked extra["error"] = "1" and the report's cli_errors. A write_file/replace call
whose result is an error wrote nothing and is not a file edit. Every line may carry a
`[ISO-time] ` prefix; without arrival times the events' own `timestamp` gives the time.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any, ClassVar

from a2rl.agents._agent import AgentContext, AgentOption
from a2rl.agents._cli import CLI_OPTIONS, SWITCH, CLIAgent, CLIPackage
from a2rl.agents._events import AgentEvent, ParseResult
from a2rl.agents._registry import agents
from a2rl.agents._stream import EventCollector, as_int, relative_path, set_output, tool_args

SHELL_TOOL = "run_shell_command"
EDIT_TOOLS = ("write_file", "replace")
SIDE_ALIASES = ("classifier", "prompt-completion", "fast-ack-helper", "edit-corrector",
                "summarizer-default", "summarizer-shell", "web-search", "web-fetch",
                "web-fetch-fallback", "loop-detection", "loop-detection-double-check",
                "llm-edit-fixer", "next-speaker-checker", "context-snapshotter",
                "chat-compression-3-pro", "chat-compression-3-flash",
                "chat-compression-3.1-flash-lite", "chat-compression-2.5-pro",
                "chat-compression-2.5-flash", "chat-compression-2.5-flash-lite",
                "chat-compression-default", "agent-history-provider-summarizer")
"""The CLI's model-config aliases of its side calls (settings reference, modelConfigs)."""
_EXIT = re.compile(r"^Command exited with code: (-?\d+)\s*$")
_EXIT_LINE = re.compile(r"^Exit Code: (-?\d+)\s*$", re.M)
"""Older CLIs return the shell tool's whole report (Command:, Output:, Exit Code: …)."""
_CWD = re.compile(r"Working directory: `([^`]+)`")


@agents.register("gemini")
class GeminiAgent(CLIAgent):
    """Google's Gemini CLI, headless (-p, stream-json, approval mode yolo).
    Options: reprompt, reserve_s, loop_detection, shell_inactivity_s, side_model (see the
    module docstring)."""
    api_hosts = ("generativelanguage.googleapis.com", "oauth2.googleapis.com")

    name = "gemini"
    description = "Gemini CLI (Google), headless, driver via the Gemini API"
    package = CLIPackage("npm", "@google/gemini-cli", "0.61.0", "gemini")
    credentials = ("GEMINI_API_KEY", "GOOGLE_API_KEY")
    memory_file = "GEMINI.md"
    default_driver = "gemini-3.1-pro-preview"
    """The pinned CLI's newest Pro model (it maps gemini-3-pro-preview to it with API keys)."""
    driver_pattern: ClassVar[str | None] = r"gemini"
    agent_options = {**CLI_OPTIONS,
                     "loop_detection": AgentOption("1: keep the loop detection", choices=SWITCH),
                     "shell_inactivity_s": AgentOption("shell tool's inactivity timeout", int),
                     "side_model": AgentOption("model of the side calls (with a base URL)")}

    def cli_argv(self, ctx: AgentContext, exe: str, prompt: str, *, resume: bool) -> list[str]:
        return [exe, "--output-format", "stream-json", "--approval-mode", "yolo",
                "-m", self.driver(ctx), "--resume" if resume else "--session-id",
                self.session_id(ctx), f"--prompt={prompt}"]

    def cli_env(self, ctx: AgentContext) -> dict[str, str]:
        env = {"GEMINI_CLI_NO_RELAUNCH": "true"}
        creds = self.credential_values(ctx)
        if "GEMINI_API_KEY" not in creds:
            # API-key auth reads GEMINI_API_KEY only; a bare endpoint still needs some key.
            env["GEMINI_API_KEY"] = creds.get("GOOGLE_API_KEY", "a2rl-no-key")
        if ctx.driver_base_url:
            env["GOOGLE_GEMINI_BASE_URL"] = ctx.driver_base_url.rstrip("/")
        return env

    def home_files(self, ctx: AgentContext) -> dict[str, str]:
        opts = ctx.options
        settings: dict[str, Any] = {
            "security": {"auth": {"selectedType": "gemini-api-key"},
                         "folderTrust": {"enabled": False}},
            "privacy": {"usageStatisticsEnabled": False},
            "telemetry": {"enabled": False},
            "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False,
                        "checkpointing": {"enabled": False}},
            "ide": {"enabled": False},
            "model": {"disableLoopDetection": opts.get("loop_detection", "0").strip().lower()
                      not in ("1", "true", "yes", "on")},
            "tools": {"shell": {"inactivityTimeout": int(opts.get("shell_inactivity_s",
                                                                  1800))}},
        }
        if ctx.driver_base_url:
            side = opts.get("side_model") or self.driver(ctx)
            settings["modelConfigs"] = {"customOverrides": [
                {"match": {"model": alias}, "modelConfig": {"model": side}}
                for alias in SIDE_ALIASES]}
        return {".gemini/settings.json": json.dumps(settings, indent=2) + "\n"}

    def parse_events(self, lines: Iterable[tuple[float, str]]) -> list[AgentEvent]:
        return self.parse_transcript(lines).events

    def parse_transcript(self, lines: Iterable[tuple[float, str]]) -> ParseResult:
        return _Parser().run(lines)


class _Parser(EventCollector):
    """State of one pass over the transcript (see the module docstring for the rules)."""

    parser = "gemini"

    def __init__(self) -> None:
        super().__init__()
        self.in_turn = False
        self.text: AgentEvent | None = None
        self.commands: dict[str, AgentEvent] = {}
        self.edits: dict[str, AgentEvent] = {}
        self.calls: dict[str, AgentEvent] = {}
        """tool_call events by tool_id, until their tool_result."""
        self.cwd: str | None = None

    def run(self, lines: Iterable[tuple[float, str]]) -> ParseResult:
        for t, obj in self.read(lines):
            kind = obj.get("type")
            t = self.reader.event_time(t, obj.get("timestamp"))
            if kind == "init":
                self.in_turn = False
            elif kind == "message" and obj.get("role") == "user":
                self.in_turn = False
                match = _CWD.search(str(obj.get("content") or ""))
                self.cwd = match.group(1) if match else self.cwd
            elif kind == "message" and obj.get("role") == "assistant":
                self.assistant_text(t, str(obj.get("content") or ""))
            elif kind == "tool_use":
                self.tool_use(t, obj)
            elif kind == "tool_result":
                self.tool_result(t, obj)
            elif kind == "result":
                self.on_result(t, obj)
            elif kind == "error":
                # "Loop detected, stopping execution", "Maximum session turns exceeded", API
                # errors: the reason a round ended early.
                self.error(t, str(obj.get("message") or ""),
                           f"error:{obj.get('severity') or 'error'}")
            else:
                self.reader.unknown(kind)
        return self.result()

    def start_turn(self, t: float) -> None:
        if not self.in_turn:
            self.turn += 1
            self.in_turn = True
            self.text = None
            self.add("turn", t)

    def assistant_text(self, t: float, text: str) -> None:
        self.start_turn(t)
        if self.text is None:
            if not text.strip():
                return
            self.text = self.add("message", t, text="")
        self.text.text = ((self.text.text or "") + text)[:500]

    def tool_use(self, t: float, obj: dict[str, Any]) -> None:
        self.start_turn(t)
        self.text = None
        name = str(obj.get("tool_name"))
        params = obj.get("parameters")
        args: dict[str, Any] = params if isinstance(params, dict) else {}
        tool_id = str(obj.get("tool_id"))
        self.calls[tool_id] = self.add("tool_call", t, name=name,
                                       extra={"call_id": tool_id, **tool_args(params)})
        if name == SHELL_TOOL and isinstance(args.get("command"), str):
            ev = self.add("command", t, command=args["command"])
            if args.get("is_background"):
                ev.extra["background"] = "true"
            self.commands[str(obj.get("tool_id"))] = ev
        elif name in EDIT_TOOLS and isinstance(args.get("file_path"), str):
            self.edits[str(obj.get("tool_id"))] = self.add(
                "file_edit", t, name=name, path=relative_path(args["file_path"], [self.cwd]))

    def tool_result(self, t: float, obj: dict[str, Any]) -> None:
        """A tool's result: its `output`, or its error's message when it failed (status
        `error`), on the call's tool_call event with is_error; a shell command's exit code
        from the output's last line."""
        self.in_turn = False
        failed = obj.get("status") == "error"
        error: dict[str, Any] = obj["error"] if isinstance(obj.get("error"), dict) else {}
        call = self.calls.pop(str(obj.get("tool_id")), None)
        output = obj.get("output")
        if call is not None:
            text = output if isinstance(output, str) else None
            if failed and error.get("message"):
                text = f"{text}\n{error['message']}" if text else str(error["message"])
            set_output(call, text, failed)
        edit = self.edits.pop(str(obj.get("tool_id")), None)
        if edit is not None and failed:  # the tool refused: no write
            self.events.remove(edit)
        ev = self.commands.pop(str(obj.get("tool_id")), None)
        if ev is None:
            return
        ev.end_s = t
        output = str(output or "")
        match = _EXIT.match(output) or _EXIT_LINE.search(output)
        if match:
            ev.exit_code = int(match.group(1))
        ev.is_error = failed or (ev.exit_code is not None and ev.exit_code != 0)
        if call is not None:
            call.is_error = ev.is_error
        if failed:
            ev.extra["error"] = str((obj.get("error") or {}).get("type", "error"))

    def on_result(self, t: float, obj: dict[str, Any]) -> None:
        self.in_turn = False
        error = obj.get("error")
        if obj.get("status") == "error" or isinstance(error, dict):
            err = error if isinstance(error, dict) else {}
            self.error(t, str(err.get("message") or ""),
                       f"result:{err.get('type') or obj.get('status') or 'error'}")
        stats = obj.get("stats") or {}
        models: dict[str, Any] = stats["models"] if isinstance(stats.get("models"), dict) \
            else {}
        extra = {"source": "result", "status": str(obj.get("status")),
                 "cached_tokens": str(as_int(stats.get("cached"))),
                 "models": ",".join(sorted(models))}
        self.add("usage", t, input_tokens=as_int(stats.get("input_tokens")),
                 output_tokens=as_int(stats.get("output_tokens")), extra=extra)
