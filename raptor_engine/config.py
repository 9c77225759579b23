"""Settings from the environment and `.env`, with defaults that work with no key and no Discord.

Every setting is documented in `.env.example`. The CLI and the bot both build a `Settings` here.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields
from pathlib import Path


def _env(name: str, default: str) -> str:
    value = os.environ.get(name)
    return default if value is None or value.strip() == "" else value.strip()


def _env_int(name: str, default: int) -> int:
    raw = _env(name, str(default))
    try:
        return int(raw)
    except ValueError:
        raise ValueError(f"{name} must be a whole number, not {raw!r}.") from None


def _env_float(name: str, default: float) -> float:
    raw = _env(name, str(default))
    try:
        return float(raw)
    except ValueError:
        raise ValueError(f"{name} must be a number, not {raw!r}.") from None


def load_dotenv_file(path: str | os.PathLike[str] = ".env") -> None:
    """Read `.env` into the environment without overriding what is already set."""
    try:
        from dotenv import load_dotenv
    except ImportError:  # python-dotenv is a dependency; this only guards odd installs
        return
    load_dotenv(path, override=False)


@dataclass
class Settings:
    # storage
    data_dir: Path = field(default_factory=lambda: Path("data"))
    # embedding
    embed_model: str = "all-MiniLM-L6-v2"
    embed_batch_size: int = 64
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
    questions_per_minute: int = 6
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
        """Settings from RAPTOR_* / OPENAI_* / DISCORD_* variables; `overrides` win (CLI flags)."""
        load_dotenv_file()
        d = cls()
        values: dict[str, object] = {
            "data_dir": Path(_env("RAPTOR_DATA_DIR", str(d.data_dir))),
            "embed_model": _env("RAPTOR_EMBED_MODEL", d.embed_model),
            "embed_batch_size": _env_int("RAPTOR_EMBED_BATCH_SIZE", d.embed_batch_size),
            "chunk_tokens": _env_int("RAPTOR_CHUNK_TOKENS", d.chunk_tokens),
            "summary_max_tokens": _env_int("RAPTOR_SUMMARY_MAX_TOKENS", d.summary_max_tokens),
            "summary_ratio": _env_float("RAPTOR_SUMMARY_RATIO", d.summary_ratio),
            "cluster_input_budget": _env_int("RAPTOR_CLUSTER_INPUT_BUDGET", d.cluster_input_budget),
            "cluster_threshold": _env_float("RAPTOR_CLUSTER_THRESHOLD", d.cluster_threshold),
            "cluster_dim": _env_int("RAPTOR_CLUSTER_DIM", d.cluster_dim),
            "max_clusters": _env_int("RAPTOR_MAX_CLUSTERS", d.max_clusters),
            "stop_nodes": _env_int("RAPTOR_STOP_NODES", d.stop_nodes),
            "seed": _env_int("RAPTOR_SEED", d.seed),
            "budget": _env_int("RAPTOR_BUDGET", d.budget),
            "top_k": _env_int("RAPTOR_TOP_K", d.top_k),
            "hnsw_ef": _env_int("RAPTOR_HNSW_EF", d.hnsw_ef),
            "max_file_bytes": _env_int("RAPTOR_MAX_FILE_BYTES", d.max_file_bytes),
            "max_documents": _env_int("RAPTOR_MAX_DOCUMENTS", d.max_documents),
            "max_kb_tokens": _env_int("RAPTOR_MAX_KB_TOKENS", d.max_kb_tokens),
            "questions_per_minute": _env_int("RAPTOR_QUESTIONS_PER_MINUTE", d.questions_per_minute),
            "llm_api_key": _env("OPENAI_API_KEY", d.llm_api_key),
            "llm_base_url": _env("OPENAI_BASE_URL", d.llm_base_url),
            "llm_summary_model": _env("RAPTOR_SUMMARY_MODEL", d.llm_summary_model),
            "llm_answer_model": _env("RAPTOR_ANSWER_MODEL", d.llm_answer_model),
            "llm_concurrency": _env_int("RAPTOR_LLM_CONCURRENCY", d.llm_concurrency),
            "llm_timeout": _env_float("RAPTOR_LLM_TIMEOUT", d.llm_timeout),
            "llm_max_retries": _env_int("RAPTOR_LLM_MAX_RETRIES", d.llm_max_retries),
            "discord_token": _env("DISCORD_TOKEN", d.discord_token),
            "discord_dev_guild": _env("DISCORD_DEV_GUILD", d.discord_dev_guild),
            "manager_role": _env("RAPTOR_MANAGER_ROLE", d.manager_role),
            "max_concurrent_builds": _env_int("RAPTOR_MAX_CONCURRENT_BUILDS", d.max_concurrent_builds),
            "ask_cooldown_seconds": _env_float("RAPTOR_ASK_COOLDOWN_SECONDS", d.ask_cooldown_seconds),
        }
        known = {f.name for f in fields(cls)}
        for key, value in overrides.items():
            if key not in known:
                raise TypeError(f"unknown setting {key}")
            if value is not None:
                values[key] = Path(value) if key == "data_dir" else value
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
