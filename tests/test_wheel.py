"""The project as a user gets it from a wheel: built, installed into a fresh venv, run from elsewhere.

Only our wheel is installed (`--no-deps`); the fresh venv reaches the dependencies through a `.pth` file
naming this interpreter's site-packages, so nothing is downloaded and nothing of the checkout is on
its path: `raptor bench` must find its sample in the package data and `raptor eval` its commands
through the `raptor.commands` entry point. About 20 s on the 2-core project machine.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from tests.test_eval import write_set

ROOT = Path(__file__).resolve().parents[1]
SOURCES = ("pyproject.toml", "README.md", "LICENSE", "raptor_engine", "raptor_tools", "bot")

pytestmark = pytest.mark.wheel
pytest.importorskip("setuptools", reason="building the wheel offline needs setuptools in this environment")


def run(command: list[str], **kwargs) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, **kwargs)
    assert done.returncode == 0, f"{command} failed:\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}"
    return done


def build_wheel(tmp_path: Path) -> Path:
    """A wheel of a copy of the sources, so the build leaves nothing in the checkout."""
    source = tmp_path / "source"
    source.mkdir()
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in SOURCES:
        path = ROOT / name
        if path.is_dir():
            shutil.copytree(path, source / name, ignore=ignore)
        else:
            shutil.copy(path, source / name)
    dist = tmp_path / "dist"
    run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(dist),
            str(source),
        ]
    )
    [wheel] = dist.glob("raptor_discord-*.whl")
    return wheel


def wheel_metadata(wheel: Path) -> tuple[str, list[str]]:
    """The wheel's METADATA text and the names of the files it holds."""
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        [metadata] = [name for name in names if name.endswith(".dist-info/METADATA")]
        return archive.read(metadata).decode(), names


def fresh_venv(tmp_path: Path, wheel: Path) -> Path:
    """A venv holding only our wheel, with this interpreter's packages reachable for the dependencies."""
    venv = tmp_path / "venv"
    run([sys.executable, "-m", "venv", "--without-pip", str(venv)])
    python = venv / "bin" / "python"
    site = Path(
        run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip()
    )
    ours = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    (site / "dependencies.pth").write_text("\n".join(sorted(ours)) + "\n")
    # --ignore-installed: the checkout's own editable install is visible through the .pth; leave it be
    run(
        [
            str(python),
            "-m",
            "pip",
            "install",
            "-q",
            "--no-deps",
            "--no-index",
            "--ignore-installed",
            str(wheel),
        ]
    )
    return venv


def clean_env() -> dict[str, str]:
    env = {
        k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "RAPTOR_DATA_DIR", "RAPTOR_EVALDATA")
    }
    return {
        **env,
        "HF_HUB_OFFLINE": "1",
        "TOKENIZERS_PARALLELISM": "false",
        "OPENAI_API_KEY": "",
        "OPENAI_BASE_URL": "",
    }


def test_the_wheel_runs_bench_and_eval_from_outside_the_checkout(tmp_path):
    wheel = build_wheel(tmp_path)
    metadata, names = wheel_metadata(wheel)
    # An SPDX licence expression (PEP 639) and the licence text itself travel with every install.
    assert "License-Expression: MIT" in metadata.splitlines()
    assert any(name.endswith(".dist-info/licenses/LICENSE") for name in names)
    venv = fresh_venv(tmp_path, wheel)
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    env = clean_env()

    where = run(
        [
            str(venv / "bin" / "python"),
            "-c",
            "import raptor_engine, raptor_tools; print(raptor_engine.__file__); print(raptor_tools.__file__)",
        ],
        cwd=outside,
        env=env,
    ).stdout.split()
    assert all(path.startswith(str(venv)) for path in where), where  # the wheel's copy, not the checkout

    raptor = str(venv / "bin" / "raptor")
    assert run([raptor, "--version"], cwd=outside, env=env).stdout.strip() == "raptor 0.1.0"

    bench = run(
        [
            raptor,
            "bench",
            "--quick",
            "--sizes",
            "1k",
            "--source",
            "generated",
            "--skip-retrieval",
            "--skip-cold",  # the cold start's floor loads torch; tests/test_bench.py covers it
            "--out",
            "bench.json",
        ],
        cwd=outside,
        env=env,
    )
    report = json.loads((outside / "bench.json").read_text())
    assert report["ingest"][0]["tokens"] > 500 and report["ingest"][0]["nodes"] > 1  # the packaged sample
    assert report["retrieval"] == [] and "Ingest" in bench.stdout

    evaluated = run(
        [
            raptor,
            "eval",
            str(write_set(outside / "tiny")),
            "--data-dir",
            "cache",
            "--no-llm",
            "--quiet",
            "--out",
            "eval.json",
        ],
        cwd=outside,
        env=env,
    )
    assert "| collapsed tree |" in evaluated.stdout
    assert json.loads((outside / "eval.json").read_text())["questions"] == 4
