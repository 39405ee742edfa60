"""The base of every persisted record: a field's docstring is its schema description."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Record(BaseModel):
    """A persisted record; `a2rl schema` shows each field's docstring as its description."""

    model_config = ConfigDict(use_attribute_docstrings=True)
