"""`alfworld` (L3, interactive): household tasks in ALFWorld's text engine, prompted as in ReAct.

The model is an agent in a TextWorld game (PyPI `alfworld`: the `alfred` PDDL domain played by
TextWorld's `PddlEnv` on fast-downward). Each turn it writes one line: `think: …` (the
environment answers `OK.`) or a game command. Reward 1 when the goal is reached, else 0; score =
100 × successes / episodes (Yao et al., ReAct, 2023: ALFWorld with two same-type few-shot
examples, at most 50 steps).

Sources (`source`):
- `generated` (default): ALFRED-format trials (trial json + PDDL problem) generated locally for
  the six task types and played by the real engine (`a2rl.tasks.alfworld.games`). The held-out
  games come from this installation's secret seed (or `heldout_seed`), the train-visible ones
  from a public seed; both are cached under $A2RL_HOME, and only the train games are copied into
  a workspace. Default sizes: 134 held-out games (the paper's `valid_unseen` count), 200 train.
  Scores on generated games are not comparable with published ALFWorld numbers.
- `official`: the official game files from `alfworld-download` under $ALFWORLD_DATA
  (`json_2.1.1/valid_unseen` = the paper's 134 held-out games; train games from `json_2.1.1/train`).
  `valid_unseen` is public by design (anyone can download it): this source measures on a public
  test set, and only `generated` has one an agent cannot obtain.

Split independence (issue 17, class 2). Each split is its own stream of the generator, keyed by
(split, seed) through `a2rl.tasks._lib.splits.stream_seed`: the train stream from the public
`TRAIN_SEED`, the held-out stream from the secret seed. The train split is the first `n_train`
games of its stream and is never filtered against the held-out games (version 1 dropped train
games identical to a held-out game, so a missing train index would have named a held-out game
exactly): the train files are the same bytes whatever the held-out seed, and what they lack says
nothing about the test set. A held-out game may equal a train game by chance; `evaluate()`
reports how many (`heldout_in_train`, grader-side only). The held-out cache folder is named by a
keyed hash (the grader's installation key), never by a plain hash of the seed: the seed is a
31-bit number, and a plain hash of it in a log line or an error would be reversed by trying every
seed.

Why the few-shot examples are recorded here rather than copied from ReAct: the engine installed
with alfworld 0.4.x puts objects with `move X to Y`; ReAct's published examples use the older
`put X in/on Y`, which this engine answers with "Nothing happens." (see `fewshot.py`).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import logging
import os
import random
import re
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from functools import cached_property
from importlib import resources
from multiprocessing import get_context
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import Field

from a2rl._errors import A2RLError
from a2rl._paths import cache_dir
from a2rl._secrets import installation_seed
from a2rl._util import stable_hash
from a2rl.envs import Env, Episode, RolloutConfig, Step, StepResult
from a2rl.inference import GenerationSettings
from a2rl.tasks._core.interactive import EPISODES_FILE, InteractiveTask
from a2rl.tasks._core.registry import tasks
from a2rl.tasks._core.task import EvalOutcome, TaskParams, secret_field
from a2rl.tasks._lib.splits import stream_seed
from a2rl.tasks.alfworld.fewshot import PROMPT_FILE, transcript
from a2rl.tasks.alfworld.games import (
    GEN_VERSION,
    MANIFEST,
    SHORT_TYPES,
    TASK_TYPES,
    GameRecord,
    close_env,
    generate_game,
    goal_of,
    load_env,
    strip_banner,
)

log = logging.getLogger(__name__)

TRAIN_SEED = 4114  # public: the train games are visible anyway
TASK_NAME = "alfworld"


def train_stream() -> int:
    """Generator seed of the train split (public: derived from the public TRAIN_SEED)."""
    return stream_seed(TASK_NAME, "train", TRAIN_SEED)


def heldout_stream(seed: int) -> int:
    """Generator seed of the held-out split of `seed`. Keyed by the split name, so even
    `heldout_seed == TRAIN_SEED` draws other games than the train split."""
    return stream_seed(TASK_NAME, "heldout", seed)

GAMES_DIR = "alfworld_games"
"""Folder of the workspace data dir that holds the train-visible game files."""
MAX_STEPS = 50
"""ReAct's limit on ALFWorld (thinking steps count)."""
HISTORY_WINDOW = 10
"""Only the last 10 (action, observation) pairs stay in the prompt, plus the first observation:
the two examples already take 900-1500 tokens, and full 50-step histories would double that on
CPU. ReAct kept the whole history."""
MAX_NEW_TOKENS = 100
"""ReAct's per-step generation limit; the longest thought in the examples is ~60 tokens."""
STOP = ("\n",)
INSTALL_FIX = ("pip install 'a2rl-bench[alfworld]' "
               "(or: pip install alfworld; it compiles jericho and fast-downward)")
INTRO = "Interact with a household to solve a task. Here are two examples.\n"
REPLY_FORMAT = ("Reply with exactly one line: either `think: <your reasoning>` or one command "
                "(without the `> `), like the lines after `> ` in the examples.\n")


class ALFWorldParams(TaskParams):

    source: Literal["generated", "official"] = "generated"
    """`generated`: games generated locally (offline); `official`: alfworld-download's game files."""
    n_train: int = Field(200, ge=0)
    """Train-visible games written to the workspace (official: a seeded sample; 0 = all)."""
    n_heldout: int = Field(134, ge=1)
    """Held-out games generated (source=generated); the paper evaluates 134 unseen games."""
    max_heldout: int | None = Field(None, ge=1)
    """Evaluate only the first N held-out episodes (quick checks, tests)."""
    heldout_seed: int | None = secret_field()
    """Seed of the generated held-out games; None = this installation's secret seed."""
    official_split: Literal["valid_unseen", "valid_seen"] = "valid_unseen"
    """Held-out split of the official data."""
    alfworld_data: str | None = None
    """Official data folder (the one holding json_2.1.1); None = $ALFWORLD_DATA or ~/.cache/alfworld."""
    gen_workers: int = Field(0, ge=0)
    """Processes generating games; 0 = min(8, CPU count)."""


# ---- the environment ------------------------------------------------------------------------


class ALFWorldEnv:
    """One ALFWorld game in the real engine. `think: …` actions never reach the engine (ReAct's
    thoughts answer `OK.`); other commands are sent verbatim, and the engine answers `Nothing
    happens.` to anything it does not accept."""

    def __init__(self, game_file: Path) -> None:
        self.game_file = game_file
        self._env: Any = None
        self._admissible: list[str] = []
        self.won = False

    def reset(self) -> str:
        self.close()
        self._env = load_env(self.game_file)
        state = self._env.reset()
        self._admissible = list(state["admissible_commands"] or [])
        self.won = bool(state["won"])
        return strip_banner(state.feedback)

    def step(self, action: str) -> StepResult:
        if self._env is None:
            raise RuntimeError("reset() the environment first")
        if action.startswith("think:"):
            return StepResult("OK.", 0.0, False)
        state, _, done = self._env.step(action)
        self._admissible = list(state["admissible_commands"] or [])
        self.won = bool(state["won"])
        return StepResult(state.feedback.strip(), 1.0 if self.won else 0.0, bool(done) or self.won,
                          {"won": self.won})

    def admissible_actions(self) -> list[str] | None:
        """The engine's admissible commands now (the evaluator never shows them to the model)."""
        return list(self._admissible)

    def close(self) -> None:
        env, self._env = self._env, None
        if env is not None:
            close_env(env)


_THINK = re.compile(r"^think\s*:\s*", re.IGNORECASE)
_PREFIX = re.compile(r"^(?:>\s*)?(?:(?:act|action)\s*:\s*)?", re.IGNORECASE)


def parse_action(completion: str) -> str | None:
    """The first non-empty line of the completion, as the engine expects it.

    A leading `> ` (the examples' prompt mark) and an `act:`/`action:` label are dropped;
    `think:` lines stay thoughts (`think: <text>`); commands are lower-cased, whitespace is
    collapsed and a trailing period dropped (object names are lower case in the engine). None for
    an empty completion: the episode ends."""
    line = next((ln.strip() for ln in completion.splitlines() if ln.strip()), "")
    line = _PREFIX.sub("", line, count=1).strip()
    if not line:
        return None
    if _THINK.match(line):
        return "think: " + _THINK.sub("", line, count=1).strip()
    command = " ".join(line.lower().split()).rstrip(".").strip()
    return command or None


# ---- the few-shot prompt --------------------------------------------------------------------


def fewshot_examples() -> dict[str, dict[str, Any]]:
    """`prompts/react.json`: two recorded examples per task type (react_<type>_<0|1>)."""
    text = resources.files(__package__).joinpath("prompts", PROMPT_FILE).read_text(encoding="utf-8")
    data: dict[str, dict[str, Any]] = json.loads(text)
    return data


def preamble(task_type: str) -> str:
    """ReAct's prompt head for a task type: the instruction and the two examples (1, then 0)."""
    short = SHORT_TYPES[task_type]
    ex = fewshot_examples()
    one, zero = ex[f"react_{short}_1"], ex[f"react_{short}_0"]
    return (INTRO + transcript(one["intro"], one["steps"]) + "\n" + transcript(zero["intro"], zero["steps"])
            + "\n" + REPLY_FORMAT + "\nHere is the task.\n")


# ---- the task -------------------------------------------------------------------------------

GENERATED_SPLITS = """Your train games are the first ones of a generator stream with a public seed;
the held-out games come from a stream with a secret seed. Neither split is built by looking at the
other: your train games are the same whatever the held-out seed is, and nothing was removed from
them, so what they lack tells nothing about the test set. A held-out game can equal one of your
games only by chance, and that is allowed. Measured on the generator (20 held-out seeds, 2,680
held-out draws against 200 train draws): no held-out game was identical to a train game (same
room, receptacles, placements and goal), while about 31% shared the task type, room, object and
target receptacle with some train game, as any independent draw from the same generator does."""
"""The split paragraph of the description (generated games); tests/tasks/test_alfworld_heldout.py
re-measures its figures."""
OFFICIAL_SPLITS = """Your train games are a sample (public seed) of ALFWorld's `train` split; the
held-out games are ALFWorld's `{split}` split, which holds other trials than `train`. The sample
is drawn without looking at `{split}`. `{split}` is public by design (anyone can download it):
only the generated source (`--task-opt source=generated`) has a test set you cannot obtain."""


def _require_alfworld() -> None:
    if importlib.util.find_spec("alfworld") is None or importlib.util.find_spec("textworld") is None:
        raise A2RLError("task 'alfworld' needs the alfworld package (TextWorld + PDDL engine), which is "
                        "not installed", INSTALL_FIX)


def _official_games(split_dir: Path) -> list[tuple[str, str]]:
    """(relative trial folder, task type) of the playable games of an official split, selected
    like AlfredTWEnv.collect_game_files (no movable/sliced trials, the six types, solvable)."""
    found: list[tuple[str, str]] = []
    for traj in sorted(split_dir.rglob("traj_data.json")):
        folder = traj.parent
        rel = folder.relative_to(split_dir).as_posix()
        if "movable" in rel or "Sliced" in rel or not (folder / "game.tw-pddl").exists():
            continue
        task_type = json.loads(traj.read_text())["task_type"]
        if task_type not in TASK_TYPES:
            continue
        if not json.loads((folder / "game.tw-pddl").read_text()).get("solvable"):
            continue
        found.append((rel, task_type))
    return found


def _generate_missing(root: Path, seed: int, indices: list[int], workers: int, split: str) -> None:
    """Generate (in parallel when several are missing) the games of `seed` not cached yet."""
    missing = [i for i in indices if not (root / f"{i:05d}" / MANIFEST).exists()]
    if not missing:
        return
    # No folder in the message: this line lands in eval.log, a run record.
    log.info("generating %d ALFWorld %s games", len(missing), split)
    workers = min(workers or min(8, os.cpu_count() or 1), len(missing))
    if workers <= 1:
        for i in missing:
            generate_game(root, seed, i, TASK_TYPES[i % len(TASK_TYPES)])
        return
    with ProcessPoolExecutor(max_workers=workers, mp_context=get_context("spawn")) as pool:
        futures = [pool.submit(generate_game, root, seed, i, TASK_TYPES[i % len(TASK_TYPES)])
                   for i in missing]
        for f in futures:
            f.result()


@tasks.register("alfworld")
class ALFWorldTask(InteractiveTask):
    name = "alfworld"
    level = "L3"
    reward_kind = "interactive"
    version = "2"  # 2: train drawn from its own stream, never filtered against the held-out games
    audit_patterns = (r"expert_plan", r"admissible_commands", r"extra\.gamefile", r"\boracle\b",
                      r"gold[_ ]traj", r"policy_commands", r"walkthrough", r"scripted_solution",
                      r"scene_for", r"pddl_problem", r"initial_state\.pddl")
    Params = ALFWorldParams
    rollout: ClassVar[RolloutConfig] = RolloutConfig(
        generation=GenerationSettings(max_new_tokens=MAX_NEW_TOKENS, stop=STOP), max_steps=MAX_STEPS,
        history_window=HISTORY_WINDOW)
    params: ALFWorldParams

    def __init__(self, params: TaskParams | dict[str, Any] | None = None) -> None:
        super().__init__(params)
        _require_alfworld()
        if self.params.source == "generated" and self.params.heldout_seed is None:
            self.params.heldout_seed = installation_seed("alfworld-heldout-seed")
        # No check against TRAIN_SEED: the streams are keyed by split (see heldout_stream).

    # ---- where the games are ------------------------------------------------------------------

    def _generated_root(self, split: str) -> Path:
        """Cache folder of the generated games of a split. The train folder is named by its
        (public) stream; the held-out one by an HMAC under the grader's installation key, so the
        name, wherever it shows up, cannot be reversed into the seed by trying all 2^31."""
        if split == "train":
            name = f"train-{train_stream():016x}"
        else:
            from a2rl._secrets import keyed

            assert self.params.heldout_seed is not None
            name = "heldout-" + keyed("alfworld-games", heldout_stream(self.params.heldout_seed))[:24]
        return cache_dir("alfworld", f"generated-v{GEN_VERSION}", name)

    def _stream(self, split: str) -> int:
        if split == "train":
            return train_stream()
        assert self.params.heldout_seed is not None
        return heldout_stream(self.params.heldout_seed)

    def _official_root(self) -> Path:
        base = self.params.alfworld_data or os.environ.get("ALFWORLD_DATA") or "~/.cache/alfworld"
        root = Path(base).expanduser() / "json_2.1.1"
        if not root.is_dir():
            raise A2RLError(f"the official ALFWorld data is not at {root}",
                            "run `alfworld-download` (needs network) and export ALFWORLD_DATA, pass "
                            "--task-opt alfworld_data=<dir>, or use the offline games: "
                            "--task-opt source=generated")
        return root

    def _split_dir(self, split: str) -> Path:
        """Folder that held-out (`heldout`) or train (`train`) game paths are relative to."""
        if self.params.source == "official":
            return self._official_root() / ("train" if split == "train" else self.params.official_split)
        return self._generated_root(split)

    # ---- episodes -----------------------------------------------------------------------------

    def _generated_records(self, split: str, n: int) -> list[GameRecord]:
        """The first `n` games of the split's stream: nothing else decides which games they are."""
        root, seed = self._generated_root(split), self._stream(split)
        _generate_missing(root, seed, list(range(n)), self.params.gen_workers, split)
        return [generate_game(root, seed, i, TASK_TYPES[i % len(TASK_TYPES)]) for i in range(n)]

    def _official_episode(self, split_dir: Path, rel: str, task_type: str, split: str,
                          game_rel: str) -> Episode:
        game = json.loads((split_dir / rel / "game.tw-pddl").read_text())
        return Episode(id=f"{split}-{rel}", split=split, payload={
            "game": f"{game_rel}/game.tw-pddl", "task_type": task_type, "goal": goal_of(game)})

    @cached_property
    def _heldout(self) -> list[tuple[Episode, str | None]]:
        """Held-out episodes with the signature of each generated game (None: official)."""
        p = self.params
        if p.source == "official":
            split_dir = self._split_dir("heldout")
            games = _official_games(split_dir)[: p.max_heldout or None]
            return [(self._official_episode(split_dir, rel, tt, "heldout", rel), None) for rel, tt in games]
        assert p.heldout_seed is not None
        n = min(p.n_heldout, p.max_heldout or p.n_heldout)
        return [(Episode(id=f"heldout-{r.id}", split="heldout",
                         payload={"game": r.game, "task_type": r.task_type, "goal": r.goal}), r.signature)
                for r in self._generated_records("heldout", n)]

    def heldout_episodes(self) -> list[Episode]:
        return [ep for ep, _ in self._heldout]

    @cached_property
    def _train(self) -> list[tuple[Episode, Path, str | None]]:
        """Train episodes (game paths relative to the workspace data dir), the folder each game's
        files are copied from, and the generated game's signature."""
        p = self.params
        if p.source == "official":
            split_dir = self._split_dir("train")
            games = _official_games(split_dir)
            random.Random(TRAIN_SEED).shuffle(games)
            return [(self._official_episode(split_dir, rel, tt, "train", f"{GAMES_DIR}/{rel}"),
                     split_dir / rel, None) for rel, tt in games[: p.n_train or None]]
        root = self._generated_root("train")
        return [(Episode(id=f"train-{r.id}", split="train",
                         payload={"game": f"{GAMES_DIR}/{r.game}", "task_type": r.task_type, "goal": r.goal}),
                 root / Path(r.game).parent, r.signature)
                for r in self._generated_records("train", p.n_train)]

    def train_episodes(self) -> list[Episode]:
        return [ep for ep, _, _ in self._train]

    def write_train_data(self, data_dir: Path) -> list[Path]:
        """`episodes.jsonl` and the train games (`game.tw-pddl` without walkthrough, `traj_data.json`
        without ALFRED's expert plan): a valid ALFWorld data folder the agent can also load with
        alfworld's own tools. Every train game is written, and nothing here reads the held-out
        games: removing those equal to a held-out game would make the gap name them."""
        data_dir.mkdir(parents=True, exist_ok=True)
        episodes: list[Episode] = []
        for ep, src, _ in self._train:
            dest = data_dir / Path(ep.payload["game"]).parent
            dest.mkdir(parents=True, exist_ok=True)
            game = json.loads((src / "game.tw-pddl").read_text())
            game["walkthrough"] = None
            (dest / "game.tw-pddl").write_text(json.dumps(game))
            traj = json.loads((src / "traj_data.json").read_text())
            traj.pop("plan", None)
            (dest / "traj_data.json").write_text(json.dumps(traj, indent=1))
            episodes.append(ep)
        path = data_dir / EPISODES_FILE
        path.write_text("".join(e.model_dump_json() + "\n" for e in episodes))
        return [path, data_dir / GAMES_DIR]

    # ---- InteractiveTask ----------------------------------------------------------------------

    def game_file(self, episode: Episode) -> Path:
        """Train games: under the workspace data dir ($DATA_PATH, else ./data), falling back to the
        cache outside a workspace. Held-out games: the cache (or the official split) only."""
        rel = Path(episode.payload["game"])
        if rel.is_absolute():
            raise A2RLError(f"episode {episode.id}: game paths are relative", "use the episodes a2rl wrote")
        if episode.split == "train":
            data = Path(os.environ.get("DATA_PATH", "data"))
            if (data / rel).exists():
                return data / rel
            rel = Path(*rel.parts[1:]) if rel.parts and rel.parts[0] == GAMES_DIR else rel
        path = self._split_dir(episode.split) / rel
        if not path.exists():
            # A held-out path names the keyed cache folder: keep it out of the message anyway.
            shown = str(path) if episode.split == "train" else f"{rel} (held-out cache)"
            raise A2RLError(f"episode {episode.id}: game file {shown} is missing",
                            "run from the workspace (data/ holds the train games) or regenerate the "
                            "task data")
        return path

    def make_env(self, episode: Episode) -> Env:
        return ALFWorldEnv(self.game_file(episode))

    degenerate_actions: ClassVar[tuple[str, ...]] = ("look", "inventory", "go to shelf 1")

    def messages(self, episode: Episode, history: list[dict[str, str]]) -> list[dict[str, str]]:
        """No system message (not every chat template has one): the first user turn is ReAct's
        prompt (instruction, two examples of the episode's task type, `Here is the task.`, the
        first observation); then the model's lines alternate with the environment's answers."""
        first = {"role": "user", "content": preamble(episode.payload["task_type"]) + history[0]["content"]}
        return [first, *history[1:]]

    def parse_action(self, completion: str) -> str | None:
        return parse_action(completion)

    def finish(self, episode: Episode, env: Env, steps: list[Step]) -> tuple[float, bool]:
        won = bool(getattr(env, "won", False))
        return (1.0 if won else 0.0), won

    def heldout_in_train(self) -> int:
        """Held-out games identical to a train game (same room, placements and goal: the
        generator's signature). Chance overlap, allowed; 0 for the official source, whose splits
        are disjoint by construction."""
        train = {sig for _, _, sig in self._train if sig}
        return sum(1 for _, sig in self._heldout if sig and sig in train)

    def evaluate(self, model_dir: Path, *, chat_template_from: Path | None,
                 on_progress: Callable[[int, int], None] | None = None) -> EvalOutcome:
        outcome = super().evaluate(model_dir, chat_template_from=chat_template_from,
                                   on_progress=on_progress)
        # Grader-side only (metrics never reach the agent): the chance overlap, in percent.
        outcome.metrics["heldout_in_train"] = round(
            100.0 * self.heldout_in_train() / max(1, len(self._heldout)), 4)
        return outcome

    def fingerprint(self) -> str:
        """The base identity (params, held-out items), without `gen_workers` (it changes how fast
        games are generated, not which), plus the engine version, the generator and the prompt."""
        from importlib.metadata import version

        prompt = resources.files(__package__).joinpath("prompts", PROMPT_FILE).read_bytes()
        base = {"task": self.name, "version": self.version,
                "params": self.params.model_dump(mode="json", exclude={"gen_workers"}),
                "items": stable_hash(self.heldout_items())}
        return stable_hash({"base": base, "alfworld": version("alfworld"),
                            "generator": GEN_VERSION, "prompt": hashlib.sha256(prompt).hexdigest(),
                            "rollout": [MAX_STEPS, HISTORY_WINDOW, list(STOP),
                                        self.rollout.generation.max_new_tokens]})

    # ---- description --------------------------------------------------------------------------

    def description(self, *, chat_preview: Callable[[list[dict[str, str]]], str] | None) -> str:
        p = self.params
        train = self.train_episodes()
        example = train[0]
        env = self.make_env(example)
        try:
            first = env.reset()
        finally:
            env.close()
        msgs = self.messages(example, [{"role": "user", "content": first}])
        rendered = chat_preview(msgs) if chat_preview else json.dumps(msgs, indent=1)
        n_eval = len(self.heldout_episodes())
        g = self.rollout.generation
        from importlib.metadata import version

        engine = f"alfworld {version('alfworld')}"
        if p.source == "generated":
            source = f"""generated offline by a2rl: ALFRED-format trials (a room, its receptacles,
objects where ALFRED allows them, a goal from ALFRED's goal library) for the six task types,
played by the real ALFWorld engine ({engine}). The {n_eval} held-out games are generated the
same way from a seed you do not have, drawn independently of your train games (see "Train and
held-out games" below). Scores are not comparable with published ALFWorld numbers (those use
the official games)"""
        else:
            source = f"""the official ALFWorld game files (`alfworld-download`, played by
{engine}); the held-out set is `{p.official_split}` ({n_eval} games), your train games come
from `train`. `{p.official_split}` is a public split (anyone can download it, expert plans
included): on this source the test set is public by design"""
        return self.render_template(n_train=len(train), games_dir=GAMES_DIR, source=source,
                                    splits=GENERATED_SPLITS if p.source == "generated" else
                                    OFFICIAL_SPLITS.format(split=p.official_split),
                                    max_steps=MAX_STEPS, rendered=rendered,
                                    max_new_tokens=g.max_new_tokens, history_window=HISTORY_WINDOW,
                                    n_eval=n_eval)
