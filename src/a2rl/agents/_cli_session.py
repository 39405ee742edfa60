"""Runs inside the sandbox: writes the CLI's config under the private HOME, starts the CLI,
and, when re-prompting is on, continues the same conversation while budget remains.

`python -m a2rl.agents._cli_session` reads its `SessionSpec` from $A2RL_CLI_SESSION. Its own
messages are single JSON lines `{"a2rl_session": ...}` on stderr, so the transcript parser can
tell rounds apart; everything else in the transcript is the CLI's own output. Each round's
start notes the prompt the CLI is given (the first prompt, then each re-prompt), cut so that
the line stays under the supervisor's line limit; the event log shows them as `prompt`
events.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from types import FrameType

from a2rl.agents._cli import REPROMPT, SPEC_ENV, SessionSpec


def remaining_seconds() -> float:
    """Budget left on the grader's clock (the run's single clock)."""
    req = urllib.request.Request(os.environ["A2RL_GRADER_URL"] + "/status",
                                 headers={"Authorization": "Bearer " + os.environ["A2RL_TOKEN"]})
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return float(json.load(resp)["remaining_seconds"])
    except Exception:
        return 0.0  # the grader is gone or refuses: no more rounds


NOTE_BYTES = 60_000
"""Longest note line: the supervisor cuts a transcript line at 64 KiB."""


def note(**fields: object) -> None:
    print(json.dumps({"a2rl_session": fields}), file=sys.stderr, flush=True)


def fitted(prompt: str, limit: int = NOTE_BYTES) -> str:
    """`prompt` cut (head and tail kept) so that a note carrying it stays under `limit` bytes
    (JSON escapes can take 6 bytes per character)."""
    from a2rl.agents._stream import cap_text

    size = len(json.dumps(prompt))
    while size > limit:
        prompt = cap_text(prompt, max(1, len(prompt) * limit // size - 200))[0]
        size = len(json.dumps(prompt))
    return prompt


def write_home_files(files: dict[str, str]) -> None:
    home = Path(os.environ.get("HOME", "/tmp/home"))
    for rel, content in files.items():
        path = home / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)
        path.chmod(0o600)


def main() -> int:
    spec = SessionSpec.decode(os.environ.pop(SPEC_ENV))
    write_home_files(spec.home_files)
    child: subprocess.Popen[bytes] | None = None

    def forward(signum: int, frame: FrameType | None) -> None:
        # The harness's SIGTERM at the budget's end: pass it on and stop re-prompting.
        spec.reprompt = False
        if child is not None and child.poll() is None:
            child.send_signal(signum)

    signal.signal(signal.SIGTERM, forward)
    argv, rc = spec.argv, 0
    prompt = argv[-1][spec.prompt_offset:] if spec.prompt_offset is not None and argv else None
    for round_no in range(spec.max_rounds):
        if prompt is None:
            note(event="round_start", round=round_no, t=time.time())
        else:
            note(event="round_start", round=round_no, t=time.time(), prompt=fitted(prompt))
        child = subprocess.Popen(argv, stdin=subprocess.DEVNULL)
        rc = child.wait()
        note(event="round_end", round=round_no, exit_code=rc, t=time.time())
        left = remaining_seconds()
        if not spec.reprompt or spec.resume_argv is None or left < spec.reserve_s:
            break
        minutes = f"{int(left // 60)} min"
        prompt = REPROMPT.format(remaining=minutes)
        argv = [a.replace(REPROMPT, prompt) for a in spec.resume_argv]
    return rc


if __name__ == "__main__":
    sys.exit(main())
