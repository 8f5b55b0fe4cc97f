"""SentenceEncoder: bit-identical to `bert embed`, and sentence-transformers' shapes and dtypes."""
import numpy as np
import pytest

import swiftbert
from conftest import bert_embed_npy, with_prompts

MODEL = "all-MiniLM-L6-v2"


@pytest.fixture(scope="module")
def encoder():
    with swiftbert.SentenceEncoder(MODEL) as encoder:
        yield encoder


@pytest.mark.parametrize("precision", ["fp32", "int8", "bf16"])
def test_vectors_equal_bert_embed_bit_for_bit(tmp_path, sentences, precision):
    expected = bert_embed_npy(tmp_path, MODEL, sentences, "--precision", precision)
    with swiftbert.SentenceEncoder(MODEL, precision=precision) as encoder:
        got = encoder.encode(sentences)
    assert got.shape == expected.shape == (300, 384)
    assert got.dtype == np.float32
    assert np.array_equal(got.view(np.uint32), expected.astype(np.float32).view(np.uint32))


def test_str_gives_one_vector(encoder):
    vector = encoder.encode("SwiftBERT embeds text.")
    assert vector.shape == (384,) and vector.dtype == np.float32
    assert abs(float(np.linalg.norm(vector)) - 1) < 1e-5  # the model's Normalize module


def test_list_gives_c_contiguous_float32_rows(encoder):
    vectors = encoder.encode(["one", "two", "three"])
    assert vectors.shape == (3, 384) and vectors.dtype == np.float32 and vectors.flags["C_CONTIGUOUS"]
    assert np.array_equal(vectors[1], encoder.encode("two"))


def test_tuple_and_generator_inputs(encoder):
    assert encoder.encode(("a", "b")).shape == (2, 384)
    assert encoder.encode(s for s in ["a", "b", "c"]).shape == (3, 384)


def test_empty_list_gives_zero_rows(encoder):
    vectors = encoder.encode([])
    assert vectors.shape == (0, 384) and vectors.dtype == np.float32


def test_batch_size_leaves_vectors_unchanged(encoder, sentences):
    """The engine packs sequences without padding: a text's vector does not depend on its batch."""
    one = encoder.encode(sentences[:40], batch_size=1)
    many = encoder.encode(sentences[:40], batch_size=64)
    assert np.array_equal(one, many)


def test_normalize_embeddings(encoder):
    vectors = encoder.encode(["a text", "another text"], normalize_embeddings=True)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1, atol=1e-6)
    # False keeps the model's own Normalize module, as sentence-transformers does.
    assert np.array_equal(encoder.encode(["a text"], normalize_embeddings=False), encoder.encode(["a text"]))


def test_truncate_dim(encoder):
    full = encoder.encode(["Matryoshka dolls nest."])
    cut = encoder.encode(["Matryoshka dolls nest."], truncate_dim=64)
    assert cut.shape == (1, 64) and cut.flags["C_CONTIGUOUS"] and cut.dtype == np.float32
    assert np.array_equal(cut, full[:, :64])
    normalised = encoder.encode(["Matryoshka dolls nest."], truncate_dim=64, normalize_embeddings=True)
    assert np.allclose(np.linalg.norm(normalised, axis=1), 1, atol=1e-6)
    assert encoder.encode("one", truncate_dim=32).shape == (32,)


def test_prompt_and_prompt_name(encoder):
    plain = encoder.encode("what is swift?")
    prompted = encoder.encode("what is swift?", prompt="query: ")
    assert prompted.shape == (384,) and not np.array_equal(plain, prompted)
    assert np.array_equal(prompted, encoder.encode("query: what is swift?"))
    # all-MiniLM-L6-v2 has no prompts: a name is refused, naming the model.
    with pytest.raises(swiftbert.InvalidInputError, match="prompt"):
        encoder.encode("x", prompt_name="query")


@pytest.fixture(scope="module")
def prompted(tmp_path_factory):
    folder = with_prompts(tmp_path_factory, MODEL, {"query": "query: ", "document": "document: ", "passage": "passage: "})
    with swiftbert.SentenceEncoder(str(folder)) as encoder:
        yield encoder


@pytest.fixture(scope="module")
def passage_default(tmp_path_factory):
    """An E5-style configuration: "passage" the only prompt, and the default one."""
    with swiftbert.SentenceEncoder(str(with_prompts(tmp_path_factory, MODEL, {"passage": "passage: "}, "passage"))) as encoder:
        yield encoder


def test_encode_query_and_encode_document_take_the_models_prompts(encoder, prompted, passage_default):
    texts = ["what is swift?", "Swift is a language."]
    assert np.array_equal(prompted.encode_query(texts), prompted.encode(texts, prompt="query: "))
    assert np.array_equal(prompted.encode_document(texts), prompted.encode(texts, prompt="document: "))
    assert np.array_equal(prompted.encode_query(texts[0]), prompted.encode(texts[0], prompt_name="query"))
    # A prompt or prompt name given wins; other arguments pass through.
    assert np.array_equal(prompted.encode_query(texts, prompt_name="passage"), prompted.encode(texts, prompt="passage: "))
    assert np.array_equal(prompted.encode_document(texts, prompt=""), prompted.encode(texts))
    assert prompted.encode_query(texts, truncate_dim=64).shape == (2, 64)
    # A model without prompts embeds as encode does.
    assert np.array_equal(encoder.encode_query(texts), encoder.encode(texts))
    assert np.array_equal(encoder.encode_document(texts), encoder.encode(texts))
    # Without a "query" or "document" prompt, no prompt: not "passage", not the default prompt.
    assert np.array_equal(passage_default.encode_document(texts), encoder.encode(texts))
    assert np.array_equal(passage_default.encode_query(texts), encoder.encode(texts))
    assert np.array_equal(passage_default.encode(texts), encoder.encode(texts, prompt="passage: "))
    # The rule is the library's, in the model's info: the same as `bert embed --query` and Cohere's input_type.
    assert prompted.model_info["role_prompts"] == {"query": "query", "document": "document", "classification": None, "clustering": None}
    assert passage_default.model_info["role_prompts"] == dict.fromkeys(["query", "document", "classification", "clustering"])


def test_device_is_the_cpu(encoder):
    with pytest.raises(ValueError, match="CPU"):
        encoder.encode("x", device="cuda")
    assert np.array_equal(encoder.encode(["a", "b"], device="cpu"), encoder.encode(["a", "b"]))


def test_convert_to_tensor(encoder):
    torch = pytest.importorskip("torch", reason="convert_to_tensor needs torch, which this venv does not have")
    tensor = encoder.encode(["a", "b"], convert_to_tensor=True)
    assert isinstance(tensor, torch.Tensor) and tensor.dtype == torch.float32 and tuple(tensor.shape) == (2, 384)
    assert np.array_equal(tensor.numpy(), encoder.encode(["a", "b"]))
    assert tuple(encoder.encode("a", convert_to_tensor=True, truncate_dim=32).shape) == (32,)


def test_convert_to_numpy_false(encoder):
    rows = encoder.encode(["a", "b"], convert_to_numpy=False)
    assert isinstance(rows, list) and len(rows) == 2 and rows[0].shape == (384,)


def test_fastembed_generators(encoder):
    docs = ["first document", "second document", "third"]
    embedded = list(encoder.embed(docs, batch_size=2))
    assert len(embedded) == 3 and all(v.shape == (384,) for v in embedded)
    assert np.allclose(np.stack(embedded), encoder.encode(docs), atol=1e-6)
    assert len(list(encoder.query_embed("a query"))) == 1
    assert len(list(encoder.passage_embed(docs))) == 3


def test_threads_argument_is_honoured():
    with swiftbert.SentenceEncoder(MODEL, threads=1) as one:
        with swiftbert.SentenceEncoder(MODEL) as default:
            assert np.array_equal(one.encode(["same vectors on one thread"]), default.encode(["same vectors on one thread"]))


def test_similarity(encoder):
    a, b = encoder.encode(["A man is eating food.", "A man is eating a piece of bread."])
    assert 0.5 < float(encoder.similarity(a, b)[0, 0]) <= 1.0


def test_model_by_folder_path(tmp_path):
    import os
    folder = os.path.join(os.environ["SWIFTBERT_HOME"], "weights", MODEL)
    with swiftbert.SentenceEncoder(folder) as encoder:
        assert encoder.encode("x").shape == (384,)
