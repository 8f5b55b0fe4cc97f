"""Embedding quantisation (sentence-transformers' `quantize_embeddings` and `encode(precision=...)`):
the same bytes as sentence-transformers' own function made of the same real vectors, recorded by
tools/fixtures/make_quantization_fixture.py (Fixtures/reference/quantization.json)."""
import json

import numpy as np
import pytest

import swiftbert
from conftest import FIXTURES
from test_recorded_parity import recorded

RECORD = json.loads((FIXTURES / "reference/quantization.json").read_text(encoding="utf-8"))


def unpacked(entry):
    return np.frombuffer(bytes.fromhex(entry["hex"]), dtype=entry["dtype"]).reshape(entry["shape"])


@pytest.mark.parametrize("case", RECORD["cases"], ids=lambda case: f"{case['precision']}: {case['what']}")
def test_quantize_embeddings_gives_sentence_transformers_bytes(case):
    _, vectors = recorded("all-MiniLM-L6-v2")
    vectors = vectors.astype(np.float32)
    precision = case["precision"]
    if "calibration_rows" in case:
        rows = case["calibration_rows"]
        ours = swiftbert.quantize_embeddings(vectors[rows:], precision, calibration_embeddings=vectors[:rows])
    elif "ranges" in case:
        ours = swiftbert.quantize_embeddings(vectors, precision, ranges=np.array(case["ranges"], dtype=np.float32))
    elif "split" in case:
        split = case["split"]
        ours = swiftbert.quantize_embeddings([vectors[:split], vectors[split:]], precision)
        assert len(ours) == 2
        for mine, theirs in zip(ours, case["output"]):
            expected = unpacked(theirs)
            assert mine.dtype == expected.dtype and mine.shape == expected.shape
            assert mine.tobytes() == expected.tobytes()
        return
    elif "row" in case:
        ours = swiftbert.quantize_embeddings(vectors[case["row"]], precision)
    else:
        ours = swiftbert.quantize_embeddings(vectors, precision)
    expected = unpacked(case["output"])
    assert ours.dtype == expected.dtype and ours.shape == expected.shape
    assert ours.tobytes() == expected.tobytes()


def test_recording_covers_every_precision_and_clips():
    assert {case["precision"] for case in RECORD["cases"]} == {"int8", "uint8", "binary", "ubinary"}
    clipped = next(unpacked(c["output"]) for c in RECORD["cases"] if c["precision"] == "uint8" and "ranges" in c)
    assert clipped.min() == 0 and clipped.max() == 255  # the given ranges are narrower than the data


@pytest.fixture(scope="module")
def encoder():
    with swiftbert.SentenceEncoder("all-MiniLM-L6-v2") as encoder:
        yield encoder


@pytest.mark.parametrize("precision, dtype, width", [("int8", np.int8, 384), ("uint8", np.uint8, 384),
                                                     ("binary", np.int8, 48), ("ubinary", np.uint8, 48)])
def test_encode_precision_quantises_the_vectors(encoder, precision, dtype, width):
    texts = ["A man is eating food.", "A man is eating a piece of bread.", "The girl is carrying a baby."]
    quantised = encoder.encode(texts, precision=precision)
    assert quantised.dtype == dtype and quantised.shape == (3, width)
    assert quantised.tobytes() == swiftbert.quantize_embeddings(encoder.encode(texts), precision).tobytes()
    assert encoder.encode_query(texts, precision=precision).tobytes() == quantised.tobytes()  # MiniLM has no prompts


def test_encode_precision_edges(encoder):
    assert encoder.encode("one text", precision="ubinary").shape == (48,)
    assert encoder.encode(["x"], precision="float32").dtype == np.float32
    assert encoder.encode([], precision="binary").shape == (0, 384)
    truncated = encoder.encode(["a", "b"], precision="ubinary", truncate_dim=256, normalize_embeddings=True)
    assert truncated.shape == (2, 32)
    with pytest.raises(ValueError, match="one embedding has none"):
        encoder.encode("one text", precision="int8")  # no range from a single vector, as sentence-transformers says
    with pytest.raises(ValueError, match="not supported"):
        encoder.encode(["x"], precision="fp16")
    with pytest.raises(ValueError, match="floats"):
        swiftbert.quantize_embeddings(np.zeros((2, 8), dtype=np.int8), "binary")


def test_quantisation_is_the_engines():
    """The bytes come from the engine's quantiser (the C ABI's swiftbert_quantize_embeddings), whose
    typed errors reach Python: a calibration set holding NaN is refused, not bucketed."""
    _, vectors = recorded("all-MiniLM-L6-v2")
    vectors = vectors.astype(np.float32)
    raw = swiftbert._native.quantize_embeddings("uint8", vectors, vectors)
    assert raw.dtype == np.uint8 and raw.shape == vectors.shape
    assert raw.tobytes() == swiftbert.quantize_embeddings(vectors, "uint8").tobytes()
    poisoned = vectors.copy()
    poisoned[3, 7] = np.nan
    with pytest.raises(swiftbert.errors.InvalidInputError, match="finite"):
        swiftbert.quantize_embeddings(vectors, "int8", calibration_embeddings=poisoned)
    # float64 vectors are the same vectors rounded to float32, the engine's type
    assert (swiftbert.quantize_embeddings(vectors.astype(np.float64), "int8", calibration_embeddings=vectors).tobytes()
            == swiftbert.quantize_embeddings(vectors, "int8", calibration_embeddings=vectors).tobytes())
