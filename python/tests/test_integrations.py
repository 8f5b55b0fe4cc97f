"""The integrations with the real frameworks from PyPI (tools/python/test_wheel.sh installs the pins
of tools/requirements.txt): each gives `SentenceEncoder`'s vectors, through the framework's own
entry points, sync and async."""
import asyncio

import numpy as np
import pytest

import swiftbert
from conftest import with_prompts

MODEL = "all-MiniLM-L6-v2"
TEXTS = ["The cat sat on the mat.", "Licences grant the right to copy.", "Un chat dort au soleil."]


@pytest.fixture(scope="module")
def reference():
    with swiftbert.SentenceEncoder(MODEL) as encoder:
        return encoder.encode(TEXTS)


def test_langchain_embeddings(reference):
    from langchain_core.embeddings import Embeddings
    from swiftbert.integrations.langchain import SwiftBERTEmbeddings

    embeddings = SwiftBERTEmbeddings(MODEL)
    assert isinstance(embeddings, Embeddings)
    documents = embeddings.embed_documents(TEXTS)
    assert isinstance(documents, list) and all(isinstance(v, list) and isinstance(v[0], float) for v in documents)
    np.testing.assert_array_equal(np.asarray(documents, dtype=np.float32), reference)
    np.testing.assert_array_equal(np.asarray(embeddings.embed_query(TEXTS[1]), dtype=np.float32), reference[1])
    both = asyncio.run(_gather(embeddings.aembed_documents(TEXTS), embeddings.aembed_query(TEXTS[2])))
    np.testing.assert_array_equal(np.asarray(both[0], dtype=np.float32), reference)
    np.testing.assert_array_equal(np.asarray(both[1], dtype=np.float32), reference[2])


def test_langchain_vector_store_search():
    """An in-memory vector store of LangChain's own finds the nearest text by SwiftBERT's vectors."""
    from langchain_core.vectorstores import InMemoryVectorStore
    from swiftbert.integrations.langchain import SwiftBERTEmbeddings

    store = InMemoryVectorStore.from_texts(TEXTS, SwiftBERTEmbeddings(MODEL))
    assert store.similarity_search("a kitten sleeping on a rug", k=1)[0].page_content == TEXTS[0]


def test_llama_index_embedding(reference):
    from llama_index.core.base.embeddings.base import BaseEmbedding
    from swiftbert.integrations.llama_index import SwiftBERTEmbedding

    embedding = SwiftBERTEmbedding(MODEL, embed_batch_size=2)
    assert isinstance(embedding, BaseEmbedding) and embedding.model_name == MODEL
    np.testing.assert_array_equal(np.asarray(embedding.get_text_embedding_batch(TEXTS), dtype=np.float32), reference)
    np.testing.assert_array_equal(np.asarray(embedding.get_query_embedding(TEXTS[0]), dtype=np.float32), reference[0])
    np.testing.assert_array_equal(np.asarray(asyncio.run(embedding.aget_text_embedding(TEXTS[1])), dtype=np.float32), reference[1])
    np.testing.assert_array_equal(np.asarray(asyncio.run(embedding.aget_query_embedding(TEXTS[2])), dtype=np.float32), reference[2])


def test_haystack_embedders(reference):
    from haystack import Document, Pipeline
    from swiftbert.integrations.haystack import SwiftBERTDocumentEmbedder, SwiftBERTTextEmbedder

    documents = [Document(content=t) for t in TEXTS]
    embedded = SwiftBERTDocumentEmbedder(MODEL, batch_size=2).run(documents)["documents"]
    assert [d.content for d in embedded] == TEXTS and all(d.embedding is None for d in documents)
    np.testing.assert_array_equal(np.asarray([d.embedding for d in embedded], dtype=np.float32), reference)
    # In a pipeline, as a query embedder.
    pipeline = Pipeline()
    pipeline.add_component("embedder", SwiftBERTTextEmbedder(MODEL))
    result = pipeline.run({"embedder": {"text": TEXTS[1]}})
    np.testing.assert_array_equal(np.asarray(result["embedder"]["embedding"], dtype=np.float32), reference[1])
    with pytest.raises(TypeError):
        SwiftBERTTextEmbedder(MODEL).run(TEXTS)


def test_each_framework_gives_queries_and_documents_the_models_prompts(tmp_path_factory):
    """A model with query and document prompts (as EmbeddingGemma and Qwen3-Embedding have): every
    integration embeds a query as encode_query and a document as encode_document; a prompt name
    given wins."""
    from haystack import Document
    from swiftbert.integrations.haystack import SwiftBERTDocumentEmbedder, SwiftBERTTextEmbedder
    from swiftbert.integrations.langchain import SwiftBERTEmbeddings
    from swiftbert.integrations.llama_index import SwiftBERTEmbedding

    folder = str(with_prompts(tmp_path_factory, MODEL, {"query": "query: ", "document": "document: "}))
    with swiftbert.SentenceEncoder(folder) as encoder:
        queries, documents = encoder.encode(TEXTS, prompt="query: "), encoder.encode(TEXTS, prompt="document: ")
        plain = encoder.encode(TEXTS, prompt="")
    assert not np.array_equal(queries, documents)
    same = np.testing.assert_array_equal
    langchain = SwiftBERTEmbeddings(folder)
    same(np.asarray(langchain.embed_query(TEXTS[0]), dtype=np.float32), queries[0])
    same(np.asarray(langchain.embed_documents(TEXTS), dtype=np.float32), documents)
    same(np.asarray(SwiftBERTEmbeddings(folder, document_prompt_name="query").embed_documents(TEXTS), dtype=np.float32), queries)
    llama = SwiftBERTEmbedding(folder)
    same(np.asarray(llama.get_query_embedding(TEXTS[1]), dtype=np.float32), queries[1])
    same(np.asarray(llama.get_text_embedding_batch(TEXTS), dtype=np.float32), documents)
    same(np.asarray(llama.get_text_embedding(TEXTS[2]), dtype=np.float32), documents[2])
    same(np.asarray(SwiftBERTTextEmbedder(folder).run(TEXTS[2])["embedding"], dtype=np.float32), queries[2])
    embedded = SwiftBERTDocumentEmbedder(folder).run([Document(content=t) for t in TEXTS])["documents"]
    same(np.asarray([d.embedding for d in embedded], dtype=np.float32), documents)
    same(np.asarray(SwiftBERTTextEmbedder(folder, prompt_name="document").run(TEXTS[0])["embedding"], dtype=np.float32), documents[0])
    assert not np.array_equal(plain, documents)


async def _gather(*awaitables):
    return await asyncio.gather(*awaitables)
