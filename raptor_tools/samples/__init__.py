"""Sample documents shipped as package data: found the same way in a checkout and in an installed wheel."""

from __future__ import annotations

from importlib import resources
from importlib.resources.abc import Traversable

LIGHTHOUSE = "lighthouse_keepers.md"


def sample(name: str = LIGHTHOUSE) -> Traversable:
    """The packaged sample `name` (read it with `.read_text()` / `.read_bytes()`)."""
    return resources.files(__name__) / name
