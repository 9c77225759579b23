"""Stand-in modules (raptor_engine/tree/deferred.py): an import that binds names of a package costs nothing
until a name is used, and then behaves as the real package."""

from __future__ import annotations

import importlib
import sys
import textwrap
from pathlib import Path

import pytest

from raptor_engine.tree.deferred import deferred_modules

SPEC = {
    "heavypkg": {"Engine": "class"},
    "heavypkg.tables": {"named": "mapping"},
}


@pytest.fixture
def packages(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """`heavypkg` (records each import in `heavypkg_log`) and `consumer`, which imports it like umap imports
    pynndescent; both gone from sys.modules afterwards."""
    (tmp_path / "heavypkg").mkdir()
    (tmp_path / "heavypkg" / "__init__.py").write_text(
        textwrap.dedent(
            """
            import heavypkg_log
            heavypkg_log.imports.append("heavypkg")
            VERSION = "1.0"

            class Engine:
                def __init__(self, size):
                    self.size = size
            """
        )
    )
    (tmp_path / "heavypkg" / "tables.py").write_text('named = {"cosine": len, "euclidean": abs}\n')
    (tmp_path / "heavypkg_log.py").write_text("imports = []\n")
    (tmp_path / "consumer.py").write_text(
        textwrap.dedent(
            """
            from heavypkg import Engine
            from heavypkg.tables import named

            def knows(metric):
                return metric in named

            def make(size):
                return Engine(size)
            """
        )
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    yield
    for name in ("heavypkg", "heavypkg.tables", "heavypkg_log", "consumer"):
        sys.modules.pop(name, None)


def _loads() -> list[str]:
    return importlib.import_module("heavypkg_log").imports


def _import_consumer():
    with deferred_modules(SPEC, importlib.import_module):
        consumer = importlib.import_module("consumer")
    return consumer


def test_importing_through_stand_ins_loads_nothing_and_leaves_no_stand_in(packages):
    consumer = _import_consumer()
    assert _loads() == []
    assert "heavypkg" not in sys.modules and "heavypkg.tables" not in sys.modules
    assert consumer.Engine.__name__ == "Engine"


def test_a_call_loads_the_real_class(packages):
    consumer = _import_consumer()
    made = consumer.make(3)
    assert _loads() == ["heavypkg"]
    real = sys.modules["heavypkg"].Engine
    assert type(made) is real and made.size == 3
    assert isinstance(made, consumer.Engine) and not isinstance(3, consumer.Engine)


def test_an_isinstance_check_before_any_use_loads_nothing(packages):
    """No instance of the real class can exist before its module is imported, so the check is False."""
    consumer = _import_consumer()
    assert not isinstance(object(), consumer.Engine) and not issubclass(int, consumer.Engine)
    assert _loads() == []
    import heavypkg  # noqa: PLC0415 - imported by someone else: its instances now count

    assert isinstance(heavypkg.Engine(2), consumer.Engine) and issubclass(heavypkg.Engine, consumer.Engine)
    assert _loads() == ["heavypkg"]


def test_a_membership_test_on_a_table_loads_the_real_one(packages):
    consumer = _import_consumer()
    assert consumer.knows("cosine") and not consumer.knows("hamming")
    assert sys.modules["heavypkg.tables"].named["cosine"] is len
    assert dict(consumer.named) == sys.modules["heavypkg.tables"].named
    assert _loads() == ["heavypkg"]


def test_a_later_import_gets_the_real_package_once(packages):
    consumer = _import_consumer()
    import heavypkg  # noqa: PLC0415 - imported after the stand-ins, on purpose

    assert heavypkg.VERSION == "1.0"
    made = consumer.make(1)
    assert type(made) is heavypkg.Engine
    assert _loads() == ["heavypkg"]


def test_an_already_imported_package_is_used_as_it_is(packages):
    import heavypkg  # noqa: PLC0415

    consumer = _import_consumer()
    assert consumer.Engine is heavypkg.Engine
    assert _loads() == ["heavypkg"]


def test_other_attributes_of_a_stand_in_come_from_the_real_module(packages):
    with deferred_modules(SPEC, importlib.import_module):
        stand_in = importlib.import_module("heavypkg")
        assert _loads() == []
        assert stand_in.VERSION == "1.0"  # not listed in SPEC: read from the real module
        assert _loads() == ["heavypkg"]
    assert sys.modules["heavypkg"] is not stand_in


def test_an_unknown_kind_is_refused(packages):
    with pytest.raises(ValueError, match="unknown stand-in kinds"):
        with deferred_modules({"heavypkg": {"Engine": "function"}}, importlib.import_module):
            pass
    assert "heavypkg" not in sys.modules
