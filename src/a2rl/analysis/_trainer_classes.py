"""Trainer classes of a script: classes that inherit from a known trainer (to a fixpoint, across
workspace modules) take its method, refined by what their own code optimises; a class written
as a trainer (a `fit`/`train` method and a parameter update, or a loss named after its method)
is one without a known base. What each class's methods do (launch, update) is kept for the
subclasses and the calls that drive them."""

from __future__ import annotations

import ast
import re

from a2rl.analysis._methods import RL, method_of_class, primary_method
from a2rl.analysis._objectives import (
    MISSING_PART,
    PAIR_NAME,
    code_objective,
    family,
    log_sigmoid,
    name_holds,
)
from a2rl.analysis._script_scope import ScriptScope
from a2rl.analysis._syntax import identifiers, name_chain

ENGINE_UPDATES = {"optimizer_step", "train_batch", "update_policy", "update_actor", "update_critic",
                  "train_on_batch", "apply_gradients", "ppo_update", "training_step_update"}
"""Calls that update parameters inside a framework's own trainer (OpenRLHF's
`strategy.optimizer_step`, verl's `training_client.train_batch` / `actor.update_policy`)."""
_OWN_LAUNCH = {"fit", "train", "learn", "run", "train_model", "train_loop", "training_loop",
               "run_training"}
"""Methods by which a trainer class written in the code is launched."""


class TrainerClasses(ScriptScope):
    """The pass over a script's class definitions (see the module docstring)."""

    def class_defs(self) -> None:
        """Classes of the script that inherit from a trainer are that trainer (to a fixpoint:
        a subclass of a subclass counts); what their own code optimises refines the method.
        A class that inherits from no known trainer is one when it is written as one: a
        `fit`/`train` method and a parameter update or a loss named after its method."""
        defs = [n for n in ast.walk(self.tree) if isinstance(n, ast.ClassDef)]
        for cls in defs:
            self._lightning(cls)
        changed = True
        while changed:
            changed = False
            for cls in defs:
                if cls.name in self.classes:
                    continue
                for base in cls.bases:
                    inherited = self.trainer_method(name_chain(base))
                    if inherited:
                        method, why = self._refine(cls, inherited)
                        self.classes[cls.name] = method
                        self.traits[cls.name] = self._traits(cls, defs)
                        if why:
                            self.why[cls.name] = f"{self.path} line {cls.lineno}: class " \
                                f"{cls.name}{why}"
                        self.result.add(method, f"line {cls.lineno}: class {cls.name}"
                                        f"({'.'.join(name_chain(base))}){why}")
                        changed = True
                        break
            for cls in defs:
                if cls.name in self.classes:
                    continue
                own = self._own_trainer(cls, defs)
                if own is not None:
                    method, why = own
                    self.classes[cls.name] = method
                    self.own_spans.append((cls.lineno, cls.end_lineno or cls.lineno))
                    self.why[cls.name] = f"{self.path} line {cls.lineno}: class {cls.name}, a " \
                        f"trainer written in the code ({why})"
                    self.result.add(method, f"line {cls.lineno}: class {cls.name}, a trainer "
                                    f"written in the code ({why})")
                    changed = True
        for cls in defs:
            self.traits.setdefault(cls.name, self._traits(cls, defs))
        self.result.class_traits = {k: sorted(v) for k, v in self.traits.items()}
        self.result.class_why = dict(self.why)

    def _refine(self, cls: ast.ClassDef, inherited: str) -> tuple[str, str]:
        """The method of a subclass of a trainer: a generic (supervised) base says little, so
        the subclass's own loss decides, then its name when the code bears it out (a
        distillation trainer needs a teacher, an RL trainer a reward); a specific base
        (DPOTrainer) keeps its method unless the subclass's loss is of another family."""
        code = code_objective(cls, self_distilled=self.self_distilled)
        if inherited != "SFT":
            if code and code[0] != "SFT" and family(code[0]) != family(inherited):
                return code[0], f" whose {code[1]} trains {code[0]}"
            return inherited, ""
        if code and code[0] != "SFT":
            return code[0], f" whose {code[1]} trains {code[0]}"
        named = method_of_class(cls.name)
        if named and named != "SFT":
            if name_holds(named, self.ids, self_distilled=self.self_distilled):
                return named, ""
            return "SFT", f" (named {named}, but the code has no {MISSING_PART[family(named)]})"
        return "SFT", ""

    def _traits(self, cls: ast.ClassDef, defs: list[ast.ClassDef], seen: frozenset[str] = frozenset()
                ) -> set[str]:
        out: set[str] = set()
        backward = step = False
        methods = {n.name: n for n in cls.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
        # `def train(self, mode=True)` overrides torch's train-mode switch: no launch
        if any(name in _OWN_LAUNCH and not (name == "train" and "mode" in [a.arg for a in fn.args.args])
               for name, fn in methods.items()):
            out.add("launch")
        updating: set[str] = set()
        for name, fn in methods.items():
            calls = [name_chain(n.func) for n in ast.walk(fn) if isinstance(n, ast.Call)]
            has_backward = any(c[-1:] == ["backward"] for c in calls)
            has_step = any(c[-1:] == ["step"] and len(c) >= 2 and not re.search(r"sched", c[-2], re.I)
                           for c in calls)
            backward |= has_backward
            step |= has_step
            if any(c and c[-1] in ENGINE_UPDATES for c in calls) or has_backward and has_step:
                updating.add(name)
            if has_backward and has_step and name != "__init__":
                # A whole training step in one method (`ppo_train`, a PPO trainer's `step`): the
                # class is launched by calling it, whatever it is named.
                out.add("launch")
        if updating or backward and step:
            out.add("update")
        # Methods that reach an update through other methods of the class (`train` calling
        # `self._epoch()`), to a fixpoint: calling any of them on an instance trains.
        changed = True
        while changed:
            changed = False
            for name, fn in methods.items():
                if name not in updating and any(
                        isinstance(n, ast.Call) and name_chain(n.func)[:1] == ["self"]
                        and name_chain(n.func)[-1] in updating for n in ast.walk(fn)):
                    updating.add(name)
                    changed = True
        if "update" in out:
            out |= {f"calls:{m}" for m in updating | (_OWN_LAUNCH & set(methods))}
        by_name = {d.name: d for d in defs}
        for base in cls.bases:
            chain = name_chain(base)
            if len(chain) == 1 and chain[0] in by_name and chain[0] not in seen | {cls.name}:
                out |= self._traits(by_name[chain[0]], defs, seen | {cls.name})
            else:
                out |= self.class_traits(chain)
        return out

    def _own_trainer(self, cls: ast.ClassDef, defs: list[ast.ClassDef]) -> tuple[str, str] | None:
        traits = self._traits(cls, defs)
        if "launch" not in traits:
            return None
        bodies: list[ast.AST] = [cls]
        by_name = {d.name: d for d in defs}
        bodies += [by_name[c[0]] for b in cls.bases if len(c := name_chain(b)) == 1 and c[0] in by_name]
        code = next((found for body in bodies
                     if (found := code_objective(body, self_distilled=self.self_distilled))), None)
        if code is None or code[0] in RL and code[1].endswith("scored by a reward"):
            # Chosen/rejected "rewards" of a preference loss are no RL reward: the shape of the
            # loss decides first.
            code = self._pair_objective(bodies) or code
        if code is None and "update" not in traits:
            return None
        named = method_of_class(cls.name)
        if code is not None and (code[0] != "SFT" or named in (None, "SFT")
                                 or not name_holds(named, self.ids, self_distilled=self.self_distilled)):
            return code[0], f"fit()/train() with {code[1]}"
        if named and name_holds(named, self.ids, self_distilled=self.self_distilled):
            return named, "fit()/train() with a parameter update" if "update" in traits else \
                "fit()/train() with its loss"
        return "SFT", "fit()/train() with a parameter update and a supervised loss"

    def _pair_objective(self, bodies: list[ast.AST]) -> tuple[str, str] | None:
        """DPO-style preference optimisation written across a class and the module's functions
        it calls (`preference_loss(policy_chosen_logps, …)`): chosen/rejected log-probabilities
        through a log-sigmoid."""
        tops = {n.name: n for n in self.tree.body if isinstance(n, ast.FunctionDef)}
        helpers = {c.func.id for b in bodies for c in ast.walk(b)
                   if isinstance(c, ast.Call) and isinstance(c.func, ast.Name) and c.func.id in tops}
        ids = {i.lower() for b in bodies + [tops[h] for h in sorted(helpers)] for i in identifiers(b)}
        if sum(1 for i in ids if PAIR_NAME.search(i)) >= 2 and log_sigmoid(ids) and \
                any("logp" in i or "logprob" in i for i in ids):
            via = f" ({', '.join(sorted(helpers))})" if helpers else ""
            return "DPO", f"chosen/rejected log-probabilities through a log-sigmoid{via}"
        return None

    def _lightning(self, cls: ast.ClassDef) -> None:
        for base in cls.bases:
            q = self.qualified(name_chain(base)) or ""
            if q.split(".")[0] in ("lightning", "pytorch_lightning") and q.endswith("LightningModule"):
                code = code_objective(cls, self_distilled=self.self_distilled)
                if code and code[0] != "SFT":
                    self.lightning = primary_method({code[0]} | ({self.lightning} if self.lightning
                                                                   else set()))
                    self.why["Trainer"] = f"it fits {cls.name} (line {cls.lineno}), whose " \
                        f"{code[1]} trains {code[0]}"
