"""Read untrusted uploads in a worker process that has a memory limit and a deadline.

Why a process and not a thread: a parser stuck in C code (zlib, lxml, pypdf's content-stream loop) cannot
be interrupted from Python, and one that allocates without bound takes the whole bot down with it. The
child (`python -m raptor_engine.ingest.parse_worker`) imports only the loader, never torch, so it starts in
about a tenth of a second; it sets RLIMIT_AS (memory) and RLIMIT_CPU (a backstop) on itself before it
touches the file, and the parent kills it at the wall-clock deadline. A long-lived engine keeps one child
started ahead (`start_spare`), waiting for its header with the loader imported, so an upload does not wait
for the child's start; it sets the same limits when the header arrives. Caps inside the loader
(`LoadLimits`) give the specific sentence for the common bombs; the process limits are the guarantee for
everything else. The result comes back as JSON (never pickle, so a subverted child cannot run code in
the parent) and is checked before use.

Protocol: the parent writes one JSON header line, then the file's bytes, to the child's stdin; the
child writes one JSON object to stdout: {"document": ...} or {"refused": reason} or {"memory": true}.
"""

from __future__ import annotations

import json
import logging
import math
import os
import resource
import signal
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..errors import IngestError
from ..types import LoadedDocument, Section
from .load import LoadLimits, load_document, safe_filename

log = logging.getLogger(__name__)

EXIT_MEMORY = 3  # the child ran out of its address-space limit
EXIT_FAILED = 4  # the loader raised something that is not an IngestError (a bug or an odd file)
MAX_NOTICES, MAX_NOTICE_CHARS = 5, 300  # what a subverted child may pass on to the user, at most


@dataclass(frozen=True)
class WorkerLimits:
    """The process limits around one parse, and the loader's own caps."""

    timeout_s: float = 30.0
    memory_mb: int = 1024
    max_bytes: int | None = None
    load: LoadLimits = field(default_factory=LoadLimits)


@dataclass
class ParseStats:
    """What one parse cost, for logs and the robustness figures."""

    seconds: float = 0.0
    peak_rss_mb: float = 0.0  # the child's own peak resident memory (when it finished)
    outcome: str = ""  # "read" | "refused" | "timeout" | "memory" | "failed"


# ------------------------------------------------------------------------------------------------ parent


def load_isolated(
    filename: str, data: bytes, limits: WorkerLimits, stats: ParseStats | None = None
) -> tuple[LoadedDocument, ParseStats]:
    """`load_document` in a worker process; refusals, timeouts and memory exhaustion become IngestError.

    `stats`, when given, is filled in even when the file is refused (the robustness figures use it).
    """
    name = safe_filename(filename)
    header = {
        "filename": filename,
        "max_bytes": limits.max_bytes,
        "memory_mb": limits.memory_mb,
        "cpu_s": math.ceil(limits.timeout_s) + 1,
        "load": asdict(limits.load),
    }
    stats = stats if stats is not None else ParseStats()
    started = time.perf_counter()
    env = _child_environment()
    child = _take_spare(env) or _start_child(env)
    try:
        out, err = child.communicate(json.dumps(header).encode() + b"\n" + data, timeout=limits.timeout_s)
    except subprocess.TimeoutExpired:
        child.kill()
        child.communicate()
        stats.seconds, stats.outcome = time.perf_counter() - started, "timeout"
        log.warning("%s: parse killed after %.1f s", name, stats.seconds)
        raise IngestError(name, f"took longer than {limits.timeout_s:g} s to read.") from None
    stats.seconds = time.perf_counter() - started
    reply = _reply(out)
    stats.peak_rss_mb = float(reply.get("peak_rss_mb", 0.0))
    return _result(name, child.returncode, reply, err, limits, stats), stats


def _start_child(env: dict[str, str]) -> subprocess.Popen[bytes]:
    """The parse child, run with `-P`: `python -m` puts the folder the command runs in first on the child's
    path, so a `raptor_engine/` or `json.py` another user left in /tmp ran as this user on `cd /tmp; raptor
    ingest ...` (tried as uid 65534)."""
    return subprocess.Popen(
        [sys.executable, "-P", "-m", "raptor_engine.ingest.parse_worker"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )


# One parse child started ahead (`start_spare`), with the environment it was started with. It waits for its
# header with Python and the loader imported, so the next parse skips that start (~0.1-0.2 s a parse, a third
# to half of reading a 100k-token text). It has read nothing and set no limits yet: it sets them once the
# header arrives, as a child started for the parse does.
_spare: list[tuple[subprocess.Popen[bytes], dict[str, str]]] = []
_spare_lock = threading.Lock()


def start_spare() -> None:
    """Start a parse child for the next `load_isolated`, unless one is waiting already. For long-lived
    processes (the bot, a build worker, the benchmark), off the hot path: after warming up, after an ingest.
    A one-shot command does not call it: its one parse would not wait for a child started ahead."""
    env = _child_environment()
    with _spare_lock:
        if _spare and _spare[0][0].poll() is None and _spare[0][1] == env:
            return
        _discard_locked()
        try:
            _spare.append((_start_child(env), env))
        except OSError as exc:  # no process to spare (a process limit): each parse starts its own, as before
            log.warning("could not start a parse child ahead: %s", exc)


def discard_spare() -> None:
    """End the waiting parse child, if any (an engine closing)."""
    with _spare_lock:
        _discard_locked()


def _discard_locked() -> None:
    while _spare:
        child, _ = _spare.pop()
        if child.poll() is None:
            child.kill()
        child.communicate()  # reaps it and closes its pipes


def _take_spare(env: dict[str, str]) -> subprocess.Popen[bytes] | None:
    """The waiting parse child, if it is alive and was started with this environment (else it is ended)."""
    with _spare_lock:
        if not _spare:
            return None
        child, started_with = _spare[0]
        if child.poll() is None and started_with == env:
            _spare.clear()
            return child
        _discard_locked()
        return None


_PASSED_ON = ("PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR", "VIRTUAL_ENV", "SYSTEMROOT")


def _child_environment() -> dict[str, str]:
    """A minimal environment: no tokens or API keys for code that reads hostile bytes, and this very
    package first on the path, so the child runs the same loader as the parent wherever it was started."""
    env = {name: os.environ[name] for name in _PASSED_ON if name in os.environ}
    package_root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, os.environ.get("PYTHONPATH", "")) if p)
    env.update({"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MALLOC_ARENA_MAX": "2"})
    return env


def _reply(out: bytes) -> dict:
    try:
        reply = json.loads(out.decode("utf-8")) if out else {}
    except (UnicodeDecodeError, ValueError):
        return {}
    return reply if isinstance(reply, dict) else {}


def _result(
    name: str, returncode: int, reply: dict, err: bytes, limits: WorkerLimits, stats: ParseStats
) -> LoadedDocument:
    """Map the child's exit to a document or to one sentence; the detail goes to the log."""
    if returncode == 0 and "document" in reply:
        try:
            document = _document(reply["document"], limits)
        except (KeyError, TypeError, ValueError) as exc:
            stats.outcome = "failed"
            log.error("%s: the parse worker's reply was not a valid document: %r", name, exc)
            raise IngestError(name, "could not be read (the file reader failed on it).") from None
        stats.outcome = "read"
        return document
    if returncode == 0 and isinstance(reply.get("refused"), str):
        stats.outcome = "refused"
        raise IngestError(name, reply["refused"])
    detail = err.decode("utf-8", "replace")[-2000:]
    if returncode == -signal.SIGXCPU:
        stats.outcome = "timeout"
        raise IngestError(name, f"took longer than {limits.timeout_s:g} s to read.")
    if returncode == EXIT_MEMORY or reply.get("memory") or "MemoryError" in detail or returncode < 0:
        # A C library that fails to allocate may abort or crash instead of raising MemoryError.
        stats.outcome = "memory"
        log.warning("%s: parse ran out of memory (exit %s): %s", name, returncode, detail)
        raise IngestError(name, f"needs more than {limits.memory_mb:,} MB of memory to read.")
    stats.outcome = "failed"
    log.error("%s: parse worker failed (exit %s): %s", name, returncode, detail)
    raise IngestError(name, "could not be read (the file reader failed on it).")


def _document(raw: dict, limits: WorkerLimits) -> LoadedDocument:
    """Rebuild the document from JSON, checking what a subverted child could have bent."""
    text = str(raw["text"])
    if len(text) > limits.load.max_text_chars:
        raise ValueError("the parse worker returned more text than the limit")
    sections = []
    for start, end, page, heading in raw["sections"]:
        if not 0 <= int(start) <= int(end) <= len(text):
            raise ValueError("the parse worker returned a section outside the text")
        sections.append(
            Section(int(start), int(end), None if page is None else int(page), tuple(map(str, heading)))
        )
    notices = tuple(str(notice)[:MAX_NOTICE_CHARS] for notice in raw.get("notices", [])[:MAX_NOTICES])
    return LoadedDocument(
        name=str(raw["name"]), text=text, sections=sections, format=str(raw["format"]), notices=notices
    )


# ------------------------------------------------------------------------------------------------- child


def _limit_self(memory_mb: int, cpu_s: int) -> None:
    """Cap this process's address space and CPU time before reading anything untrusted."""
    memory = memory_mb * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s + 1))


def _peak_rss_mb() -> float:
    """This process's peak resident memory since exec (VmHWM; ru_maxrss can carry the parent's over)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux reports kB


def _encode(doc: LoadedDocument) -> dict:
    return {
        "name": doc.name,
        "text": doc.text,
        "format": doc.format,
        "sections": [[s.start, s.end, s.page, list(s.heading)] for s in doc.sections],
        "notices": list(doc.notices),
    }


def main() -> None:
    """Child entry point: limits first, then read header + bytes from stdin, answer on stdout."""
    stdin = sys.stdin.buffer
    header = json.loads(stdin.readline())
    _limit_self(int(header["memory_mb"]), int(header["cpu_s"]))
    # Errors only: a broken file can make pypdf warn once per object, and the parent buffers stderr.
    logging.basicConfig(level=logging.ERROR, stream=sys.stderr)
    out = sys.stdout
    try:
        data = stdin.read()
        doc = load_document(
            header["filename"], data, max_bytes=header["max_bytes"], limits=LoadLimits(**header["load"])
        )
        reply: dict = {"document": _encode(doc)}
        del data, doc
    except IngestError as error:
        reply = {"refused": error.reason}
    except MemoryError:
        reply = {"memory": True}
        out.write(json.dumps(reply))
        out.flush()
        os._exit(EXIT_MEMORY)
    except RecursionError as error:  # nesting deep enough to exhaust the stack is a bomb, not a bug
        print(f"RecursionError: {error}", file=sys.stderr)
        reply = {"refused": "is nested too deeply to read."}
    reply["peak_rss_mb"] = _peak_rss_mb()
    try:
        out.write(json.dumps(reply))
        out.flush()
    except MemoryError:
        os._exit(EXIT_MEMORY)


if __name__ == "__main__":
    try:
        main()
    except MemoryError:
        os._exit(EXIT_MEMORY)
    except Exception:
        logging.getLogger(__name__).exception("parse worker failed")
        sys.exit(EXIT_FAILED)
