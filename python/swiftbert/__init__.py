"""SwiftBERT in-process: BERT-family text encoders in pure Swift, through libswiftbert.so.

    import swiftbert
    encoder = swiftbert.SentenceEncoder("all-MiniLM-L6-v2")
    vectors = encoder.encode(["SwiftBERT embeds text.", "So does this."])   # (2, 384) float32

docs/python.md has the rest: the other encoders, threads, errors, the `bert` command inside.
"""
from . import errors
from ._native import version as _engine_version
from .encoders import (Classifier, CrossEncoder, FillMask, MultiOutputEncoder, MultiVectorEncoder, SentenceEncoder, SparseEmbedding,
                       SparseEncoder, TokenClassifier, models, pull)
from .errors import (ClosedHandleError, InvalidArgumentError, InvalidInputError, InvalidModelError,
                     ModelNotFoundError, PullError, SwiftBERTError, UnsupportedError)
from .quantization import quantize_embeddings

__version__ = "0.3.0"


def engine_version() -> str:
    """The version of the engine inside libswiftbert.so."""
    return _engine_version()


__all__ = [
    "SentenceEncoder", "SparseEncoder", "SparseEmbedding", "MultiVectorEncoder", "MultiOutputEncoder", "CrossEncoder", "Classifier",
    "TokenClassifier", "FillMask", "pull", "models", "quantize_embeddings", "engine_version", "errors", "SwiftBERTError",
    "InvalidArgumentError", "ModelNotFoundError", "InvalidModelError", "InvalidInputError", "UnsupportedError",
    "ClosedHandleError", "PullError",
]
