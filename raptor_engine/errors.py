"""Errors a user may see. Each message is one clear sentence; logs carry the detail."""

from __future__ import annotations


class RaptorError(Exception):
    """Base class: anything the engine refuses or cannot do, said in one sentence."""


class IngestError(RaptorError):
    """A file could not be ingested. Nothing was stored."""

    def __init__(self, filename: str, reason: str):
        self.filename = filename
        self.reason = reason
        super().__init__(f"{filename}: {reason}")


class LimitError(RaptorError):
    """A configured bound (size, documents, tokens, rate) would be exceeded."""


class NotFoundError(RaptorError):
    """A knowledge base or document that does not exist."""


class BackendError(RaptorError):
    """An LLM backend failed after its retries; the previous tree is untouched."""
