"""Stand-ins for modules that another package imports but the engine's use of it never touches.

umap-learn imports pynndescent (~0.3 s of a cold process's CPU, with its numba functions loaded from
the compile cache) for its own neighbour search, yet the engine hands UMAP its neighbours
(precomputed distances below 4,096 points, hnswlib's lists above). `deferred_modules` puts stand-ins
in `sys.modules` while such a package is imported: each stand-in name loads the real module on its
first real use (a call, a look-up), so nothing behaves differently: it only costs nothing until then.
The stand-ins leave `sys.modules` when the import ends, so any later `import` gets the real module.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator, Mapping
from types import ModuleType
from typing import Any

# name of the real module, then the names of its attributes that the importing package binds
Spec = dict[str, dict[str, str]]
Loader = Callable[[str], ModuleType]  # imports a real module by name (the caller decides how)

_KINDS = ("class", "mapping")


class _Deferred:
    """The real module behind the stand-ins of one `deferred_modules` call, loaded once on first use."""

    def __init__(self, stand_ins: dict[str, ModuleType], load: Loader):
        self.stand_ins = stand_ins
        self.load = load

    def loaded(self, module: str) -> bool:
        """Whether the real `module` is imported (in which case its objects may exist)."""
        found = sys.modules.get(module)
        return found is not None and found is not self.stand_ins.get(module)

    def real(self, module: str, name: str) -> Any:
        for stand_in_name, stand_in in self.stand_ins.items():  # still importing: step out of the way
            if sys.modules.get(stand_in_name) is stand_in:
                del sys.modules[stand_in_name]
        return getattr(self.load(module), name)


class _StandInModule(ModuleType):
    """A module whose unlisted attributes come from the real module (loading it)."""

    def __init__(self, name: str, deferred: _Deferred):
        super().__init__(name)
        self._deferred = deferred

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)  # the import machinery probes dunders: they must not load anything
        return self._deferred.real(self.__name__, name)


class _LoadsOnUse(type):
    """Metaclass of a stand-in class: calling it loads and uses the real class; an isinstance or issubclass
    check uses the real class once its module is imported, and is False before (nothing can be an instance
    of a class that was never defined), so a check alone loads nothing."""

    _real: Callable[[], type]
    _loaded: Callable[[], bool]

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        return cls._real()(*args, **kwargs)

    def __instancecheck__(cls, instance: Any) -> bool:
        return cls._loaded() and isinstance(instance, cls._real())

    def __subclasscheck__(cls, subclass: type) -> bool:
        return cls._loaded() and issubclass(subclass, cls._real())


def _stand_in_class(name: str, real: Callable[[], type], loaded: Callable[[], bool]) -> type:
    namespace = {"_real": staticmethod(real), "_loaded": staticmethod(loaded), "__doc__": f"{name}, on use."}
    return _LoadsOnUse(name, (), namespace)


class _StandInMapping(Mapping[Any, Any]):
    """A stand-in dict: any look-up, membership test or iteration uses the real one."""

    def __init__(self, real: Callable[[], Mapping[Any, Any]]):
        self._real = real

    def __getitem__(self, key: Any) -> Any:
        return self._real()[key]

    def __contains__(self, key: object) -> bool:
        return key in self._real()

    def __iter__(self) -> Iterator[Any]:
        return iter(self._real())

    def __len__(self) -> int:
        return len(self._real())


def _stand_in_value(deferred: _Deferred, module: str, name: str, kind: str) -> Any:
    def real() -> Any:
        return deferred.real(module, name)

    if kind == "class":
        return _stand_in_class(name, real, lambda: deferred.loaded(module))
    return _StandInMapping(real)


@contextlib.contextmanager
def deferred_modules(spec: Spec, load: Loader) -> Iterator[None]:
    """While in effect, importing a module named in `spec` gives a stand-in whose listed attributes
    (each a "class" or a "mapping") load the real module, through `load`, when first used.

    Does nothing when the first module of `spec` (the package) is already imported: the real one is
    there to use.
    """
    for names in spec.values():
        unknown = set(names.values()) - set(_KINDS)
        if unknown:
            raise ValueError(f"unknown stand-in kinds {sorted(unknown)}; expected one of {_KINDS}")
    if not spec or next(iter(spec)) in sys.modules:
        yield
        return
    stand_ins: dict[str, ModuleType] = {}
    deferred = _Deferred(stand_ins, load)
    for module, names in spec.items():
        stand_in = _StandInModule(module, deferred)
        for name, kind in names.items():
            setattr(stand_in, name, _stand_in_value(deferred, module, name, kind))
        stand_ins[module] = stand_in
    for module, stand_in in stand_ins.items():
        parent, _, child = module.rpartition(".")
        if parent in stand_ins:
            setattr(stand_ins[parent], child, stand_in)
    sys.modules.update(stand_ins)
    try:
        yield
    finally:
        for module, stand_in in stand_ins.items():
            if sys.modules.get(module) is stand_in:
                del sys.modules[module]
