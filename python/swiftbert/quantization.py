"""Embedding quantisation as sentence-transformers does it (`sentence_transformers.quantize_embeddings`):
vectors to int8, uint8 or packed bits, for smaller indexes and faster search. This is the storage
of the vectors the encoder gave, not the engine's own precision (`SentenceEncoder(precision=...)`).

The arithmetic is the engine's (`swiftbert_quantize_embeddings`, the quantiser `bert embed
--embedding-type` and the server's Cohere route use), the same as sentence-transformers', so the
same bytes for the same float32 vectors (tests/test_quantization.py checks it against a recording
of that function); here the arrays are only shaped:
- "binary" / "ubinary": one bit per dimension, 1 where the value is above 0, packed 8 to a byte
  (numpy's packbits, first dimension in the top bit); "binary" shifts each byte by −128 into int8.
- "uint8" / "int8": each dimension cut into 255 equal steps between its minimum and maximum, from
  `ranges` (a (2, dim) array of minima and maxima), else from `calibration_embeddings`, else from
  the embeddings themselves (which needs more than one); "int8" shifts by −128.
Vectors of float64 are rounded to float32 first, the engine's type.
"""
import logging
from typing import Any, Optional

import numpy as np

from . import _native

PRECISIONS = ("float32", "int8", "uint8", "binary", "ubinary")

_log = logging.getLogger("swiftbert")


def check_precision(precision: Any) -> str:
    if precision not in PRECISIONS:
        raise ValueError(f"precision {precision!r} is not supported; use one of {', '.join(PRECISIONS)}")
    return precision


def _calibration(embeddings: np.ndarray, precision: str, calibration_embeddings: Optional[np.ndarray]) -> np.ndarray:
    """The vectors whose per-dimension minima and maxima set the steps, as a 2-D array."""
    if calibration_embeddings is None:
        if embeddings.ndim == 1 or embeddings.shape[0] == 1:
            raise ValueError(f"{precision} quantisation needs the range of every dimension, and one embedding has none; "
                             "give ranges= or calibration_embeddings= from a representative set of embeddings")
        if embeddings.shape[0] < 100:
            _log.warning("%s quantisation buckets from %d embeddings; ranges= or calibration_embeddings= from more "
                         "embeddings give steadier buckets", precision, len(embeddings))
        calibration_embeddings = embeddings
    calibration = np.asarray(calibration_embeddings)
    return calibration.reshape(-1, calibration.shape[-1])


def quantize_embeddings(embeddings: Any, precision: str, ranges: Optional[np.ndarray] = None,
                        calibration_embeddings: Optional[np.ndarray] = None):
    """`embeddings` (a float array of one or more vectors, or a list of (tokens, dim) matrices,
    which then share one set of ranges) in `precision`: float32, int8, uint8, binary or ubinary."""
    check_precision(precision)
    if isinstance(embeddings, list):
        if not embeddings:
            return []
        matrices = [np.asarray(matrix) for matrix in embeddings]
        if matrices[0].ndim == 2:
            # Multi-vector documents: their tokens in one call, so one calibration over all of them.
            tokens = quantize_embeddings(np.concatenate(matrices, axis=0), precision, ranges=ranges,
                                         calibration_embeddings=calibration_embeddings)
            return np.split(tokens, np.cumsum([len(matrix) for matrix in matrices])[:-1])
        embeddings = np.array(matrices)
    embeddings = np.asarray(embeddings)
    if embeddings.dtype in (np.int8, np.uint8):
        raise ValueError("embeddings to quantise must be floats, not int8 or uint8")
    if embeddings.ndim == 0:
        raise ValueError("embeddings to quantise must be a vector or an array of vectors, not a scalar")
    if precision == "float32":
        return embeddings.astype(np.float32)
    width = embeddings.shape[-1] if precision.endswith("int8") else (embeddings.shape[-1] + 7) // 8
    if embeddings.size == 0:
        return np.zeros(embeddings.shape[:-1] + (width,), dtype=np.uint8 if precision.startswith("u") else np.int8)
    calibration = None
    if precision.endswith("int8"):
        # Given ranges are two rows, the minima and the maxima: the engine's calibration of them is themselves.
        calibration = np.asarray(ranges) if ranges is not None else _calibration(embeddings, precision, calibration_embeddings)
    stored = _native.quantize_embeddings(precision, embeddings.reshape(-1, embeddings.shape[-1]), calibration)
    stored = stored.reshape(embeddings.shape[:-1] + (width,))
    return stored if precision.startswith("u") else stored.view(np.int8)
