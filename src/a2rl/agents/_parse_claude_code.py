"""Claude Code's `--output-format stream-json --verbose` transcript → AgentEvents.

Shapes read (2.0.x and 2.1.x):

- `system` `init` (the CLI's cwd); `assistant` messages, repeated once per content block with
  the same message id and usage (the first copies may carry a placeholder output count);
  `stream_event` (with --include-partial-messages: `message_start`, `message_delta` with the
  final output count); `user` messages with `tool_result` blocks; `result` at the end of each
  CLI process (one per round).
- Tool results: each `tool_result` block's content (a string or text blocks; an image block
  is left out) is its call's output, matched by `tool_use_id`, on the call's tool_call event
  (capped, `a2rl.agents._stream.set_output`), with `is_error`; a shell command's command
  event carries `is_error` too. A call that never got a result keeps output None.
- Failed tool results: `is_error: true`. 2.1.x prefixes a failed Bash result with
  `Exit code N`; 2.0.x gives only the output, so the command gets exit code 1 (and
  extra["exit_code_source"] = "is_error"). Write/Edit calls the CLI rejected (file not read
  first, permission denied, invalid input) are not file edits.
- Background commands (`run_in_background`, or a command moved to the background at its
  timeout): the tool result only acknowledges the launch ("Command running in background with
  ID: X"); the command's end and exit code come later from `system` `task_started` /
  `task_updated` / `task_notification` events (2.1.x), a `<task-notification>` text in a user
  message, or the results of BashOutput (2.0.x) / TaskOutput (2.1.x) polls and KillShell /
  TaskStop calls. A command still running when the transcript ends keeps exit_code None.

Session files (~/.claude/projects/<project>/<session>.jsonl) have the same assistant/user
lines with a `timestamp` each (used when the transcript has no times) and `toolUseResult`
for `tool_use_result`, but no `result` events: their usage is the per-response one.

Usage: one `usage` event per model response (per message id, never per repeated copy), its
input = input + cache_creation + cache_read tokens (the whole prompt), its output the largest
count seen (message_delta's final one, else the last copy's). At each `result` the round's
total as the CLI counted it wins: `model_usage_since_last_result` (2.1.x), else the growth of
the cumulative `modelUsage` since the last result of that session (or the whole modelUsage
when that growth is below what the stream showed this round: a CLI whose count restarts with
each process), else the result's `usage`.
One more `usage` event (extra source=result) carries the round's cost and the difference to
the CLI's total: positive for tokens the stream did not show (side calls, subagents, output
counts without partial messages), negative (extra correction=1, and a warning in the report)
when the stream showed more than the CLI counted.

Two totals, both kept: input_tokens/output_tokens of the events sum to every model the CLI
called (the result's `modelUsage`: side calls of the small model and subagents included, what
its cost prices); main_input_tokens/main_output_tokens sum to the main model's own agent loop
(the result's `usage`). A response of a subagent (`parent_tool_use_id`, or `isSidechain` in a
session file) counts 0 for the main model; the result event carries the difference between
the round's `usage` and the main responses the stream showed.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from a2rl.agents._events import AgentEvent, ParseResult
from a2rl.agents._stream import EventCollector, as_int, relative_path, set_output, tool_args

EDIT_TOOLS = {"Write": "file_path", "Edit": "file_path", "MultiEdit": "file_path",
              "NotebookEdit": "notebook_path"}
SHELL_TOOL = "Bash"
POLL_TOOLS = {"BashOutput": "bash_id", "TaskOutput": "task_id"}
"""Tools that read a background command's status (2.0.x BashOutput, 2.1.x TaskOutput)."""
KILL_TOOLS = {"KillShell": "shell_id", "KillBash": "shell_id", "TaskStop": "task_id"}
KNOWN_TYPES = {"system", "stream_event", "assistant", "user", "result", "rate_limit_event",
               "tool_progress", "keep_alive", "control_request", "control_response",
               "control_cancel_request", "auth_status", "attachment", "summary"}
"""Top-level event types of the stream (those not listed are counted as unknown)."""
_EXIT = re.compile(r"^\s*Exit code:? (-?\d+)")
_BACKGROUND = re.compile(r"(?:running in background with ID:|moved to the background "
                         r"\(ID:)\s*([\w-]+)")
_TAG = re.compile(r"<(task[-_]id|status|exit[-_]code|summary|tool[-_]use[-_]id)>"
                  r"\s*(.*?)\s*</\1>", re.S)
_SUMMARY_EXIT = re.compile(r"exit code:? (-?\d+)", re.I)
_DONE = {"completed", "failed", "killed", "stopped", "error", "cancelled"}


def _text(content: Any) -> str:
    """The text of a tool_result's content (a string or a list of text blocks)."""
    if isinstance(content, list):
        return "".join(str(c.get("text", "")) for c in content if isinstance(c, dict))
    return str(content or "")


def _tags(text: str) -> dict[str, str]:
    """`<status>…</status>`-style fields of a task notification or a poll result."""
    return {m.group(1).replace("-", "_"): m.group(2) for m in _TAG.finditer(text)}


class ClaudeCodeParser(EventCollector):
    """State of one pass over the transcript (see the module docstring)."""

    parser = "claude-code"
    harness_lines = True  # a round start resets the round's stream totals

    def __init__(self) -> None:
        super().__init__()
        self.messages: set[str] = set()
        self.usage: dict[str, AgentEvent] = {}
        self.seen_blocks: set[str] = set()
        self.calls: dict[str, AgentEvent] = {}
        """tool_call events by tool_use id."""
        self.tool_names: dict[str, str] = {}
        self.tool_inputs: dict[str, dict[str, Any]] = {}
        self.commands: dict[str, AgentEvent] = {}
        """Shell commands waiting for their tool result, by tool_use id."""
        self.edits: dict[str, AgentEvent] = {}
        """file_edit events waiting for their tool result (dropped if it is an error)."""
        self.background: dict[str, AgentEvent] = {}
        """Background commands by task/shell id, until they finish."""
        self.by_call: dict[str, AgentEvent] = {}
        """Every command by tool_use id (task events name the call that launched them)."""
        self.cwd: str | None = None
        self.round_in = self.round_out = 0
        self.round_main_in = self.round_main_out = 0
        """The main model's share of round_in/round_out (responses outside subagents)."""
        self.subagent_messages: set[str] = set()
        self.model_totals: dict[str, tuple[int, int, float]] = {}
        """Per session: the cumulative modelUsage (in, out, cost) at its last result."""
        self.last_cost: dict[str, float] = {}
        self.stream_rounds_above = 0

    def run(self, lines: Iterable[tuple[float, str]]) -> ParseResult:
        for t, obj in self.read(lines):
            kind = obj.get("type")
            t = self.reader.event_time(t, obj.get("timestamp"))  # session files stamp lines
            if "a2rl_session" in obj:
                if (obj["a2rl_session"] or {}).get("event") == "round_start":
                    self.round_in = self.round_out = 0
                    self.round_main_in = self.round_main_out = 0
            elif kind == "system":
                self.system(t, obj)
            elif kind == "stream_event":
                self.stream_event(t, obj.get("event") or {}, obj.get("api_message_id"),
                                  obj.get("parent_tool_use_id"))
            elif kind == "assistant":
                parent = obj.get("parent_tool_use_id") or ("sidechain" if obj.get("isSidechain") else None)
                self.assistant(t, obj.get("message") or {}, parent)
            elif kind == "user":
                extra = obj.get("tool_use_result") or obj.get("toolUseResult")
                self.user(t, obj.get("message") or {}, extra if isinstance(extra, dict) else {})
            elif kind == "result":
                self.on_result(t, obj)
            elif kind not in KNOWN_TYPES:
                self.reader.unknown(kind)
        for ev in self.edits.values():  # the run ended before the CLI answered the call
            ev.extra["result"] = "none"
        if self.stream_rounds_above:
            self.report.warnings.append(
                f"{self.stream_rounds_above} CLI round(s): the stream showed more tokens than "
                "the CLI's own total; a correction event brings the sum down to the CLI's")
        return self.result()

    # ---- system events -----------------------------------------------------------------------
    def system(self, t: float, obj: dict[str, Any]) -> None:
        subtype = obj.get("subtype")
        if subtype == "init":
            self.cwd = obj.get("cwd") or self.cwd
        elif subtype in ("task_started", "task_updated", "task_notification"):
            task_id = str(obj.get("task_id") or "")
            ev = self.background.get(task_id)
            if ev is None and obj.get("tool_use_id"):
                # a task launched by a Bash call (local_agent tasks name a Task call instead)
                ev = self.by_call.get(str(obj["tool_use_id"]))
                if ev is not None and ev.end_s is not None and not ev.extra.get("background"):
                    ev = None  # that call already finished in the foreground
                if ev is not None and task_id:
                    self.background[task_id] = ev
                    ev.extra.update(background="true", task_id=task_id)
                    ev.extra.setdefault("status", "running")
            if ev is None or subtype == "task_started":
                return
            patch: dict[str, Any] = obj["patch"] if isinstance(obj.get("patch"), dict) else obj
            code = next((patch.get(k) for k in ("exit_code", "exitCode")
                         if isinstance(patch.get(k), int)), None)
            self.task_status(t, task_id, str(patch.get("status") or ""), code,
                             str(obj.get("summary") or ""), f"system:{subtype}")
        elif subtype == "api_error" or (subtype or "").endswith("_error"):
            self.error(t, str(obj.get("error") or obj.get("message") or ""), f"system:{subtype}")

    def task_status(self, t: float, task_id: str, status: str, code: int | None,
                    summary: str, source: str) -> None:
        """A background command's status from a task event, a notification or a poll."""
        ev = self.background.get(task_id)
        if ev is None or status.lower() not in _DONE:
            return
        status = status.lower()
        if code is None and (match := _SUMMARY_EXIT.search(summary)):
            code = int(match.group(1))
        inferred = code is None
        if code is None:
            code = {"completed": 0, "failed": 1, "error": 1}.get(status)
        known = ev.extra.get("exit_code_source")
        if ev.end_s is None:
            ev.end_s = t
        # The first report ends the command; a later one with an explicit code (the
        # notification's summary after task_updated's bare status) refines its exit code.
        if ev.extra.get("status") in (None, "running") or \
                (known in ("status", None) and not inferred):
            ev.exit_code = code
            ev.extra["exit_code_source"] = "status" if inferred else source
            ev.extra["status"] = status

    # ---- model responses -------------------------------------------------------------------
    def new_message(self, t: float, msg_id: str, model: str | None,
                    parent: Any = None) -> None:
        if msg_id in self.messages:
            return
        self.messages.add(msg_id)
        self.turn += 1
        extra = {"model": model} if model else {}
        if parent:
            extra["subagent_of"] = str(parent)
        self.add("turn", t, extra=extra)

    def set_usage(self, t: float, msg_id: str, usage: dict[str, Any], *, final: bool,
                  parent: Any = None) -> None:
        if parent:
            self.subagent_messages.add(msg_id)
        ev = self.usage.get(msg_id)
        if ev is None:
            ev = self.add("usage", t, input_tokens=0, output_tokens=0,
                          extra={"message_id": msg_id})
            self.usage[msg_id] = ev
        old_in, old_out = ev.input_tokens or 0, ev.output_tokens or 0
        if usage.get("input_tokens") is not None:
            cache_w = as_int(usage.get("cache_creation_input_tokens"))
            cache_r = as_int(usage.get("cache_read_input_tokens"))
            ev.input_tokens = as_int(usage["input_tokens"]) + cache_w + cache_r
            ev.extra.update(cache_creation_input_tokens=str(cache_w),
                            cache_read_input_tokens=str(cache_r))
        out = as_int(usage.get("output_tokens"))
        if final:
            ev.extra["final_output"] = "1"
            ev.output_tokens = out
        elif ev.extra.get("final_output") != "1":
            # Copies of one message repeat its usage; only the later ones have the real count.
            ev.output_tokens = max(out, ev.output_tokens or 0)
        self.round_in += (ev.input_tokens or 0) - old_in
        self.round_out += (ev.output_tokens or 0) - old_out
        # The main model's share: all of a main-loop response, none of a subagent's.
        old_main_in, old_main_out = ev.main_input_tokens or 0, ev.main_output_tokens or 0
        main = msg_id not in self.subagent_messages
        ev.main_input_tokens = (ev.input_tokens or 0) if main else 0
        ev.main_output_tokens = (ev.output_tokens or 0) if main else 0
        self.round_main_in += ev.main_input_tokens - old_main_in
        self.round_main_out += ev.main_output_tokens - old_main_out

    def stream_event(self, t: float, event: dict[str, Any], msg_id: str | None,
                     parent: Any = None) -> None:
        if event.get("type") == "message_start":
            message = event.get("message") or {}
            msg_id = message.get("id") or msg_id
            if msg_id:
                self.new_message(t, msg_id, message.get("model"), parent)
                self.set_usage(t, msg_id, message.get("usage") or {}, final=False, parent=parent)
        elif event.get("type") == "message_delta" and msg_id and msg_id in self.usage:
            self.set_usage(t, msg_id, event.get("usage") or {}, final=True, parent=parent)

    def assistant(self, t: float, message: dict[str, Any], parent: Any) -> None:
        msg_id = message.get("id") or f"anon-{len(self.messages)}"
        self.new_message(t, msg_id, message.get("model"), parent)
        if isinstance(message.get("usage"), dict):
            self.set_usage(t, msg_id, message["usage"], final=False, parent=parent)
        for block in message.get("content") or []:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "text" and (block.get("text") or "").strip():
                key = f"{msg_id}:text:{block['text']}"
                if key not in self.seen_blocks:
                    self.seen_blocks.add(key)
                    self.add("message", t, text=block["text"][:500])
            elif block.get("type") in ("tool_use", "server_tool_use"):
                self.tool_use(t, block)

    def tool_use(self, t: float, block: dict[str, Any]) -> None:
        call_id, name = str(block.get("id")), str(block.get("name"))
        if call_id in self.seen_blocks:
            return
        self.seen_blocks.add(call_id)
        raw = block.get("input")
        args: dict[str, Any] = raw if isinstance(raw, dict) else {}
        self.calls[call_id] = self.add("tool_call", t, name=name,
                                       extra={"call_id": call_id, **tool_args(args)})
        self.tool_names[call_id], self.tool_inputs[call_id] = name, args
        if name == SHELL_TOOL and isinstance(args.get("command"), str):
            ev = self.add("command", t, command=args["command"])
            if args.get("run_in_background"):
                ev.extra["background"] = "true"
            self.commands[call_id] = self.by_call[call_id] = ev
        elif name in EDIT_TOOLS and isinstance(args.get(EDIT_TOOLS[name]), str):
            self.edits[call_id] = self.add("file_edit", t, name=name,
                                           path=relative_path(args[EDIT_TOOLS[name]], [self.cwd]))

    # ---- tool results ----------------------------------------------------------------------
    def user(self, t: float, message: dict[str, Any], outcome: dict[str, Any]) -> None:
        """A user message: tool results (with the CLI's structured `tool_use_result` beside
        them in 2.x: `backgroundTaskId` marks a command that went on in the background) or
        a task notification."""
        content = message.get("content")
        if isinstance(content, str):
            self.notification(t, content)
            return
        for block in content if isinstance(content, list) else []:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "text":
                self.notification(t, str(block.get("text") or ""))
            elif block.get("type") == "tool_result":
                self.tool_result(t, block, outcome)

    def notification(self, t: float, text: str) -> None:
        """A `<task-notification>` the CLI hands the model when a background task ends."""
        if "<task-notification>" not in text:
            return
        for chunk in text.split("<task-notification>")[1:]:
            tags = _tags(chunk.split("</task-notification>")[0])
            code = tags.get("exit_code", "")
            self.task_status(t, tags.get("task_id", ""), tags.get("status", ""),
                             int(code) if re.fullmatch(r"-?\d+", code) else None,
                             tags.get("summary", ""), "notification")

    def tool_result(self, t: float, block: dict[str, Any], outcome: dict[str, Any]) -> None:
        call_id = str(block.get("tool_use_id"))
        text, failed = _text(block.get("content")), bool(block.get("is_error"))
        name = self.tool_names.get(call_id, "")
        call = self.calls.get(call_id)
        if call is not None:
            set_output(call, text, failed)
            if failed:
                call.extra["status"] = "error"
        edit = self.edits.pop(call_id, None)
        if edit is not None and failed:  # rejected (not read first, denied…): nothing written
            self.events.remove(edit)
        if name in POLL_TOOLS or name in KILL_TOOLS:
            self.poll_result(t, name, call_id, text, failed)
        ev = self.commands.pop(call_id, None)
        if ev is None:
            return
        match = _EXIT.match(text)
        launched = _BACKGROUND.search(text)
        task_id = str(outcome.get("backgroundTaskId") or (launched.group(1) if launched else ""))
        if not failed and (task_id or ev.extra.get("background") == "true"):
            # Only the launch was acknowledged: the command runs on; its end comes later.
            ev.extra["background"] = "true"
            ev.extra.setdefault("status", "running")
            if task_id:
                ev.extra["task_id"] = task_id
                self.background[task_id] = ev
            return
        ev.end_s = t
        ev.is_error = failed
        if match:
            ev.exit_code = int(match.group(1))
            ev.extra["exit_code_source"] = "result"
        elif failed:
            # 2.0.x: a failed command's result is only its output, marked is_error.
            ev.exit_code = 1
            ev.extra["exit_code_source"] = "is_error"
        else:
            ev.exit_code = 0

    def poll_result(self, t: float, name: str, call_id: str, text: str, failed: bool) -> None:
        args = self.tool_inputs.get(call_id, {})
        tags = _tags(text)
        task_id = tags.get("task_id") or str(args.get(POLL_TOOLS.get(name) or
                                                      KILL_TOOLS.get(name, ""), "") or "")
        if name in KILL_TOOLS:
            if not failed:
                self.task_status(t, task_id, "killed", None, "", f"tool:{name}")
            return
        code = tags.get("exit_code", "")
        self.task_status(t, task_id, tags.get("status", ""),
                         int(code) if re.fullmatch(r"-?\d+", code) else None, "",
                         f"tool:{name}")

    # ---- end of a CLI round ------------------------------------------------------------------
    def round_total(self, obj: dict[str, Any]) -> tuple[int, int, float, str]:
        """(input, output, cost, where from) of this round as the CLI counted it."""
        def model_sum(models: dict[str, Any]) -> tuple[int, int, float]:
            ms = [m for m in models.values() if isinstance(m, dict)]
            return (sum(as_int(m.get("inputTokens")) + as_int(m.get("cacheReadInputTokens"))
                        + as_int(m.get("cacheCreationInputTokens")) for m in ms),
                    sum(as_int(m.get("outputTokens")) for m in ms),
                    sum(float(m.get("costUSD") or 0.0) for m in ms))

        session = str(obj.get("session_id"))
        cumulative = obj.get("modelUsage")
        before = self.model_totals.get(session)
        if isinstance(cumulative, dict) and cumulative:
            self.model_totals[session] = model_sum(cumulative)
        since = obj.get("model_usage_since_last_result")
        if isinstance(since, dict) and since:
            return (*model_sum(since), "model_usage_since_last_result")
        if isinstance(cumulative, dict) and cumulative:
            now = self.model_totals[session]
            growth = (now[0] - before[0], now[1] - before[1], now[2] - before[2]) \
                if before is not None else None
            # modelUsage is cumulative over the session, restored by --resume in some versions
            # and per process in others: the growth since the last result is this round's
            # total unless it is less than what the stream itself showed this round (then
            # the count restarted with this process).
            if growth is not None and min(growth) >= 0 and \
                    growth[0] >= self.round_in * 0.98 and growth[1] >= self.round_out * 0.98:
                return (*growth, "modelUsage growth")
            return (*now, "modelUsage")
        tok_in, tok_out = self.main_total(obj) or (0, 0)
        total = float(obj.get("total_cost_usd") or 0.0)  # cumulative over resumed rounds
        cost = total - self.last_cost.get(session, 0.0) if total >= self.last_cost.get(
            session, 0.0) else total
        self.last_cost[session] = total
        return tok_in, tok_out, cost, "usage"

    @staticmethod
    def main_total(obj: dict[str, Any]) -> tuple[int, int] | None:
        """(input, output) of the round's main model: the result's `usage` (None without one)."""
        usage = obj.get("usage")
        if not isinstance(usage, dict) or usage.get("input_tokens") is None:
            return None
        return (as_int(usage.get("input_tokens")) + as_int(usage.get("cache_read_input_tokens"))
                + as_int(usage.get("cache_creation_input_tokens")), as_int(usage.get("output_tokens")))

    def on_result(self, t: float, obj: dict[str, Any]) -> None:
        tok_in, tok_out, cost, source = self.round_total(obj)
        main = self.main_total(obj)
        if isinstance(obj.get("total_cost_usd"), (int, float)):
            self.last_cost[str(obj.get("session_id"))] = float(obj["total_cost_usd"])
        extra = {"source": "result", "subtype": str(obj.get("subtype")),
                 "num_turns": str(obj.get("num_turns")), "total_from": source}
        d_in, d_out = tok_in - self.round_in, tok_out - self.round_out
        if d_in < 0 or d_out < 0:
            extra["correction"] = "1"
            self.stream_rounds_above += 1
        self.add("usage", t, input_tokens=d_in, output_tokens=d_out, cost_usd=round(cost, 6),
                 main_input_tokens=None if main is None else main[0] - self.round_main_in,
                 main_output_tokens=None if main is None else main[1] - self.round_main_out,
                 extra=extra)
        self.round_in = self.round_out = 0
        self.round_main_in = self.round_main_out = 0
        subtype = str(obj.get("subtype") or "")
        if obj.get("is_error") or subtype.startswith("error"):
            errors = obj.get("errors")
            text = "; ".join(map(str, errors)) if isinstance(errors, list) and errors else \
                str(obj.get("result") or "")
            self.error(t, text, f"result:{subtype or 'error'}")
