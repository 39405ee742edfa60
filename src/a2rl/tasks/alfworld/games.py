"""Offline ALFWorld games: ALFRED-format trials generated locally and played by the real engine.

The official ALFWorld games (`alfworld-download`) are built from ALFRED trials recorded in
AI2-THOR: each trial folder holds `traj_data.json` (task type and `pddl_params`) and
`initial_state.pddl` (a PDDL problem of the `alfred` domain), and `alfworld-generate` turns them
into `game.tw-pddl` (domain + grammar with the goal text + problem) after checking with an expert
that the game is solvable. That data cannot be downloaded here, so this module samples the same
artefacts itself, for the six ALFWorld task types:

- a room (kitchen, living room, bedroom, bathroom, as ALFRED allows for the task type,
  `alfworld.gen.constants.GOALS_VALID`) with a random set of receptacles;
- objects placed only where ALFRED allows them (`VAL_RECEPTACLE_OBJECTS`), with the
  cleanable/heatable/coolable flags of `VAL_ACTION_OBJECTS`, object ids in ALFRED's mangled
  `Type|x|y|z` form (so the engine's own `AlfredDemangler` names them "apple 1", "sinkbasin 1");
- the goal from ALFRED's goal library (`alfworld.gen.goal_library`), the goal text from
  `alfworld.agents.utils.misc.add_task_to_grammar`, exactly as `alfworld-generate` does.

Each game is then loaded into the real TextWorld `PddlEnv` (fast-downward): games whose goal
already holds at reset are dropped, and a solution scripted from the scene (go, open, take,
clean/heat/cool, move) is replayed through the engine and must win: the solvability check
`alfworld-generate` makes with its expert, at a fraction of the planner's cost (about a second a
game). Unlike `alfworld-generate`, whose `--end -1` default silently drops the last trial, nothing
is sliced: game *i* of a seed is derived from `(seed, i)` alone, so the first k games of a seed
never depend on how many were asked for, nor on any other seed's games (the task gives its train
and held-out splits separate seeds and never filters one against the other). As in ALFRED, what
starts in the fridge is already cool.

That solution is only used for the check: it is not stored in the game files (their
`walkthrough` is null), so the games copied into an agent's workspace carry no gold trajectory.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import random
import shutil
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

GEN_VERSION = "1"
"""Bump when generated games change: it is part of the cache key and of the task version."""

TASK_TYPES: tuple[str, ...] = (
    "pick_and_place_simple",
    "look_at_obj_in_light",
    "pick_clean_then_place_in_recep",
    "pick_heat_then_place_in_recep",
    "pick_cool_then_place_in_recep",
    "pick_two_obj_and_place",
)
SHORT_TYPES: dict[str, str] = {
    "pick_and_place_simple": "put", "look_at_obj_in_light": "examine",
    "pick_clean_then_place_in_recep": "clean", "pick_heat_then_place_in_recep": "heat",
    "pick_cool_then_place_in_recep": "cool", "pick_two_obj_and_place": "puttwo",
}
"""ReAct's names for the task types (its few-shot prompts are keyed by them)."""

MAX_PLAN_STEPS = 25
"""Games whose scripted solution is longer are dropped (the step limit must leave room to search)."""
GAME_FILE = "game.tw-pddl"
TRAJ_FILE = "traj_data.json"
PROBLEM_FILE = "initial_state.pddl"
MANIFEST = "game.json"


@dataclass(frozen=True)
class Room:
    """An ALFRED-like room: receptacle types with (min, max) counts, and the object types found."""

    receptacles: dict[str, tuple[int, int]]
    objects: tuple[str, ...]
    lamp_holders: tuple[str, ...] = ()
    """Receptacle types a desk lamp may stand on (rooms with a lamp)."""


ROOMS: dict[str, Room] = {
    "Kitchen": Room(
        receptacles={"Cabinet": (3, 10), "CoffeeMachine": (1, 1), "CounterTop": (1, 3),
                     "DiningTable": (0, 2), "Drawer": (1, 5), "Fridge": (1, 1), "GarbageCan": (1, 1),
                     "Microwave": (1, 1), "Shelf": (0, 3), "SideTable": (0, 1), "SinkBasin": (1, 1),
                     "StoveBurner": (2, 4), "Toaster": (1, 1)},
        objects=("Apple", "Bowl", "Bread", "ButterKnife", "Cup", "DishSponge", "Egg", "Fork",
                 "Glassbottle", "Kettle", "Knife", "Ladle", "Lettuce", "Mug", "Pan", "PepperShaker",
                 "Plate", "Pot", "Potato", "SaltShaker", "SoapBottle", "Spatula", "Spoon", "Tomato",
                 "WineBottle")),
    "LivingRoom": Room(
        receptacles={"ArmChair": (0, 2), "Cabinet": (0, 4), "CoffeeTable": (1, 2), "DiningTable": (0, 1),
                     "Drawer": (0, 4), "Dresser": (0, 1), "GarbageCan": (1, 1), "Ottoman": (0, 1),
                     "Safe": (0, 1), "Shelf": (0, 5), "SideTable": (1, 3), "Sofa": (1, 1), "TVStand": (0, 1)},
        objects=("Book", "Bowl", "Box", "CD", "Candle", "CellPhone", "CreditCard", "KeyChain", "Laptop",
                 "Newspaper", "Pillow", "Plate", "RemoteControl", "Statue", "TissueBox", "Vase", "Watch",
                 "WateringCan"),
        lamp_holders=("SideTable", "Dresser", "CoffeeTable")),
    "Bedroom": Room(
        receptacles={"ArmChair": (0, 1), "Bed": (1, 1), "Desk": (0, 2), "Drawer": (2, 8), "Dresser": (0, 1),
                     "GarbageCan": (1, 1), "LaundryHamper": (0, 1), "Safe": (0, 1), "Shelf": (0, 5),
                     "SideTable": (0, 2)},
        objects=("AlarmClock", "BaseballBat", "BasketBall", "Book", "Bowl", "CD", "CellPhone", "Cloth",
                 "CreditCard", "KeyChain", "Laptop", "Mug", "Pen", "Pencil", "Pillow", "TennisRacket",
                 "Watch"),
        lamp_holders=("Desk", "SideTable", "Dresser")),
    "Bathroom": Room(
        receptacles={"BathtubBasin": (0, 1), "Cabinet": (1, 4), "Cart": (0, 1), "CounterTop": (1, 1),
                     "Drawer": (0, 4), "GarbageCan": (1, 1), "HandTowelHolder": (0, 2), "Shelf": (0, 3),
                     "SinkBasin": (1, 2), "Toilet": (1, 1), "ToiletPaperHanger": (1, 1),
                     "TowelHolder": (0, 1)},
        objects=("Candle", "Cloth", "DishSponge", "HandTowel", "Plunger", "SoapBar", "SoapBottle",
                 "SprayBottle", "TissueBox", "ToiletPaper", "ToiletPaperRoll", "Towel")),
}
# The appliance a task type uses; placing the object back into it is not an ALFRED goal.
_APPLIANCE = {"pick_clean_then_place_in_recep": "SinkBasin", "pick_heat_then_place_in_recep": "Microwave",
              "pick_cool_then_place_in_recep": "Fridge"}
_ACTION_FLAG = {"pick_clean_then_place_in_recep": "Cleanable", "pick_heat_then_place_in_recep": "Heatable",
                "pick_cool_then_place_in_recep": "Coolable"}
_OPENABLE = {"Fridge", "Cabinet", "Microwave", "Drawer", "Safe"}
# ALFRED object ids of basins are "Sink|x|y|z|SinkBasin": the demangler relies on it.
_BASIN_PARENT = {"SinkBasin": "Sink", "BathtubBasin": "Bathtub"}


def _constants() -> Any:
    import alfworld.gen.constants as constants

    return constants


def _mangle(text: str) -> str:
    """ALFRED's PDDL name mangling (alfworld.gen PlannedGameState.fix_pddl_str_chars)."""
    for a, b in (("-", "_minus_"), ("#", "-"), ("|", "_bar_"), ("+", "_plus_"), (".", "_dot_"),
                 (",", "_comma_")):
        text = text.replace(a, b)
    return text


@dataclass
class Scene:
    """One sampled ALFRED trial: the room, what is where, and the task."""

    task_type: str
    room: str
    receptacles: list[tuple[str, str]] = field(default_factory=list)
    """(type, pddl id)."""
    objects: list[tuple[str, str, str]] = field(default_factory=list)
    """(type, pddl id, receptacle pddl id)."""
    object_target: str = ""
    parent_target: str = ""
    toggle_target: str = ""
    locations: dict[str, str] = field(default_factory=dict)
    """receptacle pddl id -> location pddl id."""
    agent_location: str = ""

    def pddl_params(self) -> dict[str, Any]:
        return {"object_target": self.object_target, "parent_target": self.parent_target,
                "toggle_target": self.toggle_target, "mrecep_target": "", "object_sliced": False}

    def signature(self) -> str:
        """What the game is, without ids: the disjointness key between splits."""
        rtypes = sorted(t for t, _ in self.receptacles)
        where = {rid: t for t, rid in self.receptacles}
        placed = sorted((t, where[r]) for t, _, r in self.objects)
        blob = json.dumps([self.task_type, self.room, rtypes, placed, self.pddl_params()])
        return hashlib.sha256(blob.encode()).hexdigest()[:16]


class _Ids:
    """Unique ALFRED-style ids (`Type|x|y|z`, mangled) drawn from the scene's rng."""

    def __init__(self, rng: random.Random) -> None:
        self.rng, self.used = rng, set[str]()

    def _coord(self) -> str:
        return f"{self.rng.uniform(-4.0, 4.0):+06.2f}"

    def make(self, otype: str) -> str:
        while True:
            coords = "|".join(self._coord() for _ in range(3))
            raw = f"{otype}|{coords}"
            if otype in _BASIN_PARENT:
                raw = f"{_BASIN_PARENT[otype]}|{coords}|{otype}"
            pid = _mangle(raw)
            if pid not in self.used:
                self.used.add(pid)
                return pid

    def location(self) -> str:
        while True:
            x, z, rot = self.rng.randint(-12, 12), self.rng.randint(-12, 12), self.rng.randint(0, 3)
            raw = f"loc|{x}|{z}|{rot}|{self.rng.choice([0, 15, 30, 45, 60])}"
            pid = _mangle(raw)
            if pid not in self.used:
                self.used.add(pid)
                return pid


def _can_contain(rtype: str, otype: str) -> bool:
    return otype in _constants().VAL_RECEPTACLE_OBJECTS.get(rtype, set())


def sample_scene(rng: random.Random, task_type: str) -> Scene | None:
    """A random trial of `task_type`, or None when this draw cannot host the task."""
    c = _constants()
    rooms = sorted(r for r in c.GOALS_VALID[task_type] if r in ROOMS)
    room_name = rng.choice(rooms)
    room = ROOMS[room_name]
    scene = Scene(task_type=task_type, room=room_name)
    ids = _Ids(rng)
    counts = {t: rng.randint(lo, hi) for t, (lo, hi) in room.receptacles.items()}
    for rtype in sorted(counts):
        for _ in range(counts[rtype]):
            rid = ids.make(rtype)
            scene.receptacles.append((rtype, rid))
            scene.locations[rid] = ids.location()
    scene.agent_location = ids.location()
    present = sorted({t for t, _ in scene.receptacles})
    static = [t for t in present if t not in c.MOVABLE_RECEPTACLES_SET]

    def homes(otype: str) -> list[str]:
        return [rid for t, rid in scene.receptacles if _can_contain(t, otype)]

    # The target object and, for placement tasks, the target receptacle type.
    candidates = [o for o in room.objects if homes(o)]
    if task_type in _ACTION_FLAG:
        flag = c.VAL_ACTION_OBJECTS[_ACTION_FLAG[task_type]]
        candidates = [o for o in candidates if o in flag]
    rng.shuffle(candidates)
    for obj in candidates:
        if task_type == "look_at_obj_in_light":
            holders = [rid for t, rid in scene.receptacles if t in room.lamp_holders]
            if not holders:
                return None
            scene.object_target, scene.toggle_target = obj, "DeskLamp"
            scene.objects.append(("DeskLamp", ids.make("DeskLamp"), rng.choice(holders)))
            break
        parents = [t for t in static if _can_contain(t, obj) and t != _APPLIANCE.get(task_type)]
        if parents:
            scene.object_target, scene.parent_target = obj, rng.choice(parents)
            break
    if not scene.object_target:
        return None
    n_target = rng.randint(2, 3) if task_type == "pick_two_obj_and_place" else rng.randint(1, 3)
    # Never where the goal wants it: the goal must not hold (or half hold) at the start.
    start = [rid for rid in homes(scene.object_target)
             if next(t for t, r in scene.receptacles if r == rid) != scene.parent_target]
    if not start:
        return None
    for _ in range(n_target):
        scene.objects.append((scene.object_target, ids.make(scene.object_target), rng.choice(start)))
    # Distractors: other objects of the room, where ALFRED allows them.
    others = [o for o in room.objects if o != scene.object_target and homes(o)]
    for _ in range(rng.randint(8, 20)):
        otype = rng.choice(others)
        scene.objects.append((otype, ids.make(otype), rng.choice(homes(otype))))
    return scene


def problem_pddl(scene: Scene) -> str:
    """The trial's `initial_state.pddl`, in the layout ALFRED's planner writes."""
    import alfworld.gen.goal_library as glib

    c = _constants()
    otypes = sorted({t for t, _, _ in scene.objects})
    rtypes = sorted({t for t, _ in scene.receptacles})
    rtype_of = {rid: t for t, rid in scene.receptacles}
    objects = ["agent1 - agent"]
    objects += [f"{t}Type - otype" for t in otypes]
    objects += [f"{t}Type - rtype" for t in rtypes]
    objects += [f"{oid} - object" for _, oid, _ in scene.objects]
    objects += [f"{rid} - receptacle" for _, rid in scene.receptacles]
    objects += [f"{loc} - location" for loc in [*scene.locations.values(), scene.agent_location]]
    init = ["(= (total-cost) 0)"]
    init += [f"(canContain {r}Type {o}Type)" for r in rtypes for o in otypes if _can_contain(r, o)]
    init += [f"(receptacleType {rid} {t}Type)" for t, rid in scene.receptacles]
    init += [f"(objectType {oid} {t}Type)" for t, oid, _ in scene.objects]
    init += [f"(openable {rid})" for t, rid in scene.receptacles if t in _OPENABLE]
    init.append(f"(atLocation agent1 {scene.agent_location})")
    for t, oid, _ in scene.objects:
        if t in c.VAL_ACTION_OBJECTS["Toggleable"]:
            init.append(f"(toggleable {oid})")
            continue
        init.append(f"(pickupable {oid})")
        if t in c.MOVABLE_RECEPTACLES_SET:
            init.append(f"(isReceptacleObject {oid})")
        for flag, pred in (("Cleanable", "cleanable"), ("Heatable", "heatable"), ("Coolable", "coolable")):
            if t in c.VAL_ACTION_OBJECTS[flag]:
                init.append(f"({pred} {oid})")
    for t, oid, rid in scene.objects:
        init.append(f"(inReceptacle {oid} {rid})")
        init.append(f"(objectAtLocation {oid} {scene.locations[rid]})")
        if t == scene.object_target:
            init.append(f"(wasInReceptacle {oid} {rid})")
        # ALFRED marks what starts in a fridge as already cool.
        if rtype_of[rid] == "Fridge" and t in c.VAL_ACTION_OBJECTS["Coolable"]:
            init.append(f"(isCool {oid})")
    init += [f"(receptacleAtLocation {rid} {scene.locations[rid]})" for _, rid in scene.receptacles]
    goal = glib.gdict[scene.task_type]["pddl"].format(
        obj=scene.object_target, recep=scene.parent_target, toggle=scene.toggle_target, mrecep="")
    goal = goal.replace("#", "-")
    sep = "\n        "
    return (f"\n(define (problem plan_{scene.signature()})\n    (:domain alfred)\n    (:objects{sep}"
            f"{sep.join(objects)}\n        )\n    (:init{sep}{sep.join(init)}\n        )\n{goal}")


def traj_data(scene: Scene, task_id: str, goal_text: str | None = None) -> dict[str, Any]:
    """The ALFRED trial json, reduced to what ALFWorld reads (no expert plan, no images)."""
    data: dict[str, Any] = {"task_id": task_id, "task_type": scene.task_type,
                            "pddl_params": scene.pddl_params(),
                            "scene": {"room_type": scene.room, "generator": f"a2rl-alfworld-v{GEN_VERSION}"}}
    if goal_text is not None:
        data["turk_annotations"] = {"anns": [{"task_desc": goal_text}]}
    return data


def game_data(scene: Scene, traj: dict[str, Any], template_seed: int) -> dict[str, Any]:
    """The `game.tw-pddl` content, built as `alfworld-generate` builds it."""
    from alfworld.agents.utils.misc import add_task_to_grammar
    from alfworld.info import ALFRED_PDDL_PATH, ALFRED_TWL2_PATH

    grammar = Path(ALFRED_TWL2_PATH).read_text()
    # add_task_to_grammar draws the goal template from the global `random`: seed it, then restore.
    state = random.getstate()
    try:
        random.seed(template_seed)
        grammar = add_task_to_grammar(grammar, traj, goal_desc_human_anns_prob=0.0,
                                      rng=random.Random(template_seed))
    finally:
        random.setstate(state)
    return {"pddl_domain": Path(ALFRED_PDDL_PATH).read_text(), "grammar": grammar,
            "pddl_problem": problem_pddl(scene), "solvable": None, "walkthrough": None}


def strip_banner(feedback: str) -> str:
    """ReAct's first observation: the welcome banner dropped, one line per paragraph."""
    parts = [p.strip() for p in feedback.strip().split("\n\n")]
    return "\n".join(p for p in parts[1:] if p)


def goal_of(game: dict[str, Any]) -> str:
    """The goal sentence a game shows after "Your task is to: "."""
    text: str = game["grammar"].split('"rhs": "Your task is to: ', 1)[1].split('"', 1)[0]
    return text.rstrip(".")


# ---- the engine -------------------------------------------------------------------------------


_FREE_LIBS: list[Any] = []
_LIBS_LOCK = threading.Lock()


def _acquire_lib() -> Any:
    """A fast-downward library no live game uses.

    TextWorld's `PddlEnv` loads a private copy of `libdownward.so` per environment (the library
    keeps one planning task in globals) and never unloads it: ~2 MB stay resident per game played,
    and unloading (`fast_downward.close_lib`) crashes the interpreter at exit once two copies were
    loaded. Copies are therefore pooled: at most as many exist as games were ever open at once,
    and a released copy is reused (loading a game replaces the task it holds)."""
    with _LIBS_LOCK:
        if _FREE_LIBS:
            return _FREE_LIBS.pop()
    import fast_downward

    return fast_downward.load_lib()


def _release_lib(lib: Any) -> None:
    with _LIBS_LOCK:
        _FREE_LIBS.append(lib)


@functools.cache
def _pooled_env_class() -> Any:
    """TextWorld's PddlEnv, taking its fast-downward library from the pool."""
    import textworld
    from textworld.envs import PddlEnv

    class PooledPddlEnv(PddlEnv):  # type: ignore[misc]
        def __init__(self, infos: Any) -> None:
            textworld.Environment.__init__(self, infos)  # PddlEnv's own would load a fresh copy
            self.downward_lib = _acquire_lib()

    return PooledPddlEnv


def load_env(game_file: Path | str) -> Any:
    """The real ALFWorld text engine on one game: TextWorld's PddlEnv with ALFWorld's wrappers
    (the stack `AlfredTWEnv` registers, without its expert: nothing here computes plans).
    Close it with `close_env`."""
    import textworld
    from alfworld.agents.environment.alfred_tw_env import AlfredDemangler, AlfredInfos

    inner = _pooled_env_class()(textworld.EnvInfos(admissible_commands=True, won=True))
    env = AlfredInfos(AlfredDemangler(inner, shuffle=False))
    try:
        env.load(str(game_file))
    except BaseException:
        close_env(env)
        raise
    return env


def close_env(env: Any) -> None:
    """End the game and hand its fast-downward library back to the pool (once)."""
    inner = getattr(env, "unwrapped", env)
    env.close()
    lib = inner.__dict__.pop("downward_lib", None)
    if lib is not None:
        _release_lib(lib)


def scripted_solution(scene: Scene, names: dict[str, str]) -> list[str]:
    """A solution built from the scene (where everything is): go, open, take, use the appliance,
    go, open, move. `names` maps lower-cased PDDL ids to the engine's names ("apple 1").
    Generation replays it through the engine; it is never stored or shown."""
    rtype_of = {rid: t for t, rid in scene.receptacles}
    opened: set[str] = set()
    plan: list[str] = []

    def go(rid: str) -> None:
        plan.append(f"go to {names[rid.lower()]}")
        if rtype_of[rid] in _OPENABLE and rid not in opened:
            plan.append(f"open {names[rid.lower()]}")
            opened.add(rid)

    def first(rtype: str) -> str:
        return next(rid for t, rid in scene.receptacles if t == rtype)

    targets = [(oid, rid) for t, oid, rid in scene.objects if t == scene.object_target]
    parent = first(scene.parent_target) if scene.parent_target else ""
    targets = [x for x in targets if x[1] != parent] or targets
    n = 2 if scene.task_type == "pick_two_obj_and_place" else 1
    for oid, rid in targets[:n]:
        obj = names[oid.lower()]
        go(rid)
        plan.append(f"take {obj} from {names[rid.lower()]}")
        if scene.task_type == "look_at_obj_in_light":
            lamp_id, lamp_at = next((o, r) for t, o, r in scene.objects if t == scene.toggle_target)
            plan.append(f"go to {names[lamp_at.lower()]}")
            plan.append(f"use {names[lamp_id.lower()]}")
            return plan
        appliance = _APPLIANCE.get(scene.task_type)
        if appliance:
            verb = {"SinkBasin": "clean", "Microwave": "heat", "Fridge": "cool"}[appliance]
            plan.append(f"go to {names[first(appliance).lower()]}")
            plan.append(f"{verb} {obj} with {names[first(appliance).lower()]}")
        go(parent)
        plan.append(f"move {obj} to {names[parent.lower()]}")
    return plan


@dataclass
class GameCheck:
    won_at_reset: bool
    solution: list[str]
    solved: bool
    """Replaying the solution through the engine wins the game."""


def check_game(game_file: Path, scene: Scene) -> GameCheck:
    """Reset the game and replay a scripted solution: the checks `alfworld-generate` makes with
    its expert (goal not yet reached, game solvable), without running the planner."""
    env = load_env(game_file)
    try:
        state = env.reset()
        if state["won"]:
            return GameCheck(True, [], False)
        names = {k.lower(): info.name for k, info in env._entity_infos.items()}
        plan = scripted_solution(scene, names)
        won = False
        for cmd in plan:
            state, _, done = env.step(cmd)
            won = bool(state["won"])
            if done:
                break
        return GameCheck(False, plan, won)
    finally:
        close_env(env)


# ---- splits -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class GameRecord:
    """One generated game, as listed in a split (paths relative to the split folder)."""

    id: str
    task_type: str
    goal: str
    game: str
    signature: str
    plan_len: int
    """Steps of the scripted solution (a bound on the optimal plan)."""
    attempt: int
    """Which draw of (seed, index) passed the checks: `scene_for` rebuilds the scene from it."""

    @staticmethod
    def read(path: Path) -> GameRecord:
        return GameRecord(**json.loads(path.read_text()))


def _write_atomic_dir(final: Path, build: Any) -> None:
    """Build a folder next to `final` and rename it into place (concurrent generators agree)."""
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}.", dir=final.parent))
    try:
        build(tmp)
        try:
            os.rename(tmp, final)
        except OSError:  # another process won the race: keep its copy
            if not (final / MANIFEST).exists():
                raise
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def _rng(seed: int, index: int, attempt: int) -> random.Random:
    return random.Random(f"alfworld-v{GEN_VERSION}:{seed}:{index}:{attempt}")


def scene_for(seed: int, record: GameRecord) -> Scene:
    """The scene game `record` of `seed` was built from (for tools that need the layout)."""
    scene = sample_scene(_rng(seed, int(record.id), record.attempt), record.task_type)
    assert scene is not None and scene.signature() == record.signature
    return scene


def draw_game(seed: int, index: int, attempt: int,
              task_type: str) -> tuple[Scene, dict[str, Any], str] | None:
    """Draw `attempt` of game `index` of `seed`, unchecked: (scene, game.tw-pddl content, trial
    folder), or None when the draw cannot host the task."""
    rng = _rng(seed, index, attempt)
    scene = sample_scene(rng, task_type)
    if scene is None:
        return None
    task_id = f"trial_G{GEN_VERSION}_{scene.signature()}"
    folder = (f"{task_type}-{scene.object_target}-None-{scene.parent_target or scene.toggle_target}"
              f"-{scene.room}/{task_id}")
    return scene, game_data(scene, traj_data(scene, task_id), template_seed=rng.randrange(2**31)), folder


def generate_game(root: Path, seed: int, index: int, task_type: str) -> GameRecord:
    """Game `index` of `seed` under `root` (cached). Draws trials until one passes the checks."""
    slot = root / f"{index:05d}"
    if (slot / MANIFEST).exists():
        cached = GameRecord.read(slot / MANIFEST)
        if cached.task_type != task_type:
            # No path or seed in the message: for held-out games it would reach eval.log.
            raise ValueError(f"cached game {index:05d} is a {cached.task_type} game, not {task_type}")
        return cached
    for attempt in range(1000):
        drawn = draw_game(seed, index, attempt, task_type)
        if drawn is None:
            continue
        scene, game, folder = drawn
        task_id = folder.rsplit("/", 1)[1]
        # The probe goes under `root` (inside $A2RL_HOME), not the shared /tmp: a held-out game
        # must never sit, even briefly, where another process could read it.
        root.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix=".probe-", dir=root) as tmp:
            probe = Path(tmp) / GAME_FILE
            probe.write_text(json.dumps(game))
            check = check_game(probe, scene)
        if check.won_at_reset or not check.solved or len(check.solution) > MAX_PLAN_STEPS:
            continue
        game["solvable"] = True  # walkthrough stays null: no expert plan in the game file
        goal = goal_of(game)
        record = GameRecord(id=f"{index:05d}", task_type=task_type, goal=goal,
                            game=f"{slot.name}/{folder}/{GAME_FILE}", signature=scene.signature(),
                            plan_len=len(check.solution), attempt=attempt)
        traj = traj_data(scene, task_id, goal_text=goal)

        def build(tmp: Path, folder: str = folder, game: dict[str, Any] = game,
                  traj: dict[str, Any] = traj, record: GameRecord = record) -> None:
            trial = tmp / folder
            trial.mkdir(parents=True)
            (trial / GAME_FILE).write_text(json.dumps(game))
            (trial / TRAJ_FILE).write_text(json.dumps(traj, indent=1))
            (trial / PROBLEM_FILE).write_text(game["pddl_problem"])
            (tmp / MANIFEST).write_text(json.dumps(record.__dict__))

        _write_atomic_dir(slot, build)
        return GameRecord.read(slot / MANIFEST)
    raise RuntimeError(f"could not generate a {task_type} game at index {index} in 1000 draws")


def generate_split(root: Path, seed: int, n: int) -> list[GameRecord]:
    """The first `n` games of `seed` (task types in turn, as balanced as the split allows)."""
    return [generate_game(root, seed, i, TASK_TYPES[i % len(TASK_TYPES)]) for i in range(n)]
