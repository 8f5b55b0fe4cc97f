"""llama-index: `SwiftBERTEmbedding`, a `BaseEmbedding` over `SentenceEncoder`."""
import asyncio
from typing import Any, List, Optional

from llama_index.core.base.embeddings.base import BaseEmbedding
from pydantic import PrivateAttr

from ..encoders import DEFAULT_EMBEDDING_MODEL, PathLike, SentenceEncoder


class SwiftBERTEmbedding(BaseEmbedding):
    """Query and text embeddings (sync, async, batched by `embed_batch_size`) from a SwiftBERT
    model in-process. query_prompt_name / text_prompt_name: the model's named prompts; None takes its own
    "query" / "document" prompt where it has one, else none (sentence-transformers' encode_query /
    encode_document)."""

    query_prompt_name: Optional[str] = None
    text_prompt_name: Optional[str] = None
    _encoder: Any = PrivateAttr()

    def __init__(self, model: PathLike = DEFAULT_EMBEDDING_MODEL, precision: str = "fp32", threads: Optional[int] = None,
                 embed_batch_size: int = 32, query_prompt_name: Optional[str] = None, text_prompt_name: Optional[str] = None,
                 **kwargs: Any):
        super().__init__(model_name=str(model), embed_batch_size=embed_batch_size, query_prompt_name=query_prompt_name,
                         text_prompt_name=text_prompt_name, **kwargs)
        self._encoder = SentenceEncoder(model, precision=precision, threads=threads)

    @classmethod
    def class_name(cls) -> str:
        return "SwiftBERTEmbedding"

    def _get_query_embedding(self, query: str) -> List[float]:
        return self._encoder.encode_query(query, prompt_name=self.query_prompt_name).tolist()

    def _get_text_embedding(self, text: str) -> List[float]:
        return self._encoder.encode_document(text, prompt_name=self.text_prompt_name).tolist()

    def _get_text_embeddings(self, texts: List[str]) -> List[List[float]]:
        return self._encoder.encode_document(list(texts), batch_size=self.embed_batch_size, prompt_name=self.text_prompt_name).tolist()

    async def _aget_query_embedding(self, query: str) -> List[float]:
        return await asyncio.to_thread(self._get_query_embedding, query)

    async def _aget_text_embedding(self, text: str) -> List[float]:
        return await asyncio.to_thread(self._get_text_embedding, text)

    async def _aget_text_embeddings(self, texts: List[str]) -> List[List[float]]:
        return await asyncio.to_thread(self._get_text_embeddings, texts)
