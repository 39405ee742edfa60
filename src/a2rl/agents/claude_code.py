"""Claude Code (`@anthropic-ai/claude-code`, executable `claude`) as an a2rl agent.

Command line (checked against the pinned CLI, 2.1.332):

    claude -p --output-format stream-json --verbose --include-partial-messages
           --dangerously-skip-permissions --model <driver> --session-id <uuid> -- <prompt>

- `-p` (print mode) runs one prompt headless and exits; it also skips the workspace-trust and
  onboarding dialogs, so no config file is needed for a first run.
- `--output-format stream-json --verbose`: one JSON event per line on stdout (print mode
  refuses stream-json without --verbose). `--include-partial-messages` adds the raw API stream
  events (`stream_event`); they are the only place where each response's final output-token
  count appears: the `assistant` events repeat the usage of `message_start`, whose
  `output_tokens` is a placeholder (0-1).
- `--dangerously-skip-permissions` (= permission mode bypassPermissions): every tool runs without
  approval. The CLI refuses it for root unless IS_SANDBOX=1; the sandbox runs as uid 1000, and
  IS_SANDBOX=1 is set anyway (it is true, and keeps unsandboxed root runs working).
- `--session-id` with a fixed UUID (derived from the workspace and grader URL), and
  `--resume <that uuid>` for re-prompt rounds: the continuation is exactly this conversation
  (kept under the private HOME, ~/.claude/projects/, for the whole sandbox session).
- `--` before the prompt: the prompt is never read as an option.

Environment: ANTHROPIC_API_KEY or CLAUDE_CODE_OAUTH_TOKEN (credentials); ANTHROPIC_BASE_URL for
--driver-base-url (the CLI then calls `POST <base>/v1/messages`, streamed as SSE); with a base
URL the CLI's model aliases (opus/sonnet/haiku, used by side calls and subagents) all map to
the driver, since a compatible endpoint rarely serves Anthropic's ids.
CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1, DISABLE_AUTOUPDATER=1, DISABLE_TELEMETRY=1,
DISABLE_ERROR_REPORTING=1: no update checks, telemetry, or error reports. Memory file: CLAUDE.md
(read from the working directory in print mode). ~/.claude/settings.json repeats the bypass
permission mode (so subagents and resumed sessions inherit it).

Options (--agent-opt): reprompt=1, reserve_s=<s> (see CLIAgent); effort=<low|medium|high|xhigh|
max> (--effort); max_budget_usd=<x> (--max-budget-usd, the CLI stops itself past it);
bash_timeout_ms=<ms> (BASH_MAX_TIMEOUT_MS, the longest command the Bash tool allows; default
1800000 = 30 min, the CLI's own is 10 min); small_model=<id> (ANTHROPIC_DEFAULT_HAIKU_MODEL, the
model of side calls); partial=0 (drop --include-partial-messages: smaller transcript, but output
tokens are then only known per CLI round, from its `result` event).

Usage accounting (`parse_events`): one `usage` event per model response from its stream events
(input_tokens = input + cache_creation + cache_read input tokens of message_start, so it is the
whole prompt as with other providers; output_tokens = the final count of message_delta; the
cache split goes in `extra`). At each `result` event (end of a CLI round) one more `usage` event
carries the round's cost_usd (the CLI's own estimate, from `model_usage_since_last_result`:
`total_cost_usd` is cumulative over resumed rounds) and any tokens the CLI counted in that round
but the stream did not show (side calls, subagents), so the totals equal the CLI's and nothing
is counted twice.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

from a2rl.agents._agent import AgentContext
from a2rl.agents._cli import CLIAgent, CLIPackage
from a2rl.agents._events import AgentEvent
from a2rl.agents._stream import EventCollector, as_int, json_lines, relative_path

EDIT_TOOLS = {"Write": "file_path", "Edit": "file_path", "MultiEdit": "file_path",
              "NotebookEdit": "notebook_path"}
SHELL_TOOL = "Bash"
_EXIT = re.compile(r"^Exit code (-?\d+)")


class ClaudeCodeAgent(CLIAgent):
    """Anthropic's Claude Code CLI, headless (print mode, stream-json, permissions bypassed).
    Options: reprompt, reserve_s, effort, max_budget_usd, bash_timeout_ms, small_model,
    partial (see the module docstring)."""

    name = "claude-code"
    description = "Claude Code CLI (Anthropic), headless, driver via the Messages API"
    package = CLIPackage("npm", "@anthropic-ai/claude-code", "2.1.332", "claude")
    credentials = ("ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN")
    memory_file = "CLAUDE.md"
    default_driver = "claude-sonnet-5-5"
    """What the pinned CLI itself resolves its `sonnet` alias to (first-party API)."""

    def cli_argv(self, ctx: AgentContext, exe: str, prompt: str, *, resume: bool) -> list[str]:
        argv = [exe, "-p", "--output-format", "stream-json", "--verbose"]
        if ctx.options.get("partial", "1").strip().lower() not in ("0", "false", "no", "off"):
            argv.append("--include-partial-messages")
        argv += ["--dangerously-skip-permissions", "--model", self.driver(ctx)]
        if ctx.options.get("effort"):
            argv += ["--effort", ctx.options["effort"]]
        if ctx.options.get("max_budget_usd"):
            argv += ["--max-budget-usd", ctx.options["max_budget_usd"]]
        argv += ["--resume" if resume else "--session-id", self.session_id(ctx)]
        return argv + ["--", prompt]

    def cli_env(self, ctx: AgentContext) -> dict[str, str]:
        env = {"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1",
               "DISABLE_TELEMETRY": "1", "DISABLE_ERROR_REPORTING": "1", "IS_SANDBOX": "1",
               "BASH_MAX_TIMEOUT_MS": ctx.options.get("bash_timeout_ms", "1800000")}
        if ctx.driver_base_url:
            driver = self.driver(ctx)
            env["ANTHROPIC_BASE_URL"] = ctx.driver_base_url.rstrip("/")
            for alias in ("OPUS", "SONNET", "HAIKU"):
                env[f"ANTHROPIC_DEFAULT_{alias}_MODEL"] = driver
            env["CLAUDE_CODE_SUBAGENT_MODEL"] = driver
            if not self.credential_values(ctx):
                env["ANTHROPIC_API_KEY"] = "a2rl-no-key"  # the CLI needs some key to start
        if ctx.options.get("small_model"):
            env["ANTHROPIC_DEFAULT_HAIKU_MODEL"] = ctx.options["small_model"]
        return env

    def home_files(self, ctx: AgentContext) -> dict[str, str]:
        settings = {"permissions": {"defaultMode": "bypassPermissions"}}
        return {".claude/settings.json": json.dumps(settings, indent=2) + "\n"}

    def parse_events(self, lines: Iterable[tuple[float, str]]) -> list[AgentEvent]:
        return _Parser().run(lines)


class _Parser(EventCollector):
    """State of one pass over the transcript (see the module docstring for the usage rule)."""

    def __init__(self) -> None:
        super().__init__()
        self.messages: set[str] = set()
        self.usage: dict[str, AgentEvent] = {}
        self.seen_blocks: set[str] = set()
        self.commands: dict[str, AgentEvent] = {}
        self.cwd: str | None = None
        self.round_in = self.round_out = 0
        self.last_cost: dict[str, float] = {}

    def run(self, lines: Iterable[tuple[float, str]]) -> list[AgentEvent]:
        for t, obj in json_lines(lines):
            kind = obj.get("type")
            if "a2rl_session" in obj:
                if (obj["a2rl_session"] or {}).get("event") == "round_start":
                    self.round_in = self.round_out = 0
            elif kind == "system" and obj.get("subtype") == "init":
                self.cwd = obj.get("cwd") or self.cwd
            elif kind == "stream_event":
                self.stream_event(t, obj.get("event") or {}, obj.get("api_message_id"))
            elif kind == "assistant":
                self.assistant(t, obj.get("message") or {})
            elif kind == "user":
                self.user(t, obj.get("message") or {})
            elif kind == "result":
                self.result(t, obj)
        return self.events

    # ---- model responses -------------------------------------------------------------------
    def new_message(self, t: float, msg_id: str, model: str | None) -> None:
        if msg_id in self.messages:
            return
        self.messages.add(msg_id)
        self.turn += 1
        self.add("turn", t, extra={"model": model} if model else {})

    def set_usage(self, t: float, msg_id: str, usage: dict[str, Any], *, final: bool) -> None:
        ev = self.usage.get(msg_id)
        if ev is None:
            ev = self.add("usage", t, input_tokens=0, output_tokens=0,
                          extra={"message_id": msg_id})
            self.usage[msg_id] = ev
        old_in, old_out = ev.input_tokens or 0, ev.output_tokens or 0
        if "input_tokens" in usage and usage["input_tokens"] is not None:
            cache_w = as_int(usage.get("cache_creation_input_tokens"))
            cache_r = as_int(usage.get("cache_read_input_tokens"))
            ev.input_tokens = as_int(usage["input_tokens"]) + cache_w + cache_r
            ev.extra.update(cache_creation_input_tokens=str(cache_w),
                            cache_read_input_tokens=str(cache_r))
        if final or not ev.output_tokens:
            ev.output_tokens = as_int(usage.get("output_tokens"))
        self.round_in += (ev.input_tokens or 0) - old_in
        self.round_out += (ev.output_tokens or 0) - old_out

    def stream_event(self, t: float, event: dict[str, Any], msg_id: str | None) -> None:
        if event.get("type") == "message_start":
            message = event.get("message") or {}
            msg_id = message.get("id") or msg_id
            if msg_id:
                self.new_message(t, msg_id, message.get("model"))
                self.set_usage(t, msg_id, message.get("usage") or {}, final=False)
        elif event.get("type") == "message_delta" and msg_id and msg_id in self.usage:
            self.set_usage(t, msg_id, event.get("usage") or {}, final=True)

    def assistant(self, t: float, message: dict[str, Any]) -> None:
        msg_id = message.get("id") or f"anon-{len(self.messages)}"
        self.new_message(t, msg_id, message.get("model"))
        if msg_id not in self.usage and message.get("usage"):  # no stream events (partial=0)
            self.set_usage(t, msg_id, message["usage"], final=False)
        for block in message.get("content") or []:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "text" and (block.get("text") or "").strip():
                key = f"{msg_id}:text:{block['text']}"
                if key not in self.seen_blocks:
                    self.seen_blocks.add(key)
                    self.add("message", t, text=block["text"][:500])
            elif block.get("type") == "tool_use":
                self.tool_use(t, block)

    def tool_use(self, t: float, block: dict[str, Any]) -> None:
        call_id, name = str(block.get("id")), str(block.get("name"))
        if call_id in self.seen_blocks:
            return
        self.seen_blocks.add(call_id)
        raw = block.get("input")
        args: dict[str, Any] = raw if isinstance(raw, dict) else {}
        self.add("tool_call", t, name=name)
        if name == SHELL_TOOL and isinstance(args.get("command"), str):
            ev = self.add("command", t, command=args["command"])
            if args.get("run_in_background"):
                ev.extra["background"] = "true"
            self.commands[call_id] = ev
        elif name in EDIT_TOOLS and isinstance(args.get(EDIT_TOOLS[name]), str):
            self.add("file_edit", t, name=name,
                     path=relative_path(args[EDIT_TOOLS[name]], [self.cwd]))

    def user(self, t: float, message: dict[str, Any]) -> None:
        content = message.get("content")
        for block in content if isinstance(content, list) else []:
            if not isinstance(block, dict) or block.get("type") != "tool_result":
                continue
            ev = self.commands.pop(str(block.get("tool_use_id")), None)
            if ev is None:
                continue
            ev.end_s = t
            text = block.get("content")
            if isinstance(text, list):
                text = "".join(str(c.get("text", "")) for c in text if isinstance(c, dict))
            match = _EXIT.match(str(text or ""))
            if match:
                ev.exit_code = int(match.group(1))
            elif not block.get("is_error"):
                ev.exit_code = 0

    # ---- end of a CLI round ------------------------------------------------------------------
    def result(self, t: float, obj: dict[str, Any]) -> None:
        since = obj.get("model_usage_since_last_result")
        if isinstance(since, dict) and since:
            models = [m for m in since.values() if isinstance(m, dict)]
            tok_in = sum(as_int(m.get("inputTokens")) + as_int(m.get("cacheReadInputTokens"))
                         + as_int(m.get("cacheCreationInputTokens")) for m in models)
            tok_out = sum(as_int(m.get("outputTokens")) for m in models)
            cost = sum(float(m.get("costUSD") or 0.0) for m in models)
        else:  # older stream shape: per-process usage, session-cumulative cost
            usage = obj.get("usage") or {}
            tok_in = (as_int(usage.get("input_tokens")) + as_int(usage.get("cache_read_input_tokens"))
                      + as_int(usage.get("cache_creation_input_tokens")))
            tok_out = as_int(usage.get("output_tokens"))
            session = str(obj.get("session_id"))
            total = float(obj.get("total_cost_usd") or 0.0)
            cost = total - self.last_cost.get(session, 0.0)
            self.last_cost[session] = total
        extra = {"source": "result", "subtype": str(obj.get("subtype")),
                 "num_turns": str(obj.get("num_turns"))}
        self.add("usage", t, input_tokens=max(0, tok_in - self.round_in),
                 output_tokens=max(0, tok_out - self.round_out), cost_usd=round(cost, 6),
                 extra=extra)
        self.round_in = self.round_out = 0
