"""Where the embedding model runs: torch (sentence-transformers) or an ONNX export under onnxruntime.

Why ONNX: the same MiniLM graph under onnxruntime gives the same vectors (fp32) faster than torch on
a CPU, and dynamic int8 quantisation makes it faster still at a small, measured cost in quality
(docs/PERFORMANCE.md). sentence-transformers' own `backend="onnx"` needs optimum, whose current
release does not import with transformers 5, so the model is exported here with `torch.onnx.export`
(the whole sentence-transformers pipeline: transformer, pooling, any dense or normalise modules)
and run with the model's own tokenizer.

The export happens once per model and runtime version, offline, into the cache directory. Before
it is stored it is verified against torch on a few sentences; the torch vectors are kept beside it,
so each later load re-checks the cached file cheaply (no torch model needed) and a corrupt file is
re-exported. When export or verification fails the embedder falls back to torch, with a warning
that says why.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import logging
import os
import re
import shutil
import sys
import tempfile
import threading
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..config import Settings
from .fast_tokenizer import BatchTokenizer, FastTokenizer

log = logging.getLogger(__name__)

BACKENDS = ("torch", "onnx", "onnx-int8")
DEFAULT_BACKEND = Settings.embed_backend
# Sentences the export is checked on: short, long, punctuation, digits, non-ASCII, over-long input.
VERIFY_SENTENCES = (
    "The lighthouse keeper climbed the stairs at dusk.",
    "Who signed the contract in 1887, and why did the harbour board refuse it?",
    "Cinderella lost her glass slipper on the palace steps.",
    "Zürich, São Paulo and Kraków are cities; naïve café déjà vu.",
    "x",
    " ".join(["The tide came in over the rocks and the gulls rose from the water."] * 40),
)
LOAD_CHECKS = 4  # check sentences re-embedded on every load of a cached export
# Cosine against torch fp32: (worst sentence, mean). Quantisation moves one-word inputs most (~0.96).
MIN_COSINE = {"onnx": (0.999, 0.999), "onnx-int8": (0.95, 0.98)}
_WEIGHT_FILES = ("*.safetensors", "pytorch_model.bin", "*.pt")
# Bumped whenever the export itself changes, so caches made by an older recipe are rebuilt.
EXPORT_RECIPE = "fused5"
# Fusions left out of the graph, offline and in the CPU session: onnxruntime's CPU kernels for a fused
# skip + bias + layer norm and bias + GELU run ~3.3x and ~1.6x slower per element than the plain Add,
# LayerNormalization and Gelu they replace, ~40% of the int8 leaves' time (docs/PERFORMANCE.md);
# unfused, the bias adds fold into the int8 matrix products instead.
SLOW_CPU_FUSIONS = ("enable_skip_layer_norm", "enable_bias_skip_layer_norm", "enable_bias_gelu")
SLOW_CPU_SESSION_FUSIONS = ("SkipLayerNormFusion", "BiasGeluFusion")
# Hugging Face model types whose encoder onnxruntime's "bert" optimiser knows how to fuse.
_MODEL_INPUTS = ("input_ids", "attention_mask", "token_type_ids")
_FUSABLE_MODEL_TYPES = {"bert", "roberta", "xlm-roberta", "camembert", "distilbert", "electra"}


class RuntimeUnavailable(Exception):
    """The ONNX runtime could not be prepared (export, quantisation or verification failed)."""


@dataclass(frozen=True)
class RuntimeChoice:
    """What will run the model: `kind` "torch" or "onnx", quantised or not, on which device/provider."""

    kind: str
    quantized: bool = False
    device: str = "cpu"  # torch device, or "cuda" when onnxruntime's CUDA provider runs the graph
    threads: int = 0  # CPU threads for one batch; 0: the runtime's default (a thread per core)


def choose_runtime(backend: str, *, ort_providers: list[str], torch_cuda: bool) -> RuntimeChoice:
    """The runtime for a configured backend on this machine; a GPU is used whenever one is usable.

    onnxruntime's CUDA provider runs the fp32 graph (dynamic int8 kernels are CPU-only, so on a GPU
    int8 would be slower); without it, a CUDA device goes to torch; otherwise the CPU runs the
    backend asked for.
    """
    if backend not in BACKENDS:
        raise ValueError(f"RAPTOR_EMBED_BACKEND must be one of {', '.join(BACKENDS)}, not {backend!r}.")
    if backend != "torch" and "CUDAExecutionProvider" in ort_providers:
        return RuntimeChoice("onnx", quantized=False, device="cuda")
    if torch_cuda:
        return RuntimeChoice("torch", device="cuda")
    if backend == "torch":
        return RuntimeChoice("torch")
    return RuntimeChoice("onnx", quantized=backend == "onnx-int8")


# ---- torch --------------------------------------------------------------------------------------


class TorchRuntime:
    """sentence-transformers on torch: the reference, and the fallback."""

    def __init__(self, model_path: str, device: str = "cpu", threads: int = 0):
        import torch
        from sentence_transformers import SentenceTransformer

        if threads:
            torch.set_num_threads(threads)  # per process: a Dask worker runs nothing else

        # A CPU computes in fp32: a folder saved in fp16 (common for newer models) would otherwise run
        # half-precision kernels that CPUs lack (slow) and export a graph int8 quantisation rejects.
        kwargs = {"model_kwargs": {"dtype": torch.float32}} if device == "cpu" else {}
        with _no_progress_bars():
            self.model = SentenceTransformer(model_path, device=device, **kwargs)
        if device == "cpu":
            self.model.float()  # modules the encoder's loader does not cover (a Dense head) too
        self.label = f"torch ({device})"
        self.device = device
        get_dim = (
            getattr(self.model, "get_embedding_dimension", None)
            or self.model.get_sentence_embedding_dimension
        )
        self.dim = int(get_dim())
        self.tokenizer = self.model.tokenizer
        self.max_seq_length = int(self.model.max_seq_length)
        self.inputs = [
            n for n in _MODEL_INPUTS if n in getattr(self.tokenizer, "model_input_names", _MODEL_INPUTS)
        ]
        # The fast tokenizer inside transformers' (when the model has one) tokenizes on several threads.
        backend = getattr(self.tokenizer, "backend_tokenizer", None)
        pad = getattr(self.tokenizer, "pad_token", None)
        self.batches = (
            BatchTokenizer(backend.to_str(), pad_token=pad, max_length=self.max_seq_length)
            if backend is not None and pad
            else None
        )
        self._tokenize_lock = threading.Lock()  # a transformers tokenizer changes its own settings per call

    def encode(self, texts: list[str]) -> np.ndarray:
        """Unit vectors of one batch: sentence-transformers' own `encode` on a CPU (the reference the
        ONNX export is verified against), the same forward pass through `prepare` and `run` on a GPU."""
        if self.device != "cpu":
            return self.run(self.prepare(texts))
        vectors = self.model.encode(
            texts,
            batch_size=max(len(texts), 1),
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.asarray(vectors, dtype=np.float32)

    def prepare(self, texts: list[str]) -> dict[str, Any]:
        """One batch's model inputs as tensors, made on the calling thread (page-locked for a GPU, so the
        copy to the device can overlap other work)."""
        import torch

        if self.batches is None:
            with self._tokenize_lock:
                feeds = {k: v for k, v in self.model.tokenize(texts).items() if k in self.inputs}
        else:
            feeds = {k: torch.from_numpy(v) for k, v in self.batches.model_inputs(texts, self.inputs).items()}
        if self.device != "cpu":
            feeds = {k: v.pin_memory() for k, v in feeds.items()}
        return feeds

    def run(self, feeds: dict[str, Any]) -> np.ndarray:
        """The model's unit vectors for inputs from `prepare`."""
        import torch

        with torch.inference_mode():
            features = {k: v.to(self.device, non_blocking=True) for k, v in feeds.items()}
            vectors = self.model(features)["sentence_embedding"]
            return torch.nn.functional.normalize(vectors.float(), dim=1).cpu().numpy()


@contextlib.contextmanager
def _no_progress_bars() -> Iterator[None]:
    """transformers draws a 'Loading weights' bar on stderr for every model it loads: noise in a CLI's
    output and a bot's log, where loading the model is one line of the log."""
    from transformers.utils import logging as transformers_logging

    shown = transformers_logging.is_progress_bar_enabled()
    transformers_logging.disable_progress_bar()
    try:
        yield
    finally:
        if shown:
            transformers_logging.enable_progress_bar()


# ---- onnx ---------------------------------------------------------------------------------------


def _normalise(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return (vectors / np.where(norms > 0, norms, 1.0)).astype(np.float32)


class OnnxRuntime:
    """An exported model under onnxruntime, fed by the model's own tokenizer."""

    def __init__(
        self, folder: Path, meta: dict[str, Any], *, quantized: bool, device: str = "cpu", threads: int = 0
    ):
        import onnxruntime as ort

        options = ort.SessionOptions()
        if threads:  # a build worker: one core each, so two workers on two cores do not fight
            options.intra_op_num_threads = threads
            options.inter_op_num_threads = 1
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.log_severity_level = 3  # onnxruntime's own warnings go to stderr, not our log
        # Idle worker threads sleep instead of spinning: spinning kept a core busy after every call,
        # which made a question's retrieval 20 ms instead of 3 ms on a busy 2-core machine and cost
        # a quarter more CPU per batch (docs/PERFORMANCE.md).
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        providers = ["CUDAExecutionProvider", "CPUExecutionProvider"] if device == "cuda" else None
        path = folder / ("model-int8.onnx" if quantized else "model.onnx")
        self.session = ort.InferenceSession(
            str(path),
            options,
            providers=providers or ["CPUExecutionProvider"],
            disabled_optimizers=session_fusions_off(device),
        )
        self.inputs = list(meta["inputs"])
        self.dim = int(meta["dim"])
        self.max_seq_length = int(meta["max_seq_length"])
        # The tokenizer was saved with the export, so the cache folder is self-contained.
        self.tokenizer = FastTokenizer(folder, pad_token=meta["pad_token"], max_length=self.max_seq_length)
        self.batches = self.tokenizer.batches
        self.label = f"{'onnx-int8' if quantized else 'onnx'} ({device})"
        self.device = device

    def encode(self, texts: list[str]) -> np.ndarray:
        return self.run(self.prepare(texts))

    def prepare(self, texts: list[str]) -> dict[str, np.ndarray]:
        """One batch's model inputs, made on the calling thread (any thread)."""
        return self.batches.model_inputs(texts, self.inputs)

    def run(self, feeds: dict[str, np.ndarray]) -> np.ndarray:
        (vectors,) = self.session.run(["sentence_embedding"], feeds)
        return _normalise(np.asarray(vectors, dtype=np.float32))


def session_fusions_off(device: str) -> list[str]:
    """onnxruntime fusions a session must not apply on `device`: on a CPU the slow fused kernels
    (SLOW_CPU_SESSION_FUSIONS), which the session would otherwise rebuild from the unfused export; a
    GPU's fused kernels are fast, so there the session fuses as it likes."""
    return list(SLOW_CPU_SESSION_FUSIONS) if device == "cpu" else []


def weights_digest(model_path: Path, memo: Path | None = None) -> str:
    """sha256 of the model's weight files: a changed model must never reuse an old export.

    Hashing ~90 MB takes a quarter of a second on every start, so the digest is remembered in
    `memo` (a JSON file) under each file's path, size and modification time; any change to a
    weight file changes that key and the files are hashed again.
    """
    files = sorted({p for pattern in _WEIGHT_FILES for p in model_path.glob(pattern)})
    if not files:
        raise RuntimeUnavailable(f"no weight files found in {model_path}")
    key = "|".join(f"{p.resolve()}:{p.stat().st_size}:{p.stat().st_mtime_ns}" for p in files)
    known = _read_memo(memo)
    if key in known:
        return known[key]
    digest = hashlib.sha256()
    for path in files:
        digest.update(path.name.encode())
        with path.open("rb") as handle:
            digest.update(hashlib.file_digest(handle, "sha256").digest())
    value = digest.hexdigest()
    if memo is not None:
        _write_memo(memo, {**known, key: value})
    return value


def _read_memo(memo: Path | None) -> dict[str, str]:
    if memo is None or not memo.is_file():
        return {}
    try:
        data = json.loads(memo.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}  # a damaged memo only costs one more hashing
    return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}


def _write_memo(memo: Path, values: dict[str, str]) -> None:
    """Replace the memo atomically; a read-only cache directory just means hashing each time."""
    try:
        memo.parent.mkdir(parents=True, exist_ok=True)
        scratch = memo.with_name(f".{memo.name}.{os.getpid()}")
        scratch.write_text(json.dumps(values, indent=0), encoding="utf-8")
        os.replace(scratch, memo)
    except OSError as exc:
        log.debug("could not remember the weights digest in %s: %s", memo, exc)


def export_folder(cache_dir: Path, model_name: str, model_path: Path) -> Path:
    """The cache folder of one model's export: keyed by name, weights and runtime versions.

    Versions come from package metadata: importing torch only to read its version costs seconds.
    """
    from importlib.metadata import version

    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", model_name).strip("_") or "model"
    digest = weights_digest(model_path, cache_dir / "onnx" / "weights-digests.json")
    key = f"{digest[:16]}-torch{version('torch')}-ort{version('onnxruntime')}-{EXPORT_RECIPE}"
    return cache_dir / "onnx" / f"{safe}-{re.sub(r'[^A-Za-z0-9._-]+', '_', key)}"


def cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.einsum("ij,ij->i", _normalise(a), _normalise(b))


def verify(runtime: Any, reference: np.ndarray, variant: str, count: int = len(VERIFY_SENTENCES)) -> float:
    """Smallest cosine between the runtime's vectors and torch's on the first `count` check sentences;
    raises when too low."""
    found = cosines(runtime.encode(list(VERIFY_SENTENCES[:count])), reference[:count])
    worst, mean = float(found.min()), float(found.mean())
    least_worst, least_mean = MIN_COSINE[variant]
    if not (worst >= least_worst and mean >= least_mean):
        raise RuntimeUnavailable(
            f"{variant} vectors differ from torch's (cosine worst {worst:.4f}, mean {mean:.4f}; "
            f"needed {least_worst}, {least_mean})"
        )
    return worst


def _pipeline_module(model: Any, inputs: list[str]) -> Any:
    """sentence-transformers' whole forward pass as a module with tensor inputs, for the exporter."""
    import torch

    class Pipeline(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, *tensors: torch.Tensor) -> torch.Tensor:
            return self.model(dict(zip(inputs, tensors, strict=True)))["sentence_embedding"]

    return Pipeline().eval()


@contextlib.contextmanager
def _quiet_onnxruntime_logs() -> Iterator[None]:
    """onnxruntime's quantiser logs hundreds of notes through the root logger; they are not ours to show."""

    def not_onnxruntime(record: logging.LogRecord) -> bool:
        return "onnxruntime" not in record.pathname

    root = logging.getLogger()
    root.addFilter(not_onnxruntime)
    try:
        yield
    finally:
        root.removeFilter(not_onnxruntime)


def export_model(
    torch_runtime: TorchRuntime, model_path: Path, folder: Path, *, fuse: bool = True
) -> dict[str, Any]:
    """Export, fuse (when `fuse` and the encoder allows), quantise and describe the model into `folder`
    (not yet verified); returns its metadata."""
    import torch
    from onnxruntime.quantization import QuantType, quantize_dynamic

    tokenizer = torch_runtime.tokenizer
    inputs = [n for n in _MODEL_INPUTS if n in tokenizer.model_input_names]
    sample = tokenizer(["a short one", "and a somewhat longer sentence"], padding=True, return_tensors="pt")
    axes = {name: {0: "batch", 1: "tokens"} for name in inputs}
    exported = folder / "exported.onnx"
    config = _transformer_config(torch_runtime.model)
    with (
        torch.no_grad(),
        warnings.catch_warnings(),
        _quiet_onnxruntime_logs(),
        _eager_attention(torch_runtime.model),
    ):
        warnings.simplefilter("ignore")  # the tracer's notes on BERT's shape checks; verified below
        torch.onnx.export(
            _pipeline_module(torch_runtime.model, inputs),
            tuple(sample[name] for name in inputs),
            str(exported),
            input_names=inputs,
            output_names=["sentence_embedding"],
            dynamic_axes={**axes, "sentence_embedding": {0: "batch"}},
            opset_version=17,
            dynamo=False,  # the TorchScript exporter: no onnxscript dependency, and it handles BERT-likes
        )
        fused = fuse and _fuse_transformer(exported, folder / "model.onnx", config)
        if not fused:
            os.replace(exported, folder / "model.onnx")
        # Per-channel scales: per-tensor int8 moved some passages to cosine 0.89 against torch,
        # per-channel keeps them above 0.97 (docs/PERFORMANCE.md) at nearly the same speed. Only the
        # matrix products are quantised: an 8-bit word-embedding table cost QASPER's leaves-only
        # recall 0.9 ROUGE-1 points against torch, the products alone none, at the same speed.
        quantize_dynamic(
            str(folder / "model.onnx"),
            str(folder / "model-int8.onnx"),
            weight_type=QuantType.QInt8,
            per_channel=True,
            # 7-bit weights: a CPU without AVX-512 VNNI sums u8 x s8 products in pairs of 16 bits,
            # which saturate with 8-bit weights and no longer can with 7, so every x86 CPU gets the
            # same integer sums, and the same vectors, trees and quotes (docs/PERFORMANCE.md).
            reduce_range=True,
            op_types_to_quantize=["MatMul", "Attention"],
            # The fused operators are onnxruntime's own, which ONNX shape inference cannot type.
            extra_options={"DefaultTensorType": _onnx_float()},
        )
    exported.unlink(missing_ok=True)
    tokenizer.save_pretrained(str(folder))
    return {
        "model_path": str(model_path),
        "inputs": inputs,
        "dim": torch_runtime.dim,
        "max_seq_length": torch_runtime.max_seq_length,
        "pad_token": tokenizer.pad_token,
        "fused": fused,
        "reference": torch_runtime.encode(list(VERIFY_SENTENCES)).tolist(),
    }


def _onnx_float() -> int:
    import onnx

    return int(onnx.TensorProto.FLOAT)


def _encoder(model: Any) -> Any:
    """The Hugging Face encoder inside a sentence-transformers model, or None for other first modules."""
    return getattr(model[0] if len(model) else None, "auto_model", None)


def _transformer_config(model: Any) -> Any:
    """The Hugging Face config of a sentence-transformers model's encoder, or None for other modules."""
    return getattr(_encoder(model), "config", None)


@contextlib.contextmanager
def _eager_attention(model: Any) -> Iterator[None]:
    """Trace attention as plain matrix products while exporting.

    transformers' default (PyTorch's scaled-dot-product attention) traces into a graph of
    masks, `IsNaN` and `Where` that onnxruntime cannot fuse; the eager form computes the same
    values and fuses into one attention kernel. The torch model is put back as it was afterwards.
    """
    before = getattr(_transformer_config(model), "_attn_implementation", None)
    switch = getattr(_encoder(model), "set_attn_implementation", None)
    if switch is None or before in (None, "eager"):
        yield
        return
    try:
        switch("eager")
    except Exception as exc:  # a model without an eager path exports as it is
        log.info("attention stays %s for the export (%s)", before, exc)
        yield
        return
    try:
        yield
    finally:
        switch(before)


def _fuse_transformer(source: Path, target: Path, config: Any) -> bool:
    """onnxruntime's transformer optimiser: attention, layer norms and GELU become single fused kernels.

    On this 2-core CPU the fused int8 graph embeds the summaries ~1.6x and the leaves ~1.1x faster
    than the unfused one (docs/PERFORMANCE.md); the skip-layer-norm and bias-GELU fusions are left
    out (SLOW_CPU_FUSIONS), as their CPU kernels are slower than the operators they replace. Only for
    encoder types the optimiser knows; any failure keeps the plain export, and both are verified
    against torch afterwards either way.
    """
    model_type = getattr(config, "model_type", None)
    if model_type not in _FUSABLE_MODEL_TYPES:
        return False
    try:
        from onnxruntime.transformers.fusion_options import FusionOptions
        from onnxruntime.transformers.optimizer import optimize_model

        fusions = FusionOptions("bert")
        for name in SLOW_CPU_FUSIONS:
            setattr(fusions, name, False)
        optimized = optimize_model(
            str(source),
            model_type="bert",
            num_heads=int(getattr(config, "num_attention_heads", 0) or 0),
            hidden_size=int(getattr(config, "hidden_size", 0) or 0),
            optimization_options=fusions,
            opt_level=1,
        )
        fused = optimized.get_fused_operator_statistics()
        if not fused.get("Attention"):
            log.info("the transformer optimiser fused no attention in %s; keeping the plain export", source)
            return False
        optimized.save_model_to_file(str(target))
    except Exception as exc:
        log.info("could not fuse the exported model (%s); keeping the plain export", exc)
        target.unlink(missing_ok=True)
        return False
    return True


def load_cached(folder: Path, choice: RuntimeChoice) -> OnnxRuntime | None:
    """The cached export, re-checked against the stored torch vectors; None when absent or unusable."""
    meta_path = folder / "meta.json"
    if not meta_path.is_file():
        return None
    variant = "onnx-int8" if choice.quantized else "onnx"
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
        runtime = OnnxRuntime(
            folder, meta, quantized=choice.quantized, device=choice.device, threads=choice.threads
        )
        # The short sentences (not the 256-token one) suffice to catch a damaged file, in milliseconds.
        verify(runtime, np.asarray(meta["reference"], dtype=np.float32), variant, count=LOAD_CHECKS)
        return runtime
    except Exception as exc:  # a truncated, corrupt or foreign file: export it again
        log.warning("the cached ONNX model in %s is unusable (%s); exporting it again", folder, exc)
        shutil.rmtree(folder, ignore_errors=True)
        return None


def export_and_verify(
    torch_runtime: TorchRuntime, model_path: Path, folder: Path, choice: RuntimeChoice
) -> OnnxRuntime:
    """Export into a scratch folder, verify both variants against torch, then publish it atomically.

    The fused graph is tried first; if its vectors do not verify, the plain export is tried before
    giving up on ONNX.
    """
    folder.parent.mkdir(parents=True, exist_ok=True)
    try:
        meta = _export_verified(torch_runtime, model_path, folder, choice, fuse=True)
    except RuntimeUnavailable as exc:
        log.warning("the fused ONNX export did not verify (%s); exporting without fusion", exc)
        meta = _export_verified(torch_runtime, model_path, folder, choice, fuse=False)
    log.info("exported %s to ONNX in %s (cosine vs torch: %s)", model_path, folder, meta["verified_cosine"])
    return OnnxRuntime(folder, meta, quantized=choice.quantized, device=choice.device, threads=choice.threads)


def _export_verified(
    torch_runtime: TorchRuntime, model_path: Path, folder: Path, choice: RuntimeChoice, *, fuse: bool
) -> dict[str, Any]:
    """One export attempt in a scratch folder, moved into `folder` only once both variants verify."""
    scratch = Path(tempfile.mkdtemp(prefix=".export-", dir=folder.parent))
    try:
        meta = export_model(torch_runtime, model_path, scratch, fuse=fuse)
        reference = np.asarray(meta["reference"], dtype=np.float32)
        meta["verified_cosine"] = {}
        for variant, quantized in (("onnx", False), ("onnx-int8", True)):
            candidate = OnnxRuntime(scratch, meta, quantized=quantized, device=choice.device)
            meta["verified_cosine"][variant] = verify(candidate, reference, variant)
        (scratch / "meta.json").write_text(json.dumps(meta), encoding="utf-8")
        shutil.rmtree(folder, ignore_errors=True)
        os.replace(scratch, folder)
    except Exception:
        shutil.rmtree(scratch, ignore_errors=True)
        raise
    return meta


def _gpu_device_present() -> bool:
    """Whether this machine shows a GPU driver at all: without one, importing torch (seconds) to ask is waste."""
    if sys.platform not in ("linux", "darwin") or "torch" in sys.modules:
        return True  # no cheap probe here (or torch is loaded already): ask torch
    return any(Path(p).exists() for p in ("/dev/nvidiactl", "/proc/driver/nvidia/version", "/dev/kfd"))


def torch_cuda_available() -> bool:
    if not _gpu_device_present():
        return False
    try:
        import torch

        return bool(torch.cuda.is_available())
    except Exception:  # a broken torch install is not a reason to fail here
        return False


def ort_providers() -> list[str]:
    import onnxruntime

    return list(onnxruntime.get_available_providers())


def _torch_device(use_gpu: bool) -> str:
    return "cuda" if use_gpu and torch_cuda_available() else "cpu"


def load_runtime(
    model_name: str,
    model_path: str,
    *,
    backend: str,
    cache_dir: Path,
    use_gpu: bool = True,
    threads: int = 0,
) -> TorchRuntime | OnnxRuntime:
    """The runtime for `backend`: the cached ONNX export when it verifies, else a fresh export, else torch.
    `threads` caps the CPU threads of one batch (0: one per core)."""
    if use_gpu:
        choice = choose_runtime(backend, ort_providers=ort_providers(), torch_cuda=torch_cuda_available())
    else:
        choice = choose_runtime(backend, ort_providers=[], torch_cuda=False)
    choice = dataclasses.replace(choice, threads=threads)
    if choice.kind == "torch":
        return TorchRuntime(model_path, choice.device, threads)
    folder_path = Path(model_path)
    if not folder_path.is_dir():
        log.info("%s is not a local folder; ONNX export skipped, using torch", model_name)
        return TorchRuntime(model_path, _torch_device(use_gpu), threads)
    try:
        folder = export_folder(cache_dir, model_name, folder_path)
        cached = load_cached(folder, choice)
        if cached is not None:
            return cached
    except Exception as exc:
        log.warning("could not look up the ONNX cache for %s (%s)", model_name, exc)
        folder = None
    # exported from the CPU copy, the exporter's safe case
    torch_runtime = TorchRuntime(model_path, "cpu", threads)
    if folder is None:
        return torch_runtime
    try:
        return export_and_verify(torch_runtime, folder_path, folder, choice)
    except Exception as exc:
        log.warning(
            "Could not export the embedding model %s to ONNX in %s (%s); embedding with torch instead.",
            model_name,
            folder,
            exc,
            exc_info=log.isEnabledFor(logging.DEBUG),
        )
        return torch_runtime
