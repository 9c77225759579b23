"""RAPTOR (Sarthi et al., ICLR 2024) over uploaded documents: build, store and search per-knowledge-base trees.

A library that never imports discord; the bot and the CLI are both thin faces over `Engine`.

The names below are imported on first use (PEP 562), so a process that needs only one module (the
parse worker imports just the loader) does not pay for numpy, SQLite and the engine at start-up.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"  # the one place the version is written; pyproject reads it

if TYPE_CHECKING:
    from .config import Settings
    from .engine import Engine, IngestResult, TreeInfo
    from .errors import BackendError, IngestError, LimitError, NotFoundError, RaptorError
    from .types import Answer, Citation, ContextNode, Progress, RetrievedContext, Turn

_HOMES = {
    "Settings": ".config",
    "Engine": ".engine",
    "IngestResult": ".engine",
    "TreeInfo": ".engine",
    "BackendError": ".errors",
    "IngestError": ".errors",
    "LimitError": ".errors",
    "NotFoundError": ".errors",
    "RaptorError": ".errors",
    "Answer": ".types",
    "Citation": ".types",
    "ContextNode": ".types",
    "Progress": ".types",
    "RetrievedContext": ".types",
    "Turn": ".types",
}

__all__ = [
    "__version__",
    "Answer",
    "BackendError",
    "Citation",
    "ContextNode",
    "Engine",
    "IngestError",
    "IngestResult",
    "LimitError",
    "NotFoundError",
    "Progress",
    "RaptorError",
    "RetrievedContext",
    "Settings",
    "TreeInfo",
    "Turn",
]


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_HOMES[name], __name__), name)
    globals()[name] = value
    return value
