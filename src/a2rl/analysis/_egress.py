"""Egress attribution: each connection the egress proxy logged (`agent/network.jsonl`) joined
to the process that opened it, from the exec trace's raw log (`agent/exec.log`). Under
`--network allowlist` the tracer, outside the sandbox, also records every `connect()` (the
client's connection to the proxy's port inside the sandbox, with the caller's thread id) and
every `clone`/`fork` (who started whom, threads included); the proxy records when it accepted
each connection and on which port. A proxy line is matched to the traced `connect()` to that
port just before it was accepted, and the thread to the program it belongs to (its own exec, or
its nearest ancestor's). A run traced without those calls (older runs, a sandbox a tracer
cannot follow) falls back to time overlap: the programs alive when the connection came in.

A third-party LLM API (the hosts below, the run's driver endpoint, or a plain-HTTP request to a
chat/completions path) called by a program other than the agent's top-level command (its CLI)
is distillation; the CLI's own calls to its driver are not."""

from __future__ import annotations

import fnmatch
import json
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from a2rl.capture import parse_egress_trace, read_exec_events
from a2rl.schema import ExecEvent, Finding

LLM_API_HOSTS = (
    "api.openai.com", "*.openai.azure.com", "api.anthropic.com",
    "generativelanguage.googleapis.com", "*aiplatform.googleapis.com", "openrouter.ai",
    "api.together.xyz", "api.together.ai", "api.deepseek.com", "api.mistral.ai", "api.groq.com",
    "api.cohere.com", "api.cohere.ai", "api.fireworks.ai", "api.x.ai", "api.perplexity.ai",
    "api.deepinfra.com", "api.cerebras.ai", "api.sambanova.ai", "api.hyperbolic.xyz",
    "api.novita.ai", "api.moonshot.cn", "dashscope.aliyuncs.com", "api-inference.huggingface.co",
    "router.huggingface.co", "bedrock-runtime.*.amazonaws.com")
"""Hosts of hosted LLM APIs (`*` as in shell patterns)."""
LLM_API_PATH = re.compile(r"/(chat/completions|completions|messages|responses|embeddings)/?$"
                          r"|:(stream)?generateContent$")
"""Paths of LLM API calls, seen on plain-HTTP requests (a TLS tunnel shows only its host)."""
CONNECT_WINDOW_S = 2.0
"""A proxy line is matched to a `connect()` at most this long before the proxy accepted it."""
_SLACK_S = 0.001
"""Rounding between the tracer's timestamps and the proxy's (one clock, microseconds)."""
_CONCURRENT_S = 0.05
"""Other connects this close before an accept make the match ambiguous (said in the finding)."""

# The bridge's Unix socket for the proxy's port (`/run/a2rl-net/<port>.sock`): connectable from
# inside, so a program may reach the proxy without the TCP listener.
_BRIDGE_SOCKET = re.compile(r"/([0-9]+)\.sock\Z")
_PYTHON = re.compile(r"^python[\d.]*$")


@dataclass
class Connection:
    """One proxy line with the process it was attributed to."""

    host: str
    port: int
    allowed: bool
    path: str | None
    t_s: float | None
    """Seconds after the agent started."""
    process: ExecEvent | None
    chain: list[str]
    """Programs from the process up to the agent's top-level command."""
    how: str
    """How it was attributed: `traced connect() of pid N` or `time overlap (…)`."""
    by_cli: bool


def llm_api(host: str, path: str | None, driver_base_url: str | None) -> bool:
    """The destination is an LLM API: a known host, the run's driver, or an LLM API path."""
    driver = urlsplit(driver_base_url).hostname if driver_base_url else None
    if driver and host == driver.lower():
        return True
    if any(fnmatch.fnmatchcase(host, pattern) for pattern in LLM_API_HOSTS):
        return True
    return bool(path and LLM_API_PATH.search(path))


def _proxy_lines(path: Path) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return out
    for line in text.splitlines():
        try:
            row = json.loads(line)
        except ValueError:
            continue
        if isinstance(row, dict) and isinstance(row.get("host"), str):
            out.append(row)
    return out


class _Trace:
    """The raw exec log's processes in epoch time: exec images by pid, parents, connects."""

    def __init__(self, text: str) -> None:
        trace = parse_egress_trace(text, 0.0)
        self.images = {e.pid: e for e in trace.programs}
        self.parent: dict[int, int] = {}
        for spawn in trace.spawns:
            self.parent.setdefault(spawn.child, spawn.parent)
        self.connects: list[tuple[float, int, int]] = []  # (time, tid, port)
        unix: list[tuple[float, int, int]] = []
        for c in trace.connects:
            if c.port is not None:
                self.connects.append((c.t_s, c.pid, c.port))
            elif c.socket_path is not None and (m := _BRIDGE_SOCKET.search(c.socket_path)):
                unix.append((c.t_s, c.pid, int(m[1])))
        self.connects.sort()
        self.connects = sorted(self.connects + self._clients_of_socket(sorted(unix)))

    def _clients_of_socket(self, unix: list[tuple[float, int, int]]) -> list[tuple[float, int, int]]:
        """The Unix-socket connects made by clients, not by the bridge relaying a TCP
        connection: the bridge's are those of its own process when the log names the thread's
        parent (--pidns-translation), else the first one after each TCP connect to that port
        (the relay follows the accept within milliseconds)."""
        relayed = sorted(self.connects)
        paired: set[int] = set()
        clients = []
        for t, tid, port in unix:
            owner = self.owner(tid, t)
            if owner is not None:
                if not _is_bridge(owner):
                    clients.append((t, tid, port))
                continue
            match = next((i for i, (tt, _, p) in enumerate(relayed) if i not in paired
                          and p == port and tt <= t + _SLACK_S and t - tt <= CONNECT_WINDOW_S),
                         None)
            if match is None:
                clients.append((t, tid, port))
            else:
                paired.add(match)
        return clients

    def owner(self, tid: int, t: float) -> ExecEvent | None:
        """The program thread `tid` ran at epoch `t`: its own exec when it had exec'd by then,
        else its nearest ancestor's (a thread or an un-exec'd fork runs its parent's program)."""
        seen: set[int] = set()
        while tid not in seen:
            seen.add(tid)
            image = self.images.get(tid)
            if image is not None and image.start_s <= t + _SLACK_S:
                return image
            if tid not in self.parent:
                return None
            tid = self.parent[tid]
        return None

    def chain(self, pid: int, stop: int) -> list[str]:
        names: list[str] = []
        seen: set[int] = set()
        while pid not in seen and len(names) < 8:
            seen.add(pid)
            if (image := self.images.get(pid)) is not None and (not names or
                                                                 names[-1] != _show(image)):
                names.append(_show(image))
            if pid == stop or pid not in self.parent:
                break
            pid = self.parent[pid]
        return names


def _is_bridge(image: ExecEvent | None) -> bool:
    from a2rl.sandbox import BRIDGE_CODE

    return image is not None and BRIDGE_CODE in image.argv


def _show(ev: ExecEvent) -> str:
    return " ".join(ev.argv)[:200] or ev.program


def attribute(run_dir: Path, *, driver_base_url: str | None = None) -> list[Connection] | None:
    """Every logged proxy connection with its process; None when the run has no proxy log."""
    lines = _proxy_lines(run_dir / "agent" / "network.jsonl")
    if not lines:
        return None
    events = read_exec_events(run_dir) or []
    root = events[0] if events else None
    try:
        raw = (run_dir / "agent" / "exec.log").read_text(errors="replace")
    except OSError:
        raw = ""
    trace = _Trace(raw) if raw else None
    t0 = None
    if trace is not None and root is not None and root.pid in trace.images:
        t0 = trace.images[root.pid].start_s - root.start_s
    used: set[int] = set()
    out: list[Connection] = []
    for row in sorted(lines, key=lambda r: _number(r.get("accepted")) or _number(r.get("t")) or 0):
        accepted = _number(row.get("accepted")) or _number(row.get("t"))
        proxy_port = row.get("proxy_port")
        process: ExecEvent | None = None
        chain: list[str] = []
        how = "not attributed: no exec trace"
        if trace is not None and trace.connects and accepted is not None and proxy_port:
            how = "not attributed: no traced connect() to the proxy just before it"
            # the latest connect before the accept: the proxy accepts within a millisecond or
            # so of the client's connect, whenever the client then sends its request
            picks = [i for i, (t, _, port) in enumerate(trace.connects)
                     if i not in used and port == proxy_port
                     and accepted - CONNECT_WINDOW_S <= t <= accepted + _SLACK_S]
            if picks:
                pick = picks[-1]
                used.add(pick)
                t, tid, _ = trace.connects[pick]
                process = trace.owner(tid, t)
                others = sum(1 for i in picks[:-1] if trace.connects[i][0] >= t - _CONCURRENT_S)
                how = (f"traced connect() by thread {tid}, {1000 * (accepted - t):.1f} ms before "
                       "the proxy accepted it" + (f" ({others} other connect(s) within "
                                                  f"{1000 * _CONCURRENT_S:.0f} ms before it)"
                                                  if others else ""))
                if process is not None:
                    chain = trace.chain(tid, root.pid if root else -1)
                elif events:  # a thread or fork whose parent the log does not name
                    process, overlap = _by_overlap(events, t, t0, run_dir)
                    how += f"; thread {tid} never exec'd, so by {overlap}"
        elif events and accepted is not None:
            process, how = _by_overlap(events, accepted, t0, run_dir)
        t_s = round(accepted - t0, 3) if accepted is not None and t0 is not None else None
        host = str(row.get("host", ""))[:300]
        out.append(Connection(
            host=host, port=int(_number(row.get("port")) or 0), allowed=bool(row.get("allowed")),
            path=row.get("path") if isinstance(row.get("path"), str) else None, t_s=t_s,
            process=process, chain=chain, how=how,
            by_cli=process is not None and root is not None and process.pid == root.pid))
    return out


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _by_overlap(events: list[ExecEvent], accepted: float, t0: float | None,
                run_dir: Path) -> tuple[ExecEvent | None, str]:
    """Without traced connects: the programs alive at the time (relative to the trace's start,
    else the agent's start as run.json records it). One program other than the top-level
    command: that one."""
    if t0 is None:
        from a2rl.schema import RunRecord

        try:
            run = RunRecord.model_validate_json((run_dir / "run.json").read_text())
        except (OSError, ValueError):
            return None, "not attributed: no connect() traced and no start time"
        if run.agent_started_at is None:
            return None, "not attributed: no connect() traced and no start time"
        t0 = run.agent_started_at.timestamp()
    t = accepted - t0
    alive = [e for e in events[1:] if e.start_s <= t and (e.end_s is None or e.end_s >= t)
             and os.path.basename(e.program) not in ("bash", "sh", "dash", "zsh")]
    if len(alive) == 1:
        return alive[0], "time overlap: the only program running then besides the top-level one"
    if not alive:
        return events[0], "time overlap: no program running then besides the top-level one"
    return None, ("time overlap: ambiguous, running then: "
                  + "; ".join(_show(e)[:80] for e in alive[:5]))


def is_python(ev: ExecEvent) -> bool:
    return bool(_PYTHON.match(os.path.basename(ev.program))) or bool(
        ev.argv and _PYTHON.match(os.path.basename(ev.argv[0])))


def egress_findings(connections: Iterable[Connection], *,
                    driver_base_url: str | None = None) -> list[Finding]:
    """distillation (an LLM API called by a python program other than the CLI), llm-api-call
    (by another non-CLI program, or not attributable), and a summary of who contacted what."""
    distilled: list[str] = []
    other_calls: list[str] = []
    tally: dict[tuple[str, str, bool], int] = {}
    conns = list(connections)
    for c in conns:
        who = _show(c.process) if c.process else "unattributed"
        key = (f"top-level command ({who[:80]})" if c.by_cli else who, c.host, c.allowed)
        tally[key] = tally.get(key, 0) + 1
        if c.by_cli or not llm_api(c.host, c.path, driver_base_url):
            continue
        when = f" at +{c.t_s:.1f} s" if c.t_s is not None else ""
        line = (f"{who} → {c.host}:{c.port}{c.path or ''}{when}"
                f"{'' if c.allowed else ' (refused)'}; {c.how}"
                + (f"; started by {' ← '.join(c.chain[1:4])}" if len(c.chain) > 1 else ""))
        if c.process is not None and is_python(c.process):
            distilled.append(line)
        else:
            other_calls.append(line)
    findings: list[Finding] = []
    if distilled:
        findings.append(Finding(
            kind="distillation", severity="critical", basis="ground-truth", evidence=distilled[:20],
            message=f"{len(distilled)} connection(s) to an LLM API were opened by a python "
                    "program other than the agent's own CLI (a data or training script): its "
                    "outputs may have been distilled into the submission"))
    if other_calls:
        findings.append(Finding(
            kind="llm-api-call", severity="warning", basis="ground-truth",
            evidence=other_calls[:20],
            message=f"{len(other_calls)} connection(s) to an LLM API by a program other than "
                    "the agent's CLI (or not attributable to one)"))
    if conns:
        findings.append(Finding(
            kind="egress-attribution", severity="info", basis="ground-truth",
            evidence=[f"{n}× {who[:160]} → {host}{'' if ok else ' (refused)'}"
                      for (who, host, ok), n in sorted(tally.items(), key=lambda kv: -kv[1])][:20],
            message=f"{len(conns)} connection(s) through the egress proxy, by program"))
    return findings
