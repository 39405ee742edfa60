"""webshop: shopping episodes in a text web store, rewarded like WebShop's goal.py."""

from a2rl.tasks.webshop.task import WebShopTask

__all__ = ["WebShopTask"]
