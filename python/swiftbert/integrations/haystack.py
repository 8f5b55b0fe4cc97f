"""Haystack: `SwiftBERTTextEmbedder` (a query) and `SwiftBERTDocumentEmbedder` (documents), components
over `SentenceEncoder`. The model loads in `warm_up` (or on the first `run`), as Haystack's own
embedders do."""
import dataclasses
from typing import Any, Dict, List, Optional

from haystack import Document, component

from ..encoders import DEFAULT_EMBEDDING_MODEL, PathLike, SentenceEncoder


class _Encoding:
    """`role` "query" or "document": with no prompt_name, the model's own prompt of that name where it
    has one, else none (sentence-transformers' encode_query / encode_document)."""

    def __init__(self, model: PathLike, precision: str, threads: Optional[int], prompt_name: Optional[str], batch_size: int,
                 role: str):
        self.model, self.precision, self.threads = model, precision, threads
        self.prompt_name, self.batch_size, self.role = prompt_name, batch_size, role
        self.encoder: Optional[SentenceEncoder] = None

    def warm_up(self) -> None:
        if self.encoder is None:
            self.encoder = SentenceEncoder(self.model, precision=self.precision, threads=self.threads)

    def encode(self, texts):
        self.warm_up()
        encode = self.encoder.encode_query if self.role == "query" else self.encoder.encode_document
        return encode(texts, batch_size=self.batch_size, prompt_name=self.prompt_name)


@component
class SwiftBERTTextEmbedder:
    """One text (a query) in, its embedding out: `{"embedding": [float, ...]}`."""

    def __init__(self, model: PathLike = DEFAULT_EMBEDDING_MODEL, precision: str = "fp32", threads: Optional[int] = None,
                 prompt_name: Optional[str] = None):
        self._encoding = _Encoding(model, precision, threads, prompt_name, 1, "query")

    def warm_up(self) -> None:
        self._encoding.warm_up()

    @component.output_types(embedding=List[float])
    def run(self, text: str) -> Dict[str, Any]:
        if not isinstance(text, str):
            raise TypeError("SwiftBERTTextEmbedder takes one string; embed documents with SwiftBERTDocumentEmbedder")
        return {"embedding": self._encoding.encode(text).tolist()}


@component
class SwiftBERTDocumentEmbedder:
    """Documents in, the same documents out with `embedding` set (copies; the inputs are left as they
    were), their `content` embedded `batch_size` at a time."""

    def __init__(self, model: PathLike = DEFAULT_EMBEDDING_MODEL, precision: str = "fp32", threads: Optional[int] = None,
                 prompt_name: Optional[str] = None, batch_size: int = 32):
        self._encoding = _Encoding(model, precision, threads, prompt_name, batch_size, "document")

    def warm_up(self) -> None:
        self._encoding.warm_up()

    @component.output_types(documents=List[Document])
    def run(self, documents: List[Document]) -> Dict[str, Any]:
        if not isinstance(documents, list) or not all(isinstance(d, Document) for d in documents):
            raise TypeError("SwiftBERTDocumentEmbedder takes a list of Documents; embed a string with SwiftBERTTextEmbedder")
        if not documents:
            return {"documents": []}
        vectors = self._encoding.encode([d.content or "" for d in documents])
        return {"documents": [dataclasses.replace(d, embedding=v.tolist()) for d, v in zip(documents, vectors)]}
