"""reverse: the smallest complete static task; copy this folder to add one."""

from .task import ReverseTask

__all__ = ["ReverseTask"]
