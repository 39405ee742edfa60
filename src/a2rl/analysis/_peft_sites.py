"""PEFT sites of a script: LoRA configs, `get_peft_model`, adapters loaded to train on, a trainer's
`peft_config=`, and functions of workspace modules that apply PEFT. A site reached only under
conditions on the run's settings is kept as a `PeftGuard` for those settings to decide."""

from __future__ import annotations

import ast
from functools import partial
from typing import TYPE_CHECKING

from a2rl.analysis._conditions import describe, trivial
from a2rl.analysis._detection import PeftGuard
from a2rl.analysis._script_scope import ScriptScope
from a2rl.analysis._syntax import name_chain

if TYPE_CHECKING:
    from a2rl.analysis._settings import Settings

PEFT_CALLS = {"get_peft_model", "prepare_model_for_kbit_training", "prepare_model_for_int8_training",
              "LoraConfig", "AdaLoraConfig",
              "IA3Config", "LoKrConfig", "LoHaConfig", "PromptTuningConfig", "PrefixTuningConfig",
              "VeraConfig", "BOFTConfig", "OFTConfig", "inject_adapter_in_model", "add_adapter"}


class PeftSites(ScriptScope):
    """The PEFT part of a script's reading (see the module docstring)."""

    def peft_site(self, node: ast.AST, why: str) -> None:
        """PEFT at one place: counted outright when nothing guards it, else kept with its
        conditions for the run's settings to decide. A LoRA config assigned to a variable
        applies where that variable is used."""
        cond = self.flags.condition(node)
        uses = self._config_uses(node)
        if uses:
            cond = ("and", [cond, ("or", [self.flags.condition(u) for u in uses])])
        guard: PeftGuard | None = None
        if trivial(cond):
            self.result.add("PEFT", why)
        else:
            guard = PeftGuard(site=f"{self.path} {why}", condition=describe(cond),
                              holds=partial(self.flags.holds, cond))
            self.result.peft_guards.append(guard)
        self._peft_function(node, guard)

    def _peft_function(self, node: ast.AST, guard: PeftGuard | None) -> None:
        fn = self.flags.scope(node)
        if fn is not None and self.flags.parents.get(fn) is self.tree:
            self.result.peft_functions.setdefault(fn.name, []).append(guard)

    def _config_uses(self, node: ast.AST) -> list[ast.Name]:
        if not isinstance(node, ast.Call) or not (name_chain(node.func) or [""])[-1].endswith("Config"):
            return []
        holder: ast.AST = node
        parent = self.flags.parents.get(holder)
        while isinstance(parent, ast.IfExp):
            holder, parent = parent, self.flags.parents.get(parent)
        if not (isinstance(parent, ast.Assign) and len(parent.targets) == 1
                and isinstance(parent.targets[0], ast.Name)):
            return []
        return self.flags.uses(parent.targets[0].id, self.flags.scope(parent), parent)

    def peft_values(self, value: ast.expr) -> list[ast.AST]:
        """What a trainer's `peft_config=` is given that is not counted elsewhere: None and the
        configs built by a call in this code (their own PEFT sites) are left out."""
        if isinstance(value, ast.IfExp):
            return self.peft_values(value.body) + self.peft_values(value.orelse)
        if self._built_here(value):
            return []
        if isinstance(value, ast.Name):
            scope = self.flags.scope(value)
            bound = self.flags.assigns.get((value.id, scope)) or self.flags.assigns.get((value.id, None))
            if bound and all(self._built_here(v) for v in bound):
                return []
            if self._unpacked_from_peft_helper(value.id, scope):
                return []
        return [value]

    def _unpacked_from_peft_helper(self, name: str, scope: ast.AST | None) -> bool:
        """`model, peft_config, tok = make_model(args)`: a config returned by a function that
        applies PEFT, whose own sites (and their conditions) count where it is called."""
        for node in ast.walk(scope if scope is not None else self.tree):
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and any(
                    isinstance(t, ast.Tuple) and any(isinstance(e, ast.Name) and e.id == name
                                                     for e in t.elts) for t in node.targets):
                if self._peft_helper_call(node.value):
                    return True
        return False

    def _peft_helper_call(self, call: ast.Call) -> bool:
        """A call of a function that applies PEFT: one of a workspace module (its PEFT sites
        are known) or one of this module that holds a PEFT call."""
        chain = name_chain(call.func)
        q = self.qualified(chain)
        if q is not None:
            module, _, name = q.rpartition(".")
            sub = self.local_modules.get(module)
            return sub is not None and name in sub.peft_functions
        if len(chain) == 1:
            for fn in self.tree.body:
                if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef) and fn.name == chain[0]:
                    return any(isinstance(c, ast.Call) and (name_chain(c.func) or [""])[-1] in PEFT_CALLS
                               for c in ast.walk(fn))
        return False

    def _built_here(self, value: ast.expr) -> bool:
        if isinstance(value, ast.Constant) and value.value is None:
            return True
        if isinstance(value, ast.IfExp):
            return self._built_here(value.body) and self._built_here(value.orelse)
        if isinstance(value, ast.Call):
            chain = name_chain(value.func)
            return bool(chain) and (chain[-1] in PEFT_CALLS or chain[-1] == "get_peft_config"
                                    or self._peft_helper_call(value))
        return False

    def peft_helper(self, node: ast.Call, chain: list[str], line: int) -> None:
        """A function of a workspace module that applies PEFT, called here: PEFT under this
        call's conditions and those inside the function."""
        q = self.qualified(chain)
        if q is None:
            return
        module, _, name = q.rpartition(".")
        sub = self.local_modules.get(module)
        inner = sub.peft_functions.get(name) if sub is not None else None
        if not inner or sub is None:
            return
        cond = self.flags.condition(node)
        why = f"line {line}: {'.'.join(chain)}(…), which applies PEFT ({sub.path})"
        if trivial(cond) and None in inner:
            self.result.add("PEFT", why)
            self._peft_function(node, None)
            return
        flags = self.flags

        def holds(settings: Settings) -> tuple[bool | None, list[str]]:
            here, said = flags.holds(cond, settings)
            there = [(True, []) if g is None else g.holds(settings) for g in inner]
            verdict = True if any(v is True for v, _ in there) else \
                None if any(v is None for v, _ in there) else False
            said += [s for _, ss in there for s in ss]
            if here is False or verdict is False:
                return False, said
            return (None if None in (here, verdict) else True), said

        inside = " or ".join(g.condition for g in inner if g is not None)
        text = " and ".join(t for t in (describe(cond) if not trivial(cond) else "",
                                        inside if None not in inner else "") if t)
        guard = PeftGuard(site=f"{self.path} {why}", condition=text or "always", holds=holds)
        self.result.peft_guards.append(guard)
        self._peft_function(node, guard)
