"""`raptor`: the command-line face of the engine (the same API the bot calls).

Errors are one clear line on stderr and a non-zero exit; details go to the log (`-v`).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import io
import json
import logging
import os
import re
import shutil
import signal
import sqlite3
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

SIGINT_STATUS = 128 + signal.SIGINT  # what a shell reports for a command stopped by Ctrl-C
INTERRUPTED = "Interrupted; nothing unfinished was stored."

try:  # loading the engine takes a second or more: a Ctrl-C then is one line and status 130, no traceback
    import click

    from . import __version__
    from .config import Settings
    from .engine import (
        MODES,
        EmptyKnowledgeBaseError,
        Engine,
        IngestResult,
        TreePicture,
        readable_text,
        shown_text,
    )
    from .errors import RaptorError, closest_name, damaged_store, is_damaged_database, storage_failure
    from .ingest.load import file_types, read_local_file, safe_filename
    from .plugins import load_plugins
    from .query.answer import describe_documents
    from .query.support import MATCHED, describe_support, sources_title
    from .storage.archive import export_space, import_space
    from .storage.files import create_new, partial_path, rename_target, sweep_partials
    from .storage.records import DocumentInfo
    from .storage.spaces import DB_NAME, space_dir
    from .types import Answer, Progress, Turn, counted
except KeyboardInterrupt:
    sys.stderr.write(f"\n{INTERRUPTED}\n")
    sys.unraisablehook = lambda unraisable: None  # what the interrupt left half-made says nothing at exit
    raise SystemExit(SIGINT_STATUS) from None

log = logging.getLogger("raptor_engine")


# What the CLI never writes raw from a stored text: C0 controls but tab and line feed (ESC starts a
# terminal's escape sequences and OSC 52 clipboard writes; BEL, backspace and carriage return overwrite
# what was shown), DEL, C1 controls (0x9b is a one-byte CSI) and the bidi embeddings, overrides and
# isolates (U+202A-202E, U+2066-2069), which reorder a line to hide part of it.
_TERMINAL_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _visible_escape(match: re.Match[str]) -> str:
    """The character as Python writes it in a string literal: '\\x1b', '\\r', '\\u202e'."""
    return ascii(match.group())[1:-1]


def terminal_safe(text: str) -> str:
    """`text` with each terminal-unsafe character shown as its escape: loaders and name cleaning keep them
    out of a store, but a copied data directory, an older version's store or a database edited by hand
    can hold them, and what the CLI prints must not run on the user's terminal."""
    return _TERMINAL_UNSAFE.sub(_visible_escape, text)


def _say(message: str = "", *, err: bool = False, nl: bool = True, **style: Any) -> None:
    """Write `message` for a human (styled as click.style styles it), its unsafe characters escaped."""
    text = terminal_safe(message)
    click.echo(click.style(text, **style) if style else text, err=err, nl=nl)


def _json_text(value: Any, indent: int | None = None) -> str:
    """`value` as JSON whose text holds no terminal-unsafe character: json.dumps escapes C0 controls but
    writes DEL, C1 and bidi controls raw with ensure_ascii=False; as \\uXXXX escapes the value is the same."""
    text = json.dumps(value, indent=indent, ensure_ascii=False)
    return _TERMINAL_UNSAFE.sub(lambda match: f"\\u{ord(match.group()):04x}", text)


def _quiet_after_interrupt(unraisable: Any) -> None:
    """After a Ctrl-C, an object it cut short while being made (an event loop whose self-pipe was not
    yet opened) fails in its `__del__` at exit: that is no news for the user, so it goes to the log."""
    log.debug("after the interrupt: %s in %r", unraisable.exc_value, unraisable.object)


class ProgressBars:
    """tqdm bars on stderr, one per stage, fed by the engine's progress reports."""

    def __init__(self, enabled: bool):
        self.enabled = enabled
        self.bar: Any = None
        self.key: tuple[str, int] | None = None

    def __call__(self, event: Progress) -> None:
        if not self.enabled:
            return
        from tqdm import tqdm

        key = (event.stage, event.layer)
        if key != self.key:
            self.close()
            label = event.stage if not event.layer else f"{event.stage} L{event.layer}"
            self.bar = tqdm(
                total=event.total or None, desc=f"{label:>12}", unit="", leave=False, file=sys.stderr
            )
            self.key = key
        if self.bar is not None:
            self.bar.n = event.done
            self.bar.refresh()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None
            self.key = None


LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class SafeFormatter(logging.Formatter):
    """Log records with their terminal-unsafe characters shown as escapes (`terminal_safe`): a record can
    quote stored text (a node, a question, a file's name, a parser's message about the bytes it read),
    and `-v` prints it on the user's terminal as the CLI's own output is printed."""

    def format(self, record: logging.LogRecord) -> str:
        return terminal_safe(super().format(record))


class OneLineFormatter(SafeFormatter):
    """Log records as one line each, without their tracebacks: without -v a failure is its sentence,
    not a stack (Python's warnings, logged too, lose the source line printed under them)."""

    def format(self, record: logging.LogRecord) -> str:
        plain = logging.makeLogRecord(record.__dict__)
        plain.msg, plain.args = (record.getMessage().strip().splitlines() or [""])[0], None
        plain.exc_info, plain.exc_text, plain.stack_info = None, None, None
        line = super().format(plain)
        record.message = plain.message  # as Formatter.format leaves it on the record it formats
        return line


def one_line_logs(verbose: int) -> None:
    """Every handler already set up (ours, and Dask's own, which do not propagate to the root) prints
    records with unsafe characters escaped, and without -v without tracebacks; call again after
    importing distributed."""
    formatter = SafeFormatter if verbose else OneLineFormatter
    if not verbose:
        logging.captureWarnings(True)
    loggers = [
        logging.getLogger(),
        *(logging.getLogger(name) for name in list(logging.root.manager.loggerDict)),
    ]
    for logger in loggers:
        for handler in getattr(logger, "handlers", []):
            if type(handler.formatter) is not formatter:
                handler.setFormatter(formatter(LOG_FORMAT))


def one_line(error: BaseException) -> str:
    """What the user reads for a failure no command turned into a sentence (the traceback goes to -v)."""
    if isinstance(error, RaptorError):
        return str(error)
    sentence = storage_failure(error)
    if sentence is not None:
        return sentence
    if isinstance(error, OSError) and error.strerror:
        path = error.filename2 or error.filename  # of a rename, the destination: the path the user named
        return f"{error.strerror}: {path}." if path else f"{error.strerror}."
    detail = (str(error).strip().splitlines() or [""])[0]
    return (
        f"Unexpected {type(error).__name__}{': ' + detail if detail else ''} (run with -v for the details)."
    )


def _engine(ctx: click.Context) -> Engine:
    if ctx.obj.get("engine") is None:
        try:
            ctx.obj["engine"] = Engine(ctx.obj["settings"])
        except RaptorError as exc:  # a setting it cannot work with (RAPTOR_SPACE_PATTERN)
            _fail(exc)
    return ctx.obj["engine"]


def _fail(exc: BaseException) -> None:
    message = str(exc)
    if isinstance(exc, EmptyKnowledgeBaseError):  # a mistyped --kb: name the one meant
        message += _other_kbs(click.get_current_context())
    raise click.ClickException(message) from exc


SHOWN_KBS = 5  # knowledge bases named when none is close to the one asked for


def kb_suggestion(kb: str, names: list[str], prefix: str = "") -> str:
    """What to say after "'kb' has no documents": the close name (`Did you mean 'notes'?`, case and
    one typo apart), else the knowledge bases there are, the first few; '' when there are none. With a
    `prefix` (a guild's), `kb` and `names` come without it, so it weighs nothing in how close they are."""
    close = closest_name(kb, names)
    if close is not None:
        return f" Did you mean {prefix + close!r}?"
    others = [name for name in names if name != kb]
    if not others:
        return ""
    listed = ", ".join(repr(prefix + name) for name in others[:SHOWN_KBS])
    more = f" and {len(others) - SHOWN_KBS:,} more" if len(others) > SHOWN_KBS else ""
    return f" The knowledge bases here: {listed}{more}."


def _other_kbs(ctx: click.Context) -> str:
    """`kb_suggestion` for the command's --kb among the knowledge bases with documents of the store it would
    be in: a guild's (`guild-42-notes`) only its own guild's, never another's, the main store only its own."""
    kb = ctx.params.get("kb")
    engine = (ctx.obj or {}).get("engine")
    if not isinstance(kb, str) or engine is None:
        return ""
    names = kbs_beside(engine, kb)
    prefix = _space_prefix(engine, kb)
    if prefix and all(name.startswith(prefix) for name in names):  # 'guild-42-zzz' is not close to every name
        return kb_suggestion(kb[len(prefix) :], [name[len(prefix) :] for name in names], prefix)
    return kb_suggestion(kb, names)


def _space_prefix(engine: Engine, kb: str) -> str:
    """What names a guild's store (`guild-42-`), which every knowledge base there starts with; '' for none."""
    match = engine.spaces.pattern.match(kb) if engine.spaces.pattern is not None else None
    return match.group(0) if match else ""


def kbs_beside(engine: Engine, kb: str) -> list[str]:
    """The knowledge bases with documents in the store `kb` belongs to (none when that guild has no store)."""
    try:
        space = engine.spaces.space_of(kb)
        with engine.spaces.pinned(space, create=False) as found:
            names = found.store.kb_names()
    except RaptorError:  # no store for that guild (NotFoundError), or no guild's name at all
        return []
    return [name for name in names if engine.spaces.space_of(name) == space and engine.documents(name)]


def _require_documents(engine: Engine, kb: str) -> None:
    """Every command that works on one knowledge base refuses one with no documents alike: exit status 1,
    the same sentence (and the name meant, `_fail`), so a script tells a mistyped --kb from an answer."""
    if not engine.documents(kb):
        _fail(EmptyKnowledgeBaseError(f"The knowledge base {kb!r} has no documents yet; add one with: raptor ingest FILE --kb {kb}"))


def _check_png_target(path: Path) -> None:
    """Refuse a picture path that cannot be written before any work is done, in one sentence (a
    device or a pipe too: the picture is renamed over its path, storage/files.py)."""
    if path.is_dir():
        _fail(RaptorError(f"{path} is a folder; give a file name for the picture, e.g. {path / 'tree.png'}."))
    try:
        folder = rename_target(path).parent
    except RaptorError as exc:
        _fail(exc)
    if not folder.is_dir():
        _fail(RaptorError(f"Cannot write {path}: the folder {folder} does not exist."))
    if not os.access(folder, os.W_OK):
        _fail(RaptorError(f"Cannot write {path}: the folder {folder} is not writable."))


def _write_png(path: Path, data: bytes) -> None:
    """Write the picture whole or not at all, or fail with the sentence why (`_png_written`)."""
    failure = _png_written(path, data)
    if failure is not None:
        _fail(RaptorError(failure))


def _png_written(path: Path, data: bytes) -> str | None:
    """Write the picture whole or not at all: a temporary file beside it, then an atomic rename (onto a
    symlink's target, so that the link stays a link). None when written, else the one sentence why not."""
    try:  # again: a link planted while the answer was made is refused too
        target = rename_target(path)
    except RaptorError as exc:
        return str(exc)
    sweep_partials(target)
    temporary = partial_path(target)
    try:
        create_new(temporary, data)
        os.replace(temporary, target)
    except FileExistsError:  # planted at the name this process writes: not ours to remove
        log.info("writing %s failed", path, exc_info=True)
        return f"Cannot write {path}: {temporary} is in the way (another user's?); remove it."
    except OSError as exc:
        temporary.unlink(missing_ok=True)
        log.info("writing %s failed", path, exc_info=True)
        return f"Cannot write {path}: {exc.strerror or exc}."
    return None


F = TypeVar("F", bound=Callable[..., Any])


def _named(ctx: click.Context, param: click.Parameter, value: str) -> str:
    """A knowledge base name with something in it: `--kb "$KB"` with KB unset made a knowledge base ''."""
    name = _readable(ctx, param, value)
    if not name.strip():
        raise click.BadParameter("the knowledge base name is empty.")
    return name


def _readable(ctx: click.Context, param: click.Parameter, value: str) -> str:
    """A name that is stored and printed back (a knowledge base, who added a file): bytes that are not
    UTF-8 read as U+FFFD (SQLite cannot store what Python made of them), and control characters are
    dropped (a terminal escape in it would run in every `raptor tree` or `docs` that prints it)."""
    return shown_text(value)


def kb_option(fn: F) -> F:
    """`--kb NAME`, required, spelled and explained the same on every command that works on one."""
    return click.option("--kb", required=True, callback=_named, help="Knowledge base name.")(fn)


def output_options(fn: F) -> F:
    """The options every command that prints results shares (sqlite-utils' `output_options`): `--json`."""
    return click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")(fn)


def _print_json(value: Any) -> None:
    click.echo(_json_text(value, indent=2))
    ctx = click.get_current_context(silent=True)
    if ctx is not None:
        ctx.meta[_JSON_PRINTED] = True


_JSON_ASKED = "raptor.json"  # ctx.meta: --json is on the command line, so an error is JSON on stdout too
_JSON_PRINTED = "raptor.json_printed"  # ctx.meta: stdout already holds the JSON of what was done


def _json_asked(args: list[str]) -> bool:
    """Whether `--json` is among the options of a command line (not after `--`, where it is a value)."""
    return "--json" in (args[: args.index("--")] if "--" in args else args)


def _json_error(ctx: click.Context, message: str, status: int) -> None:
    """With --json, a failure is JSON on stdout as well as one line on stderr, `{"error": sentence,
    "status": exit status}`, so a program reading stdout always gets JSON; not when the command already
    printed the JSON of what it did (`ingest` of several files, one refused)."""
    if ctx.meta.get(_JSON_ASKED) and not ctx.meta.get(_JSON_PRINTED):
        ctx.meta[_JSON_PRINTED] = True
        click.echo(_json_text({"error": message, "status": status}))  # one line: `chat --json` is JSON Lines


class OneLineUsageError(click.ClickException):
    """A usage error shown as every other error is: one line on stderr (exit code 2, as click's)."""

    exit_code = 2


def _one_line(exc: click.UsageError) -> OneLineUsageError:
    """Click's usage error (usage text, a hint, then the error: three lines) as one sentence that
    says where the command's help is."""
    message = " ".join(exc.format_message().split())
    if exc.ctx is not None:
        message += f" See '{exc.ctx.command_path} --help'."
    return OneLineUsageError(terminal_safe(message))


# A group called with no arguments raises this (click 8.2 on) to print its help: not an error to shorten
_HELP_REQUESTS = getattr(click.exceptions, "NoArgsIsHelpError", ())


SIGPIPE_STATUS = 128 + signal.SIGPIPE  # what a shell reports for a command whose pipe's reader stopped


def _drop_the_closed_pipe() -> None:
    """Point stdout at /dev/null, so the text still buffered for a reader that closed the pipe is not
    another BrokenPipeError when Python flushes it at exit (the recipe of Python's `signal` docs)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


class RaptorGroup(click.Group):
    """The `raptor` group: usage errors of it and of every command under it are one line, and so is any
    failure a command did not turn into a sentence (exit status 1; its traceback is logged, shown with -v).

    Plugins' commands (plugins.py) join it when first needed: listing the commands (help, the docs) or a
    name the library does not define. Reading the entry points and importing raptor_tools cost a cold
    process ~0.2 s of CPU, which `raptor ingest` and the other built-in commands no longer pay."""

    _plugins_loaded = False

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        command = super().get_command(ctx, cmd_name)
        if command is None and self.load_plugins():
            command = super().get_command(ctx, cmd_name)
        return command

    def list_commands(self, ctx: click.Context) -> list[str]:
        self.load_plugins()
        return super().list_commands(ctx)

    def load_plugins(self) -> bool:
        """Add the registered plugins' commands, once; whether this call added them. A plugin's command
        never replaces a built-in one of the same name, so `raptor ingest` is the library's whichever way
        the plugins were loaded (by the command list or by an unknown name)."""
        if self._plugins_loaded:
            return False
        self._plugins_loaded = True
        built_in = dict(self.commands)
        load_plugins(self)
        for name, command in built_in.items():
            if self.commands.get(name) is not command:
                log.warning("a plugin's command %r is ignored: raptor has a command of that name", name)
                self.commands[name] = command
        return True

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if ctx.parent is None:
            ctx.meta[_JSON_ASKED] = _json_asked(args)
        try:
            return super().parse_args(ctx, args)
        except _HELP_REQUESTS:
            raise  # `raptor` alone prints its help
        except click.UsageError as exc:
            raise self._failed(ctx, _one_line(exc)) from exc

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except _HELP_REQUESTS:
            raise  # `raptor guilds` alone prints its help
        except click.UsageError as exc:  # a command's arguments: a missing option, a file that is not there
            raise self._failed(ctx, _one_line(exc)) from exc
        except click.exceptions.ClickException as exc:  # its sentence may quote a stored name
            exc.message = terminal_safe(exc.message)
            raise self._failed(ctx, exc) from exc.__cause__
        except (click.exceptions.Exit, click.Abort):
            raise
        except KeyboardInterrupt:  # Ctrl-C: writes are transactions, so say so and exit as shells expect
            _say(f"\n{INTERRUPTED}", err=True)
            _json_error(ctx, INTERRUPTED, SIGINT_STATUS)
            sys.unraisablehook = _quiet_after_interrupt
            raise click.exceptions.Exit(SIGINT_STATUS) from None
        except BrokenPipeError:  # `raptor docs | head -1`: the reader has what it wanted
            _drop_the_closed_pipe()
            raise click.exceptions.Exit(SIGPIPE_STATUS) from None
        except Exception as error:
            log.info("the command failed", exc_info=error)
            raise self._failed(ctx, click.ClickException(terminal_safe(one_line(error)))) from error

    @staticmethod
    def _failed(ctx: click.Context, exc: click.ClickException) -> click.ClickException:
        """`exc`, after its JSON on stdout when --json was asked for (`_json_error`)."""
        _json_error(ctx, exc.format_message(), exc.exit_code)
        return exc


@click.group(cls=RaptorGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="raptor", message="%(prog)s %(version)s")
@click.option(
    "--data-dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Where the database and indices live (RAPTOR_DATA_DIR, default ./data).",
)
@click.option(
    "-v", "--verbose", count=True, help="Log the detail on stderr (-v warnings and info, -vv debug)."
)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print the result as JSON (the command's own --json, given before it).",
)
@click.pass_context
def cli(ctx: click.Context, data_dir: Path | None, verbose: int, as_json: bool) -> None:
    """Build RAPTOR trees from documents and answer questions about them, with citations."""
    if as_json:  # `raptor --json docs --kb k` is `raptor docs --kb k --json`
        ctx.default_map = _json_defaults(ctx.command)
    logging.basicConfig(  # without -v nothing is logged: the error line says what the user needs
        level=[logging.CRITICAL, logging.INFO, logging.DEBUG][min(verbose, 2)],
        format=LOG_FORMAT,
        stream=sys.stderr,
    )
    one_line_logs(verbose)
    try:
        settings = Settings.from_env(data_dir=data_dir)
    except ValueError as exc:
        _fail(exc)
    ctx.obj = {"settings": settings, "engine": None, "verbose": verbose}
    ctx.call_on_close(lambda: ctx.obj["engine"] and ctx.obj["engine"].close())


def _json_defaults(group: click.Command) -> dict[str, Any]:
    """A default map that turns on --json for every command under `group` that has it."""
    defaults: dict[str, Any] = {}
    for name, command in getattr(group, "commands", {}).items():
        if isinstance(command, click.Group):
            defaults[name] = _json_defaults(command)
        elif any(param.name == "as_json" for param in command.params):
            defaults[name] = {"as_json": True}
    return defaults


def _print_ingest(name: str, result: IngestResult) -> None:
    """One line for the file called `name` here; a duplicate names the stored copy when it is called
    otherwise (a renamed or re-saved file), so the user can find it in `raptor docs`. `name` is shown as it
    would be stored (`safe_filename`): a file's own name may hold a line break or an escape, and this is
    one line."""
    doc = result.document
    with contextlib.suppress(RaptorError):  # a name with nothing usable never gets here: it was refused
        name = safe_filename(name)
    if result.status == "duplicate":
        stored = "" if doc.name == name else f" as {doc.name}"
        _say(f"{name}: already in the knowledge base{stored} (same content), nothing to do.")
        return
    _say(
        f"{doc.name}: {counted(result.chunks, 'chunk')}, {counted(result.layers, 'layer')}, "
        f"{counted(result.nodes, 'node')}, {counted(doc.tokens, 'token')} in {result.seconds:.1f}s"
        + (
            f" ({result.prompt_tokens:,} prompt + {result.completion_tokens:,} completion tokens)"
            if result.prompt_tokens
            else ""
        )
        + "".join(f"; {notice}" for notice in result.notices)
    )


@cli.command(help=f"Add FILES to a knowledge base: {file_types()}.")
@click.argument(
    "files", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False, path_type=Path)
)
@kb_option
@click.option(
    "--as", "added_by", default="cli", show_default=True, callback=_readable, help="Who added the files."
)
@output_options
@click.option("--quiet", is_flag=True, help="No progress bars.")
@click.option(
    "--scheduler",
    metavar="ADDRESS",
    default=None,
    help="Build on the Dask cluster at ADDRESS (tls://host:8786 with RAPTOR_DASK_TLS_*) instead of in this process.",
)
@click.pass_context
def ingest(
    ctx: click.Context,
    files: tuple[Path, ...],
    kb: str,
    added_by: str,
    as_json: bool,
    quiet: bool,
    scheduler: str | None,
) -> None:
    """Add FILES to a knowledge base (its help, above, names every type: `load.file_types`)."""
    if scheduler:
        from .workers import cluster_security

        try:
            cluster_security(ctx.obj["settings"], scheduler)
        except RaptorError as exc:
            _fail(exc)
    engine = _engine(ctx)
    outcomes: list[dict[str, Any]] = []
    try:
        asyncio.run(_ingest_files(engine, files, kb, added_by, as_json, quiet, scheduler, outcomes))
    except KeyboardInterrupt:
        if as_json:  # what was done before the interrupt, and what was not
            _print_json(_interrupted(files, outcomes))
        raise
    if as_json:
        _print_json(outcomes)
    if any(outcome["status"] == REFUSED for outcome in outcomes):
        sys.exit(1)


REFUSED = "refused"  # `ingest --json`: a file not added (its "error" says why); the others are "added", "duplicate"


def _file_label(path: Path) -> str:
    """The file as the command line named it, storable in JSON (a byte that is not UTF-8 as U+FFFD)."""
    return readable_text(str(path))


def _refusal(path: Path, error: BaseException) -> str:
    """The one sentence for a file that was not added, naming the file when the sentence does not already
    (a busy knowledge base, a full disk, the document limit): with several files, stderr says which one."""
    sentence = one_line(error)
    try:
        name = safe_filename(path.name)
    except RaptorError:
        name = _file_label(path)
    return sentence if sentence.startswith(name) else f"{name}: {sentence}"


def _interrupted(files: tuple[Path, ...], outcomes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`ingest --json` after Ctrl-C: the outcomes so far, the file being added "interrupted" (nothing of
    it was stored), and the files not reached "skipped"."""
    left = [_file_label(path) for path in files[len(outcomes) :]]
    return (
        outcomes
        + [{"file": name, "status": "interrupted", "error": INTERRUPTED} for name in left[:1]]
        + [{"file": name, "status": "skipped"} for name in left[1:]]
    )


def _print_namesakes(earlier: list[DocumentInfo], kb: str) -> None:
    """Under a file added beside documents of its name: each earlier one, and how to remove it."""
    for doc in earlier:
        sha = doc.sha256[:12]
        _say(
            f"  An earlier {doc.name} (sha256 {sha}, added {doc.added_at}) is still in the knowledge base; "
            f"raptor forget {sha} --kb {kb} removes it."
        )


async def _ingest_files(
    engine: Engine,
    files: tuple[Path, ...],
    kb: str,
    added_by: str,
    as_json: bool,
    quiet: bool,
    scheduler: str | None,
    outcomes: list[dict[str, Any]],
) -> None:
    """Ingest one file after another (on the cluster at `scheduler` when given), appending each file's
    outcome to `outcomes` as it is known (so an interrupt still says what was done): the result's JSON
    with the file as named, or "refused" with the sentence, which is also printed on stderr."""
    if scheduler:
        from .workers import BuildCluster

        one_line_logs(click.get_current_context().obj["verbose"])  # Dask's handlers, made on import
        engine.cluster = BuildCluster(engine.settings, scheduler)
    else:  # the model (exported to ONNX on a machine's first run) and UMAP's compilation are the
        # process's start-up, not the first file's build: its deadline must not pay for them
        await asyncio.to_thread(engine.warm, load_clustering=False)
    try:
        for path in files:
            bars = ProgressBars(enabled=not quiet and not as_json and sys.stderr.isatty())
            try:
                data = read_local_file(path, engine.settings.max_file_bytes)
                result = await engine.ingest(kb, path.name, data, added_by=added_by, progress=bars)
            except Exception as exc:  # this file is not added; the next ones still are
                bars.close()
                if not isinstance(exc, RaptorError):
                    log.info("adding %s failed", path, exc_info=exc)
                sentence = _refusal(path, exc)
                _say(f"Error: {sentence}", err=True)
                outcomes.append({"file": _file_label(path), "status": REFUSED, "error": sentence})
                continue
            bars.close()
            outcomes.append({"file": _file_label(path), **result.to_dict()})
            if not as_json:
                _print_ingest(path.name, result)
                if result.status == "added":
                    _print_namesakes(engine.namesakes(kb, result.document), kb)
    finally:
        if engine.cluster is not None:
            await engine.cluster.close()
            engine.cluster = None


@cli.command()
@click.argument("address")
@click.option("--name", default=None, help="The worker's name in the cluster (default: Dask's).")
@click.option(
    "--host",
    default=None,
    help="Listen on this interface (default: the one that reaches the scheduler; 127.0.0.1 for a local one).",
)
@click.option(
    "--listen", default=None, metavar="ADDRESS", help="Listen at this address (tls://HOST:PORT) instead of --host."
)
@click.pass_context
def worker(ctx: click.Context, address: str, name: str | None, host: str | None, listen: str | None) -> None:
    """Start a build worker for the Dask scheduler at ADDRESS (`dask worker` with the project's shape:
    one process, one thread, RAPTOR_BUILD_WORKER_MEMORY_MB; the bot loads the model into it). A tls://
    ADDRESS uses the RAPTOR_DASK_TLS_* files; see docs/SCALING.md."""
    from .workers import exec_worker

    if host and listen:
        _fail(RaptorError("Give --host or --listen, not both."))
    try:
        exec_worker(address, ctx.obj["settings"], name, host, listen)
    except RaptorError as exc:
        _fail(exc)


class TerminalAnswer:
    """An answer printed on a terminal as the model writes it (`Engine.ask`'s `on_text`). When the
    finished text differs from what was shown (markers the fallback added, a limit-cut tail trimmed),
    the shown lines are erased and the finished text printed in their place."""

    def __init__(self) -> None:
        self.printed = ""

    async def show(self, text: str) -> None:
        _say(text[len(self.printed) :], nl=False)
        sys.stdout.flush()
        self.printed = text

    def finish(self, text: str) -> None:
        """End the shown answer with `text`, the finished answer's."""
        if text != self.printed:
            click.echo(self._erase(), nl=False)  # the CLI's own sequence, not stored text
            _say(text, nl=False)
        _say()

    def _erase(self) -> str:
        """Back to where the answer began, clearing to the end of the screen (lines wrap at the width)."""
        columns = max(1, shutil.get_terminal_size().columns)
        rows = sum(max(1, -(-len(line) // columns)) for line in self.printed.split("\n"))
        return "\r" + (f"\x1b[{rows - 1}A" if rows > 1 else "") + "\x1b[J"


def _terminal_answer(as_json: bool = False) -> TerminalAnswer | None:
    """Where the answer streams: a terminal, unless JSON was asked for (piped output gets the result)."""
    return TerminalAnswer() if not as_json and sys.stdout.isatty() else None


def _print_answer(answer: Answer, shown: TerminalAnswer | None = None) -> None:
    """The answer, its sources and context. With `shown`, the text was printed as it was written."""
    if shown is not None and shown.printed:
        shown.finish(answer.text)
    else:
        shown = None
        if answer.searched_as:
            _say(answer.searched_as, dim=True)
        _say(answer.text)
    if answer.note:
        _say(answer.note, fg="yellow")
    checked = describe_support(len(answer.unsupported), len(answer.wrong_citations))
    if checked:
        _say(checked, fg="yellow")
    if shown is not None and answer.searched_as:  # known once the answer is done
        _say(answer.searched_as, dim=True)
    if not answer.has_context:
        return  # a reply to 'thanks!' or 'hello': nothing was searched or cited
    _say()
    _say(sources_title(answer), bold=True)
    for c in answer.citations:
        where = []
        if c.layer == 0:
            where += [c.pages_label] if c.pages_label else []
            where += [" > ".join(c.heading)] if c.heading else []
        else:
            where.append(f"summary of {c.leaf_count} leaves")
        doc = c.document or describe_documents(c.drawn_from)
        _say(
            f"  [{c.marker}] L{c.layer} node {c.node_id} · {doc}"
            + (f" · {', '.join(where)}" if where else "")
            + f" · score {c.score:.3f}"
            + (f" · {MATCHED}" if c.kind == MATCHED else "")
        )
    for wrong in answer.wrong_citations:
        _say(f"  [{wrong.marker}] does not support: {wrong.sentence}")
    ctx = answer.context
    layers = ", ".join(f"L{k}: {v}" for k, v in ctx.nodes_per_layer().items())
    _say(
        f"Context: {ctx.tokens_used}/{ctx.budget} tokens, {counted(len(ctx.nodes), 'node')} ({layers}), {ctx.mode}, "
        f"backend {answer.backend}"
    )


STDIN_QUESTION_BYTES = 64 * 1024  # far over any question the engine takes, so its length error still applies


def _question(ctx: click.Context, param: click.Parameter, value: str) -> str:
    """QUESTION as given, or `-`: read from stdin (`echo "who?" | raptor ask - --kb k`), the first 64 KiB
    at most, so a stream that never ends (`< /dev/zero`) is refused as too long instead of read forever;
    bytes that are not UTF-8 read as U+FFFD, as a typed question's do."""
    if value != "-":
        return value
    stream = getattr(sys.stdin, "buffer", None)
    data = stream.read(STDIN_QUESTION_BYTES) if stream is not None else sys.stdin.read(STDIN_QUESTION_BYTES).encode()
    return data.decode("utf-8", errors="replace")


@cli.command()
@click.argument("question", callback=_question)
@kb_option
@click.option("--mode", type=click.Choice(MODES), default="collapsed", show_default=True)
@click.option(
    "--budget", type=click.IntRange(min=1), default=None, help="Context token budget (default 2000)."
)
@click.option(
    "--layer", "layers", type=click.IntRange(min=0), multiple=True, help="Only nodes of this layer (repeatable)."
)
@click.option("--document", "documents", multiple=True, help="Only nodes of this document (repeatable).")
@output_options
@click.option(
    "--tree-png",
    type=click.Path(path_type=Path),
    help="Also write a picture of the tree with the answer's context nodes highlighted (PNG).",
)
@click.pass_context
def ask(
    ctx: click.Context,
    question: str,
    kb: str,
    mode: str,
    budget: int | None,
    layers: tuple[int, ...],
    documents: tuple[str, ...],
    as_json: bool,
    tree_png: Path | None,
) -> None:
    """Answer QUESTION from a knowledge base, citing the nodes used.

    QUESTION `-` reads it from stdin (`echo "Who?" | raptor ask - --kb notes`)."""
    engine = _engine(ctx)
    if tree_png is not None:
        _check_png_target(tree_png)
    _require_documents(engine, kb)
    shown = _terminal_answer(as_json)
    try:
        answer = asyncio.run(
            engine.ask(
                kb,
                question,
                mode=mode,
                budget=budget,
                layers=list(layers) or None,
                documents=list(documents) or None,
                asked_by="cli",
                on_text=shown.show if shown is not None else None,
            )
        )
    except RaptorError as exc:
        _fail(exc)
    out = answer.to_dict()
    picture = failure = None
    if tree_png is not None:  # the answer is printed whatever becomes of the picture, its failure said after
        picture, failure = _answer_picture(engine, kb, answer, tree_png)
        out.update(tree_png=str(tree_png), highlighted=picture.highlighted if picture else [])
        if failure:
            out["tree_png_error"] = failure
    if as_json:
        _print_json(out)
    else:
        _print_answer(answer, shown)
    if picture is not None and failure is None and not as_json:
        _say(
            f"Tree picture: {tree_png} ({len(picture.highlighted)} context nodes highlighted, "
            f"{len(picture.cited)} cited; {len(picture.png) / 1000:,.0f} kB)"
        )
    if failure:
        _say(f"Error: {failure}", err=True)
        sys.exit(1)


def _answer_picture(engine: Engine, kb: str, answer: Answer, path: Path) -> tuple[TreePicture | None, str | None]:
    """The tree with exactly the answer's context highlighted (its cited nodes distinct), written to `path`;
    with the sentence why not, when it could not be drawn or written."""
    try:
        picture = engine.tree_picture(
            kb,
            highlight=[n.node_id for n in answer.context.nodes],
            cited=[c.node_id for c in answer.citations],
            caption=answer.question,
        )
    except RaptorError as exc:
        return None, str(exc)
    return picture, _png_written(path, picture.png)


@cli.command()
@kb_option
@click.option("--mode", type=click.Choice(MODES), default="collapsed", show_default=True)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print each answer as one JSON object on its own line (no prompt).",
)
@click.pass_context
def chat(ctx: click.Context, kb: str, mode: str, as_json: bool) -> None:
    """Ask questions with follow-ups: each question is answered with the conversation so far."""
    engine = _engine(ctx)
    _require_documents(engine, kb)  # a mistyped --kb: say so once, not after every question
    if not as_json:
        _say(f"Backend: {engine.backend_name}. Empty line or Ctrl-D to stop.")
    if isinstance(sys.stdin, io.TextIOWrapper):  # a byte that is not UTF-8 reads as U+FFFD, not a crash
        sys.stdin.reconfigure(errors="replace")
    history: list[Turn] = []
    failed = 0

    async def loop() -> None:
        nonlocal failed
        while True:
            try:
                question = await asyncio.to_thread(input, "" if as_json else "> ")
            except EOFError:
                return
            if not question.strip():
                return
            shown = _terminal_answer(as_json)
            try:
                answer = await engine.ask(
                    kb,
                    question,
                    mode=mode,
                    history=history,
                    asked_by="cli",
                    on_text=shown.show if shown is not None else None,
                )
            except RaptorError as exc:
                if shown is not None and shown.printed:
                    _say()
                _say(f"Error: {exc}", err=True)
                if as_json:  # one line per question, so a program reading them stays in step
                    click.echo(_json_text({"question": readable_text(question), "error": str(exc), "status": 1}))
                failed += 1
                continue
            if as_json:  # JSON Lines: a program reads one answer per line as it comes
                click.echo(_json_text(answer.to_dict()))
            else:
                _print_answer(answer, shown)
            history.extend([Turn("user", question), Turn("assistant", answer.text)])

    asyncio.run(loop())
    if failed:  # as `ingest` of several files: the others were answered, and the status says not all were
        sys.exit(1)


@cli.command()
@kb_option
@output_options
@click.pass_context
def docs(ctx: click.Context, kb: str, as_json: bool) -> None:
    """List a knowledge base's documents."""
    engine = _engine(ctx)
    _require_documents(engine, kb)
    documents = engine.documents(kb)
    if as_json:
        _print_json([d.to_dict() for d in documents])
        return
    for d in documents:
        _say(
            f"{d.name}  {counted(d.size, 'byte')} · {counted(d.chunks, 'chunk')} · {counted(d.layers, 'layer')} · "
            f"{counted(d.tokens, 'token')} · "
            f"added by {d.added_by or '?'} at {d.added_at} · sha256 {d.sha256[:12]}"
        )


@cli.command()
@click.argument("document")
@kb_option
@output_options
@click.pass_context
def forget(ctx: click.Context, document: str, kb: str, as_json: bool) -> None:
    """Remove DOCUMENT (its name, or a sha256 prefix) from a knowledge base."""
    engine = _engine(ctx)
    _require_documents(engine, kb)  # a mistyped --kb is not "no document named ..."
    waited = functools.partial(_say_forget_waits, kb, engine.settings.writer_wait)
    try:
        removed = asyncio.run(engine.forget(kb, document, waiting=waited))
    except RaptorError as exc:
        _fail(exc)
    if as_json:
        _print_json({"removed": removed.to_dict()})
        return
    _say(f"Removed {removed.name} ({counted(removed.nodes, 'node')}).")


def _say_forget_waits(kb: str, wait_s: float) -> None:
    """A removal waits for an upload another process is building into the same knowledge base (the whole
    build, up to RAPTOR_WRITER_WAIT): say so on stderr at once, so a script or a person sees why."""
    _say(
        f"Waiting for another process's upload to {kb!r} to finish (at most {wait_s:g} s, RAPTOR_WRITER_WAIT).",
        err=True,
    )


@cli.command()
@kb_option
@output_options
@click.option(
    "--png",
    type=click.Path(path_type=Path),
    help="Also write a picture of the whole tree: layers, edges, documents (PNG).",
)
@click.pass_context
def tree(ctx: click.Context, kb: str, as_json: bool, png: Path | None) -> None:
    """Show a knowledge base's layers: node counts and sizes (and, with --png, a picture)."""
    engine = _engine(ctx)
    picture = None
    if png is not None:
        _check_png_target(png)
    _require_documents(engine, kb)
    if png is not None:
        try:
            picture = engine.tree_picture(kb)
        except RaptorError as exc:
            _fail(exc)
        _write_png(png, picture.png)
    info = engine.tree_info(kb)
    if as_json:
        extra = {"png": str(png)} if png is not None else {}
        _print_json({**info.to_dict(), "builds": engine.builds(kb, 5), **extra})
        return
    _say(
        f"{kb}: {counted(info.documents, 'document')}, {counted(info.nodes, 'node')}, {counted(info.tokens, 'token')}"
    )
    for layer in info.layers:
        label = info.layer_label(layer)
        _say(
            f"  L{layer.layer}  {layer.nodes:>6} {label:<34} {layer.tokens:>9,} tokens  (avg {layer.tokens // max(layer.nodes, 1)})"
        )
    if picture is not None:
        grouped = "; crowded layers drawn as groups" if picture.binned else ""
        _say(f"Picture: {png} ({len(picture.png) / 1000:,.0f} kB{grouped})")


@cli.command()
@click.option("--no-repair", is_flag=True, help="Only report; do not rebuild indices.")
@output_options
@click.pass_context
def doctor(ctx: click.Context, no_repair: bool, as_json: bool) -> None:
    """Check the database and indices; rebuild derived indices from SQLite."""
    report = _engine(ctx).doctor(repair=not no_repair)
    if as_json:
        _print_json({"healthy": report.healthy, "problems": report.problems, "repaired": report.repaired})
        sys.exit(0 if report.healthy else 1)
    for problem in report.problems:
        _say(f"problem: {problem}" + (" (repaired)" if problem in report.repaired else ""))
    if report.healthy:
        _say("healthy" if not report.problems else "repaired")
    else:
        sys.exit(1)


@cli.group()
def guilds() -> None:
    """A Discord server's own store (data/guilds/<id>/): list, move between data directories, delete."""


@guilds.command("list")
@output_options
@click.pass_context
def guilds_list(ctx: click.Context, as_json: bool) -> None:
    """The servers with a store here, their knowledge bases and size on disk."""
    engine = _engine(ctx)
    rows = []
    for name in engine.spaces.names():
        directory = space_dir(engine.settings, name)
        size = sum(p.stat().st_size for p in directory.rglob("*") if p.is_file())
        row: dict[str, Any] = {"guild": name, "knowledge_bases": [], "bytes": size}
        try:
            row["knowledge_bases"] = engine.knowledge_bases(name)
        except sqlite3.DatabaseError as error:  # one damaged store: say which, and list the others
            if not is_damaged_database(error):
                raise
            row["damaged"] = damaged_store(directory / DB_NAME, error)
        rows.append(row)
    damaged = any("damaged" in row for row in rows)
    if as_json:
        _print_json(rows)
    else:
        for row in rows:
            sizes = f"{len(row['knowledge_bases'])} knowledge base(s), {row['bytes'] / 1e6:,.1f} MB"
            _say(f"{row['guild']}: {row['damaged'] if 'damaged' in row else sizes}")
    if damaged:
        sys.exit(1)


@guilds.command("export")
@click.argument("guild")
@click.argument("archive", type=click.Path(dir_okay=False, writable=True, path_type=Path))
@output_options
@click.pass_context
def guilds_export(ctx: click.Context, guild: str, archive: Path, as_json: bool) -> None:
    """Write GUILD's store to ARCHIVE (.tar): a consistent snapshot, taken while the bot runs."""
    engine = _engine(ctx)
    if guild not in engine.spaces.names():  # the sentence `guilds delete` says of a guild with no store
        _fail(RaptorError(f"There is no store for {guild} in this data directory."))
    try:
        manifest = export_space(engine.spaces, guild, archive)
    except RaptorError as exc:
        _fail(exc)
    if as_json:
        _print_json({"guild": guild, "archive": str(archive), "knowledge_bases": manifest["knowledge_bases"]})
        return
    _say(f"{guild}: {len(manifest['knowledge_bases'])} knowledge base(s) written to {archive}")


@guilds.command("import")
@click.argument("archive", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@output_options
@click.pass_context
def guilds_import(ctx: click.Context, archive: Path, as_json: bool) -> None:
    """Add the store in ARCHIVE (from `raptor guilds export`) to this data directory."""
    try:
        manifest = import_space(_engine(ctx).spaces, archive)
    except RaptorError as exc:
        _fail(exc)
    if as_json:
        _print_json({"guild": manifest["space"], "knowledge_bases": manifest["knowledge_bases"]})
        return
    _say(f"{manifest['space']}: {len(manifest['knowledge_bases'])} knowledge base(s) imported")


@guilds.command("delete")
@click.argument("guild")
@click.option("--yes", is_flag=True, required=True, help="Confirm: the store cannot be recovered.")
@output_options
@click.pass_context
def guilds_delete(ctx: click.Context, guild: str, yes: bool, as_json: bool) -> None:
    """Delete GUILD's store from this data directory (after it was imported elsewhere)."""
    try:
        deleted = _engine(ctx).delete_space(guild)
    except RaptorError as exc:
        _fail(exc)
    if not deleted:
        _fail(RaptorError(f"There is no store for {guild} in this data directory."))
    if as_json:
        _print_json({"guild": guild, "deleted": True})
        return
    _say(f"{guild}: deleted")


def main() -> None:
    cli(prog_name="raptor")


if __name__ == "__main__":
    main()
