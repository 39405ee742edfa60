"""The trusted judge server (after the codec): one per executor worker, started once with
`-I -S` (standard library only). Each job is a fork of it, handed its five descriptors over a
socket pair, that runs the trusted context and tests with the entry point bound to a proxy of
the solution process and writes the verdict, tagged with the job's nonce, to the host."""

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, NoReturn

    from a2rl.tasks._lib.programs.codec import decode_value, encode_value, message_bytes


def _a2rl_judge(cfg: "dict[str, Any]", job: "dict[str, Any]", verdict_fd: int) -> None:
    import json
    import os
    import resource

    for name, soft, hard in cfg["rlimits"]:
        resource.setrlimit(getattr(resource, name), (soft, hard))
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 1)  # trusted test code may print: never onto the verdict channel
    os.dup2(devnull, 0)
    limit = cfg["max_message"]
    requests = cfg["request_fd"]
    replies = os.fdopen(cfg["reply_fd"], "rb")
    nonce = cfg["nonce"]

    def finish(status: str, reason: str) -> "NoReturn":
        line = json.dumps({"nonce": nonce, "status": status, "reason": reason[-2000:]})
        os.write(verdict_fd, (line + "\n").encode())
        os._exit(0)

    class CandidateError(Exception):
        pass

    def receive() -> "dict[str, Any]":
        line = replies.readline(limit + 1)
        if not line:
            raise CandidateError("the solution process ended before answering")
        if len(line) > limit:
            raise CandidateError("the solution's reply is too large")
        try:
            msg = json.loads(line)
        except ValueError:
            raise CandidateError("the solution's reply is not a message") from None
        if not isinstance(msg, dict):
            raise CandidateError("the solution's reply is not a message")
        return msg

    def candidate(*args: "Any", **kwargs: "Any") -> "Any":
        data = message_bytes({"args": encode_value(list(args)), "kwargs": encode_value(kwargs)})
        while data:
            data = data[os.write(requests, data):]
        msg = receive()
        if set(msg) == {"value"}:
            try:
                return decode_value(msg["value"])
            except (ValueError, TypeError, RecursionError, MemoryError):
                raise CandidateError("the solution's reply is not plain data") from None
        if set(msg) == {"raised"} and isinstance(msg["raised"], str):
            raise CandidateError(f"the solution raised {msg['raised'][:100]}")
        raise CandidateError("the solution's reply is not a message")

    try:
        hello = receive()
        if hello != {"ready": True}:
            reason = hello.get("load_error") if isinstance(hello.get("load_error"), str) else None
            finish("failed", f"the solution did not load: {reason or 'malformed hello'}"[:300])
        env: dict[str, Any] = {}
        exec(compile(job["context"], "<context>", "exec"), env)
        env[job["entry_point"]] = candidate
        exec(compile(job["tests"], "<tests>", "exec"), env)
        exec(compile(f"check({job['entry_point']})", "<check>", "exec"), env)
    except BaseException as exc:
        finish("failed", f"{type(exc).__name__}: {exc}".strip().rstrip(":"))
    finish("passed", "")


def _a2rl_judge_server() -> None:
    # One trusted process per executor worker, started once: each job is a fork of it (the
    # interpreter and the codec are loaded already), judged exactly as a fresh judge would.
    import ctypes
    import json
    import os
    import signal
    import socket
    import sys

    # Not dumpable (inherited by every fork): another process of the same (non-root) user
    # cannot read its memory or open its /proc fds. That only matters unsandboxed, where no
    # pid namespace hides it.
    ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # finished judges are reaped by the kernel
    sock = socket.socket(fileno=int(sys.argv[1]))
    while True:
        try:
            msg, fds, _flags, _addr = socket.recv_fds(sock, 16, 5)
        except OSError:
            os._exit(0)
        if not msg:
            os._exit(0)  # the host closed its end: no more jobs
        if len(fds) != 5:
            for fd in fds:
                os.close(fd)
            continue
        if os.fork() == 0:
            try:  # a judge never returns into the server's loop
                sock.close()
                signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                request_w, reply_r, verdict_w, job_r, err = fds
                os.dup2(err, 2)
                os.close(err)
                with os.fdopen(job_r, "rb") as fh:
                    header, _, body = fh.read().partition(b"\n")
                cfg = json.loads(header)
                cfg.update(request_fd=request_w, reply_fd=reply_r)
                _a2rl_judge(cfg, json.loads(body), verdict_w)
            finally:
                os._exit(0)
        for fd in fds:
            os.close(fd)


if __name__ == "__main__":
    _a2rl_judge_server()
