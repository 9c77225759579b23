"""Questions about what a function returns, raises or yields quote the lines of its body that do, not its
definition line (hand-made context; real embedder where the whole answer is checked)."""

from __future__ import annotations

import re
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from raptor_engine.ingest.load import load_document
from raptor_engine.query.answer import QUOTE, ExtractiveAnswerer
from raptor_engine.query.code_answers import _definition, asked_code_result, code_result_lines
from raptor_engine.types import ContextNode

PYTHON = '''def parse_config(path):
    """Read the harbour settings."""
    with open(path) as handle:
        lines = handle.read().splitlines()
    settings = {}
    for line in lines:
        key, _, value = line.partition("=")
        settings[key.strip()] = value.strip()
    if "harbour" not in settings:
        raise KeyError("the settings name no harbour")
    return settings


def check_tide(height, limit=4.5):
    def louder(message):
        return message.upper()

    if height > limit:
        keeper.warn(louder("Spring tide."))
        return True
    return False


def readings(log):
    for row in log:
        yield float(row.split(",")[1])'''


def leaf(i: int, text: str, start: int, document: str = "tools.md") -> ContextNode:
    return ContextNode(i, 0, document, 0.5, text, 30, 1, start=start, end=start + len(text))


def quoted(nodes: list[ContextNode], question: str) -> list[str]:
    return [nodes[line.position - 1].text[line.start : line.end] for line in code_result_lines(question, nodes, 3)]


@pytest.mark.parametrize(
    ("question", "asked"),
    [
        ("What does parse_config return?", ("parse_config", "return")),
        ("What does parse_config() return?", ("parse_config", "return")),
        ("what does `parse_config` return", ("parse_config", "return")),
        ("What value does the parse_config function return?", ("parse_config", "return")),
        ("Which exceptions can Config.load raise?", ("load", "raise")),
        ("What errors does loadConfig throw?", ("loadConfig", "throw")),
        ("When does parse_config raise an error?", ("parse_config", "raise")),
        ("What is returned by check_tide()?", ("check_tide", "return")),
        ("What gets thrown from the load method?", ("load", "throw")),
        ("What does readings yield?", ("readings", "yield")),
        ("What is the return value of parse_config?", ("parse_config", "return")),
        ("Who kept the light in 1887?", None),
        ("What did the keeper see?", None),
        ("Why did the sailors return to port?", None),
    ],
)
def test_a_question_about_what_a_function_returns_raises_or_yields_is_read(question, asked):
    assert asked_code_result(question) == asked


@pytest.mark.parametrize(
    ("question", "lines"),
    [
        ("What does parse_config return?", ["return settings"]),
        ("What does parse_config raise?", ['if "harbour" not in settings:', 'raise KeyError("the settings name no harbour")']),
        # a nested function's return answers for it, not for check_tide
        ("What does check_tide return?", ["if height > limit:", "return True", "return False"]),
        ("What does readings yield?", ["for row in log:", 'yield float(row.split(",")[1])']),
        ("What does louder return?", ["return message.upper()"]),
    ],
)
def test_the_answering_lines_of_the_named_function_are_quoted(question, lines):
    assert quoted([leaf(1, PYTHON, 0)], question) == lines


def test_a_function_split_across_two_leaves_reads_whole():
    """The chunker trims the indentation at a leaf's start; the gap between two leaves stands for it."""
    cut = PYTHON.index("settings = {}")
    nodes = [leaf(2, PYTHON[cut:PYTHON.index("\n\n\ndef check")], cut), leaf(1, PYTHON[: cut - 5], 0)]
    assert quoted(nodes, "What does parse_config return?") == ["return settings"]
    # a leaf of another document that happens to follow is not joined
    other = [leaf(1, PYTHON[: cut - 5], 0), leaf(2, "return nothing", cut, document="other.md")]
    assert quoted(other, "What does parse_config return?") == []


@pytest.mark.parametrize(
    ("code", "question", "lines"),
    [
        (
            "function loadConfig(path) {\n  if (!path) {\n    throw new Error('no path');\n  }\n  return JSON.parse(read(path));\n}",
            "What does loadConfig return?",
            ["return JSON.parse(read(path));"],
        ),
        (
            "const total = (items) => {\n  return items.reduce((a, b) => a + b, 0);\n};",
            "What does total return?",
            ["return items.reduce((a, b) => a + b, 0);"],
        ),
        (
            "func Open(name string) (*File, error) {\n\tif name == \"\" {\n\t\treturn nil, ErrEmpty\n\t}\n\treturn open(name)\n}",
            "What does Open return?",
            ['if name == "" {', "return nil, ErrEmpty", "return open(name)"],
        ),
        (
            "pub fn area(&self) -> f64 {\n    return self.w * self.h;\n}",
            "What does area return?",
            ["return self.w * self.h;"],
        ),
        (
            "public static int count(List<String> xs) {\n    return xs.size();\n}",
            "What does count return?",
            ["return xs.size();"],
        ),
        (
            "def build(parts):\n    return (\n        parts[0],\n        parts[1],\n    )",
            "What does build return?",
            ["return (\n        parts[0],\n        parts[1],\n    )"],
        ),
    ],
)
def test_other_languages_and_statements_over_several_lines(code, question, lines):
    assert quoted([leaf(1, code, 0)], question) == lines


def test_a_call_or_a_function_without_the_asked_statement_is_left_to_ranking():
    calls = "settings = parse_config(path)\nreturn parse_config(path)\nif parse_config(path):\n    print('ok')"
    assert quoted([leaf(1, calls, 0)], "What does parse_config return?") == []
    assert quoted([leaf(1, PYTHON, 0)], "What does parse_config yield?") == []
    assert quoted([leaf(1, PYTHON, 0)], "What does load_all return?") == []  # not defined here
    assert quoted([leaf(1, PYTHON, 0)], "Who reads the settings?") == []


def test_the_answer_quotes_the_return_line_not_the_def_line(embedder):
    """Through the extractive answer, on a README as the loader stores it (its code keeps indentation)."""
    readme = "# Tools\n\nCall parse_config with the path of the settings file:\n\n```python\n" + PYTHON + "\n```\n"
    text = load_document("readme.md", readme.encode()).text
    nodes = [leaf(1, text, 0)]
    answer = ExtractiveAnswerer(embedder)._answer_sync("What does parse_config return?", nodes, []).text
    assert answer.startswith("From the documents:")
    assert QUOTE.findall(answer) == ["return settings"]
    answer = ExtractiveAnswerer(embedder)._answer_sync("What does check_tide raise?", nodes, []).text
    assert "def check_tide" in answer  # no raise in it: ranking answers, as before


# The method-definition branch of `_definition` before the review: `\s*` then `[^{]+` both take the spaces
# after a return type's colon, so a line of them with no brace backtracked quadratically (58 s of CPU on
# 100,000 spaces).
def _backtracking_method(name: str) -> re.Pattern[str]:
    n = re.escape(name)
    return re.compile(
        rf"^(?P<indent>[ \t]*)(?:(?:(?:public|private|protected|static|async|get|set|override|readonly)\s+)*"
        rf"\*?{n}\s*\([^()]*\)\s*(?::\s*[^{{]+)?\{{)"
    )


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["f", "(", ")", ":", " ", "\t", "{", "}", "x", "async ", "*", "string"]), max_size=30))
def test_the_definition_pattern_takes_every_method_line_the_backtracking_one_took(pieces):
    line = "".join(pieces)
    if _backtracking_method("f").match(line):
        assert _definition("f").match(line)


@pytest.mark.parametrize(
    "text",
    [
        "parse(): " + " " * 100_000,  # a return type's colon, then no brace: was 58 s of CPU
        "def parse():\n" + "    return 1\n" * 8_000,  # a flat body of returns: each one's condition looked for
    ],
)
def test_pathological_code_is_read_in_linear_time(text):
    start = time.process_time()
    lines = code_result_lines("What does parse return?", [leaf(1, text, 0)], 3)
    print(f"{len(text):,} characters: {time.process_time() - start:.3f}s CPU, {len(lines)} lines")
    assert len(lines) <= 3
