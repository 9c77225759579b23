"""Text generated from the code for the docs, so that the docs cannot drift from it.

cog (https://cog.readthedocs.io) calls these from the markers in docs/CLI.md, docs/CONFIGURATION.md and
`.env.example`; `make docs` regenerates them and tests/test_docs.py fails when they differ from the code.
README.md's demo output is generated the same way, from a run of the Makefile's demo commands.
Settings come from `ENV_DOCS` in raptor_engine/config.py, commands from the `raptor` click group (its
plugins included) and `python -m bot`'s argument parser.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import textwrap
from dataclasses import MISSING, fields
from pathlib import Path

import click

from raptor_engine.config import ENV_DOCS, ENV_SECTIONS, ENV_VARS, EnvDoc, Settings

REGENERATE = "make docs"
WIDTH = 100  # the width of `.env.example`'s comments
HELP_WIDTH = 80  # help text at click's own widest: what `--help` prints on any terminal of 80 columns or more


def undocumented_settings() -> list[str]:
    """Environment variables of `Settings` fields that have no line in ENV_DOCS."""
    return sorted(set(ENV_VARS.values()) - set(ENV_DOCS))


def unknown_sections() -> list[str]:
    """Sections named in ENV_DOCS but missing from ENV_SECTIONS."""
    return sorted({doc.section for doc in ENV_DOCS.values()} - set(ENV_SECTIONS))


def _check_documented() -> None:
    missing, sections = undocumented_settings(), unknown_sections()
    if missing or sections:
        raise ValueError(
            "raptor_engine/config.py: add "
            + "; ".join(
                ([f"an ENV_DOCS entry for {', '.join(missing)}"] if missing else [])
                + ([f"{', '.join(sections)} to ENV_SECTIONS"] if sections else [])
            )
        )


def _format(value: object) -> str:
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


_FIELD_OF = {env: field for field, env in ENV_VARS.items()}  # each variable's Settings field


def default_value(name: str, doc: EnvDoc) -> str:
    """The value `.env.example` shows for a variable: its `Settings` default unless ENV_DOCS says otherwise
    (the field's declared default, read without making a Settings for each of the variables)."""
    if doc.default is not None:
        return doc.default
    if name not in _FIELD_OF:
        raise ValueError(
            f"raptor_engine/config.py: {name} is not a Settings field, so its ENV_DOCS entry needs a default"
        )
    declared = Settings.__dataclass_fields__[_FIELD_OF[name]]
    if declared.default_factory is not MISSING:
        # computed when Settings is made (a home directory, a CPU count): the docs would differ per machine
        raise ValueError(
            f"raptor_engine/config.py: {name}'s default is computed, so its ENV_DOCS entry needs default= "
            "(the text .env.example shows)"
        )
    return _format(declared.default)


def _by_section() -> dict[str, list[tuple[str, EnvDoc]]]:
    """Variables grouped by section, sections in ENV_SECTIONS order, variables in Settings field order."""
    _check_documented()
    order = {ENV_VARS[f.name]: i for i, f in enumerate(fields(Settings))}
    grouped: dict[str, list[tuple[str, EnvDoc]]] = {section: [] for section in ENV_SECTIONS}
    for name, doc in sorted(ENV_DOCS.items(), key=lambda item: order.get(item[0], len(order))):
        grouped[doc.section].append((name, doc))
    return {section: items for section, items in grouped.items() if items}


def _comment(text: str) -> str:
    return "\n".join(textwrap.wrap(text, WIDTH - 2, initial_indent="# ", subsequent_indent="# ")) + "\n"


def env_example() -> str:
    """The body of `.env.example`: every variable under its section, with its meaning as a comment."""
    out = []
    for section, items in _by_section().items():
        out.append(f"\n# --- {section} " + "-" * max(3, WIDTH - 8 - len(section)) + "\n")
        if ENV_SECTIONS[section]:
            out.append(_comment(ENV_SECTIONS[section]))
        for name, doc in items:
            out.append(_comment(doc.text) + f"{name}={default_value(name, doc)}\n")
    return "".join(out)


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def configuration_tables() -> str:
    """docs/CONFIGURATION.md's tables: per section, every variable, its default and meaning."""
    out = []
    for section, items in _by_section().items():
        out.append(f"\n## {section}\n\n")
        if ENV_SECTIONS[section]:
            out.append(ENV_SECTIONS[section] + "\n\n")
        out.append("| variable | default | meaning |\n|---|---|---|\n")
        for name, doc in items:
            value = default_value(name, doc)
            shown = f"`{value}`" if value else "(empty)"
            out.append(f"| `{name}` | {shown} | {_cell(doc.text)} |\n")
    return "".join(out)


def _context(command: click.Command, name: str, parent: click.Context | None) -> click.Context:
    """The context `raptor ... --help` would get, at a fixed width."""
    settings = {"terminal_width": HELP_WIDTH, "max_content_width": HELP_WIDTH, **command.context_settings}
    return click.Context(command, info_name=name, parent=parent, **settings)


def _commands(group: click.Group, ctx: click.Context) -> list[tuple[str, click.Command, click.Context]]:
    """Every command under `group`, depth first, sub-groups' commands included, with its context."""
    found = []
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        if command is None or command.hidden:
            continue
        sub = _context(command, name, ctx)
        found.append((sub.command_path, command, sub))
        if isinstance(command, click.Group):
            found.extend(_commands(command, sub))
    return found


def _fence(text: str) -> str:
    return "```text\n" + text.rstrip() + "\n```\n"


def cli_reference() -> str:
    """docs/CLI.md's body: `raptor --help`, then every command's `--help` under a heading of its own."""
    from raptor_engine.cli import cli

    root = _context(cli, "raptor", None)
    out = ["\n## raptor\n\n", _fence(cli.get_help(root))]
    for path, command, ctx in _commands(cli, root):
        out.append(f"\n## {path}\n\n" + _fence(command.get_help(ctx)))
    return "".join(out)


def bot_help() -> str:
    """`python -m bot --help`, as its argument parser prints it."""
    from bot.__main__ import parse_args

    buffer = io.StringIO()
    previous = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = str(HELP_WIDTH)  # argparse wraps to $COLUMNS
    try:
        with contextlib.redirect_stdout(buffer), contextlib.suppress(SystemExit):
            parse_args(["--help"])
    finally:
        if previous is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = previous
    return "\n## python -m bot\n\n" + _fence(buffer.getvalue())


# The files cog regenerates (`make docs`), relative to the repository root; the Makefile lists the same.
GENERATED = (".env.example", "docs/CLI.md", "docs/CONFIGURATION.md")

# -- what `make demo` prints, shown in README.md ------------------------------------------------------
# `make docs` regenerates README.md's demo block by running the demo's commands; the block holds timings
# and floating-point scores, so it is checked against a fresh run by tests/test_docs.py (the seconds
# aside, scores to within a rounding step) rather than by cog's exact comparison.
DEMO_DOC = "README.md"
ROOT = Path(__file__).resolve().parent.parent
_DEMO_COMMAND = re.compile(r"^\t\$\(VENV\)/bin/raptor (.+)$")


def demo_commands(makefile: Path = ROOT / "Makefile") -> list[str]:
    """The `raptor` command lines of the Makefile's demo target, in order, as make echoes them."""
    lines = makefile.read_text().split("\ndemo:", 1)[1].split("\n\n", 1)[0].splitlines()[1:]
    commands = [m.group(1) for m in map(_DEMO_COMMAND.match, lines) if m]
    if not commands:
        raise ValueError("the Makefile's demo target runs no `$(VENV)/bin/raptor` command")
    return commands


def _demo_env() -> dict[str, str]:
    """The environment of a newcomer's first `make demo`: no LLM, no settings of ours but the cache's."""
    env = {
        name: value
        for name, value in os.environ.items()
        if name not in ("OPENAI_API_KEY", "OPENAI_BASE_URL")
        and (not name.startswith("RAPTOR_") or name == "RAPTOR_CACHE_DIR")
    }
    return {**env, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}


def demo_transcript() -> str:
    """What `make demo` prints once the environment is installed: each command as make echoes it, then
    its output. Run in a new data directory, away from the checkout (and any `.env` in it)."""
    import shlex
    import subprocess
    import sys
    import tempfile

    out = []
    with tempfile.TemporaryDirectory(prefix="raptor-demo-") as scratch:
        for line in demo_commands():
            args = shlex.split(line)
            local = [str(ROOT / a) if (ROOT / a).is_file() else a for a in args]
            run = subprocess.run(
                [sys.executable, "-m", "raptor_engine.cli", "--data-dir", str(Path(scratch) / "data"), *local],
                cwd=scratch, env=_demo_env(), capture_output=True, text=True, timeout=600,
            )  # fmt: skip
            if run.returncode != 0:
                raise RuntimeError(f"raptor {line} failed:\n{run.stderr[-2000:]}")
            out.append(f".venv/bin/raptor {line}\n{run.stdout}")
    return "".join(out)


# What the demo's exact tree, scores and quotes depend on besides the code: the packages that compute
# its vectors and clusters, and the CPU's vector instructions (onnxruntime picks its int8 kernels by them).
NUMERIC_PACKAGES = (
    "onnxruntime", "onnx", "torch", "transformers", "sentence-transformers", "tokenizers",
    "umap-learn", "numba", "scikit-learn", "scipy", "numpy", "hnswlib",
)  # fmt: skip
_KERNEL_FLAGS = (
    ("avx512_vnni", "avx512-vnni"),
    ("avx_vnni", "avx-vnni"),
    ("avx512bw", "avx512"),
    ("avx2", "avx2"),
)


def cpu_kernel_class(cpuinfo: str | None = None) -> str:
    """The widest of the instruction sets onnxruntime chooses its int8 kernels by, e.g. `avx512-vnni`."""
    import platform

    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text()
        except OSError:
            return platform.machine() or "unknown"
    flags = set(
        re.findall(r"\b\w+\b", next((line for line in cpuinfo.splitlines() if line.startswith("flags")), ""))
    )
    return next((name for flag, name in _KERNEL_FLAGS if flag in flags), platform.machine() or "baseline")


def numeric_environment() -> str:
    """The versions and CPU the demo's figures were computed with: a run elsewhere may build another tree."""
    from importlib.metadata import PackageNotFoundError, version

    def installed(name: str) -> str:
        try:
            return version(name)
        except PackageNotFoundError:
            return "absent"

    return ", ".join(f"{name} {installed(name)}" for name in NUMERIC_PACKAGES) + f"; cpu {cpu_kernel_class()}"


def demo_block() -> str:
    """README.md's demo block: `make demo`'s output, fenced, then the environment that printed it."""
    return _fence(demo_transcript()) + f"<!-- demo environment: {numeric_environment()} -->\n"


def suggest_entries(env_example_text: str) -> str:
    """ENV_DOCS lines for the settings that lack one, their text taken from a hand-written `.env.example`.

    For merging a branch that documented a new setting in `.env.example` only: the comment lines right
    above `NAME=` become its text, the `# --- Section ---` above it its section.
    """
    section, comment, found = "", [], {}
    for line in env_example_text.splitlines():
        stripped = line.strip()
        header = re.match(r"^# -+ (.+?) -+$", stripped)
        if header:
            section, comment = header.group(1), []
        elif stripped.startswith("#"):
            comment.append(stripped.lstrip("#").strip())
        elif "=" in stripped:
            found[stripped.split("=", 1)[0]] = (section, " ".join(c for c in comment if c))
            comment = []
        else:
            comment = []
    out = []
    for name in undocumented_settings():
        section, text = found.get(name, ("", ""))
        out.append(f"    {name!r}: EnvDoc({section or 'SECTION'!r}, {text or 'TEXT'!r}),")
    return "\n".join(out)


if __name__ == "__main__":  # python -m raptor_tools.docgen suggest OTHER/.env.example
    import sys

    if len(sys.argv) != 3 or sys.argv[1] != "suggest":
        sys.exit("usage: python -m raptor_tools.docgen suggest PATH/.env.example")
    print(suggest_entries(Path(sys.argv[2]).read_text()) or "every setting has an ENV_DOCS entry")
