"""ReAct few-shot examples for ALFWorld, recorded from the real engine.

ReAct (Yao et al., 2023) prompts ALFWorld with two solved episodes of the same task type, in a
transcript where each action line starts with `> `, reasoning steps are `> think: …` (the
environment answers `OK.`), and every other line is the environment's observation. Its published
examples were recorded with an older ALFWorld whose put command was `put X in/on Y`; the engine
installed here (alfworld 0.4.x, `alfred.twl2`) only accepts `move X to Y` and answers `Nothing
happens.` to the old form, so copying those examples would teach a command that silently fails.

These examples are therefore *recorded*: a scripted ReAct-style player (think the plan, list where
the object is likely to be, check receptacles one by one, take it, use the appliance, move it)
plays generated games through the engine, and every observation in the transcript is the
engine's own text. `python -m a2rl.tasks.alfworld.fewshot` rewrites `prompts/react.json`;
the tests replay each example on its game and require the same observations and a win.
"""

from __future__ import annotations

import json
import random
import re
import sys
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

from a2rl.tasks.alfworld.games import (
    _OPENABLE,
    SHORT_TYPES,
    TASK_TYPES,
    GameRecord,
    Scene,
    _can_contain,
    close_env,
    generate_game,
    load_env,
    scene_for,
    strip_banner,
)

PROMPT_FILE = "react.json"
FEWSHOT_SEED = 20230310
"""Seed of the games the examples are recorded on (public; neither split uses it)."""
MAX_EXAMPLE_STEPS = 20
_APPLIANCE_VERB = {"pick_clean_then_place_in_recep": ("clean", "sinkbasin"),
                   "pick_heat_then_place_in_recep": ("heat", "microwave"),
                   "pick_cool_then_place_in_recep": ("cool", "fridge")}


@dataclass
class Example:
    """One recorded episode: the game it was played on, and the transcript."""

    task_type: str
    seed: int
    index: int
    attempt: int
    """`generate_game(root, seed, index, task_type)` rebuilds the game; `draw_game(seed, index,
    attempt, task_type)` redraws it without the generation checks."""
    intro: str
    """The first observation without the welcome banner (ends with the task)."""
    steps: list[tuple[str, str]]
    """(action, observation); thinking steps are `think: …` → `OK.`."""

    def transcript(self) -> str:
        return transcript(self.intro, self.steps)


def transcript(intro: str, steps: list[tuple[str, str]] | list[list[str]]) -> str:
    """ReAct's transcript: the first observation, then `> action` and observation lines."""
    lines = [intro]
    for action, obs in steps:
        lines += [f"> {action}", obs]
    return "\n".join(lines) + "\n"


def _article(word: str) -> str:
    return "an" if word[0] in "aeiou" else "a"


def _ranges(counts: dict[str, int]) -> str:
    return ", ".join(f"{t} ({n})" if n == 1 else f"{t} (1-{n})" for t, n in counts.items())


class _Player:
    """Plays one game through the engine like ReAct's examples and records the transcript."""

    def __init__(self, env: object, scene: Scene, rng: random.Random) -> None:
        self.env, self.scene, self.rng = env, scene, rng
        self.steps: list[tuple[str, str]] = []
        self.opened: set[str] = set()
        self.seen: dict[str, str] = {}  # receptacle name -> last observation there
        self.won = False
        self.placed_in = ""
        self.taken: set[str] = set()
        names = {t.lower() for t, _ in scene.receptacles}
        self.counts = {t: sum(1 for x, _ in scene.receptacles if x.lower() == t) for t in sorted(names)}

    def think(self, text: str) -> None:
        self.steps.append((f"think: {text}", "OK."))

    def act(self, command: str) -> str:
        if self.won:
            raise RuntimeError("the game was won before the end of the script")
        state, _, done = self.env.step(command)  # type: ignore[attr-defined]
        obs = state.feedback.strip()
        if obs == "Nothing happens.":
            raise RuntimeError(f"the engine rejected {command!r}")
        self.steps.append((command, obs))
        self.won = bool(state["won"])
        return obs

    def go(self, recep: str, *, open_it: bool = True) -> str:
        obs = self.act(f"go to {recep}")
        closed = recep.rsplit(" ", 1)[0] in {t.lower() for t in _OPENABLE} and recep not in self.opened
        if open_it and closed:
            obs = self.act(f"open {recep}")
            self.opened.add(recep)
        self.seen[recep] = obs
        return obs

    def _pattern(self, obj: str) -> re.Pattern[str]:
        return re.compile(rf"\ba {re.escape(obj)} (\d+)\b")

    def _fresh(self, obj: str, obs: str) -> str | None:
        return next((n for n in self._pattern(obj).findall(obs) if f"{obj} {n}" not in self.taken), None)

    def remembered(self, obj: str) -> tuple[str, str] | None:
        """A receptacle seen earlier holding `obj` (not yet taken): (receptacle, number)."""
        for recep, obs in self.seen.items():
            n = self._fresh(obj, obs)
            if n and recep != self.placed_in:
                return recep, n
        return None

    def find(self, obj: str, types: list[str]) -> tuple[str, str]:
        """Go to a remembered `obj`, or check receptacles of `types` one by one until it shows up:
        (receptacle, 'obj n')."""
        known = self.remembered(obj)
        if known:
            self.go(known[0])
            return known[0], f"{obj} {known[1]}"
        for rtype in types:
            for i in range(1, self.counts[rtype] + 1):
                recep = f"{rtype} {i}"
                if recep in self.seen or recep == self.placed_in:
                    continue
                n = self._fresh(obj, self.go(recep))
                if n:
                    return recep, f"{obj} {n}"
        raise RuntimeError(f"{obj} not found")

    def likely(self, obj: str, actual: str, kinds: list[str]) -> list[str]:
        """Receptacle types to check, the one that holds the object second or third."""
        others = [t for t in kinds if t != actual]
        self.rng.shuffle(others)
        pos = min(len(others), self.rng.randint(1, 2))
        return [*others[:pos], actual, *others[pos:]][:6]

    def play(self, obj: str, goal_recep: str) -> None:
        s = self.scene
        t = s.task_type
        kinds = self._kinds_for(s.object_target)
        actual = self._type_holding(s.object_target)
        order = self.likely(obj, actual, kinds)
        a = _article(obj)
        if t == "look_at_obj_in_light":
            self.think(f"To solve the task, I need to find and take {a} {obj}, then find and use a desklamp.")
        elif t == "pick_two_obj_and_place":
            self.think(f"To solve the task, I need to find and take the first {obj}, then move it to "
                       f"{goal_recep}, then find and take the second {obj}, then move it to {goal_recep}.")
        elif t in _APPLIANCE_VERB:
            verb, app = _APPLIANCE_VERB[t]
            self.think(f"To solve the task, I need to find and take {a} {obj}, then {verb} it with {app}, "
                       f"then move it to {goal_recep}.")
        else:
            self.think(f"To solve the task, I need to find and take {a} {obj}, then move it to {goal_recep}.")
        self.think(f"First I need to find {a} {obj}. {a.capitalize()} {obj} is more likely to appear in "
                   f"{_ranges({k: self.counts[k] for k in order})}. I can check one by one, starting with "
                   f"{order[0]} 1.")
        for round_ in range(2 if t == "pick_two_obj_and_place" else 1):
            if round_ == 1:
                lead = (f"Now I move the first {obj} to {self.placed_in}. Next, I need to find the "
                        f"second {obj}.")
                known = self.remembered(obj)
                if known:
                    self.think(f"{lead} I saw {a} {obj} ({known[1]}) in/on {known[0]} before, so I can "
                               f"directly go to {known[0]}.")
                else:
                    self.think(f"{lead} I can check the places I have not visited yet.")
            recep, item = self.find(obj, order)
            self.think(f"Now I find {a} {obj} ({item.split()[-1]}). Next, I need to take it.")
            self.act(f"take {item} from {recep}")
            self.taken.add(item)
            if t == "look_at_obj_in_light":
                self._use_lamp(obj, item)
                return
            if t in _APPLIANCE_VERB:
                verb, app = _APPLIANCE_VERB[t]
                self.think(f"Now I take {a} {obj} ({item.split()[-1]}). Next, I need to go to {app} (1) and "
                           f"{verb} it.")
                self.go(f"{app} 1", open_it=False)  # appliances work closed
                self.act(f"{verb} {item} with {app} 1")
                lead = f"Now I {verb} {a} {obj} ({item.split()[-1]})."
            else:
                lead = f"Now I take {a} {obj} ({item.split()[-1]})."
            target = self.placed_in or f"{goal_recep} 1"
            self.think(f"{lead} Next, I need to move it to {target}.")
            self.go(target)
            self.act(f"move {item} to {target}")
            self.placed_in = target

    def _use_lamp(self, obj: str, item: str) -> None:
        s = self.scene
        lamp_at = next(r for t, _, r in s.objects if t == "DeskLamp")
        holder = next(t for t, rid in s.receptacles if rid == lamp_at).lower()
        kinds = [t.lower() for t in ("Desk", "SideTable", "Dresser", "CoffeeTable", "Shelf")
                 if t.lower() in self.counts]
        order = self.likely("desklamp", holder, kinds)
        lead = f"Now I take {_article(obj)} {obj} ({item.split()[-1]}). Next, I need to find a desklamp."
        known = self.remembered("desklamp")
        if known:
            self.think(f"{lead} I saw a desklamp ({known[1]}) in/on {known[0]} before, so I can directly "
                       f"go to {known[0]}.")
        else:
            where = _ranges({k: self.counts[k] for k in order})
            self.think(f"{lead} A desklamp is more likely to appear in {where}. I can check one by one, "
                       f"starting with {order[0]} 1.")
        recep, lamp = self.find("desklamp", order)
        self.think(f"Now I find a desklamp ({lamp.split()[-1]}). Next, I need to use it.")
        self.act(f"use {lamp}")

    def _kinds_for(self, otype: str) -> list[str]:
        kinds = {t for t, _ in self.scene.receptacles if _can_contain(t, otype)}
        if self.scene.parent_target:
            kinds.discard(self.scene.parent_target)
        kinds.add(self._type_holding(otype, lower=False))
        return sorted(k.lower() for k in kinds)

    def _type_holding(self, otype: str, *, lower: bool = True) -> str:
        where = {rid: t for t, rid in self.scene.receptacles}
        found = next(where[r] for t, _, r in self.scene.objects if t == otype)
        return found.lower() if lower else found


def record(root: Path, seed: int, index: int, task_type: str) -> Example | None:
    """Play game `index` of `seed` and return its transcript (None if it came out too long)."""
    rec: GameRecord = generate_game(root, seed, index, task_type)
    scene = scene_for(seed, rec)
    env = load_env(root / rec.game)
    try:
        state = env.reset()
        player = _Player(env, scene, random.Random(f"fewshot:{seed}:{index}"))
        obj = scene.object_target.lower()
        goal_recep = (scene.parent_target or scene.toggle_target).lower()
        try:
            player.play(obj, goal_recep)
        except RuntimeError:
            return None
        if not player.won or len(player.steps) > MAX_EXAMPLE_STEPS:
            return None
        return Example(task_type=task_type, seed=seed, index=index, attempt=rec.attempt,
                       intro=strip_banner(state.feedback), steps=player.steps)
    finally:
        close_env(env)


def build_examples(root: Path, per_type: int = 2) -> list[Example]:
    """`per_type` examples of each task type, from consecutive games of FEWSHOT_SEED."""
    out: list[Example] = []
    index = 0
    for task_type in TASK_TYPES:
        found = 0
        while found < per_type:
            if index > 100 * len(TASK_TYPES):
                raise RuntimeError(f"no short {task_type} example among the games of seed {FEWSHOT_SEED}")
            ex = record(root, FEWSHOT_SEED, index, task_type)
            index += 1
            if ex is not None:
                out.append(ex)
                found += 1
    return out


def main() -> None:
    from importlib import resources

    with tempfile.TemporaryDirectory() as tmp:
        examples = build_examples(Path(tmp))
    target = Path(str(resources.files(__package__))) / "prompts" / PROMPT_FILE
    data = {f"react_{SHORT_TYPES[e.task_type]}_{i % 2}": asdict(e) for i, e in enumerate(examples)}
    target.write_text(json.dumps(data, indent=1) + "\n")
    print(f"wrote {len(data)} examples to {target}", file=sys.stderr)


if __name__ == "__main__":
    main()
