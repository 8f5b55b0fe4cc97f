"""SwiftBERT behind the embedding interfaces of LangChain, llama-index and Haystack.

Each module imports its framework when it is imported, not before:

    from swiftbert.integrations.langchain import SwiftBERTEmbeddings      # pip install swiftbert[langchain]
    from swiftbert.integrations.llama_index import SwiftBERTEmbedding     # pip install swiftbert[llama-index]
    from swiftbert.integrations.haystack import SwiftBERTTextEmbedder, SwiftBERTDocumentEmbedder  # swiftbert[haystack]

All three run `SentenceEncoder` in-process: the vectors are `bert embed`'s, and the engine releases
the GIL while it computes, so the frameworks' async and threaded calls run in parallel.
"""
