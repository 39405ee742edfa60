"""What a page module needs of the site it is written into: `SiteContext`, a protocol the site
(`_site.Site`) satisfies, so that the run page, the trajectory viewer and the scaffold page
read the site without importing the module that builds it."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from a2rl.results import LoadedRun


class SiteContext(Protocol):
    """The site as its pages see it: where it is written, each run's page, the runs shown, and
    the tables and links every page shares."""

    @property
    def out(self) -> Path:
        """The site's folder."""

    @property
    def page_of(self) -> dict[str, str]:
        """Each shown run's page, relative to the site's folder, by run id."""

    @property
    def shown(self) -> Sequence[tuple[LoadedRun, dict[str, Any]]]:
        """The runs the policy shows, with their table rows, in the tables' order (set once
        every run is in)."""

    def save_table(self, name: str, rows: Sequence[dict[str, Any]]) -> None:
        """Write `rows` as tables/<name>.csv and .md."""

    def table_links(self, *names: str) -> str:
        """A note linking to the named tables (HTML)."""

    def run_link(self, row: dict[str, Any], root: str = "") -> Any:
        """A link to the run page of `row` (markup), from a page `root` below the site's top."""
