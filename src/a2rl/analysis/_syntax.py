"""Reading a Python syntax tree by shape: the dotted name a node denotes, the identifiers a
subtree uses, a setting's path, a command written as string constants. The labeller's
readers (`_script_reader`, `_conditions`, `_objectives`) share these."""

from __future__ import annotations

import ast


def name_chain(node: ast.AST) -> list[str]:
    """`trainer.model.train()` as ["trainer", "model", "train"] (calls and subscripts read
    through; [] for anything else)."""
    if isinstance(node, ast.Name):
        return [node.id]
    if isinstance(node, ast.Attribute):
        return name_chain(node.value) + [node.attr]
    if isinstance(node, ast.Call):
        return name_chain(node.func)
    if isinstance(node, ast.Subscript):
        return name_chain(node.value)
    return []


def identifiers(tree: ast.AST) -> set[str]:
    """Every name a subtree uses: variables, attributes, parameters, keywords, functions."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            out.add(node.id)
        elif isinstance(node, ast.Attribute):
            out.add(node.attr)
        elif isinstance(node, ast.arg):
            out.add(node.arg)
        elif isinstance(node, ast.keyword) and node.arg:
            out.add(node.arg)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            out.add(node.name)
    return out


def string_command(node: ast.AST) -> list[str] | None:
    """A command given as a list/tuple of string constants, or one string constant."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.List | ast.Tuple):
        items = [e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
        return items if items else None
    if isinstance(node, ast.JoinedStr):
        parts = [v.value for v in node.values if isinstance(v, ast.Constant) and isinstance(v.value, str)]
        return ["".join(parts)] if parts else None
    return None


def join_module(base: str, name: str) -> str:
    """`from <base> import <name>` as a dotted module (`.` + `trainer` -> `.trainer`)."""
    return base + name if base.endswith(".") or not base else f"{base}.{name}"


def setting_path(node: ast.AST) -> list[str] | None:
    """`cfg.model["lora"].rank` as ["cfg", "model", "lora", "rank"] (None: not a plain path)."""
    if isinstance(node, ast.Name):
        return [node.id]
    if isinstance(node, ast.Attribute):
        inner = setting_path(node.value)
        return inner + [node.attr] if inner is not None else None
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) and \
            isinstance(node.slice.value, str):
        inner = setting_path(node.value)
        return inner + [node.slice.value] if inner is not None else None
    return None
