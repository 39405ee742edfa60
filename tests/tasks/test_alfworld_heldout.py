"""ALFWorld's held-out games cannot be inferred from what an agent is given (issue 17, class 2).

The attacks, played with everything a2rl ships (the generator is public, and so is the train seed):
- the gap: enumerate what the generator draws, subtract the train games, and read the test set
  off what is missing (99 of arith's 200 held-out questions came out that way);
- the train files as an oracle on the seed: if they changed with the held-out seed (version 1
  dropped train games identical to a held-out game), trying seeds against them would find it;
- names and logs: a plain hash of the 31-bit seed in a folder name is reversed by trying seeds;
- files: a held-out spec in the workspace, in a2rl's package, or in the shared /tmp.

The statistical attacks run at the generator's spec level (`sample_scene`, no engine): the first
draw of each (seed, index) that can host its task type. The engine check that real games pass
changes which attempt is kept for a few indices, not the distribution the attack works on. The
engine runs only for the byte-identity and file tests, on 3 train and 1-2 held-out games.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import math
import re
import shutil
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("alfworld")
pytest.importorskip("textworld")

import a2rl  # noqa: E402
from a2rl._errors import A2RLError  # noqa: E402
from a2rl.envs import Episode  # noqa: E402
from a2rl.tasks._lib.splits import stream_seed  # noqa: E402
from a2rl.tasks.alfworld import games  # noqa: E402
from a2rl.tasks.alfworld import task as alf  # noqa: E402

SEED_A, SEED_B = 1_879_104_233, 1_205_517_871  # long, so they cannot occur in a file by accident
SMALL = {"n_train": 3, "n_heldout": 2, "gen_workers": 1}
HELD_SEEDS = (11, 222, 3333, 44444, 555555)
"""Held-out seeds of the statistical tests (the attacker never uses them)."""
N_TRAIN, N_HELD = 200, 134  # the task's default sizes

Key = tuple[str, str, str, str]


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("alfworld-heldout-home")


@pytest.fixture(autouse=True)
def _home(home: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """One $A2RL_HOME for the module: the few generated games are cached across tests."""
    monkeypatch.setenv("A2RL_HOME", str(home))
    monkeypatch.delenv("DATA_PATH", raising=False)
    yield home


def make(seed: int | None, **extra: object) -> alf.ALFWorldTask:
    params: dict[str, object] = {**SMALL, **extra}
    if seed is not None:
        params["heldout_seed"] = seed
    return alf.ALFWorldTask(params)


def tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


# ---- spec level -------------------------------------------------------------------------------


@functools.cache
def spec_stream(seed: int, n: int) -> tuple[games.Scene, ...]:
    """Scenes 0..n-1 of a generator seed: per index, the first draw that can host its type."""
    out = []
    for i in range(n):
        task_type = games.TASK_TYPES[i % len(games.TASK_TYPES)]
        for attempt in range(1000):
            scene = games.sample_scene(games._rng(seed, i, attempt), task_type)
            if scene is not None:
                out.append(scene)
                break
    return tuple(out)


def coarse(scene: games.Scene) -> Key:
    """What a game asks, without the layout: task type, room, object, target receptacle/lamp."""
    return (scene.task_type, scene.room, scene.object_target, scene.parent_target or scene.toggle_target)


@functools.cache
def attacker_pool() -> Counter[Key]:
    """The attacker's estimate of the generator's distribution over `coarse` keys: draws of a
    stream of its own (the public code is all it needs)."""
    return Counter(coarse(s) for s in spec_stream(stream_seed("alfworld", "attacker-pool", 1), 1200))


def heldout_keys(seed: int) -> list[Key]:
    return [coarse(s) for s in spec_stream(alf.heldout_stream(seed), N_HELD)]


def expected_hits(guesses: set[Key], pool: Counter[Key]) -> float:
    """Held-out items an independent draw puts on `guesses`: N_HELD × their share of the pool."""
    return N_HELD * sum(pool[k] for k in guesses) / sum(pool.values())


def gap_guesses(train: list[Key], pool: Counter[Key], n: int) -> set[Key]:
    """The gap attack: the most frequent keys of the generator that the train split lacks."""
    have = set(train)
    return set([k for k, _ in pool.most_common() if k not in have][:n])


def test_the_gap_attack_recovers_no_more_than_chance() -> None:
    """Guess the 60 most frequent (type, room, object, target) keys that the train split lacks:
    the held-out items that land on them are no more than an independent draw puts there, for
    the real train split (200 games) and for a larger one (800) that covers more of the space.
    Against the version-1 idea made coarse (train = the public stream minus held-out keys) the
    same attack lands 1.4 times chance or more: the measure sees a leak when there is one."""
    pool = attacker_pool()
    old_hits = 0
    old_chance = 0.0
    for n_train in (N_TRAIN, 4 * N_TRAIN):
        train = [coarse(s) for s in spec_stream(alf.train_stream(), n_train)]
        guesses = gap_guesses(train, pool, 60)
        chance = expected_hits(guesses, pool)
        for seed in HELD_SEEDS:
            held = heldout_keys(seed)
            hits = sum(k in guesses for k in held)
            assert hits <= chance + 4 * math.sqrt(chance) + 2, (n_train, seed, hits, chance)
            if n_train > N_TRAIN:
                old_train = [k for k in train if k not in set(held)]
                old_guesses = gap_guesses(old_train, pool, 60)
                old_hits += sum(k in old_guesses for k in held)
                old_chance += expected_hits(old_guesses, pool)
    assert old_hits > 1.4 * old_chance, (old_hits, old_chance)


def test_presence_in_train_says_nothing() -> None:
    """The held-out items on keys the train split has are what the generator predicts (about a
    third: the description's figure). Had train been drawn with the held-out keys removed, there
    would be none, which tells the attacker which keys are never tested."""
    pool = attacker_pool()
    train = [coarse(s) for s in spec_stream(alf.train_stream(), N_TRAIN)]
    predicted = expected_hits(set(train), pool)
    for seed in HELD_SEEDS:
        held = heldout_keys(seed)
        on_train = sum(k in set(train) for k in held)
        assert abs(on_train - predicted) <= 4 * math.sqrt(predicted) + 5, (seed, on_train, predicted)
        stream = spec_stream(alf.train_stream(), 4 * N_TRAIN)
        old_train = {k for k in (coarse(s) for s in stream) if k not in set(held)}
        assert sum(k in old_train for k in held) == 0 < predicted / 2


def test_the_stated_chance_overlap_is_what_the_generator_does() -> None:
    """The description's figures: no held-out game identical to a train game, and about the
    stated share of held-out games sharing (type, room, object, target) with some train game."""
    stated = re.search(r"about (\d+)% shared", alf.GENERATED_SPLITS)
    assert stated and "no held-out game was identical" in alf.GENERATED_SPLITS
    train = spec_stream(alf.train_stream(), N_TRAIN)
    signatures, keys = {s.signature() for s in train}, {coarse(s) for s in train}
    identical = shared = total = 0
    for seed in HELD_SEEDS:
        held = spec_stream(alf.heldout_stream(seed), N_HELD)
        identical += sum(s.signature() in signatures for s in held)
        shared += sum(coarse(s) in keys for s in held)
        total += len(held)
    assert identical == 0
    assert abs(shared / total - int(stated[1]) / 100) < 0.06, shared / total


def test_streams_are_keyed_by_split() -> None:
    """Train and held-out draws come from different streams even for equal seeds, and the
    train stream does not involve the held-out seed at all."""
    assert alf.train_stream() == stream_seed("alfworld", "train", alf.TRAIN_SEED)
    assert alf.heldout_stream(alf.TRAIN_SEED) != alf.train_stream()
    assert len({alf.heldout_stream(s) for s in (SEED_A, SEED_B, alf.TRAIN_SEED)}) == 3
    a = [s.signature() for s in spec_stream(alf.heldout_stream(alf.TRAIN_SEED), 12)]
    b = [s.signature() for s in spec_stream(alf.train_stream(), 12)]
    assert not set(a) & set(b)


# ---- what the agent is given (real engine, a few tiny games) -----------------------------------


def test_train_files_are_byte_identical_under_two_heldout_seeds(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    written, held = [], []
    for seed in (SEED_A, SEED_B):
        task = make(seed, n_heldout=1)
        out = tmp_path / str(seed)
        task.write_train_data(out)
        written.append(tree(out))
        held.append(task.heldout_episodes()[0].payload["game"])
        assert task.description(chat_preview=None) == make(SEED_A if seed == SEED_B else SEED_B,
                                                            n_heldout=1).description(chat_preview=None)
    assert written[0] == written[1] and written[0]
    assert held[0] != held[1]  # the held-out games did differ
    # No gap by index either: the train episodes are games 0..n-1 of the public stream.
    eps = alf.InteractiveTask.episodes_from(tmp_path / str(SEED_A) / "episodes.jsonl")
    assert [e.id for e in eps] == [f"train-{i:05d}" for i in range(SMALL["n_train"])]

    # Writing the train data never reads the held-out games.
    def forbidden(self: alf.ALFWorldTask) -> list[tuple[Episode, str | None]]:
        raise AssertionError("write_train_data looked at the held-out games")

    monkeypatch.setattr(alf.ALFWorldTask, "_heldout", property(forbidden))
    again = tmp_path / "again"
    make(SEED_B, n_heldout=1).write_train_data(again)
    assert tree(again) == written[0]


def heldout_secrets(task: alf.ALFWorldTask) -> list[str]:
    """Every string that would identify this task's held-out games: the seed, its stream, the
    cache folder names (the keyed one and version 1's plain hash), the games' signatures, trial
    folders and PDDL problem names."""
    seed = task.params.heldout_seed
    assert seed is not None
    stream = alf.heldout_stream(seed)
    root = task._split_dir("heldout")
    found = [str(seed), str(stream), f"{stream:016x}", root.name,
             hashlib.sha256(f"alfworld:{seed}".encode()).hexdigest()[:16]]
    for ep in task.heldout_episodes():
        rel = Path(ep.payload["game"])
        rec = games.GameRecord.read(root / rel.parts[0] / games.MANIFEST)
        found += [rec.signature, rel.parent.name]
    return found


def test_heldout_specs_are_in_no_workspace_package_or_log(tmp_path: Path,
                                                          caplog: pytest.LogCaptureFixture) -> None:
    task = make(SEED_A)
    with caplog.at_level(logging.DEBUG):
        task.heldout_episodes()  # generated here, so its log lines are captured
        task.train_episodes()
    secrets = heldout_secrets(task)
    assert all(s not in caplog.text for s in secrets), caplog.text
    data = tmp_path / "data"
    task.write_train_data(data)
    (data / "task.json").write_text(json.dumps(task.params.public()))
    (data / "description.md").write_text(task.description(chat_preview=None))
    workspace = "\n".join(p.read_text(errors="replace") for p in data.rglob("*") if p.is_file())
    assert [s for s in secrets if s in workspace] == []
    package = Path(a2rl.__file__).parent
    for path in package.rglob("*"):
        if path.is_file() and path.suffix in {".py", ".json", ".md", ".jsonl", ".txt", ".pddl"}:
            text = path.read_text(errors="replace")
            assert [s for s in secrets if s in text] == [], path
    # the held-out games' probes were made under $A2RL_HOME, and none is left over
    assert not list(task._split_dir("heldout").glob(".probe-*"))


def test_heldout_cache_folder_is_keyed_not_a_hash_of_the_seed(home: Path) -> None:
    """Version 1 named it sha256("alfworld:<seed>")[:16]: 2^31 tries reverse that. Now the name
    is an HMAC under the grader key, so another installation key gives another name."""
    task = make(SEED_A)
    name = task._split_dir("heldout").name
    plain = hashlib.sha256(f"alfworld:{SEED_A}".encode()).hexdigest()[:16]
    assert name.startswith("heldout-") and plain not in name
    key_file = home / "secrets" / "grader-key"
    original = key_file.read_text()
    try:
        key_file.write_text("ab" * 32 + "\n")
        assert make(SEED_A)._split_dir("heldout").name != name
    finally:
        key_file.write_text(original)
    assert make(SEED_A)._split_dir("heldout").name == name


def test_a_missing_heldout_game_is_reported_without_its_cache_path() -> None:
    task = make(SEED_B, n_heldout=1)
    ghost = Episode(id="heldout-09999", split="heldout", payload={
        "game": "09999/x/trial/game.tw-pddl", "task_type": games.TASK_TYPES[0], "goal": "g"})
    with pytest.raises(A2RLError) as err:
        task.game_file(ghost)
    text = str(err.value)
    assert task._split_dir("heldout").name not in text and str(Path.home()) not in text
    # a cache that disagrees with the stream: the error names neither the folder nor the seed
    task.heldout_episodes()
    root, stream = task._split_dir("heldout"), alf.heldout_stream(SEED_B)
    with pytest.raises(ValueError) as bad:
        games.generate_game(root, stream, 0, games.TASK_TYPES[1])
    assert root.name not in str(bad.value) and str(stream) not in str(bad.value)
    assert str(SEED_B) not in str(bad.value)


def test_run_records_redact_the_heldout_seed() -> None:
    from a2rl.grader import redacted_params

    task = make(SEED_A)
    shown = redacted_params(task)
    assert str(shown["heldout_seed"]).startswith("hmac:") and str(SEED_A) not in json.dumps(shown)
    assert "heldout_seed" not in task.params.public()


def test_official_train_sample_ignores_the_heldout_split(tmp_path: Path) -> None:
    """Official source: the train sample is drawn from `train` alone; changing the held-out
    split's contents changes nothing the agent gets."""
    src = make(SEED_A)._split_dir("train")
    recs = [games.GameRecord.read(src / f"{i:05d}" / games.MANIFEST) for i in range(3)]

    def build(root: Path, held: list[games.GameRecord]) -> None:
        for split, chosen in (("valid_unseen", held), ("train", recs[:2])):
            for r in chosen:
                trial = Path(r.game).parent
                shutil.copytree(src / trial, root / "json_2.1.1" / split / trial.relative_to(trial.parts[0]))

    outs = []
    for name, held in (("one", recs[2:]), ("other", recs[:1])):
        build(tmp_path / name, held)
        off = alf.ALFWorldTask({"source": "official", "alfworld_data": str(tmp_path / name), "n_train": 0})
        off.write_train_data(tmp_path / f"data-{name}")
        outs.append(tree(tmp_path / f"data-{name}"))
    assert outs[0] == outs[1] and outs[0]
