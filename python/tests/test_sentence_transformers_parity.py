"""sentence-transformers parity (issue 46): `SentenceEncoder.encode` against sentence-transformers'
own `SentenceTransformer.encode` on the original Hugging Face checkpoints, same texts.

Needs sentence-transformers (with torch) and the original checkpoints that `bert pull --all
--keep-source` (`make setup`) leaves in $SWIFTBERT_HOME/weights/.cache/hf/<name>; skips cleanly
without them, so the wheel's own test venv (tools/python/test_wheel.sh, no torch) skips it. Run it
from tools/.venv (`tools/venv.sh reference`) against the build tree:

    cd python && SWIFTBERT_LIBRARY=../.build/release/libswiftbert.so SWIFTBERT_HOME=.. PYTHONPATH=. \
        ../tools/.venv/bin/python -m pytest -q -s -p no:cacheprovider tests/test_sentence_transformers_parity.py

Checks: min cosine >= 0.9999 over the 300 sentences of Tests/SwiftBERTTests/Fixtures/sentences.txt
for all-MiniLM-L6-v2 and all-mpnet-base-v2 (printed with -s), and the same shapes and dtypes as
sentence-transformers for a str, a list, an empty list, normalize_embeddings, truncate_dim and
prompt_name (both given the same named prompts); encode_query and encode_document against
sentence-transformers' own, on those prompts and on EmbeddingGemma's real weights and prompts
where `bert pull --keep-source embeddinggemma-300m` has pulled them; encode(precision=...)'s
quantised vectors against sentence-transformers' own; output_value="token_embeddings".
"""
import os
from pathlib import Path

import numpy as np
import pytest

import swiftbert
from conftest import with_prompts

sentence_transformers = pytest.importorskip("sentence_transformers")
torch = pytest.importorskip("torch")

MODELS = ["all-MiniLM-L6-v2", "all-mpnet-base-v2"]
MIN_COSINE = 0.9999
PROMPTS = {"query": "query: ", "passage": "passage: "}
HOME = Path(os.environ.get("SWIFTBERT_HOME", Path(__file__).resolve().parents[2]))


def checkpoint(name):
    folder = HOME / "weights/.cache/hf" / name
    if not (folder / "modules.json").is_file():
        pytest.skip(f"no original checkpoint at {folder} (make setup: bert pull --all --keep-source)")
    return folder


@pytest.fixture(scope="module", params=MODELS)
def pair(request, tmp_path_factory):
    """(name, sentence-transformers model with PROMPTS, SwiftBERT encoder, SwiftBERT encoder with PROMPTS)."""
    name = request.param
    torch.set_num_threads(max(1, min(4, os.cpu_count() or 1)))
    reference = sentence_transformers.SentenceTransformer(str(checkpoint(name)), device="cpu", prompts=PROMPTS)
    with swiftbert.SentenceEncoder(name) as encoder, \
            swiftbert.SentenceEncoder(str(with_prompts(tmp_path_factory, name, PROMPTS))) as prompted:
        yield name, reference, encoder, prompted


def cosines(a, b):
    a, b = a.astype(np.float64), b.astype(np.float64)
    return np.sum(a * b, axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))


def test_vectors_match_sentence_transformers(pair, sentences):
    name, reference, encoder, _ = pair
    expected = reference.encode(sentences, batch_size=32, convert_to_numpy=True)
    got = encoder.encode(sentences, batch_size=32)
    assert got.shape == expected.shape == (300, encoder.dimension)
    assert got.dtype == expected.dtype == np.float32
    cos = cosines(got, expected)
    worst = int(np.argmin(cos))
    print(f"\nparity {name}: {len(sentences)} sentences, min cosine {cos.min():.9f} (1 - min {1 - cos.min():.1e}, sentence {worst}), "
          f"mean {cos.mean():.9f}, max |difference| {np.abs(got - expected).max():.2e}")
    assert cos.min() >= MIN_COSINE, f"sentence {worst}: cosine {cos[worst]:.7f}: {sentences[worst]!r}"


def test_str_gives_a_1d_vector_as_sentence_transformers(pair, sentences):
    _, reference, encoder, _ = pair
    expected, got = reference.encode(sentences[0]), encoder.encode(sentences[0])
    assert got.shape == expected.shape == (encoder.dimension,)
    assert got.dtype == expected.dtype == np.float32
    assert cosines(got[None], expected[None])[0] >= MIN_COSINE


def test_list_shape_and_dtype_as_sentence_transformers(pair, sentences):
    _, reference, encoder, _ = pair
    expected, got = reference.encode(sentences[:3]), encoder.encode(sentences[:3])
    assert got.shape == expected.shape == (3, encoder.dimension)
    assert got.dtype == expected.dtype == np.float32 and got.flags["C_CONTIGUOUS"]


def test_empty_list(pair):
    """sentence-transformers gives an empty float32 array for []; SwiftBERT gives (0, dim), which
    keeps the dimension (stacking and concatenating with other batches work)."""
    _, reference, encoder, _ = pair
    expected, got = reference.encode([]), encoder.encode([])
    assert isinstance(expected, np.ndarray) and expected.size == 0
    assert got.shape == (0, encoder.dimension) and got.size == 0
    assert got.dtype == np.float32
    print(f"\nempty list: sentence-transformers {expected.shape} {expected.dtype}, SwiftBERT {got.shape} {got.dtype}")


def test_normalize_embeddings(pair, sentences):
    _, reference, encoder, _ = pair
    expected = reference.encode(sentences[:8], normalize_embeddings=True)
    got = encoder.encode(sentences[:8], normalize_embeddings=True)
    assert got.shape == expected.shape and got.dtype == expected.dtype == np.float32
    assert np.allclose(np.linalg.norm(got, axis=1), 1, atol=1e-6)
    assert cosines(got, expected).min() >= MIN_COSINE


@pytest.mark.parametrize("normalize", [False, True])
def test_truncate_dim(pair, sentences, normalize):
    _, reference, encoder, _ = pair
    expected = reference.encode(sentences[:8], truncate_dim=64, normalize_embeddings=normalize)
    got = encoder.encode(sentences[:8], truncate_dim=64, normalize_embeddings=normalize)
    assert got.shape == expected.shape == (8, 64) and got.dtype == expected.dtype == np.float32
    assert np.allclose(np.linalg.norm(got, axis=1), np.linalg.norm(expected, axis=1), atol=1e-4)
    assert cosines(got, expected).min() >= MIN_COSINE
    one_expected = reference.encode(sentences[0], truncate_dim=32, normalize_embeddings=normalize)
    one = encoder.encode(sentences[0], truncate_dim=32, normalize_embeddings=normalize)
    assert one.shape == one_expected.shape == (32,) and one.dtype == one_expected.dtype


@pytest.mark.parametrize("prompt_name", ["query", "passage"])
def test_prompt_name(pair, sentences, prompt_name):
    _, reference, _, prompted = pair
    expected = reference.encode(sentences[:8], prompt_name=prompt_name)
    got = prompted.encode(sentences[:8], prompt_name=prompt_name)
    assert got.shape == expected.shape and got.dtype == expected.dtype == np.float32
    assert cosines(got, expected).min() >= MIN_COSINE
    # The prompt changes the vectors in both.
    assert cosines(got, prompted.encode(sentences[:8])).min() < 0.9999
    one_expected, one = reference.encode(sentences[0], prompt_name=prompt_name), prompted.encode(sentences[0], prompt_name=prompt_name)
    assert one.shape == one_expected.shape and cosines(one[None], one_expected[None])[0] >= MIN_COSINE


def test_encode_query_and_encode_document(pair, sentences):
    _, reference, _, prompted = pair
    for method in ("encode_query", "encode_document"):
        expected = getattr(reference, method)(sentences[:8])
        got = getattr(prompted, method)(sentences[:8])
        assert got.shape == expected.shape and got.dtype == expected.dtype == np.float32
        assert cosines(got, expected).min() >= MIN_COSINE, method


@pytest.mark.parametrize("precision", ["binary", "ubinary", "int8", "uint8"])
def test_quantised_embeddings_as_sentence_transformers(pair, sentences, precision):
    """encode(precision=...) against sentence-transformers' own on the same texts. The floats
    differ by ~1e-7, so a value that sits at a threshold may fall on its other side: a bit only
    where sentence-transformers' value is within 1e-6 of 0, an int8 bucket by one at most, and
    only for a value within 1e-6 of a bucket's edge. On sentence-transformers' own floats, ours
    gives its bytes exactly."""
    name, reference, encoder, _ = pair
    floats = reference.encode(sentences, batch_size=32)
    expected = reference.encode(sentences, batch_size=32, precision=precision)
    got = encoder.encode(sentences, batch_size=32, precision=precision)
    assert got.dtype == expected.dtype and got.shape == expected.shape
    assert swiftbert.quantize_embeddings(floats, precision).tobytes() == expected.tobytes()
    if precision.endswith("binary"):
        differ = np.unpackbits(got.view(np.uint8) ^ expected.view(np.uint8), axis=1)[:, :floats.shape[1]].astype(bool)
        near = np.abs(floats) < 1e-6
    else:
        ranges = np.vstack((floats.min(axis=0), floats.max(axis=0))).astype(np.float32)
        steps = (ranges[1] - ranges[0]) / 255
        position = (floats - ranges[0]) / steps
        differ = got.astype(np.int16) != expected.astype(np.int16)
        assert np.abs(got.astype(np.int16) - expected.astype(np.int16)).max(initial=0) <= 1
        near = np.abs(position - np.round(position)) < 1e-6 / steps
    print(f"\nquantised {name} {precision}: {int(differ.sum())} of {differ.size} values differ from sentence-transformers'")
    assert not (differ & ~near).any()


def test_token_embeddings_as_sentence_transformers(pair, sentences):
    """output_value="token_embeddings": per text, every token's last hidden state, as many rows as
    sentence-transformers gives (its padding cut off), each within 1e-4 of its (EngineExactnessTests' bound)."""
    name, reference, encoder, _ = pair
    expected = reference.encode(sentences, batch_size=32, output_value="token_embeddings")
    got = encoder.encode(sentences, batch_size=32, output_value="token_embeddings")
    assert len(got) == len(expected) == len(sentences)
    worst = 0.0
    for mine, theirs in zip(got, expected):
        theirs = theirs.cpu().numpy()
        assert mine.shape == theirs.shape and mine.dtype == np.float32
        worst = max(worst, float(np.abs(mine - theirs).max()))
    print(f"\ntoken embeddings {name}: worst max abs difference {worst:.2e} over {len(sentences)} sentences")
    assert worst <= 1e-4


def test_unknown_prompt_name_is_a_value_error_in_both(pair):
    _, reference, encoder, _ = pair
    with pytest.raises(ValueError):
        reference.encode("x", prompt_name="no-such-prompt")
    with pytest.raises(ValueError):
        encoder.encode("x", prompt_name="no-such-prompt")


def test_embeddinggemma_query_and_document_roles(sentences):
    """EmbeddingGemma's real weights (`bert pull --keep-source embeddinggemma-300m`; 1.2 GB, so
    skipped where not pulled): encode_query and encode_document take its own prompts
    ("task: search result | query: ", "title: none | text: ") as sentence-transformers does."""
    reference = sentence_transformers.SentenceTransformer(str(checkpoint("embeddinggemma-300m")), device="cpu")
    with swiftbert.SentenceEncoder("embeddinggemma-300m") as encoder:
        for method in ("encode_query", "encode_document"):
            expected = getattr(reference, method)(sentences[:64], batch_size=16)
            got = getattr(encoder, method)(sentences[:64], batch_size=16)
            assert got.shape == expected.shape == (64, 768) and got.dtype == np.float32
            assert cosines(got, expected).min() >= MIN_COSINE, method
            # The role's prompt changes the vectors.
            assert cosines(got, encoder.encode(sentences[:64], prompt="")).min() < 0.9999, method
