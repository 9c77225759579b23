"""Secrets: API keys and the Discord token are never logged or echoed, `.env` is ignored by git, and
`.env.example` documents every setting the code reads from the environment."""

from __future__ import annotations

import logging
import re
import subprocess
from dataclasses import fields
from pathlib import Path

import pytest
from click.testing import CliRunner

from raptor_engine import Engine, Settings
from raptor_engine.cli import cli
from raptor_engine.config import ENV_VARS
from tests.bot.conftest import bot_settings, fake_api, make_harness, text_of  # noqa: F401
from tests.llm_server import FakeLLMServer
from tests.unhurried import unhurried_settings

ROOT = Path(__file__).resolve().parents[1]
KEY = "sk-MARKER-openai-key-7f3a9c"
TOKEN = "MARKER.discord-token.Zq81xY"
DOC = "The signal box at Kelby was built of red brick in 1889. It had thirty levers and a stove."


def env_names_read_by_the_code() -> set[str]:
    """Every environment variable config.py and bot/ read, found in their source."""
    names = set(ENV_VARS.values())
    for path in (ROOT / "bot").glob("*.py"):
        source = path.read_text()
        names |= set(re.findall(r'(?:environ\.get|getenv|env_flag)\(\s*"([A-Z0-9_]+)"', source))
    return names


def test_env_example_documents_every_setting():
    names = env_names_read_by_the_code()
    assert {"OPENAI_API_KEY", "DISCORD_TOKEN", "RAPTOR_DATA_DIR", "RAPTOR_QUESTIONS_PER_MINUTE"} <= names
    documented = set(re.findall(r"^#?\s*([A-Z][A-Z0-9_]+)=", (ROOT / ".env.example").read_text(), flags=re.M))
    assert names - documented == set(), "settings missing from .env.example"
    assert set(ENV_VARS) == {f.name for f in fields(Settings)}  # every setting has its variable


def test_every_setting_is_read_from_its_variable(monkeypatch):
    """Each variable in ENV_VARS reaches its setting, parsed as the setting's type."""
    samples = {
        "int": ("7", 7),
        "float": ("0.5", 0.5),
        "str": ("x-value", "x-value"),
        "Path": ("/tmp/x", Path("/tmp/x")),
    }
    for f in fields(Settings):
        raw, parsed = samples[str(f.type)]
        monkeypatch.setenv(ENV_VARS[f.name], raw)
    settings = Settings.from_env()
    for f in fields(Settings):
        assert getattr(settings, f.name) == samples[str(f.type)][1], f.name
    monkeypatch.setenv("RAPTOR_BUDGET", "lots")
    with pytest.raises(ValueError, match="RAPTOR_BUDGET must be a whole number"):
        Settings.from_env()


def test_env_example_holds_no_values_for_secrets():
    text = (ROOT / ".env.example").read_text()
    for name in ("OPENAI_API_KEY", "DISCORD_TOKEN"):
        assert re.search(rf"^{name}=\s*$", text, flags=re.M), f"{name} must be empty in .env.example"


def test_dot_env_is_ignored_by_git():
    result = subprocess.run(["git", "check-ignore", "-q", ".env"], cwd=ROOT)
    assert result.returncode == 0
    tracked = subprocess.run(["git", "ls-files", ".env"], cwd=ROOT, capture_output=True, text=True).stdout
    assert tracked.strip() == ""


def test_no_tracked_file_holds_something_shaped_like_a_real_secret():
    patterns = [
        r"sk-(?:proj-)?[A-Za-z0-9]{32,}",  # OpenAI keys
        r"[MN][A-Za-z\d]{23,25}\.[\w-]{6}\.[\w-]{27,}",  # Discord bot tokens
    ]
    for pattern in patterns:
        found = subprocess.run(
            ["git", "grep", "-l", "-E", pattern, "--", ".", ":!*.lock"],
            cwd=ROOT,
            capture_output=True,
            text=True,
        ).stdout
        assert found.strip() == "", f"{pattern} in {found}"


def test_settings_never_show_secrets(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("DISCORD_TOKEN", TOKEN)
    settings = Settings.from_env()
    assert settings.llm_api_key == KEY and settings.discord_token == TOKEN
    shown = [repr(settings), str(settings), str(settings.redacted())]
    assert not any(KEY in s or TOKEN in s for s in shown)
    assert settings.redacted()["llm_api_key"] == "set"


@pytest.fixture
def secret_env(monkeypatch, tmp_path, embedder):
    """The environment of a deployment: key and token set; the CLI's engine shares the test's embedder."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("DISCORD_TOKEN", TOKEN)
    monkeypatch.setenv("RAPTOR_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setattr("raptor_engine.engine.Embedder", lambda *args, **kwargs: embedder)
    (tmp_path / "box.txt").write_text(DOC)
    return tmp_path


def test_the_cli_never_prints_or_logs_the_key_or_token(secret_env, caplog):
    caplog.set_level(logging.DEBUG)  # everything, including the openai and httpx clients' debug logs
    runner = CliRunner()
    outputs = []
    with FakeLLMServer().running_in_thread() as server:
        base = ["-vv"]
        env = {"OPENAI_BASE_URL": server.base_url, "RAPTOR_LLM_MAX_RETRIES": "0"}
        for args in (
            ["ingest", "box.txt", "--kb", "k"],
            ["ask", "What was the signal box built of?", "--kb", "k"],
            ["ask", "What was the signal box built of?", "--kb", "k", "--json"],
            ["docs", "--kb", "k"],
            ["tree", "--kb", "k", "--json"],
            ["doctor"],
        ):
            result = runner.invoke(cli, base + args, env=env, catch_exceptions=False)
            assert result.exit_code == 0, result.output
            outputs.append(result.output)
        server.always_fail = "401"  # a failure's message must not echo the key either
        failed = runner.invoke(cli, base + ["ask", "Anything?", "--kb", "k"], env=env)
        assert failed.exit_code != 0 and "rejected the API key" in failed.output
        outputs.append(failed.output)
        assert server.requests  # the key really was used, in the Authorization header
    seen = "\n".join(outputs) + "\n" + caplog.text
    assert "red brick" in seen
    assert KEY not in seen and TOKEN not in seen


async def test_the_bot_never_logs_or_posts_its_token(make_harness, caplog):  # noqa: F811
    caplog.set_level(logging.DEBUG)
    from tests.bot.test_bot_flows import add_doc, ask

    h = await make_harness()
    await add_doc(h, "box.txt", DOC)
    _, replies = await ask(h, "What was the signal box built of?")
    assert "red brick" in " ".join(text_of(m) for m in replies)
    posted = "\n".join(str(call.body) for call in h.fake.calls)
    assert "fake-token" not in caplog.text and "fake-token" not in posted  # the harness logs in with it


async def test_engine_logs_carry_no_key_even_when_the_backend_fails(tmp_path, embedder, caplog):
    caplog.set_level(logging.DEBUG)
    async with FakeLLMServer() as server:
        settings = unhurried_settings(
            data_dir=tmp_path, llm_base_url=server.base_url, llm_api_key=KEY, llm_max_retries=0
        )
        engine = Engine(settings, embedder=embedder)
        try:
            await engine.ingest("k", "box.txt", DOC.encode())
            server.always_fail = "500"
            with pytest.raises(Exception) as raised:
                await engine.ask("k", "What was the signal box built of?")
            assert KEY not in str(raised.value)
            assert KEY not in engine.backend_name
        finally:
            engine.close()
    assert KEY not in caplog.text
