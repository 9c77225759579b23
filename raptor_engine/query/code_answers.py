"""What a function returns, raises or yields, read from its code in the context.

A question such as "what does parse_config return?" shares its words with the function's `def` line, so
ranking sentences quotes that line; the answer is the `return` line inside the function's body, which
shares none. When the question asks what a named function returns, raises (throws) or yields and the
context holds that function's code, the answer quotes those lines of its body, each after the condition
it stands under (`if "harbour" not in settings:` before its `raise`). Anything else is left to ranking.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..ingest.chunk import line_spans
from ..types import ContextNode

_NAME = r"`?(?P<name>[A-Za-z_$][\w$]*(?:(?:\.|::|#)[A-Za-z_$][\w$]*)*)(?:\(\))?`?"
_OWNER = r"(?:(?:the|a|an)\s+)?(?:(?:function|method|generator|routine|call)\s+)?"
_AFTER = r"(?:\s+(?:function|method|generator|routine|call))?"
_MODAL = r"(?:does|do|did|will|would|can|could|might|may|should)"
# "What does parse_config return?", "Which errors can the load() method throw?", "When does it raise?"
_ASKS_DOING = re.compile(
    rf"^\W*(?:(?:when|under\s+what\s+conditions?|in\s+what\s+cases?)\s+|(?:what|which)\s+(?:[\w-]+\s+){{0,2}}?)?"
    rf"{_MODAL}\s+{_OWNER}{_NAME}{_AFTER}\s+(?:ever\s+|actually\s+|normally\s+)?"
    rf"(?P<verb>return|raise|throw|yield)s?\b",
    re.IGNORECASE,
)
# "What is returned by parse_config?", "What gets thrown from load()?"
_ASKS_DONE = re.compile(
    rf"^\W*(?:what|which)\s+(?:[\w-]+\s+){{0,2}}?(?:is|are|gets|get|was|were|will\s+be)\s+"
    rf"(?P<verb>return|rais|throw|yield)(?:ed|n)\s+(?:by|from)\s+{_OWNER}{_NAME}",
    re.IGNORECASE,
)
# "What is the return value of parse_config?", "What's the return type of load()?"
_ASKS_VALUE = re.compile(
    rf"\b(?P<verb>return)\s+(?:value|values|type|types)\s+(?:of|from)\s+{_OWNER}{_NAME}", re.IGNORECASE
)
_RAISES = re.compile(r"(?:raise|throw)\b")  # Python raises what other languages throw: either answers
_STATEMENTS = {
    "return": re.compile(r"return\b"),
    "rais": _RAISES,
    "raise": _RAISES,
    "throw": _RAISES,
    "yield": re.compile(r"yield\b"),
}
# Words a line of code opens with that make it no definition of the name after them ("return f(x)").
_NOT_A_TYPE = (
    r"(?!(?:return|raise|throw|yield|await|new|else|if|elif|while|for|switch|case|when|unless|and|or|not|in|is"
    r"|assert|del|print|echo|puts|go|defer|delete|typeof|sizeof)\b)"
)
MAX_STATEMENT_LINES = 6  # lines of one statement whose brackets stay open ("return (\n    a,\n    b,\n)")
MAX_LEAF_GAP = 40  # characters between two leaves of one document that follow each other (a line break, indentation)


def _definition(name: str) -> re.Pattern[str]:
    """A line that defines `name`: Python and Ruby's def, JavaScript, TypeScript and PHP's function (and
    a const bound to one or to an arrow function, and a class's method), Go and Swift's func, Rust's fn,
    Kotlin's fun, and C, C++, Java or C#'s typed declaration."""
    n = re.escape(name)
    return re.compile(
        rf"^(?P<indent>[ \t]*)(?:"
        rf"(?:async\s+)?def\s+(?:self\.)?{n}\s*(?:[(:]|$)"
        rf"|(?:export\s+)?(?:default\s+)?(?:async\s+)?function\s*\*?\s*{n}\s*[<(]"
        rf"|(?:(?:public|private|protected|static|final)\s+)*function\s+&?{n}\s*\("
        rf"|(?:pub(?:\([\w:]+\))?\s+)?(?:(?:async|const|unsafe|extern)\s+)*fn\s+{n}\s*[<(]"
        rf"|(?:(?:public|private|internal|static|override|mutating)\s+)*func\s+(?:\([^)]*\)\s*)?{n}\s*[<(\[]"
        rf"|(?:(?:public|private|internal|protected|override|suspend|inline|open)\s+)*fun\s+(?:<[^>]*>\s*)?(?:\w+\.)?{n}\s*\("
        rf"|(?:export\s+)?(?:const|let|var)\s+{n}\s*(?::[^=]*)?=\s*(?:async\s*)?(?:function\b|\([^()]*\)\s*(?::[^=]*)?=>|\w+\s*=>)"
        rf"|(?:(?:public|private|protected|static|async|get|set|override|readonly)\s+)*\*?{n}\s*\([^()]*\)\s*(?::[^{{]+)?\{{"
        rf"|{_NOT_A_TYPE}(?:[\w:<>\[\],.*&?]+\s+)+[*&]*{n}\s*\([^;]*$"
        rf")"
    )


# Any definition line, for telling where a nested function's lines start (they answer for that function).
_ANY_DEFINITION = re.compile(
    r"^[ \t]*(?:(?:async\s+)?def\s+\w|(?:export\s+)?(?:async\s+)?function\b|(?:pub\s+)?fn\s+\w|func\s+[\w(]"
    r"|(?:\w+\s+)*fun\s+\w|(?:const|let|var)\s+\w+\s*=\s*(?:async\s*)?(?:function\b|\([^()]*\)\s*=>)|class\s+\w)"
)


@dataclass(frozen=True)
class CodeLine:
    """A line to quote: the context block ([n], 1-based) and its span in that node's text."""

    position: int
    node: ContextNode
    start: int
    end: int


def asked_code_result(question: str) -> tuple[str, str] | None:
    """(function name, verb) of a question about what a named function returns, raises or yields:
    ("parse_config", "return") for "What does parse_config() return?"; None otherwise."""
    for pattern in (_ASKS_DOING, _ASKS_DONE, _ASKS_VALUE):
        found = pattern.search(question)
        if found:
            return re.split(r"\.|::|#", found.group("name"))[-1], found.group("verb").lower()
    return None


def _width(line: str) -> int:
    """A line's indentation in columns (a tab reaches the next multiple of four)."""
    expanded = line.expandtabs(4)
    return len(expanded) - len(expanded.lstrip(" "))


@dataclass(frozen=True)
class _Run:
    """Leaves of one document that follow each other, read as one text: each piece is (offset in the
    text, context position, node)."""

    text: str
    pieces: tuple[tuple[int, int, ContextNode], ...]

    def locate(self, start: int, end: int) -> CodeLine | None:
        """The node span of text[start:end], where one piece holds it whole."""
        for offset, position, node in reversed(self.pieces):
            if offset <= start:
                if end - offset > len(node.text):
                    return None
                return CodeLine(position, node, start - offset, end - offset)
        return None


def _runs(context: list[ContextNode]) -> list[_Run]:
    """The context's leaves, each run of leaves of one document that follow each other joined: a
    function's code split across two chunks reads whole. The whitespace between two leaves is not
    stored; it is read as a line break and the next line's indentation (a space a character)."""
    leaves = sorted(
        ((position, node) for position, node in enumerate(context, start=1) if node.layer == 0),
        key=lambda item: (item[1].document or "", item[1].start if item[1].start is not None else -1, item[0]),
    )
    runs: list[_Run] = []
    text, pieces, last = "", [], None
    for position, node in leaves:
        follows = (
            last is not None
            and node.document == last.document
            and None not in (node.start, last.end)
            and 0 < node.start - last.end <= MAX_LEAF_GAP
        )
        if pieces and not follows:
            runs.append(_Run(text, tuple(pieces)))
            text, pieces = "", []
        if pieces:
            text += "\n" + " " * (node.start - last.end - 1)
        pieces.append((len(text), position, node))
        text += node.text
        last = node
    if pieces:
        runs.append(_Run(text, tuple(pieces)))
    return runs


def _body(lines: list[str], at: int) -> list[int]:
    """Indices of the lines of the function defined on line `at`: those indented past it, up to the
    first line that is not (a closing brace, the next definition), less a nested function's lines."""
    indent = _width(lines[at])
    body: list[int] = []
    nested: int | None = None
    for i in range(at + 1, len(lines)):
        line = lines[i]
        if not line.strip():
            continue
        width = _width(line)
        if width <= indent:
            break
        if nested is not None and width > nested:
            continue
        nested = width if _ANY_DEFINITION.match(line) else None
        if nested is None:
            body.append(i)
    return body


def _statement_end(lines: list[str], at: int, last: int) -> int:
    """The last line of the statement opening on line `at` (no further than `last`): its brackets closed."""
    depth, i = 0, at
    while True:
        depth += sum(lines[i].count(c) for c in "([{") - sum(lines[i].count(c) for c in ")]}")
        if depth <= 0 or i >= min(last, at + MAX_STATEMENT_LINES - 1):
            return i
        i += 1


def _answering_lines(
    lines: list[str], body: list[int], verb: str, most: int
) -> list[tuple[int | None, tuple[int, int]]]:
    """The first `most` statements of `body` that answer `verb`, each as (the line of the condition it
    stands under, or None, (its first line, its last line)): the condition is the nearest line above it in
    the body indented less. Only those are looked for: each condition's search walks back up the body."""
    statement = _STATEMENTS[verb]
    found: list[tuple[int | None, tuple[int, int]]] = []
    for place, i in enumerate(body):
        if len(found) >= most:
            break
        if statement.match(lines[i].lstrip()):
            width = _width(lines[i])
            guard = next((j for j in reversed(body[:place]) if _width(lines[j]) < width), None)
            found.append((guard, (i, _statement_end(lines, i, body[-1]))))
    return found


def _fewest(answering: list[tuple[int | None, tuple[int, int]]], most: int) -> list[tuple[int, int]]:
    """At most `most` lines to quote: the first `most` statements, then the conditions of those as
    fit, each once, in the code's order."""
    kept = answering[:most]
    spans = {span for _, span in kept}
    for guard, _ in kept:
        if guard is not None and len(spans) < most:
            spans.add((guard, guard))
    return sorted(spans)


def code_result_lines(question: str, context: list[ContextNode], most: int) -> list[CodeLine]:
    """The lines that answer a question about what a named function returns, raises or yields (at most
    `most`: statements before their conditions), from the first definition of it the
    context's leaves hold; empty when the question asks no such thing or no leaf defines the function."""
    asked = asked_code_result(question)
    if asked is None:
        return []
    name, verb = asked
    definition = _definition(name)
    for run in _runs(context):
        if name not in run.text:
            continue
        lines = run.text.split("\n")
        spans = line_spans(run.text)
        for at, line in enumerate(lines):
            if not definition.match(line):
                continue
            body = _body(lines, at)
            answering = _answering_lines(lines, body, verb, most) if body else []
            if answering:
                return _located(run, lines, spans, _fewest(answering, most))
    return []


def _located(
    run: _Run, lines: list[str], spans: list[tuple[int, int]], chosen: list[tuple[int, int]]
) -> list[CodeLine]:
    """The chosen (first, last) lines of a run as node spans, each from its first character."""
    out: list[CodeLine] = []
    for first, last in chosen:
        start = spans[first][0] + (len(lines[first]) - len(lines[first].lstrip()))
        found = run.locate(start, spans[last][1])
        if found is not None:
            out.append(found)
    return out


# A configuration line that sets a value: YAML's `key: value`, TOML's and INI's `key = value`, JSON's
# `"key": value,` (a list item's `- key: value` too). A line that opens a mapping (`lamp:`, `"a": {`) sets none.
_SETTING = re.compile(
    r"""^[ \t]*(?:-[ \t]+)?(?P<q>["']?)(?P<key>[\w.$@/-]+)(?P=q)[ \t]*[:=](?![:=])[ \t]*(?P<value>[^\s{\[].*)?$"""
)
_TABLE_HEADER = re.compile(r"^[ \t]*\[{1,2}(?P<key>[^\[\]\n]+)\]{1,2}[ \t]*$")  # TOML's and INI's [section]
_OPENS = re.compile(r"""^[ \t]*(?:-[ \t]+)?(?P<q>["']?)(?P<key>[\w.$@/-]+)(?P=q)[ \t]*[:=]""")


def is_setting(line: str) -> bool:
    """Whether a line of code sets a configuration value ('fuel: paraffin', '"port": 9090,'): such a
    line is short and unpunctuated, so it reads as a heading to prose rules, yet it is the answer."""
    found = _SETTING.match(line)
    return found is not None and bool(found.group("value"))


def setting_keys(text: str, start: int) -> str:
    """The keys a setting at `text[start]` stands under, nearest last ('lamp' for '  fuel: paraffin' under
    'lamp:'; 'server' under '[server]'): lines above it less indented that open a mapping, up to the
    margin or a table header. They name what the setting is about, which its own key does not say."""
    lines = text[:start].split("\n")
    width = _width(text[start - len(lines[-1]):].split("\n", 1)[0])
    keys: list[str] = []
    for line in reversed(lines[:-1]):
        if not line.strip():
            continue
        table = _TABLE_HEADER.match(line)
        if table:
            keys.append(table.group("key"))
            break
        if width and _width(line) < width:
            width = _width(line)
            opens = _OPENS.match(line)
            if opens:
                keys.append(opens.group("key"))
    return " ".join(reversed(keys))
