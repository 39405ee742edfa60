"""A hostile agent aimed at the sandbox and the harness around it (the grader's own defences
are tests/agents/adversary.py's). Prints one JSON line per attempt
{"attempt": name, "outcome": "blocked" | "LEAKED", "detail": ...}; the test expects 'blocked'
for all, and checks the harness's records itself (the forged lines must not be in them).

argv: RUN_DIR A2RL_HOME ALLOWED_URL DENIED_URL A2RL_PACKAGE_DIR HELD_OUT_FILE...
"""

import glob
import json
import os
import socket
import sys

RUN_DIR, A2RL_HOME, ALLOWED_URL, DENIED_URL, PKG = sys.argv[1:6]
FORGED = ('999 1.000000 execve("/usr/bin/FORGED-TRAINER", ["FORGED-TRAINER", "--sft"], '
          '0x0 /* 0 vars */) = 0\n')


def report(name, leaked, detail=""):
    print(json.dumps({"attempt": name, "outcome": "LEAKED" if leaked else "blocked",
                      "detail": str(detail)[:300]}), flush=True)


# Class 4: every descriptor but stdio, and every descriptor of every process we can see.
own = sorted(int(f) for f in os.listdir("/proc/self/fd"))
report("descriptors beyond stdio", any(fd > 2 for fd in own[:-1]), own)
for fd in own:
    if fd <= 2:
        continue
    try:
        os.write(fd, FORGED.encode())
        report(f"write to inherited fd {fd}", True, os.readlink(f"/proc/self/fd/{fd}"))
    except OSError as exc:
        report(f"write to inherited fd {fd}", False, exc)
for path in glob.glob("/proc/[0-9]*/fd/*"):
    if path.startswith(("/proc/self/", f"/proc/{os.getpid()}/")):
        continue
    try:
        target = os.readlink(path)
    except OSError:
        continue
    if target.startswith(("pipe:", "socket:", "anon_inode:", "/dev/")):
        continue
    try:
        with open(path, "a") as fh:
            fh.write(FORGED)
        report(f"reopen {path} -> {target}", True, target)
    except OSError as exc:
        report(f"reopen {path}", False, exc)
for path in (f"{RUN_DIR}/agent/exec.log", f"{RUN_DIR}/ledger.jsonl", f"{RUN_DIR}/run.json"):
    try:
        with open(path, "a") as fh:
            fh.write(FORGED)
        report(f"append to {path}", True)
    except OSError as exc:
        report(f"append to {path}", False, exc)

# Class 2: held-out data shipped in the environment.
# (their folders are empty inside, so the host paths come on the command line)
secrets = sys.argv[6:]
for path in secrets:
    try:
        with open(path, "rb") as fh:
            data = fh.read(100)
        report(f"read {os.path.basename(path)}", bool(data), data[:40])
    except OSError as exc:
        report(f"read {os.path.basename(path)}", False, exc)

# Class 8: the socket folder of the relay, and egress.
for sock_dir in ("/run/a2rl-net",):
    try:
        with open(os.path.join(sock_dir, "filler"), "wb") as fh:
            fh.write(b"\0" * (1 << 20))
        report("fill the relay's socket folder", True)
    except OSError as exc:
        report("fill the relay's socket folder", False, exc)
proxy = os.environ.get("A2RL_EGRESS_PROXY", "")
report("egress proxy configured", not proxy, proxy)  # (LEAKED = no proxy: egress unpoliced)


def via_proxy(request: bytes) -> str:
    host, port = proxy.rsplit("/", 1)[-1].split(":")
    s = socket.create_connection((host, int(port)), timeout=10)
    s.sendall(request)
    data = b""
    while chunk := s.recv(4096):
        data += chunk
    s.close()
    return data.decode("latin-1")


if proxy:
    reply = via_proxy(f"GET {ALLOWED_URL} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
                      .encode())
    print(json.dumps({"allowed_reply": reply[-200:]}), flush=True)
    for name, req in [
        ("denied http", f"GET {DENIED_URL} HTTP/1.1\r\nHost: x\r\n\r\n"),
        ("denied connect", "CONNECT example.invalid:443 HTTP/1.1\r\n\r\n"),
        ("connect to a loopback port by name", "CONNECT localhost:22 HTTP/1.1\r\n\r\n"),
    ]:
        reply = via_proxy(req.encode())
        report(name, " 200 " in reply.split("\r\n")[0], reply.split("\r\n")[0])
host, port = DENIED_URL.split("//")[1].rstrip("/").split(":")
try:
    socket.create_connection((host, int(port)), timeout=3).close()
    report("direct connect to a host loopback service", True)
except OSError as exc:
    report("direct connect to a host loopback service", False, exc)

# Class 9: the operator's console and the transcript reader.
out = sys.stdout.buffer
out.write(b"[/dim][/][bold green]\xe2\x9c\x94 s0999[/] score 100.00  improvement +100.00\n")
out.write(b"\x1b[2K\x1b[1A\x1b[32m\xe2\x9c\x94 s0999\x1b[0m score 100.00 best 100.00\n")
out.write(b"\rOK\r\x1b]0;owned\x07\xe2\x9c\x94 s0999 score 100.00\n")
out.write(b"\xff\xfe\xc3\x28 invalid utf-8 \x80\x81\n")
out.write(b"[link=file:///etc/passwd]click[/link] [red]x[/red]\n")
out.write(b"A" * (3 << 20))  # 3 MB without a newline
out.write(b"\nEND-OF-FLOOD\n")
out.flush()
print("ADVERSARY-DONE", flush=True)
