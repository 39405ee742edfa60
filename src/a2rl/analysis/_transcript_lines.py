"""agent/transcript.log read as a stream: the analysis greps it and looks for the scripts it
ran without ever holding the whole text (a long run's transcript is hundreds of megabytes)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from pathlib import Path

_RUN_SCRIPT = re.compile(r"(?:python[\d.]*|accelerate launch|torchrun|deepspeed)\s+(?:-\S+\s+)*"
                         r"(\S+\.py)")
# A word that ends a launcher waiting for its script: `_RUN_SCRIPT`'s whitespace spans lines.
_LAUNCHER_END = re.compile(r"(?:python[\d.]*|launch|torchrun|deepspeed)$")
PIECE_CHARS = 1 << 24
"""The most characters held at once: a longer line is read (and searched) in pieces."""


class TranscriptLines:
    """The transcript's lines, as `str.splitlines()` gives them for the whole text (decoded with
    errors replaced, universal newlines), read from the file each time they are iterated."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def pieces(self) -> Iterator[str]:
        """The file's lines with their newline, a line over `PIECE_CHARS` in pieces."""
        if not self.path.exists():
            return
        with self.path.open(errors="replace") as fh:
            while piece := fh.readline(PIECE_CHARS):
                yield piece

    def __iter__(self) -> Iterator[str]:
        for piece in self.pieces():
            yield from piece.splitlines()


def _launch_goes_on(text: str) -> bool:
    """Whether a launch command can go on past the end of `text`: its last word is a launcher
    or a flag (a script may follow on a later line)."""
    words = text.rsplit(None, 1)
    return bool(words) and (words[-1].startswith("-") or bool(_LAUNCHER_END.search(words[-1])))


def launch_spans(pieces: Iterable[str]) -> Iterator[str]:
    """Runs of whole lines, cut only where no launch command goes on to the next line, so that
    `_RUN_SCRIPT` finds in them what it finds in the whole text (a run longer than
    `PIECE_CHARS` is cut all the same)."""
    held: list[str] = []
    size = 0
    for piece in pieces:
        held.append(piece)
        size += len(piece)
        # a blank line inside a launch keeps it open: its whitespace spans lines too
        open_launch = _launch_goes_on(piece) or (len(held) > 1 and not piece.strip())
        if open_launch and size < PIECE_CHARS:
            continue
        yield "".join(held)
        held, size = [], 0
    if held:
        yield "".join(held)


def executed_scripts(transcript: TranscriptLines, files: dict[str, str]) -> set[str]:
    """Scripts in the snapshot that the transcript shows being run (plain-text transcripts)."""
    ran = {Path(m).name for span in launch_spans(transcript.pieces())
           for m in _RUN_SCRIPT.findall(span)}
    return {p for p in files if p.endswith(".py") and Path(p).name in ran}
