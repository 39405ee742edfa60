"""OpenHands CLI (PyPI `openhands`, the V1 CLI on the OpenHands software-agent SDK) as an a2rl
agent.

Command line (checked against openhands 1.16.0 with openhands-sdk 1.21.0):

    python -m a2rl.agents.openhands <venv>/bin/openhands --headless --json --override-with-envs \
        -t <prompt>
    … --headless --json --override-with-envs --resume --last -t <re-prompt>

- `--headless`: no terminal UI, every action auto-approved (nobody is there to confirm), the
  critic off; the CLI runs the task until the agent finishes, then exits.
- `--json`: each conversation event (MessageEvent, ActionEvent, ObservationEvent,
  AgentErrorEvent, …) is printed as one JSON line on stdout; `parse_events` reads them.
- `--override-with-envs`: the LLM comes from LLM_MODEL / LLM_API_KEY / LLM_BASE_URL (without it
  the CLI only reads ~/.openhands/agent_settings.json, which an empty HOME lacks). The model is a
  litellm name (`anthropic/claude-…`, `openai/<model>` for any Chat Completions endpoint).
- `--resume --last`: continues the newest conversation under ~/.openhands/conversations (the
  sandbox's HOME lives as long as the agent), headless, with the re-prompt as the next message.
- Everything runs in-process: the terminal tool is a local tmux (or subprocess) shell in the
  working directory, no Docker; the CLI's default tools are terminal, file_editor, task_tracker,
  task (sub-agents), finish and think; the browser tool is off in the CLI.
- The wrapper (`python -m a2rl.agents.openhands`, this module's `main`) starts the CLI's entry
  point with the credential variables added to the SDK's list of variables stripped from the
  agent's terminal (`cli_command`: the driver's key stays out of the agent's shell and off tmux
  command lines). And, as the CLI prints no token usage, the wrapper relays the CLI's output
  line by line and adds one JSON line `{"a2rl_openhands_usage": …}` per model response, read
  from the `stats` the SDK persists in the conversation's base_state.json (polled each second,
  and once more at exit). The SDK rewrites that file when the conversation's state changes,
  in practice at the end of each CLI round: usage lines arrive then, and a round killed at the
  budget's end may miss its usage.

Environment: LITELLM_LOCAL_MODEL_COST_MAP=True (litellm otherwise fetches its price list from
GitHub at start-up, 8 s of retries offline), OPENHANDS_SUPPRESS_BANNER=1, NO_COLOR=1. Telemetry:
the CLI has none of its own; the SDK's Laminar tracing stays off while LMNR_* variables are unset
(they are, in the sandbox). Offline, the SDK's attempt to clone its public skills from GitHub
fails harmlessly (logged on stderr). OpenHands reads AGENTS.md from its working directory (as a
repository skill). With no key but a --driver-base-url, LLM_API_KEY is a placeholder (the CLI
insists on one).

Python: the CLI requires Python 3.12 (`Requires-Python: ==3.12.*`), so its venv is built with a
3.12 interpreter found on the machine (`CLIPackage.python`; `a2rl.agents._cli.find_python`), not
a2rl's own, and that interpreter's folder is mounted read-only into the sandbox beside the
install (`sandbox_mounts`).

Options (--agent-opt): only the base class's reprompt=1 and reserve_s=<s>.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from types import FrameType
from typing import Any, ClassVar

from a2rl._errors import A2RLError
from a2rl.agents._agent import AgentContext, DriverChoice
from a2rl.agents._cli import CLIAgent, CLIPackage, install_dir
from a2rl.agents._events import AgentEvent, ParseResult
from a2rl.agents._registry import agents
from a2rl.agents._stream import EventCollector, relative_path, set_output, tool_args

PYTHON_VERSION = "3.12"
"""The Python minor version the pinned CLI requires."""
USAGE_KEY = "a2rl_openhands_usage"
PLACEHOLDER_KEY = "unused"
_PROVIDER_KEYS = {"anthropic": "ANTHROPIC_API_KEY", "openai": "OPENAI_API_KEY",
                  "gemini": "GEMINI_API_KEY", "openrouter": "OPENROUTER_API_KEY"}
_FILE_WRITES = ("create", "str_replace", "insert", "undo_edit")
_SHELL_TOOLS = ("terminal", "execute_bash", "bash")
_EDIT_TOOLS = ("file_editor", "str_replace_editor")
_QUIET_KINDS = {"SystemPromptEvent", "ConversationStateUpdateEvent", "PauseEvent",
                "Condensation", "CondensationRequest", "CondensationSummaryEvent",
                "StreamingDeltaEvent", "TokenEvent", "LLMCompletionLogEvent", "InterruptEvent",
                "UserRejectObservation", "ConversationStatsEvent", "HookExecutionEvent"}
"""Event kinds with nothing for the event log (not counted as unknown)."""


def venv_base_prefix(venv: Path) -> Path | None:
    """The base interpreter's prefix of a venv (from pyvenv.cfg's `home`)."""
    cfg = venv / "pyvenv.cfg"
    if not cfg.exists():
        return None
    for line in cfg.read_text().splitlines():
        key, _, value = line.partition("=")
        if key.strip() == "home" and value.strip():
            return Path(value.strip()).resolve().parent
    return None


@agents.register("openhands")
class OpenHandsAgent(CLIAgent):
    """OpenHands CLI, headless (`openhands --headless --json`), local runtime, actions
    auto-approved. Options: reprompt=1, reserve_s=<s>."""
    api_hosts = ("api.anthropic.com", "api.openai.com", "openrouter.ai")

    name = "openhands"
    description = "OpenHands CLI (V1, local runtime), headless, driver via litellm"
    package: ClassVar[CLIPackage] = CLIPackage("pip", "openhands", "1.16.0", "openhands",
                                               python=PYTHON_VERSION)
    credentials: ClassVar[tuple[str, ...]] = ("LLM_API_KEY", "ANTHROPIC_API_KEY",
                                              "OPENAI_API_KEY", "GEMINI_API_KEY",
                                              "OPENROUTER_API_KEY")
    memory_file: ClassVar[str | None] = "AGENTS.md"
    default_driver: ClassVar[str] = "anthropic/claude-sonnet-4-5-20250929"
    """The OpenHands CLI's own default model (its settings screen's default), litellm-named."""

    def cli_argv(self, ctx: AgentContext, exe: str, prompt: str, *, resume: bool) -> list[str]:
        flags = ["--headless", "--json", "--override-with-envs"]
        if resume:
            flags += ["--resume", "--last"]
        return [ctx.python, "-m", "a2rl.agents.openhands", exe, *flags, "-t", prompt]

    def credential_values(self, ctx: DriverChoice) -> dict[str, str]:
        """LLM_API_KEY, or else the key of the driver's provider (its litellm prefix) only."""
        if os.environ.get("LLM_API_KEY"):
            return {"LLM_API_KEY": os.environ["LLM_API_KEY"]}
        provider = self.driver(ctx).split("/", 1)[0]
        wanted = _PROVIDER_KEYS.get(provider)
        if wanted and os.environ.get(wanted):
            return {wanted: os.environ[wanted]}
        if ctx.driver_base_url:
            return {}
        raise A2RLError(f"openhands needs LLM_API_KEY (or {wanted or 'the provider key'}) for "
                        f"the driver {self.driver(ctx)}",
                        "export LLM_API_KEY=<key>, or point it at a compatible endpoint with "
                        "--driver-base-url")

    def cli_env(self, ctx: AgentContext) -> dict[str, str]:
        env = {"LLM_MODEL": self.driver(ctx), "LITELLM_LOCAL_MODEL_COST_MAP": "True",
               "OPENHANDS_SUPPRESS_BANNER": "1", "NO_COLOR": "1"}
        if not os.environ.get("LLM_API_KEY"):
            key = next(iter(self.credential_values(ctx).values()), None)
            env["LLM_API_KEY"] = key or PLACEHOLDER_KEY
        if ctx.driver_base_url:
            env["LLM_BASE_URL"] = ctx.driver_base_url
        return env

    def sandbox_mounts(self) -> list[Path]:
        """The install folder, and the Python 3.12 its venv was built from."""
        mounts = super().sandbox_mounts()
        base = venv_base_prefix(install_dir(self.name, self.package) / "venv")
        if base is not None and not any(str(base).startswith(d) for d in ("/usr/", "/opt/")):
            mounts.append(base)
        return mounts

    def parse_events(self, lines: Iterable[tuple[float, str]]) -> list[AgentEvent]:
        """`--json` event lines (plus the wrapper's usage lines) → events.

        A turn is one model response: events carry its `llm_response_id`, shared by the tool
        calls of one response. ActionEvent → tool_call (+ command for the terminal tool, whose
        exit code and end come from the matching ObservationEvent; + file_edit for file_editor
        writes; its `thought` text → message); agent MessageEvent → message; AgentErrorEvent
        (e.g. invalid tool arguments) and ConversationErrorEvent → message with extra.type.
        Outputs: an ObservationEvent's text content (else its `output`) is the output of the
        call it names (`tool_call_id`), on that call's tool_call event, with is_error from its
        `is_error` / `error` (or a non-zero exit code); an AgentErrorEvent naming a call is
        that call's output, an error.
        Usage: one `usage` event per model response from the wrapper's lines (prompt and
        completion tokens as litellm reports them; cost_usd when litellm priced it, >0).
        """
        return self.parse_transcript(lines).events

    def parse_transcript(self, lines: Iterable[tuple[float, str]]) -> ParseResult:
        """`parse_events` plus the report. Read in both forms the CLI has printed: one JSON
        object per line (1.16) and, in 1.8–1.15, a `--JSON Event--` line followed by the
        event pretty-printed over many lines; either with `[ISO-time] ` prefixes (without
        arrival times the events' own `timestamp` gives the time). Older tool names
        (`execute_bash`, `str_replace_editor`) and observations whose exit code sits in
        `metadata` are read too; exit code -1 (the SDK's "no output for a while, command goes
        on") is no exit code. A file_editor write whose observation is an error wrote nothing
        and is not a file edit."""
        parser = _StreamParser()
        for t, obj in parser.read(lines):
            parser.feed(parser.reader.event_time(t, obj.get("timestamp")), obj)
        return parser.result()


def _text(content: Any) -> str:
    """Text of an SDK content list ([{"type": "text", "text": …}, …]) or a string."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(c.get("text", "")) for c in content
                         if isinstance(c, dict) and c.get("type") == "text").strip()
    return ""


class _StreamParser(EventCollector):
    """State of one transcript's parse (see `OpenHandsAgent.parse_events`)."""

    parser = "openhands"

    def __init__(self) -> None:
        super().__init__()
        self.edits: dict[str, AgentEvent] = {}
        self.response: str | None = None
        self.turn_of: dict[str, int] = {}
        self.commands: dict[str, AgentEvent] = {}
        self.calls: dict[str, AgentEvent] = {}
        """tool_call events by tool_call_id, until their observation."""
        self.workdir: str | None = None

    def model_output(self, t: float, response_id: Any) -> None:
        rid = str(response_id) if response_id else None
        if rid is not None and rid == self.response:
            return
        self.turn += 1
        self.response = rid
        if rid is not None:
            self.turn_of[rid] = self.turn
        self.add("turn", t)

    def relative(self, path: str) -> str:
        return relative_path(path, [self.workdir], by_marker=True)

    def feed(self, t: float, obj: dict[str, Any]) -> None:
        if isinstance(obj.get(USAGE_KEY), dict):
            self.usage(t, obj[USAGE_KEY])
            return
        kind, source = obj.get("kind"), obj.get("source")
        if kind is None:  # dumps without the discriminator: tell the event by its fields
            kind = ("ActionEvent" if "action" in obj and "tool_call_id" in obj else
                    "ObservationEvent" if "observation" in obj else
                    "MessageEvent" if "llm_message" in obj else None)
        if kind == "ActionEvent":
            self.action(t, obj)
        elif kind == "ObservationEvent":
            self.observation(t, obj)
        elif kind == "MessageEvent" and source == "agent":
            self.model_output(t, obj.get("llm_response_id"))
            text = _text((obj.get("llm_message") or {}).get("content"))
            if text:
                self.add("message", t, text=text[:500])
        elif isinstance(kind, str) and kind.endswith("ErrorEvent"):
            error = obj.get("error") or obj.get("detail") or obj.get("code") or ""
            self.error(t, str(error), kind)
            call = self.calls.pop(str(obj.get("tool_call_id") or ""), None)
            if call is not None:
                set_output(call, str(error), True)
            edit = self.edits.pop(str(obj.get("tool_call_id") or ""), None)
            if edit is not None:  # the call was refused (bad arguments): nothing written
                self.events.remove(edit)
        elif kind == "MessageEvent" or kind in _QUIET_KINDS:
            return
        else:
            self.reader.unknown(kind if kind else "<no kind>")

    def action(self, t: float, obj: dict[str, Any]) -> None:
        self.model_output(t, obj.get("llm_response_id"))
        thought = _text(obj.get("thought"))
        if thought:
            self.add("message", t, text=thought[:500])
        name = str(obj.get("tool_name") or "")
        action = obj.get("action") or {}
        call_id = str(obj.get("tool_call_id", ""))
        self.calls[call_id] = self.add(
            "tool_call", t, name=name,
            extra={"call_id": call_id, **tool_args(
                {k: v for k, v in action.items() if k != "kind"} if isinstance(action, dict)
                else action)})
        if not isinstance(action, dict):
            return
        if action.get("kind") in ("TerminalAction", "ExecuteBashAction") or name in _SHELL_TOOLS:
            event = self.add("command", t, command=str(action.get("command", "")))
            self.commands[call_id] = event
        elif name in _EDIT_TOOLS and action.get("command") in _FILE_WRITES:
            self.edits[str(obj.get("tool_call_id", ""))] = self.add(
                "file_edit", t, path=self.relative(str(action.get("path", ""))),
                extra={"change": str(action.get("command"))})
        elif name == "finish" and action.get("message"):
            self.add("message", t, text=str(action["message"])[:500])

    def observation(self, t: float, obj: dict[str, Any]) -> None:
        obs = obj.get("observation") or {}
        if not isinstance(obs, dict):
            return
        meta = obs.get("metadata") or {}
        if isinstance(meta, dict) and meta.get("working_dir") and self.workdir is None:
            self.workdir = str(meta["working_dir"])
        call_id = str(obj.get("tool_call_id", ""))
        failed = obs.get("is_error") is True or bool(obs.get("error"))
        edit = self.edits.pop(call_id, None)
        if edit is not None and failed:
            self.events.remove(edit)  # e.g. str_replace found no match: nothing written
        call = self.calls.pop(call_id, None)
        event = self.commands.pop(call_id, None)
        if event is not None:
            code = obs.get("exit_code")
            if not isinstance(code, int) and isinstance(meta, dict):
                code = meta.get("exit_code")
            # -1: the SDK stopped waiting (no new output), the command goes on unfinished
            event.exit_code = code if isinstance(code, int) and code != -1 else None
            event.end_s = t
            if obs.get("timeout") or code == -1:
                event.extra["timeout"] = "true"
            failed = failed or event.exit_code not in (0, None)
            event.is_error = failed
        if call is not None:
            text = _text(obs["content"]) if "content" in obs else obs.get("output")
            if isinstance(obs.get("error"), str) and obs["error"] not in str(text or ""):
                text = f"{text}\n{obs['error']}" if text else obs["error"]
            set_output(call, text if isinstance(text, str) else None, failed)

    def usage(self, t: float, usage: dict[str, Any]) -> None:
        rid = str(usage.get("response_id") or "")
        cost = usage.get("cost_usd")
        self.add("usage", t, turn=self.turn_of.get(rid),
                 input_tokens=int(usage.get("prompt_tokens") or 0),
                 output_tokens=int(usage.get("completion_tokens") or 0),
                 cost_usd=float(cost) if isinstance(cost, (int, float)) and cost > 0 else None,
                 extra={k: str(usage.get(k, 0)) for k in
                        ("cache_read_tokens", "cache_write_tokens", "reasoning_tokens",
                         "usage_id", "model")})


# ---- the wrapper run inside the sandbox -----------------------------------------------------
class _UsageWatcher:
    """Emits the token usage the SDK persists in each conversation's base_state.json."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.emitted: dict[tuple[str, str], int] = {}
        self.costs: dict[tuple[str, str], float] = {}
        self.poll(emit=False)  # what earlier rounds already reported

    def poll(self, *, emit: bool = True) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for state in sorted(self.root.glob("*/base_state.json")):
            try:
                stats = json.loads(state.read_text()).get("stats") or {}
            except (OSError, ValueError):
                continue  # being rewritten: next poll
            for usage_id, metrics in (stats.get("usage_to_metrics") or {}).items():
                key = (state.parent.name, str(usage_id))
                usages = metrics.get("token_usages") or []
                cost = float(metrics.get("accumulated_cost") or 0.0)
                new = usages[self.emitted.get(key, 0):]
                for i, u in enumerate(new):
                    record = {k: u.get(k) for k in ("response_id", "model", "prompt_tokens",
                                                    "completion_tokens", "cache_read_tokens",
                                                    "cache_write_tokens", "reasoning_tokens")}
                    record["usage_id"] = usage_id
                    if i == len(new) - 1:
                        record["cost_usd"] = round(cost - self.costs.get(key, 0.0), 8)
                    out.append({USAGE_KEY: record})
                self.emitted[key] = len(usages)
                self.costs[key] = cost
        return out if emit else []


_BOOTSTRAP = """\
import sys
import openhands.sdk.utils.command as command
command._SENSITIVE_ENV_VARS = command._SENSITIVE_ENV_VARS | frozenset(sys.argv.pop(1).split(","))
from openhands_cli.entrypoint import main
sys.argv[0] = "openhands"
sys.exit(main())
"""


def cli_command(argv: list[str]) -> list[str]:
    """`<venv>/bin/openhands ARGS` → the venv's python running the CLI's entry point after
    adding the credential variables to the SDK's `_SENSITIVE_ENV_VARS`: the SDK strips those
    from the environment of the agent's terminal (its tmux session would otherwise receive
    each variable through `tmux set-environment NAME VALUE`, putting the key on a command line,
    where the exec trace records it). Other programs run as they are."""
    exe = Path(argv[0])
    python = exe.parent / "python"
    if exe.name != "openhands" or not python.exists():
        return list(argv)
    return [str(python), "-c", _BOOTSTRAP, ",".join(OpenHandsAgent.credentials), *argv[1:]]


def main(argv: list[str]) -> int:
    """Run the CLI (`argv`), relaying its output and adding usage lines (see module doc)."""
    conversations = Path(os.environ.get("OPENHANDS_CONVERSATIONS_DIR")
                         or Path(os.environ.get("OPENHANDS_PERSISTENCE_DIR")
                                 or Path.home() / ".openhands") / "conversations")
    watcher = _UsageWatcher(conversations)
    lock = threading.Lock()
    out = sys.stdout.buffer

    def write(data: bytes) -> None:
        with lock:
            out.write(data)
            out.flush()

    def emit_usage() -> None:
        for record in watcher.poll():
            write((json.dumps(record) + "\n").encode())

    child = subprocess.Popen(cli_command(argv), stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT)

    def forward(signum: int, frame: FrameType | None) -> None:
        if child.poll() is None:
            child.send_signal(signum)

    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, forward)
    assert child.stdout is not None
    stream = child.stdout

    def relay() -> None:
        for line in iter(stream.readline, b""):
            write(line)

    relay_thread = threading.Thread(target=relay, daemon=True)
    relay_thread.start()
    while child.poll() is None:
        time.sleep(1.0)
        emit_usage()
    relay_thread.join(timeout=10)
    emit_usage()
    return child.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
