"""LangChain: `SwiftBERTEmbeddings`, an `Embeddings` over `SentenceEncoder`."""
import asyncio
from typing import List, Optional

from langchain_core.embeddings import Embeddings

from ..encoders import DEFAULT_EMBEDDING_MODEL, PathLike, SentenceEncoder


class SwiftBERTEmbeddings(Embeddings):
    """`embed_documents` and `embed_query` (and their async forms, on a worker thread: the engine
    releases the GIL) with a SwiftBERT model in-process.

    query_prompt_name / document_prompt_name: the model's named prompts (config_sentence_transformers.json);
    None takes the model's own "query" / "document" prompt where it has one (EmbeddingGemma, Qwen3-Embedding),
    else none, as sentence-transformers' encode_query / encode_document do.
    """

    def __init__(self, model: PathLike = DEFAULT_EMBEDDING_MODEL, precision: str = "fp32", threads: Optional[int] = None,
                 batch_size: int = 32, query_prompt_name: Optional[str] = None, document_prompt_name: Optional[str] = None):
        self.encoder = SentenceEncoder(model, precision=precision, threads=threads)
        self.batch_size = batch_size
        self.query_prompt_name, self.document_prompt_name = query_prompt_name, document_prompt_name

    def embed_documents(self, texts: List[str]) -> List[List[float]]:
        vectors = self.encoder.encode_document(list(texts), batch_size=self.batch_size, prompt_name=self.document_prompt_name)
        return vectors.tolist()

    def embed_query(self, text: str) -> List[float]:
        return self.encoder.encode_query(text, prompt_name=self.query_prompt_name).tolist()

    async def aembed_documents(self, texts: List[str]) -> List[List[float]]:
        return await asyncio.to_thread(self.embed_documents, texts)

    async def aembed_query(self, text: str) -> List[float]:
        return await asyncio.to_thread(self.embed_query, text)
