"""The README and the documentation site (docs/, mkdocs.yml): the README stays a short guide
that gives CI's test command, every relative link resolves, every `a2rl` command line they show
names real commands and options, docs/benchmarks.md is one table of dated figures with their
commands, the pages describe the project as it is (no change log), and the site builds with
`mkdocs build --strict`."""

from __future__ import annotations

import datetime
import importlib.util
import os
import re
import shlex
import subprocess
import sys
import unicodedata
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
README = REPO / "README.md"
DOCS = REPO / "docs"
MAX_README_LINES = 250

FENCE = re.compile(r"^(```|~~~).*?^\1[ \t]*$", re.M | re.S)
CODE_SPAN = re.compile(r"(`+)(.+?)\1", re.S)
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(([^()\s]+)(?:\s+\"[^\"]*\")?\)")
HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", re.M)
SCHEME = re.compile(r"^[a-z][a-z0-9+.-]*:", re.I)
# Change-log phrasing: pages describe what is, not how it came to be.
HISTORY = [re.compile(r"\bpreviously\b", re.I), re.compile(r"\bsessions?\b", re.I)]
WAS_BEFORE = re.compile(r"\b(?:was|were)\b.*\bbefore\b", re.I)


def pages() -> list[Path]:
    return [README, *sorted(DOCS.rglob("*.md"))]


def without_code(text: str) -> str:
    """Markdown text with fenced blocks and code spans removed (links there are not links)."""
    return CODE_SPAN.sub("", FENCE.sub("", text))


def slug(heading: str) -> str:
    """The anchor Python-Markdown's toc extension (MkDocs' default) gives a heading."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    text = re.sub(r"[`*]", "", text)
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    text = re.sub(r"[^\w\s-]", "", text).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def anchors(path: Path) -> set[str]:
    return {slug(h) for h in HEADING.findall(FENCE.sub("", path.read_text()))}


def ci_commands() -> list[str]:
    """The commands .ci/run runs, in order (comments, `set` and `cd` left out)."""
    out = []
    for line in (REPO / ".ci" / "run").read_text().splitlines():
        line = line.strip()
        if line and not line.startswith(("#", "set ", "cd ")):
            out.append(line)
    return out


def test_readme_is_a_short_guide() -> None:
    lines = README.read_text().splitlines()
    assert len(lines) <= MAX_README_LINES, (
        f"README.md has {len(lines)} lines (at most {MAX_README_LINES}): move reference material "
        "into docs/")


def test_readme_gives_the_test_command_ci_runs_last() -> None:
    commands = ci_commands()
    assert commands, ".ci/run runs no command"
    last = commands[-1]
    blocks = [m.group(0) for m in FENCE.finditer(README.read_text())]
    block_lines = {ln.split("#", 1)[0].strip() for b in blocks for ln in b.splitlines()}
    assert last in block_lines, f"README.md shows no code line `{last}` (.ci/run's last command)"


def test_ci_builds_the_docs_before_the_tests() -> None:
    commands = ci_commands()
    assert "make docs" in commands
    assert commands.index("make docs") < len(commands) - 1, "the test command must stay last"


def test_every_relative_link_resolves() -> None:
    broken = []
    for page in pages():
        for target in LINK.findall(without_code(page.read_text())):
            if SCHEME.match(target):
                continue
            path, _, anchor = target.partition("#")
            dest = (page.parent / path).resolve() if path else page
            where = f"{page.relative_to(REPO)}: {target}"
            if not dest.is_file():
                broken.append(f"{where} (no such file)")
            elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
                broken.append(f"{where} (no heading with anchor #{anchor})")
    assert not broken, "broken links:\n" + "\n".join(broken)


def test_link_checker_sees_broken_links(tmp_path: Path) -> None:
    """The helpers above find links outside code and anchors as MkDocs spells them."""
    text = ("See [a](x.md#the-result-of-a-run), `[not](a link)` and\n```\n[no](link.md)\n```\n"
            "![img](pic.png) and [web](https://example.org).\n")
    assert LINK.findall(without_code(text)) == ["x.md#the-result-of-a-run", "pic.png",
                                                "https://example.org"]
    assert slug("The result of a run") == "the-result-of-a-run"
    assert slug("`a2rl run` options") == "a2rl-run-options"
    assert slug("$A2RL_HOME") == "a2rl_home"


def _cli_lines() -> list[tuple[Path, str]]:
    """Every `a2rl …` command line shown in a code block or code span of the pages."""
    found = []
    for page in pages():
        text = page.read_text()
        for block in FENCE.finditer(text):
            joined = re.sub(r"\\\n\s*", " ", block.group(0))
            found += [(page, ln.strip()) for ln in joined.splitlines()[1:-1]]
        found += [(page, m.group(2).strip()) for m in CODE_SPAN.finditer(FENCE.sub("", text))]
    out = []
    for page, line in found:
        line = re.sub(r"^(?:\.venv/bin/|\$ )", "", line)
        if line.startswith("a2rl ") and "\n" not in line:
            out.append((page, line))
    return out


def test_command_lines_name_real_commands_and_options() -> None:
    import typer

    from a2rl.cli import app

    root = typer.main.get_command(app)
    problems = []
    lines = _cli_lines()
    assert len(lines) > 20, "the pages show hardly any a2rl command lines"
    for page, line in lines:
        try:
            words = shlex.split(line, comments=True)
        except ValueError:
            words = line.split()
        cmd, path = root, ["a2rl"]
        rest = words[1:]
        while rest and hasattr(cmd, "commands") and not rest[0].startswith("-"):
            sub = cmd.commands.get(rest[0])  # type: ignore[attr-defined]
            if sub is None:
                problems.append(f"{page.name}: `{line}`: no command {' '.join(path)} {rest[0]}")
                break
            cmd, path, rest = sub, [*path, rest[0]], rest[1:]
        else:
            known = {"--help"} | {o for p in cmd.params for o in (*p.opts, *p.secondary_opts)}
            for word in rest:
                if word.startswith("-") and word.split("=", 1)[0] not in known \
                        and word not in ("-", "--"):
                    problems.append(f"{page.name}: `{line}`: {' '.join(path)} has no option "
                                    f"{word.split('=', 1)[0]}")
    assert not problems, "\n".join(problems)


def _table_blocks(text: str) -> list[list[str]]:
    blocks: list[list[str]] = []
    previous = False
    for line in FENCE.sub("", text).splitlines():
        is_row = line.lstrip().startswith("|")
        if is_row and previous:
            blocks[-1].append(line)
        elif is_row:
            blocks.append([line])
        previous = is_row
    return blocks


def _cells(row: str) -> list[str]:
    row = row.strip()
    parts = re.split(r"(?<!\\)\|", row.strip("|"))
    return [p.strip() for p in parts]


def test_benchmarks_page_is_one_table_of_dated_figures_with_commands() -> None:
    text = (DOCS / "benchmarks.md").read_text()
    blocks = _table_blocks(text)
    assert len(blocks) == 1, f"docs/benchmarks.md holds {len(blocks)} tables; it must hold one"
    header, rule, *rows = blocks[0]
    names = [c.lower() for c in _cells(header)]
    assert "command" in names and "date" in names, f"columns {names}: need command and date"
    assert set(rule.replace("|", "").replace(":", "").strip()) <= {"-", " "}
    assert rows, "the benchmarks table has no rows"
    makefile = (REPO / "Makefile").read_text()
    today = datetime.date.today()
    for row in rows:
        cells = _cells(row)
        assert len(cells) == len(names), f"row with {len(cells)} cells, header has {len(names)}: {row}"
        command, date = cells[names.index("command")], cells[names.index("date")]
        spans = [m.group(2) for m in CODE_SPAN.finditer(command)]
        assert spans and all(s.strip() for s in spans), f"row without a command: {row}"
        when = datetime.date.fromisoformat(date)  # raises on anything but YYYY-MM-DD
        assert when <= today, f"a figure measured in the future ({date}): {row}"
        for script in re.findall(r"bench/[\w./-]+\.py", command):
            assert (REPO / script).is_file(), f"{script} (in the benchmarks table) does not exist"
        for target in re.findall(r"\bmake ([\w-]+)", command):
            assert re.search(rf"^{re.escape(target)}:", makefile, re.M), f"no make target {target}"


def test_pages_describe_what_is_not_its_history() -> None:
    found = []
    for page in pages():
        text = page.read_text()
        for pattern in HISTORY:
            found += [f"{page.relative_to(REPO)}: {m.group(0)!r}" for m in pattern.finditer(text)]
        for paragraph in re.split(r"\n\s*\n", text):
            for sentence in re.split(r"(?<=[.!?])\s+", " ".join(paragraph.split())):
                if m := WAS_BEFORE.search(sentence):
                    found.append(f"{page.relative_to(REPO)}: {m.group(0)[:80]!r}")
    assert not found, "history phrasing:\n" + "\n".join(found)


def test_mkdocs_build_strict(tmp_path: Path) -> None:
    missing = [m for m in ("mkdocs", "material") if importlib.util.find_spec(m) is None]
    if missing:
        pytest.skip(f"{' and '.join(missing)} not installed in this environment: `make docs` "
                    "installs the docs extra (mkdocs, mkdocs-material)")
    site = tmp_path / "site"
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir",
                           str(site)], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, f"mkdocs build --strict failed:\n{proc.stdout}\n{proc.stderr}"
    built = {p.stem for p in site.glob("*.html")}
    assert {p.stem for p in DOCS.glob("*.md")} <= built
