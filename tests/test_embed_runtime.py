"""The embedding runtime: ONNX export equivalent to torch, verified and cached; fallbacks; GPU choice."""

from __future__ import annotations

import logging
import shutil

import numpy as np
import pytest

from raptor_engine import embed_runtime as rt
from raptor_engine.embed import Embedder, resolve_model_path
from raptor_engine.errors import RaptorError

SENTENCES = [
    "The keeper trimmed the wick before the storm reached the headland.",
    "What did the harbour board decide about the new lamp?",
    "Quarterly revenue rose 12% to $4.2 million, driven by exports.",
    "Der Leuchtturm steht seit 1887 auf der Insel.",
    "ok",
    "The committee met on Tuesday; nobody agreed, and the minutes were lost. " * 30,  # over 256 tokens
]
MODEL = "all-MiniLM-L6-v2"


def test_gpu_selection_prefers_onnxruntime_cuda_then_torch_cuda_then_the_cpu_backend():
    cpu, cuda = ["CPUExecutionProvider"], ["CUDAExecutionProvider", "CPUExecutionProvider"]
    for backend in ("onnx", "onnx-int8"):  # int8 kernels are CPU-only: the GPU runs the fp32 graph
        assert rt.choose_runtime(backend, ort_providers=cuda, torch_cuda=True) == rt.RuntimeChoice(
            "onnx", quantized=False, device="cuda"
        )
        assert rt.choose_runtime(backend, ort_providers=cpu, torch_cuda=True) == rt.RuntimeChoice(
            "torch", device="cuda"
        )
    assert rt.choose_runtime("torch", ort_providers=cuda, torch_cuda=True) == rt.RuntimeChoice("torch", device="cuda")
    assert rt.choose_runtime("torch", ort_providers=cuda, torch_cuda=False) == rt.RuntimeChoice("torch")
    assert rt.choose_runtime("onnx", ort_providers=cpu, torch_cuda=False) == rt.RuntimeChoice("onnx")
    assert rt.choose_runtime("onnx-int8", ort_providers=cpu, torch_cuda=False) == rt.RuntimeChoice(
        "onnx", quantized=True
    )
    with pytest.raises(ValueError, match="RAPTOR_EMBED_BACKEND must be one of"):
        rt.choose_runtime("tensorrt", ort_providers=cpu, torch_cuda=False)


def test_an_unknown_backend_is_one_clear_error(tmp_path):
    with pytest.raises(RaptorError, match="RAPTOR_EMBED_BACKEND must be one of torch, onnx, onnx-int8"):
        Embedder(backend="fast", cache_dir=tmp_path)


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """One fresh export (not the user's cache): the folder it was published in."""
    cache = tmp_path_factory.mktemp("cache")
    embedder = Embedder(MODEL, backend="onnx", cache_dir=cache, use_gpu=False)
    assert embedder.backend == "onnx (cpu)"
    folders = list((cache / "onnx").iterdir())
    assert len(folders) == 1 and (folders[0] / "meta.json").is_file()
    return folders[0]


@pytest.fixture(scope="module")
def torch_vectors():
    return Embedder(MODEL, backend="torch", use_gpu=False).embed(SENTENCES)


@pytest.mark.parametrize(("backend", "worst", "mean"), [("onnx", 0.9999, 0.9999), ("onnx-int8", 0.95, 0.98)])
def test_onnx_vectors_match_torch(exported, torch_vectors, backend, worst, mean):
    embedder = Embedder(MODEL, backend=backend, cache_dir=exported.parents[1], use_gpu=False)
    assert embedder.backend == f"{backend} (cpu)"
    vectors = embedder.embed(SENTENCES)
    assert vectors.shape == torch_vectors.shape and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    similarity = rt.cosines(vectors, torch_vectors)
    assert similarity.min() > worst and similarity.mean() > mean
    assert embedder.max_tokens == 254 and embedder.dim == 384


def test_the_cache_is_keyed_by_model_weights_and_runtime_versions(exported, tmp_path):
    import onnxruntime
    import torch

    name = exported.name
    assert name.startswith(MODEL) and torch.__version__.split("+")[0] in name and onnxruntime.__version__ in name
    copy = tmp_path / "model"
    shutil.copytree(resolve_model_path(MODEL), copy)
    assert rt.export_folder(tmp_path, MODEL, copy).name == name
    weights = copy / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:-1] + b"\x00")  # one changed byte: another model
    assert rt.export_folder(tmp_path, MODEL, copy).name != name


def test_a_corrupt_cached_model_is_exported_again(exported, tmp_path, caplog):
    cache = tmp_path / "cache"
    shutil.copytree(exported.parent, cache / "onnx")
    folder = cache / "onnx" / exported.name
    model = folder / "model.onnx"
    model.write_bytes(model.read_bytes()[: model.stat().st_size // 2])  # truncated on disk
    with caplog.at_level(logging.WARNING, logger="raptor_engine.embed_runtime"):
        embedder = Embedder(MODEL, backend="onnx", cache_dir=cache, use_gpu=False)
    assert embedder.backend == "onnx (cpu)"
    assert any("is unusable" in r.getMessage() and "exporting it again" in r.getMessage() for r in caplog.records)
    assert model.stat().st_size == (exported / "model.onnx").stat().st_size  # a whole model again


def test_a_cached_model_giving_wrong_vectors_is_not_used(exported, tmp_path, caplog):
    """Verification on load compares with torch's stored vectors, so damage that still loads is caught."""
    import json

    cache = tmp_path / "cache"
    shutil.copytree(exported.parent, cache / "onnx")
    meta_path = cache / "onnx" / exported.name / "meta.json"
    meta = json.loads(meta_path.read_text())
    meta["reference"] = np.roll(np.asarray(meta["reference"]), 1, axis=0).tolist()  # not these sentences
    meta_path.write_text(json.dumps(meta))
    folder = cache / "onnx" / exported.name
    choice = rt.RuntimeChoice("onnx")
    with caplog.at_level(logging.WARNING, logger="raptor_engine.embed_runtime"):
        assert rt.load_cached(folder, choice) is None
    assert "differ from torch" in caplog.text and not folder.exists()


def test_a_failed_export_falls_back_to_torch_with_a_clear_warning(tmp_path, caplog, monkeypatch):
    def broken_export(*args, **kwargs):
        raise RuntimeError("exporter exploded")

    monkeypatch.setattr(rt, "export_model", broken_export)
    with caplog.at_level(logging.WARNING, logger="raptor_engine.embed_runtime"):
        embedder = Embedder(MODEL, backend="onnx-int8", cache_dir=tmp_path, use_gpu=False)
    assert embedder.backend == "torch (cpu)"
    assert embedder.embed(["still works"]).shape == (1, 384)
    message = next(r.getMessage() for r in caplog.records if r.levelno == logging.WARNING)
    assert "Could not export the embedding model all-MiniLM-L6-v2 to ONNX" in message
    assert "exporter exploded" in message and "embedding with torch instead" in message
    assert not any(p.name.startswith(".export-") for p in (tmp_path / "onnx").iterdir())  # no scratch left


def test_the_torch_free_tokenizer_gives_transformers_ids(exported):
    """The ONNX runtime tokenizes with `tokenizers` alone (no torch import); ids must be transformers' own."""
    import copy
    import json

    from transformers import AutoTokenizer

    from raptor_engine.fast_tokenizer import FastTokenizer

    meta = json.loads((exported / "meta.json").read_text())
    fast = FastTokenizer(exported, pad_token=meta["pad_token"], max_length=meta["max_seq_length"])
    reference = AutoTokenizer.from_pretrained(resolve_model_path(MODEL))
    texts = [*SENTENCES, "", "   ", "naïve café — “quotes” ‘and’ emoji 🌊 tabs\tand\nlines", "ａｂｃ 中文 عربى"]
    for special in (False, True):
        expected = reference(texts, add_special_tokens=special, truncation=False)["input_ids"]
        assert fast(texts, add_special_tokens=special, truncation=False)["input_ids"] == expected
        assert [fast(t, add_special_tokens=special)["input_ids"] for t in texts] == expected
    batch = reference(texts, padding=True, truncation=True, max_length=256, return_tensors="np")
    inputs = fast.model_inputs(texts, meta["inputs"])
    for name in meta["inputs"]:
        assert np.array_equal(inputs[name], batch[name]), name
    assert fast.unk_token_id == reference.unk_token_id  # anything else: the transformers tokenizer
    offsets = fast("the keeper", add_special_tokens=False, return_offsets_mapping=True)["offset_mapping"]
    assert offsets == [(0, 3), (4, 10)]
    twin = copy.deepcopy(fast)
    assert twin is not fast and twin("a b")["input_ids"] == fast("a b")["input_ids"]


def test_onnx_worker_threads_sleep_instead_of_spinning(exported):
    """Spinning threads kept a core busy after each call: a question took 20 ms instead of 3 on a busy machine."""
    embedder = Embedder(MODEL, backend="onnx-int8", cache_dir=exported.parents[1], use_gpu=False)
    options = embedder.runtime.session.get_session_options()
    assert options.get_session_config_entry("session.intra_op.allow_spinning") == "0"


def test_the_fast_tokenizer_gives_unknown_ids_and_offsets_without_transformers():
    """Counting [UNK] runs needs the unknown id and character offsets: the fast tokenizer gives both
    itself, identical to transformers', so an ingest never imports transformers (and torch) for them."""
    from transformers import AutoTokenizer

    from raptor_engine.embed import resolve_model_path
    from raptor_engine.fast_tokenizer import FastTokenizer

    folder = resolve_model_path("all-MiniLM-L6-v2")
    fast = FastTokenizer(folder, pad_token="[PAD]", max_length=256)
    full = AutoTokenizer.from_pretrained(str(folder))
    texts = ["ACGTACGTACGTTTGACCA sequence", "plain words, 灯塔 and \u2603 too"]
    mine = fast(texts, add_special_tokens=False, truncation=False, return_offsets_mapping=True)
    theirs = full(texts, add_special_tokens=False, truncation=False, return_offsets_mapping=True)
    assert mine["input_ids"] == theirs["input_ids"]
    assert [[tuple(o) for o in row] for row in mine["offset_mapping"]] == [
        [tuple(o) for o in row] for row in theirs["offset_mapping"]
    ]
    assert fast.unk_token_id == full.unk_token_id is not None
    assert fast._full is None  # none of it loaded the transformers tokenizer
