"""OpenAI Codex CLI (`@openai/codex`) as an a2rl agent.

Command line (checked against codex-cli 0.171.0):

    codex exec --json --dangerously-bypass-approvals-and-sandbox --skip-git-repo-check \
        -m <driver> -- <prompt>
    codex exec resume --last --json --dangerously-bypass-approvals-and-sandbox \
        --skip-git-repo-check -m <driver> <re-prompt>

- `exec` is the headless mode: one turn that runs until the model stops calling tools, then exits.
- `--dangerously-bypass-approvals-and-sandbox`: no approval prompts (nobody is there to answer)
  and no Codex sandbox: its landlock/seccomp/bwrap sandbox cannot nest inside a2rl's bubblewrap
  sandbox, which already confines the agent.
- `--skip-git-repo-check`: Codex refuses to run outside a git repository otherwise.
- `--json`: JSON lines on stdout (thread.started, turn.started, item.started/completed with
  agent_message, reasoning, command_execution, file_change, … items, turn.completed with usage);
  `parse_events` reads them.
- `resume --last` continues the newest session recorded in $CODEX_HOME/sessions for this working
  directory (the sandbox's HOME lives as long as the agent, so the first round's session is
  there); its `turn.completed` usage is the thread's cumulative total, see `parse_events`.

Endpoint and key: ~/.codex/config.toml (written into the sandbox's private HOME) declares its
own provider `a2rl` (`base_url` = --driver-base-url, else https://api.openai.com/v1;
`env_key` = the credential variable that is set; `wire_api = "responses"`). An explicit
provider because the built-in `openai` one ignores OPENAI_BASE_URL and, in `exec`, reads only
CODEX_API_KEY (not OPENAI_API_KEY), and first tries a WebSocket transport; the custom provider
speaks plain `POST {base_url}/responses` with server-sent events. `allow_login_shell = false`:
Codex runs commands with `bash -lc` otherwise, and the login shell's /etc/profile resets PATH,
losing a2rl's Python (`python: command not found`). The same file turns off the update check,
analytics and feedback uploads. Codex reads AGENTS.md from its working directory.

Options (--agent-opt, besides the base class's reprompt/reserve_s):
- `reasoning_effort=<minimal|low|medium|high|xhigh|…>`: `model_reasoning_effort` (model default
  when unset);
- `web_search=<disabled|cached|live>`: Codex's hosted web-search tool (Codex default when unset;
  disabled under `--network none`).
"""

from __future__ import annotations

import json
import os
import re
import shlex
from collections.abc import Iterable
from typing import Any, ClassVar

from a2rl.agents._agent import AgentContext, AgentOption
from a2rl.agents._cli import CLI_OPTIONS, CLIAgent, CLIPackage
from a2rl.agents._events import AgentEvent, ParseResult
from a2rl.agents._registry import agents
from a2rl.agents._stream import EventCollector, as_int, relative_path, set_output, tool_args

OPENAI_BASE_URL = "https://api.openai.com/v1"
_TOOL_ITEMS = ("command_execution", "file_change", "mcp_tool_call", "collab_tool_call",
               "web_search")
_SHELL_WRAPPER = re.compile(r"^(?:/usr)?(?:/bin/)?(?:ba|z)?sh\s+-l?c\s")


def _toml_str(value: str) -> str:
    return json.dumps(value)  # a JSON string literal is a valid TOML basic string


def unwrap_shell(command: str) -> str:
    """`/bin/bash -lc '<cmd>'` (how Codex reports every command) → `<cmd>`."""
    if _SHELL_WRAPPER.match(command):
        try:
            parts = shlex.split(command)
        except ValueError:
            return command
        if len(parts) == 3:
            return parts[2]
    return command


@agents.register("codex")
class CodexAgent(CLIAgent):
    """OpenAI Codex CLI, headless (`codex exec --json`), approvals and its own sandbox off.
    Options: reprompt=1, reserve_s=<s>, reasoning_effort=<level>,
    web_search=<disabled|cached|live>."""
    api_hosts = ("api.openai.com", "chatgpt.com")

    name = "codex"
    description = "OpenAI Codex CLI (codex exec), driver gpt-6.2-sol by default"
    package: ClassVar[CLIPackage] = CLIPackage("npm", "@openai/codex", "0.171.0", "codex")
    credentials: ClassVar[tuple[str, ...]] = ("OPENAI_API_KEY", "CODEX_API_KEY")
    memory_file: ClassVar[str | None] = "AGENTS.md"
    default_driver: ClassVar[str] = "gpt-6.2-sol"
    """The default model of codex-cli 0.171.0 (first entry of its bundled model catalog)."""
    driver_pattern: ClassVar[str | None] = r"(gpt|o\d|codex)"
    agent_options = {**CLI_OPTIONS,
                     "reasoning_effort": AgentOption("model_reasoning_effort"),
                     "web_search": AgentOption("the hosted web search",
                                               choices=("disabled", "cached", "live"))}

    def cli_argv(self, ctx: AgentContext, exe: str, prompt: str, *, resume: bool) -> list[str]:
        common = ["--json", "--dangerously-bypass-approvals-and-sandbox",
                  "--skip-git-repo-check", "-m", self.driver(ctx)]
        if resume:
            # `resume --last <prompt>`: with --last the single positional is the prompt.
            return [exe, "exec", "resume", "--last", *common, prompt]
        return [exe, "exec", *common, "--", prompt]

    def key_variable(self) -> str | None:
        """The credential variable Codex reads the key from (the first one set)."""
        return next((k for k in self.credentials if os.environ.get(k)), None)

    def home_files(self, ctx: AgentContext) -> dict[str, str]:
        top = ['model_provider = "a2rl"', "allow_login_shell = false",
               "check_for_update_on_startup = false"]
        if ctx.options.get("reasoning_effort"):
            top.append(f"model_reasoning_effort = {_toml_str(ctx.options['reasoning_effort'])}")
        # Under --network none or allowlist the hosted search (run on OpenAI's side, so past the
        # egress proxy) would reach the web the sandbox cuts off: disabled unless asked for.
        web_search = ctx.options.get("web_search") or (
            "disabled" if ctx.network in ("none", "allowlist") else None)
        if web_search:
            top.append(f"web_search = {_toml_str(web_search)}")
        provider = ["[model_providers.a2rl]", 'name = "a2rl"',
                    f"base_url = {_toml_str(ctx.driver_base_url or OPENAI_BASE_URL)}",
                    'wire_api = "responses"']
        key = self.key_variable()
        if key:
            provider.append(f"env_key = {_toml_str(key)}")
        config = [*top, "", "[analytics]", "enabled = false", "", "[feedback]",
                  "enabled = false", "", *provider]
        return {".codex/config.toml": "\n".join(config) + "\n"}

    def parse_events(self, lines: Iterable[tuple[float, str]]) -> list[AgentEvent]:
        """`codex exec --json` lines → events.

        Model turns are not marked in Codex's stream: a new turn starts at the first item after
        `turn.started`, at the first item after a tool item completed (tool results go back to
        the model, so whatever follows comes from its next response), and at a message or
        reasoning item after a tool item started (a response's text comes before its tool
        calls). Tool calls that Codex runs one after another within one response are therefore
        counted as separate turns.

        A command that outlives `exec_command`'s yield time goes on in the background and may
        never get its `item.completed`; it is reported when the round ends, without exit code.

        Outputs (on each call's tool_call event, capped; `is_error` there and on the command
        event): a command's `aggregated_output` (status `failed` or a non-zero exit code is an
        error), an MCP call's result content or error message, a failed file_change; in the
        older streams exec_command_end's aggregated (else stdout and stderr) output,
        patch_apply_end's stdout/stderr and success, mcp_tool_call_end's Ok/Err result, and a
        session file's `*_output` items.

        Usage: Codex reports it only once per `exec` round, in `turn.completed`, as the
        thread's cumulative total (a resumed thread starts from the earlier rounds' total), so
        each `usage` event carries the difference from the previous total of that thread; it
        covers every model response of the round. Codex reports no cost.
        """
        return self.parse_transcript(lines).events

    def parse_transcript(self, lines: Iterable[tuple[float, str]]) -> ParseResult:
        """`parse_events` plus the report. Also read: the early 0.4x item shape (`item_type`
        instead of `type`, `assistant_message`) and the pre-0.44 `{"id", "msg": {…}}` event
        stream (task_started, agent_message, exec_command_begin/end, patch_apply_begin/end,
        token_count with the session's cumulative total); and a session file as Codex keeps it
        (~/.codex/sessions/…/rollout-*.jsonl: `{"timestamp", "type": "response_item" |
        "event_msg" | …, "payload"}`), whose tool calls and outputs are response items (the
        exit code from the output's metadata or its "Process exited with code N" line) and
        whose usage is the cumulative token_count; any of them with `[ISO-time] ` prefixes."""
        parser = _StreamParser()
        last = 0.0
        for t, obj in parser.read(lines):
            if "type" not in obj and "msg" not in obj and _LEGACY_HEADER & obj.keys():
                continue  # pre-0.44: the config summary and the prompt, printed first
            if obj.get("type") in _ROLLOUT and isinstance(obj.get("payload"), dict):
                t = parser.reader.event_time(t, obj.get("timestamp"))
                parser.rollout(t, str(obj["type"]), obj["payload"])
            elif isinstance(obj.get("msg"), dict):
                parser.legacy(t, obj["msg"])
            else:
                parser.feed(t, obj)
            last = t
        parser.flush(last)
        return parser.result()


_LEGACY_IGNORED = {"exec_command_output_delta", "agent_message_delta", "agent_reasoning_delta",
                   "agent_reasoning_raw_content", "agent_reasoning_raw_content_delta",
                   "agent_reasoning_section_break", "background_event", "session_configured",
                   "turn_diff", "plan_update", "mcp_list_tools_response", "get_history_entry_response",
                   "user_message", "turn_aborted", "shutdown_complete", "web_search_begin",
                   "web_search_end", "exec_approval_request", "apply_patch_approval_request",
                   "patch_apply_output_delta", "mcp_startup_update", "mcp_startup_complete"}
"""Pre-0.44 events that carry nothing the event log needs (deltas, notices)."""
_ROLLOUT = {"session_meta", "turn_context", "event_msg", "response_item", "compacted"}
"""Line types of a Codex session file (rollout-*.jsonl)."""
_ROLLOUT_EVENTS = {"token_count", "error", "stream_error", "task_started", "task_complete"}
"""The session file's event_msg payloads read (the rest repeat its response items)."""
_SHELL_CALLS = {"shell", "container.exec", "exec_command", "shell_command", "local_shell",
                "bash"}
_PATCH_FILE = re.compile(r"^\*\*\* (?:Add|Update|Delete) File: (.+)$|^\*\*\* Move to: (.+)$",
                         re.M)
_PROCESS_EXIT = re.compile(r"^(?:Process exited with code|Exit code:?) (-?\d+)", re.M)
_LEGACY_HEADER = {"prompt", "model", "provider", "sandbox", "workdir", "approval"}
_KNOWN = {"thread.started", "turn.started", "turn.completed", "turn.failed", "error",
          "item.started", "item.updated", "item.completed"}


class _StreamParser(EventCollector):
    """State of one transcript's parse (see `CodexAgent.parse_events`)."""

    parser = "codex"

    def __init__(self) -> None:
        super().__init__()
        self.in_response = False
        self.tool_started = False
        """A tool item started in the current response."""
        self.thread = ""
        self.totals: dict[str, tuple[int, int, int, int]] = {}
        self.started: dict[str, tuple[float, int, dict[str, Any]]] = {}
        """Tool items started and not completed: (start time, turn, item)."""
        self.flushed: set[str] = set()
        self.cwd: str | None = None
        """The session's working directory (a session file's session_meta)."""
        self.legacy_calls: dict[str, tuple[float, int, dict[str, Any]]] = {}
        """Pre-0.44: exec/patch calls begun and not ended (start time, turn, begin event)."""

    def model_output(self, t: float) -> None:
        """Something the model produced: opens a new turn unless one is open."""
        if not self.in_response:
            self.turn += 1
            self.in_response, self.tool_started = True, False
            self.add("turn", t)

    def flush(self, t: float) -> None:
        """The round ended: report tool items that never completed (still running)."""
        for item_id, (begin, turn, item) in list(self.started.items()):
            self.tool(item, begin, None, turn)
            self.flushed.add(item_id)
        self.started.clear()
        self.flush_legacy(t)

    def feed(self, t: float, obj: dict[str, Any]) -> None:
        kind = obj.get("type")
        if kind == "thread.started":  # each `exec` process; item ids restart at item_0
            self.flush(t)  # a killed round's unfinished items
            self.flushed.clear()
            self.thread = str(obj.get("thread_id", ""))
        elif kind == "turn.started":
            self.in_response = False
        elif kind == "turn.completed":
            self.flush(t)
            self.usage(t, obj.get("usage") or {})
            self.in_response = False
        elif kind in ("turn.failed", "error"):
            if kind == "turn.failed":
                self.flush(t)
            error = obj.get("error") if kind == "turn.failed" else obj
            message = error.get("message", "") if isinstance(error, dict) else ""
            self.error(t, str(message), str(kind))
        elif kind in ("item.started", "item.completed"):
            item = obj.get("item")
            if isinstance(item, dict):
                if "type" not in item and "item_type" in item:  # the 0.4x shape
                    item = {**item, "type": item["item_type"]}
                if item.get("type") == "assistant_message":
                    item = {**item, "type": "agent_message"}
                self.item(t, item, done=kind == "item.completed")
        elif kind not in _KNOWN:
            self.reader.unknown(kind)

    def usage(self, t: float, usage: dict[str, Any]) -> None:
        now = tuple(as_int(usage.get(k)) for k in ("input_tokens", "output_tokens",
                                                     "cached_input_tokens",
                                                     "reasoning_output_tokens"))
        before = self.totals.get(self.thread, (0, 0, 0, 0))
        self.totals[self.thread] = (now[0], now[1], now[2], now[3])
        d = [a - b for a, b in zip(now, before, strict=True)]
        self.add("usage", t, input_tokens=d[0], output_tokens=d[1],
                 extra={"cached_input_tokens": str(d[2]), "reasoning_output_tokens": str(d[3]),
                        "scope": "exec round"})

    def item(self, t: float, item: dict[str, Any], *, done: bool) -> None:
        kind, item_id = item.get("type"), str(item.get("id", ""))
        if kind in ("error", "todo_list"):  # CLI notices and the plan widget, not model output
            return
        if kind not in _TOOL_ITEMS:
            if done:  # agent_message, reasoning, plan
                if self.tool_started:
                    self.in_response = False
                self.model_output(t)
                if kind in ("agent_message", "plan"):
                    self.add("message", t, text=str(item.get("text", ""))[:500])
            return
        if not done:
            if item_id not in self.started and item_id not in self.flushed:
                self.model_output(t)
                self.tool_started = True
                self.started[item_id] = (t, self.turn, item)
            return
        if item_id in self.flushed:  # already reported, unfinished, when its round ended
            return
        if item_id in self.started:
            begin, turn, _ = self.started.pop(item_id)
        else:  # file_change items only ever complete
            self.model_output(t)
            begin, turn = t, self.turn
        self.in_response = False  # its result goes back to the model
        self.tool(item, begin, t, turn)

    def tool(self, item: dict[str, Any], begin: float, end: float | None, turn: int) -> None:
        """tool_call (+ command or file_edit) events of a tool item, in the turn that
        called it."""
        kind = str(item.get("type"))
        name = {"mcp_tool_call": f"mcp:{item.get('server', '')}/{item.get('tool', '')}",
                "collab_tool_call": str(item.get("tool", kind))}.get(kind, kind)
        extra = {"call_id": str(item.get("id", ""))}
        if kind == "web_search":
            extra["query"] = str(item.get("query", ""))[:200]
        elif kind == "mcp_tool_call":
            extra.update(tool_args(item.get("arguments")))
        elif kind == "file_change":
            extra.update(tool_args(item.get("changes")))
        call = self.add("tool_call", begin, turn, name=name, extra=extra)
        code = item.get("exit_code") if end is not None else None
        failed = None
        if end is not None:
            failed = item.get("status") == "failed" or bool(item.get("error")) or \
                (isinstance(code, int) and code != 0)
            set_output(call, _item_output(item), failed)
        if kind == "command_execution":
            self.add("command", begin, turn, end_s=end,
                     command=unwrap_shell(str(item.get("command", ""))),
                     exit_code=code if isinstance(code, int) else None, is_error=failed,
                     extra={"status": str(item.get("status", "")) if end is not None
                            else "running"})
        elif kind == "file_change" and item.get("status") == "completed":
            for change in item.get("changes") or []:
                if isinstance(change, dict):
                    self.add("file_edit", end or begin, turn,
                             path=relative_path(str(change.get("path", "")), by_marker=True),
                             extra={"change": str(change.get("kind", ""))})

    # ---- the pre-0.44 stream: {"id": <submission>, "msg": {"type": …}} ---------------------
    def legacy(self, t: float, msg: dict[str, Any]) -> None:
        kind = str(msg.get("type"))
        if kind == "task_started":
            self.in_response = False
        elif kind in ("agent_message", "agent_reasoning"):
            if self.tool_started:
                self.in_response = False
            self.model_output(t)
            if kind == "agent_message":
                self.add("message", t, text=str(msg.get("message", ""))[:500])
        elif kind in ("exec_command_begin", "patch_apply_begin", "mcp_tool_call_begin"):
            self.model_output(t)
            self.tool_started = True
            self.legacy_calls[str(msg.get("call_id", ""))] = (t, self.turn, msg)
        elif kind in ("exec_command_end", "patch_apply_end", "mcp_tool_call_end"):
            self.in_response = False
            begin_t, turn, begin = self.legacy_calls.pop(str(msg.get("call_id", "")),
                                                        (t, max(self.turn, 0), msg))
            self.legacy_tool(begin, msg, begin_t, t, turn)
        elif kind == "token_count":
            # info: the session's cumulative total (null on rate-limit-only updates); the
            # oldest streams put the counts on the event itself
            info = msg.get("info")
            total = info.get("total_token_usage") if isinstance(info, dict) else \
                msg if "input_tokens" in msg else None
            if isinstance(total, dict):
                self.usage(t, total)
        elif kind in ("error", "stream_error"):
            self.error(t, str(msg.get("message", "")), f"msg:{kind}")
        elif kind == "task_complete":
            self.flush_legacy(t)
            self.in_response = False
        elif kind not in _LEGACY_IGNORED:
            self.reader.unknown(f"msg:{kind}")

    def flush_legacy(self, t: float) -> None:
        """The round ended: calls begun and never ended are reported without an end."""
        for begin_t, turn, begin in self.legacy_calls.values():
            if str(begin.get("type")).startswith("rollout:"):
                self.rollout_tool(begin, None, begin_t, None, turn)
            else:
                self.legacy_tool(begin, None, begin_t, None, turn)
        self.legacy_calls.clear()

    def legacy_tool(self, begin: dict[str, Any], end: dict[str, Any] | None, begin_t: float,
                    end_t: float | None, turn: int) -> None:
        kind = str(begin.get("type"))
        call_id = str(begin.get("call_id", ""))
        if kind.startswith("exec_command"):
            argv = begin.get("command")
            command = shlex.join(map(str, argv)) if isinstance(argv, list) else str(argv or "")
            code = (end or {}).get("exit_code")
            call = self.add("tool_call", begin_t, turn, name="command_execution",
                            extra={"call_id": call_id})
            failed = None if end is None else not (isinstance(code, int) and code == 0)
            if end is not None:
                set_output(call, _legacy_output(end), failed)
            self.add("command", begin_t, turn, end_s=end_t, command=unwrap_shell(command),
                     exit_code=code if isinstance(code, int) and end is not None else None,
                     is_error=failed,
                     extra={"status": "running" if end is None else
                            "completed" if code == 0 else "failed"})
        elif kind.startswith("patch_apply"):
            changes = begin.get("changes")
            call = self.add("tool_call", begin_t, turn, name="file_change",
                            extra={"call_id": call_id,
                                   **tool_args(sorted(changes) if isinstance(changes, dict)
                                               else None)})
            if end is not None:
                set_output(call, _legacy_output(end), end.get("success") is False)
            if end is not None and end.get("success") is False:
                return  # the patch did not apply: nothing written
            for path, change in (changes.items() if isinstance(changes, dict) else []):
                what = next(iter(change), "") if isinstance(change, dict) else ""
                self.add("file_edit", end_t or begin_t, turn,
                         path=relative_path(str(path), by_marker=True), extra={"change": what})
        else:
            inv: dict[str, Any] = begin["invocation"] if isinstance(begin.get("invocation"),
                                                                   dict) else {}
            call = self.add("tool_call", begin_t, turn,
                            name=f"mcp:{inv.get('server', '')}/{inv.get('tool', '')}",
                            extra={"call_id": call_id, **tool_args(inv.get("arguments"))})
            result = (end or {}).get("result")
            if isinstance(result, dict) and ("Ok" in result or "Err" in result):
                ok = "Ok" in result
                set_output(call, _mcp_text(result["Ok"] if ok else result["Err"]), not ok)

    # ---- a Codex session file (rollout-*.jsonl) ---------------------------------------------
    def rollout(self, t: float, kind: str, payload: dict[str, Any]) -> None:
        ptype = str(payload.get("type"))
        if kind == "session_meta":
            self.cwd = str(payload.get("cwd") or "") or None
        elif kind == "event_msg":
            if ptype in _ROLLOUT_EVENTS:
                self.legacy(t, payload)
            elif ptype == "turn_aborted":
                self.flush_legacy(t)
        elif kind == "response_item":
            if ptype == "message" and payload.get("role") == "assistant":
                self.legacy(t, {"type": "agent_message", "message": _content_text(payload)})
            elif ptype == "message":  # the prompt (or instructions): a new round of turns
                self.in_response = False
            elif ptype == "reasoning":
                self.legacy(t, {"type": "agent_reasoning"})
            elif ptype in ("function_call", "custom_tool_call", "local_shell_call"):
                self.model_output(t)
                self.tool_started = True
                self.legacy_calls[str(payload.get("call_id", ""))] = (
                    t, self.turn, {**payload, "type": "rollout:" + ptype})
            elif ptype.endswith("_output"):
                self.in_response = False
                call = str(payload.get("call_id", ""))
                if call in self.legacy_calls:
                    begin_t, turn, begin = self.legacy_calls.pop(call)
                    self.rollout_tool(begin, payload, begin_t, t, turn)
            elif ptype == "web_search_call":
                self.model_output(t)
                self.add("tool_call", t, name="web_search")
                self.in_response = False

    def rollout_tool(self, call: dict[str, Any], out: dict[str, Any] | None, begin_t: float,
                     end_t: float | None, turn: int) -> None:
        """tool_call (+ command or file_edit) events of a session file's call and output."""
        name = str(call.get("name") or "local_shell")
        raw = call.get("arguments")
        try:
            args: Any = json.loads(raw) if isinstance(raw, str) else {}
        except ValueError:
            args = {}
        args = args if isinstance(args, dict) else {}
        action: dict[str, Any] = call["action"] if isinstance(call.get("action"), dict) else {}
        argv = args.get("command") or args.get("cmd") or action.get("command") or ""
        command = shlex.join(map(str, argv)) if isinstance(argv, list) else str(argv)
        text, code = _output_of(out)
        call_id = str(call.get("call_id", ""))
        failed = None if out is None else code not in (0, None)
        patch = call.get("input") if name == "apply_patch" else None
        if patch is None and name == "apply_patch":
            patch = args.get("input")
        if patch is None and isinstance(argv, list) and argv[:1] == ["apply_patch"]:
            patch = argv[1] if len(argv) > 1 else ""
        if isinstance(patch, str):
            applied = code == 0 if code is not None else "Success" in text
            ev = self.add("tool_call", begin_t, turn, name="file_change",
                          extra={"call_id": call_id, **tool_args(patch)})
            if out is not None:
                set_output(ev, text, not applied)
            for match in _PATCH_FILE.finditer(patch) if out is not None and applied else []:
                path = (match.group(1) or match.group(2)).strip()
                self.add("file_edit", end_t or begin_t, turn,
                         path=relative_path(path, [self.cwd], by_marker=True))
        elif name in _SHELL_CALLS:
            ev = self.add("tool_call", begin_t, turn, name="command_execution",
                          extra={"call_id": call_id})
            if out is not None:
                set_output(ev, text, failed)
            self.add("command", begin_t, turn, end_s=end_t, command=unwrap_shell(command),
                     exit_code=code, is_error=failed,
                     extra={"status": "running" if out is None else
                            "completed" if code == 0 else "failed"})
        else:
            ev = self.add("tool_call", begin_t, turn, name=name,
                          extra={"call_id": call_id, **tool_args(args or call.get("input"))})
            if out is not None:
                set_output(ev, text, failed)


def _content_text(payload: dict[str, Any]) -> str:
    content = payload.get("content")
    if isinstance(content, list):
        return "".join(str(c.get("text", "")) for c in content if isinstance(c, dict))
    return str(content or "")


def _output_of(out: dict[str, Any] | None) -> tuple[str, int | None]:
    """(text, exit code) of a session file's tool output: a JSON string {"output",
    "metadata": {"exit_code"}} (the shell tool), or text with a "Process exited with code N"
    line (exec_command), or plain text (no code)."""
    if out is None:
        return "", None
    raw = out.get("output")
    if isinstance(raw, dict):  # some versions store the structured output itself
        raw = json.dumps(raw)
    text = str(raw or "")
    try:
        parsed = json.loads(text) if text.lstrip().startswith("{") else None
    except ValueError:
        parsed = None
    if isinstance(parsed, dict):
        meta = parsed.get("metadata")
        code = meta.get("exit_code") if isinstance(meta, dict) else None
        return str(parsed.get("output", "")), code if isinstance(code, int) else None
    match = _PROCESS_EXIT.search(text)
    return text, int(match.group(1)) if match else None


def _mcp_text(result: Any) -> str:
    """The text of an MCP tool result: its text content blocks, else its structured content
    (or the error string) as JSON."""
    if isinstance(result, str):
        return result
    if isinstance(result, dict):
        blocks = result.get("content")
        if isinstance(blocks, list) and any(isinstance(b, dict) and "text" in b for b in blocks):
            return "".join(str(b.get("text", "")) for b in blocks if isinstance(b, dict))
        structured = result.get("structured_content", result.get("structuredContent"))
        if structured is not None:
            return json.dumps(structured, ensure_ascii=False, default=str)
    return json.dumps(result, ensure_ascii=False, default=str)


def _item_output(item: dict[str, Any]) -> str | None:
    """What a finished tool item returned (None: the item has no output of its own)."""
    kind = item.get("type")
    if kind == "command_execution":
        out = item.get("aggregated_output")
        return out if isinstance(out, str) else None
    if kind == "mcp_tool_call":
        error = item.get("error")
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])
        result = item.get("result")
        return None if result is None else _mcp_text(result)
    return None


def _legacy_output(end: dict[str, Any]) -> str:
    """exec_command_end's / patch_apply_end's output: the aggregated (interleaved) output,
    else stdout then stderr."""
    for key in ("aggregated_output", "formatted_output"):
        if isinstance(end.get(key), str) and end[key]:
            return str(end[key])
    return "".join(str(end.get(k) or "") for k in ("stdout", "stderr"))
