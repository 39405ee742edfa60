"""What one script, config or command trains (`Detection`), and PEFT whose conditions the run's
settings decide (`PeftGuard`, `decide_peft`). The readers that fill a Detection are
`_script_reader` (Python code), `_configs` (framework configs) and `_command_reader`
(command lines)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from a2rl.analysis._methods import TRAINING, Kind, Route, labels, primary_method

if TYPE_CHECKING:
    from a2rl.analysis._settings import FlagDefaults, Settings

CommandAnalyzer = Callable[[str], "Detection | None"]
ModuleReader = Callable[[str, str], "tuple[str, str] | None"]
"""(dotted module, importing file) -> (path, source) of a workspace module; leading dots mark
a relative import."""


@dataclass
class Detection:
    """What one script, config or command trains."""

    path: str
    """The script, config or command analyzed."""
    methods: set[str] = field(default_factory=set)
    """Methods found (see a2rl.analysis._methods.METHODS)."""
    evidence: dict[str, list[str]] = field(default_factory=dict)
    """method -> the lines, arguments or keys that showed it."""
    trains: bool = False
    """The script performs a parameter update when it runs."""
    framework: str | None = None
    """The framework that trains (trl, openrlhf, verl, …; `manual` for a hand-written loop)."""
    parse_error: str | None = None
    """Why the script could not be read (then nothing is known about it)."""
    conditional_peft: list[str] = field(default_factory=list)
    """PEFT that only applies when the command or config asks for it (TRL's get_peft_config)."""
    rl_config: list[str] = field(default_factory=list)
    """Trainers whose algorithm comes from the run's config (verl's RayPPOTrainer)."""
    hydra_config: str | None = None
    """The YAML a `@hydra.main(config_path=…, config_name=…)` entry point loads (script-relative
    path resolved against the script's folder)."""
    classes: dict[str, str] = field(default_factory=dict)
    """Trainer classes the script defines or imports -> their method (for scripts importing it)."""
    class_why: dict[str, str] = field(default_factory=dict)
    """Trainer classes written in the module -> why they are trainers of their method."""
    class_traits: dict[str, list[str]] = field(default_factory=dict)
    """Classes of the module -> what their methods do (`launch`: a fit/train method; `update`:
    a parameter update), for subclasses written in other modules."""
    peft_guards: list[PeftGuard] = field(default_factory=list)
    """PEFT reached only under conditions on the run's settings (decided by `decide_peft`)."""
    peft_functions: dict[str, list[PeftGuard | None]] = field(default_factory=dict)
    """Functions of the module that apply PEFT when called -> the conditions inside them
    (None: unconditional), for scripts that import and call them."""
    flag_defaults: FlagDefaults = field(default_factory=dict)
    """Defaults of the settings the code declares (its own and its workspace modules')."""
    config_refs: list[str] = field(default_factory=list)
    """YAML/JSON file names written in the code (a config it loads, an argparse default)."""
    loads_config: bool = False
    """The code reads a YAML/JSON config (yaml.safe_load, json.load, OmegaConf.load, Hydra)."""
    instantiates: bool = False
    """The code builds objects from a config's component paths (torchtune's
    `config.instantiate(cfg.loss)`, Hydra's `instantiate`): the config names its model and loss."""
    functions: dict[str, set[str]] = field(default_factory=dict)
    """Top-level functions of the module (and those it re-exports) -> the training methods a
    call of each reaches (the trainers it builds or picks, the training functions it calls)."""
    dispatch: bool = False
    """The code (or a workspace module it imports) branches on a setting compared with names
    (`if stage == "sft": … elif stage == "dpo": …`): the run's settings pick the branch."""

    def add(self, method: str, why: str) -> None:
        self.methods.add(method)
        self.evidence.setdefault(method, []).append(why)

    def drop(self, method: str) -> None:
        self.methods.discard(method)
        self.evidence.pop(method, None)

    def merge(self, other: Detection) -> None:
        for key, whys in other.evidence.items():
            mine = self.evidence.setdefault(key, [])
            mine += [w for w in whys if w not in mine]
        self.methods |= other.methods
        self.trains |= other.trains
        self.framework = self.framework or other.framework
        self.conditional_peft += other.conditional_peft
        self.rl_config += other.rl_config
        self.peft_guards += [g for g in other.peft_guards if g not in self.peft_guards]
        self.merge_settings(other)

    def merge_settings(self, other: Detection) -> None:
        """Take in the settings another module declares (its defaults, the configs it names)."""
        for key, values in other.flag_defaults.items():
            mine = self.flag_defaults.setdefault(key, [])
            mine += [v for v in values if v not in mine]
        self.config_refs += [c for c in other.config_refs if c not in self.config_refs]
        self.loads_config |= other.loads_config
        self.instantiates |= other.instantiates
        self.dispatch |= other.dispatch

    def settle(self) -> Detection:
        """A parameter update whose objective nothing names is supervised training, said in
        the evidence, so the route and the strategy come from the same objective."""
        if self.trains and not self.methods & TRAINING:
            self.add("SFT", "a parameter update whose objective the code does not name: "
                     "supervised training assumed")
        return self

    @property
    def route(self) -> Route:
        return labels(self.methods, trained=self.trains)[0]

    @property
    def kind(self) -> Kind | None:
        """Strategy k (None when nothing trains)."""
        return labels(self.methods, trained=self.trains)[1]

    @property
    def method(self) -> str | None:
        return primary_method(self.methods)


@dataclass(eq=False)
class PeftGuard:
    """PEFT at one place of the code that applies only when its conditions hold."""

    site: str
    """Where (`train.py line 12: get_peft_model(…)`)."""
    condition: str
    """The conditions as written (`cfg.use_lora`, `not args.full_ft`)."""
    holds: Callable[[Settings], tuple[bool | None, list[str]]]
    """Whether the run's settings meet the conditions (None: undecided) and what says so."""


_UNDECIDED = "undecided"
_PEFT_OFF = "PEFT off"


def decide_peft(d: Detection, settings: Settings) -> None:
    """PEFT of conditional sites decided under the run's settings: on when any site's
    conditions hold, and reported as undecided (not counted) when none holds and a flag's value
    is unknown. Earlier decisions (made from the code's defaults alone) are replaced."""
    earlier = tuple(f"{g.site} when `" for g in d.peft_guards)
    whys = [w for w in d.evidence.get("PEFT", []) if not w.startswith(earlier)]
    undecided: list[str] = []
    on: list[str] = []
    off: list[str] = []
    for guard in d.peft_guards:
        verdict, sources = guard.holds(settings)
        said = "; ".join(dict.fromkeys(sources))
        if verdict:
            on.append(f"{guard.site} when `{guard.condition}`" + (f" ({said})" if said else ""))
        elif verdict is None:
            undecided.append(f"PEFT: {guard.site} only when `{guard.condition}`; the flag's value "
                             "could not be read (not counted)")
        else:
            off.append(f"{guard.site} only when `{guard.condition}`, which is false"
                       + (f" ({said})" if said else ""))
    d.evidence.pop(_UNDECIDED, None)
    d.evidence.pop(_PEFT_OFF, None)
    if off and not on:
        d.evidence[_PEFT_OFF] = off
    if whys or on:
        d.evidence["PEFT"] = whys + on
        d.methods.add("PEFT")
    else:
        d.drop("PEFT")
    if undecided and not on and not whys:
        d.evidence[_UNDECIDED] = undecided
