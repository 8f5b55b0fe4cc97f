"""Embedding quantisation as sentence-transformers does it (`sentence_transformers.quantize_embeddings`):
vectors to int8, uint8 or packed bits, for smaller indexes and faster search. This is the storage
of the vectors the encoder gave, not the engine's own precision (`SentenceEncoder(precision=...)`).

The same arithmetic as sentence-transformers' `quantize_embeddings`, so the same bytes for the same
floats (tests/test_quantization.py checks it against a recording of that function):
- "binary" / "ubinary": one bit per dimension, 1 where the value is above 0, packed 8 to a byte
  (numpy's packbits, first dimension in the top bit); "binary" shifts each byte by −128 into int8.
- "uint8" / "int8": each dimension cut into 255 equal steps between its minimum and maximum, from
  `ranges` (a (2, dim) array of minima and maxima), else from `calibration_embeddings`, else from
  the embeddings themselves (which needs more than one); "int8" shifts by −128.
"""
import logging
from typing import Any, Optional

import numpy as np

PRECISIONS = ("float32", "int8", "uint8", "binary", "ubinary")

_log = logging.getLogger("swiftbert")


def check_precision(precision: Any) -> str:
    if precision not in PRECISIONS:
        raise ValueError(f"precision {precision!r} is not supported; use one of {', '.join(PRECISIONS)}")
    return precision


def _ranges(embeddings: np.ndarray, precision: str, calibration_embeddings: Optional[np.ndarray]) -> np.ndarray:
    if calibration_embeddings is None:
        if embeddings.ndim == 1 or embeddings.shape[0] == 1:
            raise ValueError(f"{precision} quantisation needs the range of every dimension, and one embedding has none; "
                             "give ranges= or calibration_embeddings= from a representative set of embeddings")
        if embeddings.shape[0] < 100:
            _log.warning("%s quantisation buckets from %d embeddings; ranges= or calibration_embeddings= from more "
                         "embeddings give steadier buckets", precision, len(embeddings))
        calibration_embeddings = embeddings
    calibration = np.asarray(calibration_embeddings)
    return np.vstack((np.min(calibration, axis=0), np.max(calibration, axis=0)))


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
            # Multi-vector documents: one calibration over all their tokens.
            if precision.endswith("int8") and ranges is None:
                calibration = np.concatenate(matrices, axis=0) if calibration_embeddings is None else calibration_embeddings
                if len(calibration):
                    ranges = _ranges(calibration, precision, calibration_embeddings)
            return [quantize_embeddings(matrix, precision, ranges=ranges, calibration_embeddings=calibration_embeddings)
                    for matrix in matrices]
        embeddings = np.array(matrices)
    embeddings = np.asarray(embeddings)
    if embeddings.dtype in (np.int8, np.uint8):
        raise ValueError("embeddings to quantise must be floats, not int8 or uint8")
    if embeddings.ndim == 2 and embeddings.shape[0] == 0 and precision != "float32":
        width = embeddings.shape[1] if precision.endswith("int8") else (embeddings.shape[1] + 7) // 8
        return np.zeros((0, width), dtype=np.uint8 if precision.startswith("u") else np.int8)
    if precision == "float32":
        return embeddings.astype(np.float32)
    if precision.endswith("int8"):
        if ranges is None:
            ranges = _ranges(embeddings, precision, calibration_embeddings)
        ranges = np.asarray(ranges).astype(np.float32, copy=False)
        starts = ranges[0, :]
        steps = (ranges[1, :] - starts) / 255
        steps = np.where(steps == 0, 1, steps)
        buckets = np.clip(np.floor((embeddings - starts) / steps), 0, 255)
        return buckets.astype(np.uint8) if precision == "uint8" else (buckets - 128).astype(np.int8)
    bits = np.packbits(embeddings > 0, axis=-1)
    return bits if precision == "ubinary" else (bits - 128).astype(np.int8)
