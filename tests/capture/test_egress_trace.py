"""The connects and clones of an exec trace (`parse_egress_trace`), read from hostile strace
output: socket paths that hold strace's own syntax, calls split across lines by other processes,
failed and cut calls, and argv text that looks like a connect."""

from __future__ import annotations

import json
from pathlib import Path

from a2rl.analysis._egress import attribute
from a2rl.capture import (
    Connect,
    ExecLogReader,
    Spawn,
    parse_egress_trace,
    parse_exec_log,
)

T = 1_700_000_000.0
NS = "/* {} in strace's PID NS */"
INET = '{{sa_family=AF_INET, sin_port=htons({}), sin_addr=inet_addr("127.0.0.1")}}, 16'
# a folder named `x") = 3 "y`, as strace prints it (quotes escaped)
HOSTILE_DIR = r'/tmp/x\") = 3 \"y'

LOG = [
    f'100 {T:.6f} execve("/usr/bin/python3", ["python3", "connect(9, {{sa_family=AF_INET, '
    f'sin_port=htons(8123)}}, 16) = 0"], 0x1 /* 3 vars */) = 0',
    f'100 {T + 1:.6f} connect(4, {{sa_family=AF_UNIX, sun_path="{HOSTILE_DIR}/8123.sock"}}, 40) = 0',
    f"100 {T + 2:.6f} connect(5, {INET.format(8123)}) = -1 ECONNREFUSED (Connection refused)",
    f"100 {T + 3:.6f} clone3({{flags=CLONE_VM|CLONE_THREAD}}, 88 <unfinished ...>",
    f"100 {T + 3.2:.6f} <... clone3 resumed>) = 7 {NS.format(101)}",
    f"101 {T + 4:.6f} connect(6, {INET.format(8123)} <unfinished ...>",
    f"100 {T + 4.1:.6f} connect(7, {{sa_family=AF_UNIX, sun_path=@\"8123.sock\"}}, 12) = 0",
    f"101 {T + 4.5:.6f} <... connect resumed>) = -1 EINPROGRESS (Operation now in progress)",
    # a clone whose child the tracer did not translate names no traced pid
    f"100 {T + 5:.6f} clone(child_stack=NULL, flags=SIGCHLD) = 12",
    f'100 {T + 6:.6f} connect(8, {{sa_family=AF_INET6, sin6_port=htons(443), sin6_flowinfo=htonl(0), '
    f'inet_pton(AF_INET6, "::1", &sin6_addr), sin6_scope_id=0}}, 28) = 0',
    # killed inside the call: never resumed
    f"101 {T + 7:.6f} connect(9, {INET.format(8123)} <unfinished ...>",
    f"100 {T + 8:.6f} +++ exited with 0 +++",
]


def test_connects_and_spawns_from_hostile_lines() -> None:
    trace = parse_egress_trace("\n".join(LOG), 0.0)
    assert trace.connects == [
        Connect(pid=100, t_s=T + 1, port=None, socket_path='/tmp/x") = 3 "y/8123.sock', result=0,
                error=None),
        Connect(pid=100, t_s=T + 2, port=8123, socket_path=None, result=-1, error="ECONNREFUSED"),
        # at its start, with the result of its resumed half
        Connect(pid=101, t_s=T + 4, port=8123, socket_path=None, result=-1, error="EINPROGRESS"),
        Connect(pid=100, t_s=T + 6, port=443, socket_path=None, result=0, error=None),
        Connect(pid=101, t_s=T + 7, port=8123, socket_path=None, result=None, error=None),
    ]
    assert trace.spawns == [Spawn(parent=100, child=101, t_s=T + 3)]
    # the argv that reads like a connect is an argument, not a call
    assert trace.programs == parse_exec_log("\n".join(LOG), 0.0)
    (program,) = trace.programs
    assert program.argv[1].startswith("connect(9, ") and program.exit_code == 0


def test_reader_fed_in_pieces_joins_a_call_split_between_them() -> None:
    """A live log read as it grows: the resumed half comes in a later read."""
    cut = 6  # after the unfinished connect of pid 101, before its resumed half
    reader = ExecLogReader(T, keep_egress=True)
    reader.feed("\n".join(LOG[:cut]) + "\n")
    assert [c.pid for c in reader.connects] == [100, 100]
    reader.feed("\n".join(LOG[cut:]) + "\n")
    reader.events(final=True)
    split = [c for c in reader.connects if c.error == "EINPROGRESS"]
    assert len(split) == 1 and abs(split[0].t_s - 4.0) < 1e-6
    assert not ExecLogReader(T).connects  # kept only when asked


def test_proxy_reached_through_a_hostile_named_socket_is_attributed(tmp_path: Path) -> None:
    """A program that reaches the proxy through a socket file in a folder whose name holds
    `") = 3 "` is the one the proxy line is attributed to."""
    agent = tmp_path / "agent"
    agent.mkdir()
    log = [
        f'100 {T:.6f} execve("/usr/bin/node", ["node", "cli.js"], 0x1 /* 3 vars */) = 0',
        f"100 {T + 1:.6f} clone(child_stack=NULL, flags=SIGCHLD) = 5 {NS.format(200)}",
        f'200 {T + 1.1:.6f} execve("/usr/bin/python3", ["python3", "sneak.py"], 0x1 /* 3 vars */)'
        " = 0",
        f'200 {T + 2:.6f} connect(3, {{sa_family=AF_UNIX, sun_path="{HOSTILE_DIR}/8123.sock"}}, 40)'
        " = 0",
        f"200 {T + 3:.6f} +++ exited with 0 +++",
        f"100 {T + 9:.6f} +++ exited with 0 +++",
    ]
    (agent / "exec.log").write_text("\n".join(log) + "\n")
    (agent / "exec.jsonl").write_text("".join(e.model_dump_json() + "\n"
                                              for e in parse_exec_log("\n".join(log), T)))
    (agent / "network.jsonl").write_text(json.dumps(
        {"host": "api.openai.com", "port": 443, "allowed": True, "accepted": T + 2.001,
         "proxy_port": 8123}) + "\n")
    (connection,) = attribute(tmp_path) or []
    assert connection.process is not None and connection.process.argv == ["python3", "sneak.py"]
    assert "traced connect() by thread 200" in connection.how and not connection.by_cli
    assert connection.chain == ["python3 sneak.py", "node cli.js"]
