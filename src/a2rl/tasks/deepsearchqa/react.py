"""The ReAct format of a DeepSearchQA episode: the first user turn, which states the rules and
the action format, and the parser that reads the model's first action from a completion."""

from __future__ import annotations

import re

_ACTION = re.compile(r"\b(search|answer)\s*\[", re.IGNORECASE)


def _bracket_body(text: str, start: int) -> str:
    """Text from `start` to the matching `]` (nested brackets allowed); when the bracket is never
    closed (e.g. generation hit the token limit), the rest of that line."""
    depth = 1
    for i in range(start, len(text)):
        if text[i] == "[":
            depth += 1
        elif text[i] == "]":
            depth -= 1
            if depth == 0:
                return text[start:i]
    return text[start:].split("\n", 1)[0]


def parse_action(completion: str) -> str | None:
    """The first action in a completion, canonicalised as `search[query]` or `answer[text]`.

    Case-insensitive, anywhere in the text (an `Action:` prefix is expected but not required).
    Whitespace inside the brackets is collapsed. A `search` with an empty query is skipped (the
    next action, if any, counts); `answer[]` is an (empty, hence wrong) answer. None when the
    completion holds no action: the episode then ends without an answer."""
    for m in _ACTION.finditer(completion):
        body = " ".join(_bracket_body(completion, m.end()).split())
        name = m.group(1).lower()
        if name == "search" and not body:
            continue
        return f"{name}[{body}]"
    return None


def split_action(action: str) -> tuple[str, str]:
    """(`search` | `answer` | `invalid`, body) from a canonical action string."""
    m = re.fullmatch(r"(search|answer)\[(.*)\]", action.strip(), re.IGNORECASE | re.DOTALL)
    if not m:
        return "invalid", action
    return m.group(1).lower(), m.group(2).strip()



def first_observation(question: str, *, top_k: int, max_steps: int, collection: str) -> str:
    """The whole first user turn: the rules, the action format and the question."""
    return f"""You are a research agent. Answer the question at the end by searching {collection}.

Work in steps. In each reply, write one short thought, then exactly one action:

Thought: <your reasoning>
Action: search[<query>]

or, when you know the answer:

Thought: <your reasoning>
Action: answer[<final answer>]

Rules:
- search[<query>] returns the top {top_k} results in the next message, which starts with "Observation:".
- answer[<final answer>] ends the episode. Write only the answer, not a sentence. If the question asks \
for several items, give every one of them, separated by "; ".
- Only the first action of each reply is used; stop writing after it.
- You have at most {max_steps} actions. If you have not answered by then, the question counts as wrong.
- The facts you need are usually spread over several documents: search for one thing at a time and \
use what you found in the next search.

Question: {question}"""
