"""The embedding runtime: ONNX export equivalent to torch, verified and cached; fallbacks; GPU choice."""

from __future__ import annotations

import logging
import shutil

import numpy as np
import pytest

from raptor_engine.errors import RaptorError
from raptor_engine.tree import embed_runtime as rt
from raptor_engine.tree.embed import Embedder, resolve_model_path

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
    folders = [p for p in (cache / "onnx").iterdir() if p.is_dir()]
    assert len(folders) == 1 and (folders[0] / "meta.json").is_file()
    return folders[0]


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    """A two-layer BERT with random weights and the real model's tokenizer, saved as a sentence-transformers
    folder: for the tests of exporting, caching and precision, where the weights' values do not matter and
    each export of the real model costs seconds of CPU."""
    import torch
    from sentence_transformers import SentenceTransformer, models
    from transformers import AutoTokenizer, BertConfig, BertModel

    folder = tmp_path_factory.mktemp("tiny")
    tokenizer = AutoTokenizer.from_pretrained(resolve_model_path(MODEL))
    config = BertConfig(
        vocab_size=tokenizer.vocab_size,
        hidden_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=128,
        max_position_embeddings=512,
    )
    torch.manual_seed(0)
    BertModel(config).save_pretrained(folder / "bert")
    tokenizer.save_pretrained(folder / "bert")
    modules = [models.Transformer(str(folder / "bert"), max_seq_length=256), models.Pooling(64), models.Normalize()]
    SentenceTransformer(modules=modules, device="cpu").save(str(folder / "model"))
    return folder / "model"


@pytest.fixture(scope="module")
def tiny_exported(tiny_model, tmp_path_factory):
    """The tiny model's ONNX export: the folder it was published in."""
    cache = tmp_path_factory.mktemp("tiny-cache")
    assert Embedder(str(tiny_model), backend="onnx", cache_dir=cache, use_gpu=False).backend == "onnx (cpu)"
    [folder] = [p for p in (cache / "onnx").iterdir() if p.is_dir()]
    return folder


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


def test_a_corrupt_cached_model_is_exported_again(tiny_model, tiny_exported, tmp_path, caplog):
    cache = tmp_path / "cache"
    shutil.copytree(tiny_exported.parent, cache / "onnx")
    folder = cache / "onnx" / tiny_exported.name
    model = folder / "model.onnx"
    model.write_bytes(model.read_bytes()[: model.stat().st_size // 2])  # truncated on disk
    with caplog.at_level(logging.WARNING, logger="raptor_engine.tree.embed_runtime"):
        embedder = Embedder(str(tiny_model), backend="onnx", cache_dir=cache, use_gpu=False)
    assert embedder.backend == "onnx (cpu)"
    assert any("is unusable" in r.getMessage() and "exporting it again" in r.getMessage() for r in caplog.records)
    assert model.stat().st_size == (tiny_exported / "model.onnx").stat().st_size  # a whole model again


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
    with caplog.at_level(logging.WARNING, logger="raptor_engine.tree.embed_runtime"):
        assert rt.load_cached(folder, choice) is None
    assert "differ from torch" in caplog.text and not folder.exists()


def test_a_failed_export_falls_back_to_torch_with_a_clear_warning(tmp_path, caplog, monkeypatch):
    def broken_export(*args, **kwargs):
        raise RuntimeError("exporter exploded")

    monkeypatch.setattr(rt, "export_model", broken_export)
    with caplog.at_level(logging.WARNING, logger="raptor_engine.tree.embed_runtime"):
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

    from raptor_engine.tree.fast_tokenizer import FastTokenizer

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

    from raptor_engine.tree.embed import resolve_model_path
    from raptor_engine.tree.fast_tokenizer import FastTokenizer

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


def test_the_export_fuses_attention_into_single_kernels(exported):
    """The eager-attention export lets onnxruntime fuse each layer's attention, norms and GELU; the
    quantised graph then runs quantised attention. A regression to the unfused graph costs ~1.6x on summaries."""
    import collections
    import json

    import onnx

    assert json.loads((exported / "meta.json").read_text())["fused"] is True
    fp32 = collections.Counter(n.op_type for n in onnx.load(str(exported / "model.onnx")).graph.node)
    int8 = collections.Counter(n.op_type for n in onnx.load(str(exported / "model-int8.onnx")).graph.node)
    assert fp32["Attention"] == 6 and fp32["LayerNormalization"] == 12 and fp32["Gelu"] == 6 and not fp32["IsNaN"]
    assert int8["QAttention"] == 6
    for graph in (fp32, int8):  # fusions whose CPU kernels are slower than the operators they replace
        assert not graph["SkipLayerNormalization"] and not graph["BiasGelu"]
    assert int8["EmbedLayerNormalization"] == 1 and not int8["QEmbedLayerNormalization"]  # embeddings stay fp32
    assert not (exported / "exported.onnx").exists()  # the unfused intermediate is not kept


def test_the_cpu_session_runs_plain_layer_norms_and_gelu_with_the_biases_in_the_int8_products(
    exported, tmp_path, monkeypatch
):
    """onnxruntime would rebuild the slow fused skip-layer-norm and bias-GELU kernels from the unfused
    export at load time: the CPU session must not, and its bias adds fold into the int8 matrix products."""
    import collections

    import onnx
    import onnxruntime as ort

    real = ort.InferenceSession
    optimized = tmp_path / "optimized.onnx"

    def recording(path, options, **kwargs):
        options.optimized_model_filepath = str(optimized)  # what the session actually runs, written out
        return real(path, options, **kwargs)

    monkeypatch.setattr(ort, "InferenceSession", recording)
    meta = __import__("json").loads((exported / "meta.json").read_text())
    runtime = rt.OnnxRuntime(exported, meta, quantized=True)
    graph = collections.Counter(n.op_type for n in onnx.load(str(optimized)).graph.node)
    assert not graph["SkipLayerNormalization"] and not graph["BiasGelu"]
    assert graph["LayerNormalization"] == 12 and graph["Gelu"] == 6 and graph["DynamicQuantizeMatMul"] == 18
    assert graph["Add"] == 12  # only the residual adds are left: every bias went into its matrix product
    assert runtime.encode(["the keeper"]).shape == (1, runtime.dim)
    assert rt.session_fusions_off("cuda") == []  # a GPU's fused kernels are fast: its session fuses freely


def test_the_export_gives_the_torch_model_back_with_its_own_attention():
    """The export switches attention to its eager form only while tracing: the torch fallback keeps its own."""
    torch_runtime = rt.TorchRuntime(resolve_model_path(MODEL))
    config = rt._transformer_config(torch_runtime.model)
    before = config._attn_implementation
    assert before != "eager"
    with rt._eager_attention(torch_runtime.model):
        assert config._attn_implementation == "eager"
    assert config._attn_implementation == before


def test_encoders_the_optimiser_does_not_know_are_exported_unfused(tmp_path):
    from types import SimpleNamespace

    target = tmp_path / "model.onnx"
    assert not rt._fuse_transformer(tmp_path / "exported.onnx", target, SimpleNamespace(model_type="mpnet"))
    assert not rt._fuse_transformer(tmp_path / "exported.onnx", target, None)
    assert not target.exists()


def test_a_fused_export_that_does_not_verify_is_replaced_by_the_plain_export(tiny_model, tmp_path, caplog, monkeypatch):
    """Verification guards the fusion: vectors that differ from torch's send the export back to the plain graph."""
    import json

    original = rt.export_model
    calls: list[bool] = []

    def fused_goes_wrong(*args, fuse=True, **kwargs):
        calls.append(fuse)
        meta = original(*args, fuse=fuse, **kwargs)
        if fuse:  # as if the fused graph computed other vectors than torch
            meta["reference"] = np.roll(np.asarray(meta["reference"]), 1, axis=0).tolist()
        return meta

    monkeypatch.setattr(rt, "export_model", fused_goes_wrong)
    with caplog.at_level(logging.WARNING, logger="raptor_engine.tree.embed_runtime"):
        embedder = Embedder(str(tiny_model), backend="onnx-int8", cache_dir=tmp_path, use_gpu=False)
    assert calls == [True, False]
    assert embedder.backend == "onnx-int8 (cpu)"
    assert "fused ONNX export did not verify" in caplog.text
    (folder,) = [p for p in (tmp_path / "onnx").iterdir() if p.is_dir()]
    assert json.loads((folder / "meta.json").read_text())["fused"] is False


def test_the_weights_digest_is_remembered_until_a_weight_file_changes(tmp_path, monkeypatch):
    """Hashing ~90 MB of weights on every start cost a quarter second; the memo is keyed by path, size and time."""
    import hashlib
    import os

    copy = tmp_path / "model"
    shutil.copytree(resolve_model_path(MODEL), copy)
    memo = tmp_path / "digests.json"
    first = rt.weights_digest(copy, memo)
    assert memo.is_file() and first == rt.weights_digest(copy)  # the memo holds the real digest

    hashed: list[str] = []
    real = hashlib.file_digest
    monkeypatch.setattr(hashlib, "file_digest", lambda f, d: hashed.append(f.name) or real(f, d))
    assert rt.weights_digest(copy, memo) == first and hashed == []  # remembered: nothing hashed

    weights = copy / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:-1] + b"\x01")
    os.utime(weights, ns=(1, 1))  # a changed file with a new time is hashed again
    changed = rt.weights_digest(copy, memo)
    assert changed != first and hashed

    memo.write_text("{not json")  # a damaged memo only costs one more hashing
    assert rt.weights_digest(copy, memo) == changed


def test_batches_are_bounded_in_padded_tokens_and_texts():
    from raptor_engine.tree.embed import token_batches

    lengths = [12, 250, 40, 40, 39, 100, 7, 7, 7, 7]
    order = np.argsort([-n for n in lengths], kind="stable")
    batches = token_batches(order, lengths, max_texts=3, max_tokens=120)
    assert np.concatenate(batches).tolist() == order.tolist()  # every text once, longest first
    for batch in batches:
        padded = len(batch) * lengths[batch[0]]
        assert len(batch) <= 3 and (padded <= 120 or len(batch) == 1)
    assert [lengths[b[0]] for b in batches if len(b) == 1][:2] == [250, 100]  # over the budget: alone
    assert token_batches(order[:0], lengths, max_texts=3, max_tokens=120) == []


def test_embedding_keeps_the_input_order_and_never_loads_transformers(tmp_path, exported):
    """Batches are formed longest first; the vectors come back in the caller's order. Measuring the
    texts must not load the full transformers tokenizer (and torch) on the ONNX runtime."""
    embedder = Embedder(MODEL, backend="onnx", cache_dir=exported.parents[1], use_gpu=False)
    embedder.batch_tokens = 64  # several small batches
    vectors = embedder.embed(SENTENCES)
    alone = np.vstack([embedder.embed([s]) for s in SENTENCES])
    assert rt.cosines(vectors, alone).min() > 0.9999  # fp32: the batch does not change a text's vector
    assert embedder.tokenizer._full is None and embedder.runtime.tokenizer._full is None


def test_given_token_counts_size_the_batches_without_tokenizing_again(tmp_path, exported, monkeypatch):
    """A build passes the counts it already has; the vectors are the same, and nothing is measured."""
    embedder = Embedder(MODEL, backend="onnx", cache_dir=exported.parents[1], use_gpu=False)
    embedder.batch_tokens = 64
    measured = embedder.embed(SENTENCES)
    counts = embedder.count_tokens_batch(SENTENCES)

    def no_measuring(texts):
        raise AssertionError("measured the texts again")

    monkeypatch.setattr(embedder, "_input_lengths", no_measuring)
    given = embedder.embed(SENTENCES, token_counts=counts)
    assert rt.cosines(given, measured).min() > 0.9999


def test_counts_are_remembered_by_text_and_stay_right(embedder, monkeypatch):
    """A build counts the same sentences several times; the tokenizer sees each text once."""
    texts = ["The keeper trimmed the wick.", "A gale blew all night long.", "The keeper trimmed the wick."]
    first = embedder.count_tokens_batch(texts)
    assert first[0] == first[2] == embedder._count_now([texts[0]])[0]
    tokenized: list[str] = []
    real = embedder._count_now

    def recording(batch):
        tokenized.extend(batch)
        return real(batch)

    monkeypatch.setattr(embedder, "_count_now", recording)
    assert embedder.count_tokens_batch(texts + ["Fog came in at dawn."]) == first + real(["Fog came in at dawn."])
    assert tokenized == ["Fog came in at dawn."]
    long = "word " * 400  # longer than the memo keeps: counted each time, and right each time
    assert embedder.count_tokens_batch([long]) == embedder.count_tokens_batch([long]) == [400]
    assert tokenized.count(long) == 2


def test_a_model_saved_in_fp16_runs_on_the_cpu_runtimes_in_fp32(tiny_model, tmp_path):
    """Weights saved in half precision (common for newer models) load as fp32 on a CPU: the ONNX export and
    its int8 quantisation succeed (an fp16 graph made DynamicQuantizeLinear reject its input), so the fast
    runtime is chosen, and the vectors are the fp32 model's."""
    from sentence_transformers import SentenceTransformer

    fp32_vectors = rt.TorchRuntime(str(tiny_model), "cpu").encode(SENTENCES)
    folder = tmp_path / "fp16"
    SentenceTransformer(str(tiny_model), device="cpu").half().save(str(folder))
    assert "float16" in (folder / "config.json").read_text()
    for backend in ("onnx-int8", "onnx"):
        embedder = Embedder(str(folder), backend=backend, cache_dir=tmp_path / "cache", use_gpu=False)
        assert embedder.backend == f"{backend} (cpu)"
        similarity = rt.cosines(embedder.embed(SENTENCES), fp32_vectors)
        assert similarity.min() >= (0.95 if backend == "onnx-int8" else 0.999)
    reference = rt.TorchRuntime(str(folder), "cpu")
    assert {p.dtype.is_floating_point and str(p.dtype) for p in reference.model.parameters()} == {"torch.float32"}
    assert rt.cosines(reference.encode(SENTENCES), fp32_vectors).min() >= 0.999


def _chunks(count: int) -> list[str]:
    """Texts of varied length (a few tokens to past the model's limit), so batches differ in width."""
    words = "the keeper trimmed the wick while gulls rose over grey water and the tide came in".split()
    return [" ".join(words[(i * 7) % len(words) :] + words * (i % 23)) for i in range(count)]


def test_pipelined_embedding_tokenizes_ahead_on_threads_and_gives_the_same_vectors(
    tiny_model, tiny_exported, monkeypatch
):
    """The GPU path on a CPU: worker threads measure and tokenize the batches, the next ones while the
    model runs the current one, and the vectors (fp32) are the ones the plain loop gives, in order
    (on the tiny model: the pipeline is the embedder's, whatever the weights)."""
    import threading

    texts = _chunks(120)
    plain = Embedder(str(tiny_model), backend="onnx", cache_dir=tiny_exported.parents[1], use_gpu=False)
    assert plain.tokenize_threads == 0 and not plain._pipelined()  # a CPU's cores run the model
    plain.batch_tokens = 512
    expected = plain.embed(texts)

    piped = Embedder(
        str(tiny_model), backend="onnx", cache_dir=tiny_exported.parents[1], use_gpu=False, tokenize_threads=3
    )
    piped.batch_tokens = 512
    runtime = piped.runtime
    prepared_on: list[str] = []
    second_prepared = threading.Event()
    real_prepare, real_run = runtime.prepare, runtime.run

    def prepare(batch: list[str]) -> dict:
        feeds = real_prepare(batch)
        prepared_on.append(threading.current_thread().name)
        if len(prepared_on) >= 2:
            second_prepared.set()
        return feeds

    def run(feeds: dict) -> np.ndarray:
        # The model's first batch starts only once a later batch is tokenized already: it was done ahead.
        assert second_prepared.wait(60), "the next batch was not tokenized while the model ran"
        return real_run(feeds)

    monkeypatch.setattr(runtime, "prepare", prepare)
    monkeypatch.setattr(runtime, "run", run)
    assert piped._parallel_lengths(texts) == plain._input_lengths(texts)
    vectors = piped.embed(texts)
    batches = len(prepared_on)
    assert batches > 5 and all(name.startswith("raptor-tokenize") for name in prepared_on)
    assert rt.cosines(vectors, expected).min() > 0.99999


def test_the_gpu_forward_pass_matches_sentence_transformers_on_the_cpu(tiny_model):
    """The torch runtime's `prepare` + `run` (the GPU path: its own threads' tokenizer, the model's forward
    pass) gives sentence-transformers' `encode` vectors; here on the CPU with the tiny model, on CUDA with
    the real one in the test below."""
    torch_runtime = rt.TorchRuntime(str(tiny_model), "cpu")
    assert torch_runtime.batches is not None
    texts = [*SENTENCES, *_chunks(40)]
    reference = torch_runtime.encode(texts)
    assert rt.cosines(torch_runtime.run(torch_runtime.prepare(texts)), reference).min() > 0.99999


def test_a_gpu_runtime_gets_device_sized_batches_and_tokenizing_threads(tiny_model, tiny_exported, monkeypatch):
    """What the embedder decides from the runtime's device, checked with the CPU runtime labelled as a GPU."""
    from raptor_engine.tree import embed as embed_module

    real_load = embed_module.load_runtime

    def as_if_on_a_gpu(*args, **kwargs):
        runtime = real_load(*args, **kwargs)
        runtime.device = "cuda"
        return runtime

    monkeypatch.setattr(embed_module, "load_runtime", as_if_on_a_gpu)
    embedder = Embedder(
        str(tiny_model), backend="onnx", cache_dir=tiny_exported.parents[1], use_gpu=False, gpu_batch_tokens=4096
    )
    assert embedder.on_gpu and embedder.batch_tokens == 4096 and embedder.batch_size == 4096 // 16
    assert embedder.tokenize_threads == embed_module.default_tokenize_threads() >= 1
    assert embedder._pipelined()
    texts = _chunks(60)
    assert embedder.embed(texts).shape == (60, 64)


@pytest.mark.skipif(not rt.torch_cuda_available(), reason="needs a CUDA GPU (the GPU path runs on the CPU above)")
def test_on_a_cuda_gpu_vectors_equal_the_cpus_with_device_sized_batches():
    """On a GPU: big batches tokenized on threads ahead of the device, vectors equal to the CPU's."""
    gpu = Embedder(MODEL, backend="torch", use_gpu=True)
    assert gpu.on_gpu and gpu.backend == "torch (cuda)" and gpu._pipelined()
    assert gpu.batch_tokens == 65_536
    cpu = Embedder(MODEL, backend="torch", use_gpu=False)
    texts = [*SENTENCES, *_chunks(2000)]
    assert rt.cosines(gpu.embed(texts), cpu.embed(texts)).min() >= 0.99999


def test_the_torch_runtime_loads_and_counts_without_writing_to_stderr(capfd):
    """A CLI's output and a bot's log get no 'Loading weights' bar and no 'Token indices sequence length
    is longer than the specified maximum' warning: counting a long text never feeds it to the model."""
    embedder = Embedder(MODEL, backend="torch", use_gpu=False)
    long_text = " ".join(f"word{i}" for i in range(800)) + "."
    assert embedder.count_tokens(long_text) > embedder.max_tokens
    captured = capfd.readouterr()
    assert "Loading weights" not in captured.err and "Token indices" not in captured.err, captured.err
