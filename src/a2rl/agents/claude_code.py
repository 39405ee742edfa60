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

Transcript parsing (`parse_transcript`, in `a2rl.agents._parse_claude_code`): 2.0.x and 2.1.x
streams, failed and background commands, rejected edits; usage per model response, with each
round's total as the CLI itself counted it (its `result` event) taking precedence. Two totals
are kept: every model the CLI called (input_tokens/output_tokens: the result's `modelUsage`,
side calls of the small model and subagents included, what its cost prices) and the main model
alone (main_input_tokens/main_output_tokens: the result's `usage`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import ClassVar

from a2rl.agents._agent import AgentContext, AgentOption
from a2rl.agents._cli import CLI_OPTIONS, SWITCH, CLIAgent, CLIPackage
from a2rl.agents._events import AgentEvent, ParseResult
from a2rl.agents._parse_claude_code import EDIT_TOOLS, SHELL_TOOL, ClaudeCodeParser
from a2rl.agents._registry import agents

__all__ = ["EDIT_TOOLS", "SHELL_TOOL", "ClaudeCodeAgent", "ClaudeCodeParser"]


@agents.register("claude-code")
class ClaudeCodeAgent(CLIAgent):
    """Anthropic's Claude Code CLI, headless (print mode, stream-json, permissions bypassed).
    Options: reprompt, reserve_s, effort, max_budget_usd, bash_timeout_ms, small_model,
    partial (see the module docstring)."""
    api_hosts = ("api.anthropic.com", "statsig.anthropic.com")

    name = "claude-code"
    description = "Claude Code CLI (Anthropic), headless, driver via the Messages API"
    package = CLIPackage("npm", "@anthropic-ai/claude-code", "2.1.332", "claude")
    credentials = ("ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN")
    memory_file = "CLAUDE.md"
    default_driver = "claude-sonnet-5-5"
    """What the pinned CLI itself resolves its `sonnet` alias to (first-party API)."""
    driver_pattern: ClassVar[str | None] = r"(claude|sonnet|opus|haiku)"
    agent_options = {**CLI_OPTIONS,
                     "effort": AgentOption("--effort", choices=("low", "medium", "high",
                                                                "xhigh", "max")),
                     "max_budget_usd": AgentOption("--max-budget-usd", float),
                     "bash_timeout_ms": AgentOption("longest Bash command, ms", int),
                     "small_model": AgentOption("model of the side calls"),
                     "partial": AgentOption("0: no partial messages", choices=SWITCH)}

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
        return self.parse_transcript(lines).events

    def parse_transcript(self, lines: Iterable[tuple[float, str]]) -> ParseResult:
        """See `a2rl.agents._parse_claude_code` for the shapes read and the usage rule."""
        return ClaudeCodeParser().run(lines)
