"""Rerank, classify, NER and multi-vector equal the CLI's (`bert rerank/classify/ner --json`,
`bert embed --multi-vector`), on the suite's small head fixtures (Hugging Face folders,
converted on first use as `bert` converts them)."""
import json

import numpy as np
import pytest

import swiftbert
from conftest import FIXTURES, bert

HEADS = FIXTURES / "heads"
TEXTS = ["I love it", "This is terrible.", "John lives in Paris and works for Acme Corp.", "ok"]


def cli_json(*args):
    return [json.loads(line) for line in bert(*args).stdout.decode().splitlines() if line.strip()]


def test_rerank_equals_bert_rerank():
    model = str(HEADS / "bert-cross-encoder")
    query, documents = "what is swift", ["Swift is a language", "Bananas are yellow", "Taylor Swift sings", ""]
    expected = cli_json("rerank", "--model", model, "--json", query, *documents)[0]["results"]
    with swiftbert.CrossEncoder(model) as encoder:
        got = encoder.rerank(query, documents, return_documents=True)
        scores = encoder.predict([(query, d) for d in documents])
        assert encoder.rank(query, documents, return_documents=True) == got  # sentence-transformers' name
    assert [r["corpus_id"] for r in got] == [r["index"] for r in expected]
    assert [np.float32(r["score"]) for r in got] == [np.float32(r["score"]) for r in expected]
    assert [r["text"] for r in got] == [r["text"] for r in expected]
    assert scores.shape == (4,) and scores.dtype == np.float32
    assert np.array_equal(np.sort(scores)[::-1], np.array([r["score"] for r in expected], dtype=np.float32))
    assert len(encoder_top := swiftbert.CrossEncoder(model).rerank(query, documents, top_k=2)) == 2 and encoder_top[0]["corpus_id"] == got[0]["corpus_id"]


def test_classify_equals_bert_classify():
    model = str(HEADS / "bert-classifier")
    expected = [record["labels"] for record in cli_json("classify", "--model", model, "--json", *TEXTS)]
    with swiftbert.Classifier(model) as classifier:
        got = classifier.predict(TEXTS)
        assert classifier.predict(TEXTS[0], top_k=1) == got[0][:1]
    assert [[(e["label"], np.float32(e["score"])) for e in row] for row in got] == \
        [[(e["label"], np.float32(e["score"])) for e in row] for row in expected]


def test_ner_equals_bert_ner():
    model = str(HEADS / "bert-ner")
    expected = [record["entities"] for record in cli_json("ner", "--model", model, "--json", *TEXTS)]
    with swiftbert.TokenClassifier(model) as ner:
        got = ner.predict(TEXTS)
    assert len(got) == len(expected) == len(TEXTS)
    for row, reference in zip(got, expected):
        assert [(e["label"], e["word"], e["start"], e["end"], np.float32(e["score"])) for e in row] == \
            [(e["entity_group"], e["word"], e["start"], e["end"], np.float32(e["score"])) for e in reference]


def test_multi_vector_equals_bert_embed_multi_vector(tmp_path):
    model = str(FIXTURES / "bgem3")
    source = tmp_path / "input.txt"
    source.write_text("\n".join(TEXTS) + "\n", encoding="utf-8")
    expected = cli_json("embed", "--model", model, "--multi-vector", "--input", str(source))
    with swiftbert.MultiVectorEncoder(model) as encoder:
        got = encoder.encode(TEXTS)
        assert encoder.encode("one text").ndim == 2
    assert len(got) == len(expected) == len(TEXTS)
    for matrix, record in zip(got, expected):
        assert matrix.dtype == np.float32 and matrix.flags["C_CONTIGUOUS"]
        assert np.array_equal(matrix, np.array(record["vectors"], dtype=np.float32))


def test_multi_output_encoder_equals_each_output_alone():
    """One pass for all three outputs (`swiftbert_embed_outputs`) gives the bits of each output's
    own call, in FlagEmbedding's `BGEM3FlagModel.encode` shape."""
    model = str(FIXTURES / "bgem3")
    with swiftbert.MultiOutputEncoder(model) as encoder:
        got = encoder.encode(TEXTS, batch_size=3, return_dense=True, return_sparse=True, return_colbert_vecs=True)
        one = encoder.encode(TEXTS[0], return_sparse=True)
        with pytest.raises(ValueError):
            encoder.encode(TEXTS, return_dense=False)
    with swiftbert.SentenceEncoder(model) as dense:
        vectors = dense.encode(TEXTS)
    with swiftbert.SparseEncoder(model) as sparse:
        weights = sparse.encode(TEXTS)
    with swiftbert.MultiVectorEncoder(model) as colbert:
        matrices = colbert.encode(TEXTS)
    assert got["dense_vecs"].dtype == np.float32 and got["dense_vecs"].flags["C_CONTIGUOUS"]
    assert np.array_equal(got["dense_vecs"], vectors)
    assert got["lexical_weights"] == [{str(k): v for k, v in w.as_dict().items()} for w in weights]
    assert len(got["colbert_vecs"]) == len(TEXTS)
    for matrix, alone in zip(got["colbert_vecs"], matrices):
        assert np.array_equal(matrix, alone)
    assert np.array_equal(one["dense_vecs"], vectors[0]) and one["lexical_weights"] == got["lexical_weights"][0]
    assert set(one) == {"dense_vecs", "lexical_weights"}
