"""`raptor ask` and `raptor chat` with an LLM: on a terminal (a pty) the answer is printed as the model
writes it; piped or with --json only the finished result is printed, as without streaming. The test
server pauses its stream half-way, so "printed before the model finished" needs no clock."""

from __future__ import annotations

import json
import os
import pty
import re
import select
import sys
import threading

import pytest
from click.testing import CliRunner

import raptor_engine.cli as cli_module
from raptor_engine.engine import Engine
from tests.llm_server import FakeLLMServer
from tests.sample_texts import RAILWAY

ANSWER = (
    "The flood of 1903 closed the line for seven weeks [1]. "
    "Passengers grew fewer every year once lorries took the slate traffic in the 1950s [2]."
)
HALF = "The flood of 1903 closed the line"


def block_holding(prompt: str, phrase: str) -> str:
    """The number the prompt gives the context block that holds `phrase`."""
    blocks = re.split(r"\n(?=\[\d+\] \()", prompt)
    return next(block[1 : block.index("]")] for block in blocks if block.startswith("[") and phrase in block)


def answer_citing_the_right_blocks(body: dict) -> str:
    """ANSWER as a model that cites the blocks holding what it says would write it (numbered as the
    prompt numbers them: the answer renumbers them [1] and [2]), so the support check leaves it as is."""
    prompt = str(body["messages"][-1]["content"])
    if "numbered context blocks" not in str(body):
        return "A summary."
    flood, decline = block_holding(prompt, "seven weeks"), block_holding(prompt, "1950s")
    return re.sub(r"\[([12])\]", lambda m: f"[{flood if m.group(1) == '1' else decline}]", ANSWER)


@pytest.fixture
def llm(monkeypatch, tmp_path, embedder):
    """A test LLM server on its own thread, the CLI pointed at it, and a knowledge base built with it."""
    server = FakeLLMServer()
    server.responder = answer_citing_the_right_blocks
    with server.running_in_thread():
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        monkeypatch.setattr(cli_module, "Engine", lambda settings: Engine(settings, embedder=embedder))
        railway = tmp_path / "railway.md"
        railway.write_text(RAILWAY)
        data = ["--data-dir", str(tmp_path / "data")]
        assert CliRunner().invoke(cli_module.cli, [*data, "ingest", str(railway), "--kb", "t", "--quiet"]).exit_code == 0
        server.reset()
        yield server, data
        server.release()


class Terminal:
    """The CLI run in-process on a thread with stdout (and stdin) on a pseudo-terminal."""

    def __init__(self, monkeypatch, args: list[str], typed: str = ""):
        self.master, slave = pty.openpty()
        self.out = os.fdopen(slave, "w", buffering=1, encoding="utf-8")
        monkeypatch.setattr(sys, "stdout", self.out)
        if typed:
            reader, writer = os.pipe()
            os.write(writer, typed.encode())
            os.close(writer)
            monkeypatch.setattr(sys, "stdin", os.fdopen(reader, encoding="utf-8"))
        self.screen = b""
        self.thread = threading.Thread(target=self._run, args=(args,), daemon=True)
        self.thread.start()

    def _run(self, args: list[str]) -> None:
        try:
            cli_module.cli.main(args, standalone_mode=False)
        finally:
            self.out.flush()

    def read_until(self, text: str, timeout: float = 120.0) -> str:
        while text.encode() not in self.screen:
            ready, _, _ = select.select([self.master], [], [], timeout)
            assert ready, f"{text!r} never reached the terminal; it shows {self.screen!r}"
            self.screen += os.read(self.master, 65536)
        return self.screen.decode(errors="replace")

    def finish(self) -> str:
        self.thread.join(timeout=120)
        assert not self.thread.is_alive()
        while select.select([self.master], [], [], 0.2)[0]:
            try:
                chunk = os.read(self.master, 65536)
            except OSError:
                break
            if not chunk:
                break
            self.screen += chunk
        os.close(self.master)
        return self.screen.decode(errors="replace").replace("\r\n", "\n")


def test_ask_on_a_terminal_prints_the_answer_while_it_is_written(llm, monkeypatch):
    server, data = llm
    server.pause_after = 7  # seven words (HALF), then the stream waits until released
    terminal = Terminal(monkeypatch, [*data, "ask", "What happened in the flood of 1903?", "--kb", "t"])
    shown = terminal.read_until(HALF)
    assert "Sources" not in shown and "Passengers" not in shown  # the model has not finished
    server.release()
    out = terminal.finish()
    assert out.count(HALF) == 1 and "closed the line for seven weeks [1]. Passengers grew fewer" in out
    assert "Sources" in out.split("[2].", 1)[1]
    assert [r.stream for r in server.requests] == [True]


def test_ask_piped_or_as_json_prints_only_the_finished_result_unchanged(llm, monkeypatch):
    server, data = llm
    question = [*data, "ask", "What happened in the flood of 1903?", "--kb", "t"]
    piped = CliRunner().invoke(cli_module.cli, question)
    assert piped.exit_code == 0 and piped.output.startswith(ANSWER + "\n\nSources\n")
    as_json = CliRunner().invoke(cli_module.cli, [*question, "--json"])
    assert json.loads(as_json.output)["answer"] == ANSWER
    terminal = Terminal(monkeypatch, [*question, "--json"])  # --json on a terminal: the result only
    assert json.loads(terminal.finish())["answer"] == ANSWER
    assert [r.stream for r in server.requests] == [False, False, False]


def test_a_stream_cut_off_on_a_terminal_keeps_the_text_and_says_so(llm, monkeypatch):
    server, data = llm
    server.fail_next("truncated")
    terminal = Terminal(monkeypatch, [*data, "ask", "What happened in the flood of 1903?", "--kb", "t"])
    out = terminal.finish()
    assert HALF in out and "slate traffic" not in out
    assert "The answer was cut off because the connection to the LLM backend broke." in out


def test_chat_on_a_terminal_streams_each_answer(llm, monkeypatch):
    server, data = llm
    typed = "What happened in the flood of 1903?\nAnd then?\n\n"
    terminal = Terminal(monkeypatch, [*data, "chat", "--kb", "t"], typed=typed)
    out = terminal.finish()
    assert out.count(ANSWER) == 2 and out.count("Sources") == 2
    assert [r.stream for r in server.requests if "numbered context blocks" in r.text()] == [True, True]


def test_the_finished_text_replaces_what_was_shown_when_it_differs(llm, monkeypatch):
    server, data = llm
    unmarked = "The flood of 1903 closed the line for seven weeks."
    server.responder = lambda body: unmarked if "numbered context blocks" in str(body) else "A summary."
    terminal = Terminal(monkeypatch, [*data, "ask", "What happened in the flood of 1903?", "--kb", "t"])
    out = terminal.finish()
    piped = CliRunner().invoke(cli_module.cli, [*data, "ask", "What happened in the flood of 1903?", "--kb", "t"])
    finished = piped.output.split("\n")[0]
    assert finished != unmarked and finished.startswith(unmarked[:-1])  # the support check added a marker
    assert out.rsplit("\x1b[J", 1)[1].startswith(finished + "\n")
