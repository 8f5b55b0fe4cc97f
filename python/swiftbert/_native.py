"""The ctypes binding of libswiftbert.so (Sources/SwiftBERTCABI/swiftbert.h).

Everything the package does goes through here: texts to UTF-8 arrays, status codes to
exceptions, result handles to Python values. ctypes releases the GIL around every call, so
several Python threads run the engine at once; the library is safe for that.
"""
from __future__ import annotations

import ctypes
import json
import os
import threading
from pathlib import Path
from typing import Optional, Sequence

import numpy as np

from . import _variant, errors

ABI_VERSION = 3
_PACKAGE = Path(__file__).resolve().parent
_lock = threading.Lock()
_library: Optional[ctypes.CDLL] = None

_size_p = ctypes.POINTER(ctypes.c_size_t)
_u64_p = ctypes.POINTER(ctypes.c_uint64)
_texts_t = ctypes.POINTER(ctypes.c_char_p)
PROGRESS = ctypes.CFUNCTYPE(None, ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p)

# name: (argument types), every one returning int32 status unless listed in _RETURNS.
_SIGNATURES = {
    "swiftbert_abi_version": [],
    "swiftbert_version": [],
    "swiftbert_last_error": [],
    "swiftbert_load": [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int32, _u64_p],
    "swiftbert_free": [ctypes.c_uint64],
    "swiftbert_dimension": [ctypes.c_uint64, _size_p],
    "swiftbert_model_info": [ctypes.c_uint64, _u64_p],
    "swiftbert_embed": [ctypes.c_uint64, _texts_t, _size_p, ctypes.c_size_t, ctypes.c_int32, ctypes.c_int32,
                        ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int32, ctypes.c_void_p, ctypes.c_size_t],
    "swiftbert_embed_sparse": [ctypes.c_uint64, _texts_t, _size_p, ctypes.c_size_t, ctypes.c_int32, ctypes.c_int32, _u64_p],
    "swiftbert_embed_tokens": [ctypes.c_uint64, _texts_t, _size_p, ctypes.c_size_t, ctypes.c_int32, ctypes.c_int32,
                               ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int32, _u64_p],
    "swiftbert_embed_multi_vector": [ctypes.c_uint64, _texts_t, _size_p, ctypes.c_size_t, ctypes.c_int32, ctypes.c_int32, _u64_p],
    "swiftbert_embed_outputs": [ctypes.c_uint64, _texts_t, _size_p, ctypes.c_size_t, ctypes.c_int32, ctypes.c_int32,
                                ctypes.c_int32, ctypes.c_int32, _u64_p],
    "swiftbert_rerank": [ctypes.c_uint64, ctypes.c_char_p, ctypes.c_size_t, _texts_t, _size_p, ctypes.c_size_t,
                         ctypes.c_int32, ctypes.c_void_p, ctypes.c_size_t],
    "swiftbert_logits": [ctypes.c_uint64, _texts_t, _size_p, _texts_t, _size_p, ctypes.c_size_t, ctypes.c_int32,
                         ctypes.c_void_p, ctypes.c_size_t],
    "swiftbert_classify": [ctypes.c_uint64, _texts_t, _size_p, ctypes.c_size_t, ctypes.c_int32, ctypes.c_int32, _u64_p],
    "swiftbert_token_classify": [ctypes.c_uint64, _texts_t, _size_p, ctypes.c_size_t, ctypes.c_char_p, ctypes.c_int32, _u64_p],
    "swiftbert_fill_mask": [ctypes.c_uint64, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_int32, _u64_p],
    "swiftbert_tokenize": [ctypes.c_uint64, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_int32, _u64_p],
    "swiftbert_quantize_embeddings": [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_size_t,
                                      ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p, ctypes.c_size_t],
    "swiftbert_pull": [ctypes.c_char_p, ctypes.c_int32, PROGRESS, ctypes.c_void_p, _u64_p],
    "swiftbert_models": [_u64_p],
    "swiftbert_result_json": [ctypes.c_uint64, ctypes.POINTER(ctypes.c_char_p), _size_p],
    "swiftbert_result_floats": [ctypes.c_uint64, ctypes.POINTER(ctypes.POINTER(ctypes.c_float)), _size_p],
    "swiftbert_result_ints": [ctypes.c_uint64, ctypes.POINTER(ctypes.POINTER(ctypes.c_int32)), _size_p],
    "swiftbert_result_free": [ctypes.c_uint64],
}
_RETURNS = {"swiftbert_version": ctypes.c_char_p, "swiftbert_last_error": ctypes.c_char_p}


def library_path() -> Path:
    """libswiftbert.so: $SWIFTBERT_LIBRARY when set (a build tree), else the wheel's copy of the
    build this CPU runs (`_variant`)."""
    override = os.environ.get("SWIFTBERT_LIBRARY")
    return Path(override) if override else _variant.folder() / "libswiftbert.so"


def library() -> ctypes.CDLL:
    """The loaded library, opened once (RTLD_LOCAL: its symbols stay out of the process's)."""
    global _library
    if _library is None:
        with _lock:
            if _library is None:
                path = library_path()
                if not path.exists():
                    raise errors.SwiftBERTError(f"{path}: libswiftbert.so not found; reinstall the swiftbert wheel")
                lib = ctypes.CDLL(str(path), mode=os.RTLD_LOCAL)
                for name, argtypes in _SIGNATURES.items():
                    function = getattr(lib, name)
                    function.argtypes = argtypes
                    function.restype = _RETURNS.get(name, ctypes.c_int32)
                version = lib.swiftbert_abi_version()
                if version != ABI_VERSION:
                    raise errors.SwiftBERTError(f"{path}: C ABI version {version}; this package speaks {ABI_VERSION}")
                _library = lib
    return _library


def check(status: int) -> None:
    """Raises the error class of a non-zero status with the engine's message for this thread."""
    if status != 0:
        message = library().swiftbert_last_error().decode("utf-8", "replace")
        raise errors.for_status(status, message)


def encode_text(text: object, what: str = "text") -> bytes:
    """UTF-8 bytes of a str. Lone surrogates pass through as bytes the engine refuses with an
    error (InvalidArgumentError), as any other invalid UTF-8."""
    if not isinstance(text, str):
        raise TypeError(f"{what} must be str, not {type(text).__name__}")
    return text.encode("utf-8", "surrogatepass")


class TextArray:
    """A list of str as the C ABI takes it: char pointers and byte lengths (kept alive here)."""

    def __init__(self, texts: Sequence[str], what: str = "texts"):
        self.encoded = [encode_text(t, f"{what}[{i}]") for i, t in enumerate(texts)]
        count = len(self.encoded)
        self.count = count
        self.pointers = (ctypes.c_char_p * max(1, count))(*self.encoded)
        self.lengths = (ctypes.c_size_t * max(1, count))(*[len(b) for b in self.encoded])

    @property
    def args(self):
        return (ctypes.cast(self.pointers, _texts_t), ctypes.cast(self.lengths, _size_p), self.count)


def optional_bytes(value: Optional[str], what: str) -> Optional[bytes]:
    if value is None:
        return None
    if not isinstance(value, str):
        raise TypeError(f"{what} must be str or None, not {type(value).__name__}")
    encoded = value.encode("utf-8", "surrogatepass")
    if b"\0" in encoded:
        raise ValueError(f"{what} holds a NUL character")
    return encoded


class Result:
    """A result handle's JSON, floats and ints, copied out, then freed."""

    def __init__(self, handle: int):
        lib = library()
        try:
            text, length = ctypes.c_char_p(), ctypes.c_size_t()
            check(lib.swiftbert_result_json(handle, ctypes.byref(text), ctypes.byref(length)))
            self.json = json.loads(ctypes.string_at(text, length.value).decode("utf-8")) if length.value else None
            floats, count = ctypes.POINTER(ctypes.c_float)(), ctypes.c_size_t()
            check(lib.swiftbert_result_floats(handle, ctypes.byref(floats), ctypes.byref(count)))
            self.floats = np.ctypeslib.as_array(floats, shape=(count.value,)).copy() if count.value else np.zeros(0, np.float32)
            ints, count = ctypes.POINTER(ctypes.c_int32)(), ctypes.c_size_t()
            check(lib.swiftbert_result_ints(handle, ctypes.byref(ints), ctypes.byref(count)))
            self.ints = np.ctypeslib.as_array(ints, shape=(count.value,)).copy() if count.value else np.zeros(0, np.int32)
        finally:
            lib.swiftbert_result_free(handle)


def run_for_result(function, *args) -> Result:
    handle = ctypes.c_uint64()
    check(function(*args, ctypes.byref(handle)))
    return Result(handle.value)


def quantize_embeddings(precision: str, vectors: np.ndarray, calibration: Optional[np.ndarray]) -> np.ndarray:
    """The engine's quantiser: float32 `vectors` (rows, dim) to (rows, width) bytes as uint8;
    `calibration` (n, dim) float32 for int8 and uint8, else None."""
    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    rows, dimension = vectors.shape
    width = dimension if precision.endswith("int8") else (dimension + 7) // 8
    out = np.empty((rows, width), dtype=np.uint8)
    if calibration is not None:
        calibration = np.ascontiguousarray(calibration, dtype=np.float32)
    check(library().swiftbert_quantize_embeddings(
        optional_bytes(precision, "precision"), vectors.ctypes.data, rows, dimension,
        None if calibration is None else calibration.ctypes.data, 0 if calibration is None else len(calibration),
        out.ctypes.data, out.size))
    return out


class Model:
    """A loaded model: one handle of the library. Closed by `close()`, `with`, or garbage collection."""

    def __init__(self, model: str, precision: str = "fp32", threads: Optional[int] = None):
        if not isinstance(model, (str, os.PathLike)):
            raise TypeError(f"model must be a name or a folder path, not {type(model).__name__}")
        if not isinstance(precision, str):
            raise TypeError(f"precision must be str, not {type(precision).__name__}")
        if threads is not None and (not isinstance(threads, int) or isinstance(threads, bool) or threads < 1):
            raise ValueError(f"threads must be a positive int or None, not {threads!r}")
        lib = library()
        self._lib = lib
        self.handle = 0
        handle = ctypes.c_uint64()
        name = os.fspath(model)
        check(lib.swiftbert_load(optional_bytes(name, "model"), optional_bytes(precision, "precision"),
                                 threads or 0, ctypes.byref(handle)))
        self.handle = handle.value
        self.info = run_for_result(lib.swiftbert_model_info, self.handle).json
        self.dimension: int = self.info["dimension"]

    def close(self) -> None:
        handle, self.handle = self.handle, 0
        if handle:
            self._lib.swiftbert_free(handle)

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    @property
    def live_handle(self) -> int:
        """The handle; a closed model gives the library's own error (never a crash)."""
        return self.handle or 0xFFFF_FFFF_FFFF_FFFF

    def embed(self, texts: Sequence[str], *, normalize: Optional[bool], batch_size: int,
              prompt_name: Optional[str], prompt: Optional[str], max_length: int = 0) -> np.ndarray:
        array = TextArray(texts)
        out = np.empty((array.count, self.dimension), dtype=np.float32)
        check(self._lib.swiftbert_embed(
            self.live_handle, *array.args, -1 if normalize is None else int(bool(normalize)), batch_size,
            optional_bytes(prompt_name, "prompt_name"), optional_bytes(prompt, "prompt"), max_length,
            out.ctypes.data_as(ctypes.c_void_p), out.size))
        return out

    def token_embeddings(self, texts: Sequence[str], *, normalize: bool, batch_size: int,
                         prompt_name: Optional[str], prompt: Optional[str], max_length: int = 0) -> Result:
        array = TextArray(texts)
        return run_for_result(self._lib.swiftbert_embed_tokens, self.live_handle, *array.args, int(bool(normalize)), batch_size,
                              optional_bytes(prompt_name, "prompt_name"), optional_bytes(prompt, "prompt"), max_length)

    def sparse(self, texts: Sequence[str], batch_size: int, max_length: int = 0) -> Result:
        array = TextArray(texts)
        return run_for_result(self._lib.swiftbert_embed_sparse, self.live_handle, *array.args, batch_size, max_length)

    def multi_vector(self, texts: Sequence[str], batch_size: int, max_length: int = 0) -> Result:
        array = TextArray(texts)
        return run_for_result(self._lib.swiftbert_embed_multi_vector, self.live_handle, *array.args, batch_size, max_length)

    def outputs(self, texts: Sequence[str], outputs: int, *, normalize: Optional[bool], batch_size: int,
                max_length: int = 0) -> Result:
        """Dense (1), sparse (2) and multi-vector (4) outputs, as `outputs` sums them, from one pass."""
        array = TextArray(texts)
        return run_for_result(self._lib.swiftbert_embed_outputs, self.live_handle, *array.args, outputs,
                              -1 if normalize is None else int(bool(normalize)), batch_size, max_length)

    def rerank_scores(self, query: str, documents: Sequence[str], batch_size: int) -> np.ndarray:
        array = TextArray(documents, "documents")
        query_bytes = encode_text(query, "query")
        out = np.empty(array.count, dtype=np.float32)
        check(self._lib.swiftbert_rerank(self.live_handle, query_bytes, len(query_bytes), *array.args, batch_size,
                                         out.ctypes.data_as(ctypes.c_void_p), out.size))
        return out

    def logits(self, texts: Sequence[str], pairs: Optional[Sequence[str]], batch_size: int) -> np.ndarray:
        first = TextArray(texts)
        labels = max(1, len(self.info.get("labels") or []))
        out = np.empty((first.count, labels), dtype=np.float32)
        if pairs is not None:
            second = TextArray(pairs, "pairs")
            if second.count != first.count:
                raise ValueError("texts and pairs differ in length")
            second_args = (ctypes.cast(second.pointers, _texts_t), ctypes.cast(second.lengths, _size_p))
        else:
            second_args = (None, None)
        pointers, lengths, count = first.args
        check(self._lib.swiftbert_logits(self.live_handle, pointers, lengths, *second_args, count, batch_size,
                                         out.ctypes.data_as(ctypes.c_void_p), out.size))
        return out

    def classify(self, texts: Sequence[str], top_k: int, batch_size: int):
        array = TextArray(texts)
        return run_for_result(self._lib.swiftbert_classify, self.live_handle, *array.args, top_k, batch_size).json

    def token_classify(self, texts: Sequence[str], aggregation: str, batch_size: int):
        array = TextArray(texts)
        return run_for_result(self._lib.swiftbert_token_classify, self.live_handle, *array.args,
                              optional_bytes(aggregation, "aggregation_strategy"), batch_size).json

    def fill_mask(self, text: str, top_k: int):
        data = encode_text(text)
        return run_for_result(self._lib.swiftbert_fill_mask, self.live_handle, data, len(data), top_k).json

    def tokenize(self, text: str, max_length: int = 0):
        data = encode_text(text)
        return run_for_result(self._lib.swiftbert_tokenize, self.live_handle, data, len(data), max_length).json


def version() -> str:
    return library().swiftbert_version().decode()


def pull(name: str, force: bool, progress=None) -> dict:
    callback = PROGRESS(lambda done, total, _context: progress(done, total)) if progress else PROGRESS()
    return run_for_result(library().swiftbert_pull, optional_bytes(name, "name"), int(bool(force)), callback, None).json


def models() -> dict:
    return run_for_result(library().swiftbert_models).json
