"""Settings from the environment and `.env`, with defaults that work with no key and no Discord.

Every setting is documented in `.env.example`. The CLI and the bot both build a `Settings` here.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields
from pathlib import Path


def _parse(name: str, raw: str, kind: str) -> object:
    """An environment value as the setting's type, or one clear sentence saying what is wrong."""
    try:
        if kind == "int":
            return int(raw)
        if kind == "float":
            return float(raw)
    except ValueError:
        noun = "a whole number" if kind == "int" else "a number"
        raise ValueError(f"{name} must be {noun}, not {raw!r}.") from None
    return Path(raw) if kind == "Path" else raw


def load_dotenv_file(path: str | os.PathLike[str] = ".env") -> None:
    """Read `.env` into the environment without overriding what is already set."""
    try:
        from dotenv import load_dotenv
    except ImportError:  # python-dotenv is a dependency; this only guards odd installs
        return
    load_dotenv(path, override=False)


def default_cache_dir() -> Path:
    """~/.cache/raptor (or $XDG_CACHE_HOME/raptor): exports and compiled code shared by all data dirs."""
    base = os.environ.get("XDG_CACHE_HOME", "").strip() or str(Path.home() / ".cache")
    return Path(base) / "raptor"


@dataclass
class Settings:
    # storage
    data_dir: Path = field(default_factory=lambda: Path("data"))
    # embedding
    embed_model: str = "all-MiniLM-L6-v2"
    embed_batch_size: int = 64
    embed_batch_tokens: int = 1024
    embed_backend: str = "onnx-int8"  # torch | onnx | onnx-int8 (see embed_runtime.BACKENDS)
    cache_dir: Path = field(default_factory=default_cache_dir)
    # chunking and tree
    chunk_tokens: int = 100
    summary_max_tokens: int = 200
    summary_ratio: float = 0.28
    cluster_input_budget: int = 3500
    cluster_threshold: float = 0.1
    cluster_dim: int = 10
    max_clusters: int = 50
    stop_nodes: int = 3
    seed: int = 224
    # retrieval
    budget: int = 2000
    top_k: int = 5
    hnsw_ef: int = 800
    # bounds
    max_file_bytes: int = 20 * 1024 * 1024
    max_documents: int = 200
    max_kb_tokens: int = 2_000_000
    # one upload's tokens: what bounds an ingest's time (about 0.4-0.8 CPU s per 1,000 tokens here)
    max_document_tokens: int = 150_000
    questions_per_minute: int = 6
    question_timeout: float = 120.0  # seconds before a question is given up (one sentence says so)
    writer_wait: float = 600.0  # seconds an upload waits for other processes' commits to the same base
    # hostile uploads: the parse runs in a worker process with these limits (see parse_worker.py)
    parse_timeout: float = 30.0
    parse_memory_mb: int = 1024
    max_expanded_mb: int = 32
    max_pages: int = 2000
    max_elements: int = 200_000
    max_text_chars: int = 10_000_000
    node_max_chars: int = 2000
    # LLM backend (OpenAI-compatible); empty key and base URL mean the extractive default
    llm_api_key: str = field(default="", repr=False)  # a secret: never in repr() or logs
    llm_base_url: str = ""
    llm_summary_model: str = "gpt-4o-mini"
    llm_answer_model: str = "gpt-4o-mini"
    llm_concurrency: int = 8
    llm_timeout: float = 60.0
    llm_max_retries: int = 5
    # bot
    discord_token: str = field(default="", repr=False)  # a secret: never in repr() or logs
    discord_dev_guild: str = ""
    manager_role: str = ""
    max_concurrent_builds: int = 2
    ask_cooldown_seconds: float = 10.0

    @property
    def db_path(self) -> Path:
        return self.data_dir / "raptor.db"

    @property
    def index_dir(self) -> Path:
        return self.data_dir / "indices"

    @property
    def llm_configured(self) -> bool:
        return bool(self.llm_api_key or self.llm_base_url)

    @classmethod
    def from_env(cls, **overrides: object) -> Settings:
        """Settings from the variables in ENV_VARS (and `.env`); `overrides` win (CLI flags).

        An unset or empty variable keeps the default.
        """
        load_dotenv_file()
        values: dict[str, object] = {}
        for f in fields(cls):
            name = ENV_VARS[f.name]
            raw = os.environ.get(name, "").strip()
            if raw:
                values[f.name] = _parse(name, raw, str(f.type))
        for key, value in overrides.items():
            if key not in ENV_VARS:
                raise TypeError(f"unknown setting {key}")
            if value is not None:
                values[key] = Path(value) if key in {"data_dir", "cache_dir"} else value
        return cls(**values)  # type: ignore[arg-type]

    def redacted(self) -> dict[str, object]:
        """Settings safe to show or log: secrets replaced by whether they are set."""
        out: dict[str, object] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name in {"llm_api_key", "discord_token"}:
                value = "set" if value else "not set"
            out[f.name] = str(value) if isinstance(value, Path) else value
        return out


# The environment variable behind each setting (documented in .env.example).
ENV_VARS: dict[str, str] = {
    **{f.name: f"RAPTOR_{f.name.upper()}" for f in fields(Settings)},
    "llm_api_key": "OPENAI_API_KEY",
    "llm_base_url": "OPENAI_BASE_URL",
    "llm_summary_model": "RAPTOR_SUMMARY_MODEL",
    "llm_answer_model": "RAPTOR_ANSWER_MODEL",
    "discord_token": "DISCORD_TOKEN",
    "discord_dev_guild": "DISCORD_DEV_GUILD",
}
