"""The Python API: sentence-transformers' and fastembed's shapes over SwiftBERT's pipelines.

Each class holds one loaded model (a handle of libswiftbert.so). The engine does the work; this
module only shapes inputs and outputs.
"""
from __future__ import annotations

import math
import operator
import os
from dataclasses import dataclass
from typing import Any, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple, Union

import numpy as np

from . import _native
from .quantization import check_precision, quantize_embeddings

DEFAULT_EMBEDDING_MODEL = "all-MiniLM-L6-v2"
DEFAULT_MASKED_LM_MODEL = "splade-tiny"
PathLike = Union[str, "os.PathLike[str]"]


_INT32_MAX = 2 ** 31 - 1


def _positive_int(value: Any, name: str, optional: bool = False) -> int:
    """`value` as a positive int that fits the engine's 32-bit arguments (numpy ints too); with
    `optional`, None gives 0, the engine's "no limit". Anything else raises ValueError naming `name`."""
    if value is None and optional:
        return 0
    try:
        number = operator.index(value)
    except TypeError:
        number = None
    if number is None or isinstance(value, bool) or not 1 <= number <= _INT32_MAX:
        raise ValueError(f"{name} must be a positive int{' or None' if optional else ''} below 2**31, not {value!r}")
    return number


def _batch_size(value: Any) -> int:
    return _positive_int(value, "batch_size")


def _text_list(values: Any, what: str = "sentences") -> List[str]:
    """A list of str from any iterable of str (a numpy array of str too); refuses non-str items."""
    if isinstance(values, (bytes, bytearray)):
        raise TypeError(f"{what} must be str or an iterable of str, not bytes")
    try:
        items = list(values)
    except TypeError:
        raise TypeError(f"{what} must be str or an iterable of str, not {type(values).__name__}") from None
    for index, item in enumerate(items):
        if not isinstance(item, str):
            raise TypeError(f"{what}[{index}] must be str, not {type(item).__name__}")
    return items


def _progress(total: int, enabled: bool, description: str):
    if not enabled:
        return None
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return None
    return tqdm(total=total, desc=description, unit="text")


def _batches(texts: List[str], batch_size: int, show_progress_bar: bool):
    """(start, texts[start:start + batch_size]) for each batch, with encode's progress bar when asked."""
    bar = _progress(len(texts), show_progress_bar, "encode")
    try:
        for start in range(0, len(texts), batch_size):
            chunk = texts[start:start + batch_size]
            yield start, chunk
            if bar is not None:
                bar.update(len(chunk))
    finally:
        if bar is not None:
            bar.close()


class _ModelUser:
    """A class over one loaded model: loading, closing, `with`, the tokenizer."""

    def __init__(self, model: PathLike, precision: str = "fp32", threads: Optional[int] = None):
        self._model = _native.Model(model, precision=precision, threads=threads)

    @property
    def model_info(self) -> Dict[str, Any]:
        """The model's name, folder, precision, dimension, max length, heads, labels and prompts."""
        return dict(self._model.info)

    def tokenize(self, text: str, max_length: Optional[int] = None) -> Dict[str, Any]:
        """The model's tokens for `text`: ids, tokens, code-point offsets, whether it was cut."""
        return self._model.tokenize(text, _positive_int(max_length, "max_length", optional=True))

    def close(self) -> None:
        """Frees the model now; later calls raise ClosedHandleError."""
        self._model.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class SentenceEncoder(_ModelUser):
    """Dense sentence vectors: `SentenceTransformer(...).encode` and fastembed's `TextEmbedding.embed`.

    `model` is a name (found as `bert` finds it: $SWIFTBERT_HOME/weights, ./weights, the XDG
    cache where `swiftbert.pull` writes) or a converted model folder. `precision`: "fp32"
    (exact), "bf16", "int8", "int8-attention", "int8-weights", "int8-static". `threads`: the
    engine's worker threads per call (None: one per core).
    """

    def __init__(self, model: PathLike = DEFAULT_EMBEDDING_MODEL, precision: str = "fp32",
                 threads: Optional[int] = None, truncate_dim: Optional[int] = None):
        truncate_dim = None if truncate_dim is None else _positive_int(truncate_dim, "truncate_dim")
        super().__init__(model, precision, threads)
        self.truncate_dim = truncate_dim

    @property
    def dimension(self) -> int:
        return self._model.dimension

    def get_sentence_embedding_dimension(self) -> int:
        return self.truncate_dim or self._model.dimension

    @property
    def max_seq_length(self) -> int:
        return self._model.info["max_length"]

    @property
    def prompts(self) -> Dict[str, str]:
        return dict(self._model.info.get("prompts") or {})

    def encode(self, sentences: Union[str, Iterable[str]], batch_size: int = 32,
               normalize_embeddings: Optional[bool] = None, prompt_name: Optional[str] = None,
               prompt: Optional[str] = None, show_progress_bar: bool = False, convert_to_numpy: bool = True,
               truncate_dim: Optional[int] = None, convert_to_tensor: bool = False, device: Optional[str] = None,
               precision: str = "float32", output_value: Optional[str] = "sentence_embedding", **unsupported: Any):
        """One float32 vector per sentence: a 1-D array for a str, a C-contiguous (n, dim) array
        for a list (an empty list gives (0, dim)).

        convert_to_tensor gives the same as a torch tensor (sharing the array's memory; torch is
        imported only then), for code written for sentence-transformers (`util.cos_sim`, ...).
        device: None or "cpu", the only device the engine runs on.

        normalize_embeddings: True L2-normalises every vector; None or False leave them as the
        model gives them (with its Normalize module, as sentence-transformers does).
        truncate_dim keeps the first dimensions (Matryoshka), then normalises when asked.
        precision stores the vectors as sentence-transformers' `encode(precision=...)` does:
        "float32" (the default), or "int8", "uint8", "binary", "ubinary" (`quantize_embeddings`,
        with int8's ranges from these vectors). It is not the engine's precision, which the
        encoder's constructor takes.
        output_value "token_embeddings" gives, per text, a (tokens, hidden) float32 array of every
        token's last hidden state (the prompt's and special tokens included, no padding), as
        sentence-transformers does (it gives torch tensors; these are numpy arrays);
        normalize_embeddings normalises each token's vector, truncate_dim does not apply.
        Texts go to the engine batch_size at a time, in input order, as `bert embed` reads them,
        so the vectors equal `bert embed`'s bit for bit.
        """
        if unsupported:
            raise TypeError(f"encode() got unsupported arguments: {', '.join(sorted(unsupported))}")
        if device is not None and str(device) != "cpu":
            raise ValueError(f"device {device!r}: SwiftBERT runs on the CPU; pass device=None or 'cpu'")
        check_precision(precision)
        if output_value == "token_embeddings":
            return self._token_embeddings(sentences, batch_size, normalize_embeddings, prompt_name, prompt, show_progress_bar,
                                          precision)
        if output_value != "sentence_embedding":
            raise ValueError(f"output_value {output_value!r}: use 'sentence_embedding' or 'token_embeddings'")
        if convert_to_tensor:
            try:
                import torch
            except ImportError:
                raise ImportError("convert_to_tensor=True needs torch (pip install torch); "
                                  "the default, a numpy array, needs nothing more") from None
            return torch.from_numpy(self.encode(sentences, batch_size=batch_size, normalize_embeddings=normalize_embeddings,
                                                prompt_name=prompt_name, prompt=prompt, show_progress_bar=show_progress_bar,
                                                truncate_dim=truncate_dim, precision=precision))
        single = isinstance(sentences, str)
        texts = [sentences] if single else _text_list(sentences)
        batch_size = _batch_size(batch_size)
        truncate_dim = truncate_dim if truncate_dim is not None else self.truncate_dim
        if truncate_dim is not None:
            truncate_dim = _positive_int(truncate_dim, "truncate_dim")
        # The engine normalises before any truncation; a truncated vector is normalised here.
        engine_normalize = True if normalize_embeddings and truncate_dim is None else None
        vectors = np.empty((len(texts), self._model.dimension), dtype=np.float32)
        for start, chunk in _batches(texts, batch_size, show_progress_bar):
            vectors[start:start + len(chunk)] = self._model.embed(
                chunk, normalize=engine_normalize, batch_size=batch_size, prompt_name=prompt_name, prompt=prompt)
        if truncate_dim is not None:
            vectors = np.ascontiguousarray(vectors[:, :truncate_dim])
            if normalize_embeddings:
                norms = np.linalg.norm(vectors, axis=1, keepdims=True)
                vectors = np.ascontiguousarray(vectors / np.maximum(norms, np.float32(1e-12)), dtype=np.float32)
        if precision != "float32" and len(vectors):
            vectors = quantize_embeddings(vectors, precision)
        if single:
            return vectors[0] if convert_to_numpy else vectors[0].tolist()
        return vectors if convert_to_numpy else list(vectors)

    def _token_embeddings(self, sentences, batch_size, normalize, prompt_name, prompt, show_progress_bar, precision):
        single = isinstance(sentences, str)
        texts = [sentences] if single else _text_list(sentences)
        batch_size = _batch_size(batch_size)
        matrices: List[np.ndarray] = []
        for _, chunk in _batches(texts, batch_size, show_progress_bar):
            result = self._model.token_embeddings(chunk, normalize=bool(normalize), batch_size=batch_size,
                                                  prompt_name=prompt_name, prompt=prompt)
            matrices.extend(_split_matrices(result.floats, result.json["tokens"], result.json["dimension"]))
        if precision != "float32" and matrices:
            matrices = quantize_embeddings(matrices, precision)
        return matrices[0] if single else matrices

    # sentence-transformers' retrieval pair (its recommended calls for prompted models such as
    # EmbeddingGemma and Qwen3-Embedding): `encode` with the model's own query or document prompt.
    # As sentence-transformers 6 does: its models always hold a "query" and a "document" prompt
    # ("" where the model names none), so these use that prompt or none, never the default prompt.
    def encode_query(self, sentences: Union[str, Iterable[str]], prompt_name: Optional[str] = None,
                     prompt: Optional[str] = None, **kwargs: Any):
        """`encode` with the model's "query" prompt (none if it has no such prompt; not its default
        prompt), unless a prompt or prompt name is given: sentence-transformers' `encode_query`."""
        return self._encode_as("query", sentences, prompt_name, prompt, **kwargs)

    def encode_document(self, sentences: Union[str, Iterable[str]], prompt_name: Optional[str] = None,
                        prompt: Optional[str] = None, **kwargs: Any):
        """`encode` with the model's "document" prompt (none if it has no such prompt; not its
        default prompt), unless a prompt or prompt name is given: sentence-transformers'
        `encode_document`."""
        return self._encode_as("document", sentences, prompt_name, prompt, **kwargs)

    def _encode_as(self, role: str, sentences, prompt_name: Optional[str], prompt: Optional[str], **kwargs: Any):
        # Which prompt a role takes is the library's rule (TextRole), read from the model's info.
        if prompt_name is None and prompt is None:
            prompt_name = self._model.info["role_prompts"][role]
            prompt = None if prompt_name is not None else ""
        return self.encode(sentences, prompt_name=prompt_name, prompt=prompt, **kwargs)

    def similarity(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Cosine similarity of every row of `a` with every row of `b`."""
        a, b = np.atleast_2d(a).astype(np.float32), np.atleast_2d(b).astype(np.float32)
        a = a / np.maximum(np.linalg.norm(a, axis=1, keepdims=True), 1e-12)
        b = b / np.maximum(np.linalg.norm(b, axis=1, keepdims=True), 1e-12)
        return a @ b.T

    # fastembed's shape: generators of 1-D arrays.
    def embed(self, documents: Union[str, Iterable[str]], batch_size: int = 256, **_: Any) -> Iterator[np.ndarray]:
        texts = [documents] if isinstance(documents, str) else _text_list(documents, "documents")
        for start in range(0, len(texts), _batch_size(batch_size)):
            yield from self.encode(texts[start:start + batch_size], batch_size=batch_size)

    def query_embed(self, query: Union[str, Iterable[str]], **kwargs: Any) -> Iterator[np.ndarray]:
        """As `embed`, with the model's "query" prompt when it has one."""
        yield from self._embed_with_prompt(query, ("query",), **kwargs)

    def passage_embed(self, texts: Iterable[str], **kwargs: Any) -> Iterator[np.ndarray]:
        """As `embed`, with the model's "passage" or "document" prompt when it has one."""
        yield from self._embed_with_prompt(texts, ("passage", "document"), **kwargs)

    def _embed_with_prompt(self, texts, names, batch_size: int = 256, **_: Any):
        name = next((n for n in names if n in self.prompts), None)
        texts = [texts] if isinstance(texts, str) else _text_list(texts, "texts")
        for start in range(0, len(texts), _batch_size(batch_size)):
            yield from self.encode(texts[start:start + batch_size], batch_size=batch_size, prompt_name=name)


class _BatchedEmbeddings(_ModelUser):
    """fastembed's generators over `encode`: one output per document, `batch_size` at a time;
    queries and passages are embedded alike (these models have no prompts)."""

    def embed(self, documents: Union[str, Iterable[str]], batch_size: int = 32, **_: Any) -> Iterator[Any]:
        items = [documents] if isinstance(documents, str) else _text_list(documents, "documents")
        for start in range(0, len(items), _batch_size(batch_size)):
            yield from self.encode(items[start:start + batch_size], batch_size)

    query_embed = embed
    passage_embed = embed


def _split_sparse(ids: np.ndarray, weights: np.ndarray, counts: Sequence[int]) -> List[Tuple[np.ndarray, np.ndarray]]:
    """A result's sparse part, text by text: (vocabulary ids, weights), each `counts[i]` long."""
    out, offset = [], 0
    for count in counts:
        out.append((ids[offset:offset + count].copy(), weights[offset:offset + count].copy()))
        offset += count
    return out


def _split_matrices(floats: np.ndarray, tokens: Sequence[int], dimension: int) -> List[np.ndarray]:
    """A result's multi-vector part, text by text: a (tokens[i], dimension) float32 array each."""
    out, offset = [], 0
    for count in tokens:
        out.append(floats[offset:offset + count * dimension].reshape(count, dimension).copy())
        offset += count * dimension
    return out


@dataclass
class SparseEmbedding:
    """A sparse lexical vector: vocabulary ids and their weights (fastembed's shape)."""
    indices: np.ndarray
    values: np.ndarray

    def as_dict(self) -> Dict[int, float]:
        return {int(i): float(v) for i, v in zip(self.indices, self.values)}


class SparseEncoder(_BatchedEmbeddings):
    """SPLADE or BGE-M3 lexical weights: fastembed's `SparseTextEmbedding`."""

    def __init__(self, model: PathLike = DEFAULT_MASKED_LM_MODEL, precision: str = "fp32", threads: Optional[int] = None):
        super().__init__(model, precision, threads)

    def encode(self, texts: Union[str, Iterable[str]], batch_size: int = 32) -> Union[SparseEmbedding, List[SparseEmbedding]]:
        single = isinstance(texts, str)
        items = [texts] if single else _text_list(texts, "texts")
        out: List[SparseEmbedding] = []
        for start in range(0, len(items), _batch_size(batch_size)):
            result = self._model.sparse(items[start:start + batch_size], batch_size)
            out.extend(SparseEmbedding(*pair) for pair in _split_sparse(result.ints, result.floats, result.json["counts"]))
        return out[0] if single else out


class MultiVectorEncoder(_BatchedEmbeddings):
    """ColBERT vectors (BGE-M3): fastembed's `LateInteractionTextEmbedding`; one (tokens, dim)
    float32 array per text."""

    def encode(self, texts: Union[str, Iterable[str]], batch_size: int = 32):
        single = isinstance(texts, str)
        items = [texts] if single else _text_list(texts, "texts")
        out: List[np.ndarray] = []
        for start in range(0, len(items), _batch_size(batch_size)):
            result = self._model.multi_vector(items[start:start + batch_size], batch_size)
            out.extend(_split_matrices(result.floats, result.json["tokens"], result.json["dimension"]))
        return out[0] if single else out


class MultiOutputEncoder(_ModelUser):
    """Dense, sparse and multi-vector outputs from one forward pass (BGE-M3's three), in the shape
    of FlagEmbedding's `BGEM3FlagModel.encode`: "dense_vecs" (n, dim) float32, "lexical_weights"
    (one {token id as str: weight} per text), "colbert_vecs" (one (tokens, dim) float32 per text).
    A `str` gives one text's outputs."""

    def encode(self, sentences: Union[str, Iterable[str]], batch_size: int = 32, max_length: Optional[int] = None,
               return_dense: bool = True, return_sparse: bool = False, return_colbert_vecs: bool = False,
               normalize_embeddings: Optional[bool] = None) -> Dict[str, Any]:
        single = isinstance(sentences, str)
        items = [sentences] if single else _text_list(sentences)
        wanted = (1 if return_dense else 0) | (2 if return_sparse else 0) | (4 if return_colbert_vecs else 0)
        if not wanted:
            raise ValueError("ask for at least one of return_dense, return_sparse, return_colbert_vecs")
        max_length = _positive_int(max_length, "max_length", optional=True)
        dense: List[np.ndarray] = []
        lexical: List[Dict[str, float]] = []
        colbert: List[np.ndarray] = []
        for start in range(0, len(items), _batch_size(batch_size)):
            batch = items[start:start + batch_size]
            result = self._model.outputs(batch, wanted, normalize=normalize_embeddings,
                                         batch_size=batch_size, max_length=max_length)
            meta, floats, offset, count = result.json, result.floats, 0, len(batch)
            if return_dense:
                offset = count * meta["dimension"]
                dense.append(floats[:offset].reshape(count, meta["dimension"]))
            if return_sparse:
                weights = sum(meta["sparse_counts"])
                lexical.extend({str(int(i)): float(v) for i, v in zip(*pair)}
                               for pair in _split_sparse(result.ints, floats[offset:offset + weights], meta["sparse_counts"]))
                offset += weights
            if return_colbert_vecs:
                colbert.extend(_split_matrices(floats[offset:], meta["tokens"], meta["multi_vector_dimension"]))
        out: Dict[str, Any] = {}
        if return_dense:
            vectors = np.ascontiguousarray(np.concatenate(dense)) if dense else np.zeros((0, self._model.dimension), np.float32)
            out["dense_vecs"] = vectors[0] if single else vectors
        if return_sparse:
            out["lexical_weights"] = lexical[0] if single else lexical
        if return_colbert_vecs:
            out["colbert_vecs"] = colbert[0] if single else colbert
        return out


class CrossEncoder(_ModelUser):
    """A cross-encoder (a sequence classifier over text pairs): sentence-transformers' `CrossEncoder`."""

    def predict(self, sentences: Sequence[Sequence[str]], batch_size: int = 32, show_progress_bar: bool = False,
                apply_softmax: bool = False, convert_to_numpy: bool = True, **_: Any) -> np.ndarray:
        """Scores of (a, b) pairs: the sigmoid of the logit for a one-label model (as `bert
        rerank`), else the logits (softmax with apply_softmax). One pair gives a scalar row."""
        single = len(sentences) == 2 and all(isinstance(s, str) for s in sentences)
        pairs = [sentences] if single else list(sentences)
        for index, pair in enumerate(pairs):
            if isinstance(pair, str) or len(pair) != 2:
                raise TypeError(f"sentences[{index}] must be a pair of str")
        logits = self._model.logits([p[0] for p in pairs], [p[1] for p in pairs], _batch_size(batch_size))
        if logits.shape[1] == 1:
            scores = (1.0 / (1.0 + np.exp(-logits[:, 0]))).astype(np.float32)
        elif apply_softmax:
            shifted = np.exp(logits - logits.max(axis=1, keepdims=True))
            scores = (shifted / shifted.sum(axis=1, keepdims=True)).astype(np.float32)
        else:
            scores = logits
        return scores[0] if single else scores

    def rerank(self, query: str, documents: Sequence[str], top_k: Optional[int] = None,
               return_documents: bool = False, batch_size: int = 32, **_: Any) -> List[Dict[str, Any]]:
        """Documents best first as [{"corpus_id", "score"(, "text")}], ties in input order."""
        docs = _text_list(documents, "documents")
        top_k = _positive_int(top_k, "top_k", optional=True) or None
        scores = self._model.rerank_scores(query, docs, _batch_size(batch_size))
        order = sorted(range(len(docs)), key=lambda i: (-float(scores[i]), i))
        ranked = []
        for i in order[:top_k] if top_k is not None else order:
            entry: Dict[str, Any] = {"corpus_id": i, "score": float(scores[i])}
            if return_documents:
                entry["text"] = docs[i]
            ranked.append(entry)
        return ranked

    def rank(self, query: str, documents: Sequence[str], top_k: Optional[int] = None,
             return_documents: bool = False, batch_size: int = 32, **kwargs: Any) -> List[Dict[str, Any]]:
        """`rerank` under sentence-transformers' name for it (`CrossEncoder.rank`), for code
        written against sentence-transformers."""
        return self.rerank(query, documents, top_k=top_k, return_documents=return_documents, batch_size=batch_size, **kwargs)


class Classifier(_ModelUser):
    """Text classification: labels with scores, best first."""

    @property
    def labels(self) -> List[str]:
        return list(self._model.info.get("labels") or [])

    def predict(self, texts: Union[str, Iterable[str]], top_k: Optional[int] = None, batch_size: int = 32):
        single = isinstance(texts, str)
        items = [texts] if single else _text_list(texts, "texts")
        top_k = _positive_int(top_k, "top_k", optional=True)
        result = self._model.classify(items, top_k, _batch_size(batch_size)) if items else []
        return result[0] if single else result


class TokenClassifier(_ModelUser):
    """Named entities and other token labels, with code-point offsets into each text."""

    def predict(self, texts: Union[str, Iterable[str]], aggregation_strategy: str = "simple", batch_size: int = 32):
        single = isinstance(texts, str)
        items = [texts] if single else _text_list(texts, "texts")
        result = self._model.token_classify(items, aggregation_strategy, _batch_size(batch_size)) if items else []
        return result[0] if single else result


class FillMask(_ModelUser):
    """The likeliest tokens for each [MASK]: one list of {"token", "id", "probability"} per mask."""

    def __init__(self, model: PathLike = DEFAULT_MASKED_LM_MODEL, precision: str = "fp32", threads: Optional[int] = None):
        super().__init__(model, precision, threads)

    def predict(self, text: str, top_k: int = 5):
        predictions = self._model.fill_mask(text, _positive_int(top_k, "top_k"))
        masks = [p["candidates"] for p in predictions]
        return masks[0] if len(masks) == 1 else masks

    __call__ = predict


def pull(name: str, force: bool = False, progress: Optional[bool] = None) -> str:
    """`bert pull NAME`: fetches a catalogue model into $SWIFTBERT_HOME/weights or the XDG cache;
    returns its folder. A tqdm bar when tqdm is installed (progress None: when on a terminal)."""
    import sys
    show = sys.stderr.isatty() if progress is None else progress
    bar = _progress(0, show, f"pull {name}") if show else None
    callback = None
    if bar is not None:
        bar.unit, bar.unit_scale = "B", True

        def callback(done: int, total: int) -> None:
            bar.total = total
            bar.n = done
            bar.refresh()
    try:
        return _native.pull(name, force, callback)["folder"]
    finally:
        if bar is not None:
            bar.close()


def models() -> Dict[str, Any]:
    """{"installed": [{"name", "folder"}], "catalogue": [{"name", "about", "bytes", "pulled"}]}."""
    return _native.models()
