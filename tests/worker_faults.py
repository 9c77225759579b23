"""A Dask worker preload for tests/test_workers.py: an upload named `poison*`, and a message rebuild with a
message that says `poison`, kill the worker process that builds it, as a parser crash in native code or a
memory blow-up past the nanny's limit would; and
`threads_on_worker`, a task the test sends (workers import it from here, not from the test module).

Loaded only by the test's workers (DASK_DISTRIBUTED__WORKER__PRELOAD); nothing in the project imports it.
"""

from __future__ import annotations

import os
import signal

from raptor_engine import workers
from raptor_engine.tree import docbuild

_load_isolated = docbuild.load_isolated
_build_trees = workers.build_trees


def _load_or_die(filename, data, limits, stats=None):
    if filename.startswith("poison"):
        os.kill(os.getpid(), signal.SIGKILL)
    return _load_isolated(filename, data, limits, stats)


async def _build_trees_or_die(chunk_lists, **kwargs):
    if any("poison" in chunk.text for chunks in chunk_lists for chunk in chunks):
        os.kill(os.getpid(), signal.SIGKILL)
    return await _build_trees(chunk_lists, **kwargs)


def dask_setup(worker) -> None:
    docbuild.load_isolated = _load_or_die
    workers.build_trees = _build_trees_or_die


def threads_on_worker(settings):
    """Run on a worker: how many threads its embedding runtime and numba (UMAP) may use."""
    import numba

    from raptor_engine.workers import worker_embedder

    runtime = worker_embedder(settings).runtime
    session = getattr(runtime, "session", None)
    if session is not None:
        embedding = session.get_session_options().intra_op_num_threads
    else:  # the torch backend
        import torch

        embedding = torch.get_num_threads()
    return {"embedding": embedding, "numba": numba.config.NUMBA_NUM_THREADS}
