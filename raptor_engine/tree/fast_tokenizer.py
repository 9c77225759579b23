"""The model's tokenizer through the `tokenizers` library alone, for the ONNX runtime.

Why: `from transformers import AutoTokenizer` imports torch, 2-3 s of every process's start-up
that the ONNX runtime otherwise never needs. This reads the same `tokenizer.json` (the fast
tokenizer transformers itself wraps), answers the calls the engine makes with identical ids
(tested against transformers), and hands any other call or attribute to the full transformers
tokenizer, loaded on first such use.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import numpy as np

_OUTPUTS = {"input_ids": "ids", "attention_mask": "attention_mask", "token_type_ids": "type_ids"}


def _encode_without_offsets(tokenizer: Any, texts: list[str], add_special_tokens: bool) -> list[Any]:
    """`encode_batch_fast` where this `tokenizers` has it: the same ids without tracking each token's
    characters, about a third faster (tokenizing is ~10% of an ingest)."""
    fast = getattr(tokenizer, "encode_batch_fast", None)
    if fast is None:
        return tokenizer.encode_batch(texts, add_special_tokens=add_special_tokens)
    return fast(texts, add_special_tokens=add_special_tokens)


class FastTokenizer:
    """Callable like a transformers tokenizer for counting: `tok(text_or_texts, add_special_tokens=False)`."""

    def __init__(self, folder: Path, *, pad_token: str, max_length: int):
        from tokenizers import Tokenizer

        self.folder = Path(folder)
        self.pad_token = pad_token
        self.max_length = max_length
        self._plain = Tokenizer.from_file(str(self.folder / "tokenizer.json"))
        self._plain.no_truncation()  # counting sees every token
        self._plain.no_padding()
        self.batches = BatchTokenizer.from_file(
            self.folder / "tokenizer.json", pad_token=pad_token, max_length=max_length
        )
        self._full: Any = None

    def __call__(
        self, text: str | list[str], *, add_special_tokens: bool = True, truncation: bool = False, **other: Any
    ) -> dict[str, Any]:
        """Token ids (and, asked for, character offsets) of one text or a list, without truncation or
        padding, as transformers returns them."""
        offsets = bool(other.pop("return_offsets_mapping", False))
        if other or truncation:  # any other form of call: the full tokenizer, which knows them all
            return self.full()(
                text,
                add_special_tokens=add_special_tokens,
                truncation=truncation,
                return_offsets_mapping=offsets,
                **other,
            )
        if isinstance(text, str):
            one = self._plain.encode(text, add_special_tokens=add_special_tokens)
            return {"input_ids": one.ids, **({"offset_mapping": list(one.offsets)} if offsets else {})}
        if offsets:
            encoded = self._plain.encode_batch(list(text), add_special_tokens=add_special_tokens)
            return {"input_ids": [e.ids for e in encoded], "offset_mapping": [list(e.offsets) for e in encoded]}
        encoded = _encode_without_offsets(self._plain, list(text), add_special_tokens)
        return {"input_ids": [e.ids for e in encoded]}

    @property
    def unk_token_id(self) -> int | None:
        """The id of the unknown token ([UNK]), read from the tokenizer's own model (no transformers)."""
        unknown = getattr(self._plain.model, "unk_token", None)
        return self._plain.token_to_id(unknown) if unknown else None

    def model_inputs(self, texts: list[str], names: list[str]) -> dict[str, np.ndarray]:
        """A padded, truncated batch as the model's int64 inputs (what transformers' return_tensors="np" gives)."""
        return self.batches.model_inputs(texts, names)

    def full(self) -> Any:
        """The transformers tokenizer of the same files (imports transformers and torch: seconds)."""
        if self._full is None:
            from transformers import AutoTokenizer

            self._full = AutoTokenizer.from_pretrained(str(self.folder))
        return self._full

    def __deepcopy__(self, memo: dict[int, Any]) -> FastTokenizer:
        return FastTokenizer(self.folder, pad_token=self.pad_token, max_length=self.max_length)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.full(), name)


class BatchTokenizer:
    """Padded, truncated model inputs and input lengths, callable from several threads at once.

    Why: on a GPU the Python side's tokenizing, not the device, bounds embedding (docs/PERFORMANCE.md).
    `tokenizers` encodes a batch in Rust with the GIL released, so threads tokenize in parallel; each
    thread gets its own copy of the tokenizer, so no call ever waits on another thread's.
    """

    def __init__(self, spec: str, *, pad_token: str, max_length: int):
        self.spec = spec  # the tokenizer's JSON (tokenizer.json)
        self.pad_token = pad_token
        self.max_length = max_length  # the model's input length, special tokens included
        self._local = threading.local()

    @classmethod
    def from_file(cls, path: Path, *, pad_token: str, max_length: int) -> BatchTokenizer:
        return cls(Path(path).read_text(encoding="utf-8"), pad_token=pad_token, max_length=max_length)

    def _mine(self) -> tuple[Any, Any]:
        """This thread's (padding, non-padding) tokenizers, both truncating at the model's length."""
        pair = getattr(self._local, "pair", None)
        if pair is None:
            from tokenizers import Tokenizer

            padded, plain = Tokenizer.from_str(self.spec), Tokenizer.from_str(self.spec)
            for tokenizer in (padded, plain):
                tokenizer.enable_truncation(self.max_length)
            padded.enable_padding(pad_id=padded.token_to_id(self.pad_token), pad_token=self.pad_token)
            plain.no_padding()
            pair = self._local.pair = (padded, plain)
        return pair

    def model_inputs(self, texts: list[str], names: list[str]) -> dict[str, np.ndarray]:
        """One batch as the model's int64 inputs, padded to its longest text."""
        encoded = _encode_without_offsets(self._mine()[0], list(texts), True)
        return {name: np.array([getattr(e, _OUTPUTS[name]) for e in encoded], dtype=np.int64) for name in names}

    def lengths(self, texts: list[str]) -> list[int]:
        """Each text's length as the model is fed it: special tokens added, cut at the model's limit."""
        return [len(e) for e in _encode_without_offsets(self._mine()[1], list(texts), True)]
