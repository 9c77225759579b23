"""RAPTOR (Sarthi et al., ICLR 2024) over uploaded documents: build, store and search per-knowledge-base trees.

A library that never imports discord; the bot and the CLI are both thin faces over `Engine`.
"""

__version__ = "0.1.0"  # the one place the version is written; pyproject reads it

from .config import Settings
from .engine import Engine, IngestResult, TreeInfo
from .errors import BackendError, IngestError, LimitError, NotFoundError, RaptorError
from .types import Answer, Citation, ContextNode, Progress, RetrievedContext, Turn

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
