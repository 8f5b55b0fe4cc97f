"""The other pipelines, the catalogue, and the `bert` command inside the wheel."""
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import swiftbert
from conftest import bert


@pytest.fixture(scope="module")
def splade():
    with swiftbert.SparseEncoder("splade-tiny") as encoder:
        yield encoder


def test_sparse_equals_bert_embed_sparse(tmp_path, sentences, splade):
    texts = sentences[:64]
    source = tmp_path / "input.txt"
    source.write_text("\n".join(texts) + "\n", encoding="utf-8")
    lines = bert("embed", "--model", "splade-tiny", "--sparse", "--input", str(source)).stdout.decode().splitlines()
    got = splade.encode(texts)
    assert len(lines) == len(got) == 64
    for line, embedding in zip(lines, got):
        expected = json.loads(line)["sparse"]
        assert embedding.indices.dtype == np.int32 and embedding.values.dtype == np.float32
        assert embedding.indices.tolist() == [entry["index"] for entry in expected]
        assert np.array_equal(embedding.values, np.array([entry["value"] for entry in expected], dtype=np.float32))


def test_sparse_shapes(splade):
    one = splade.encode("a single text")
    assert isinstance(one, swiftbert.SparseEmbedding) and len(one.indices) == len(one.values) > 0
    assert splade.encode([]) == []
    assert len(list(splade.embed(["a", "b", "c"], batch_size=2))) == 3
    assert all(isinstance(k, int) for k in one.as_dict())


def test_fill_mask():
    with swiftbert.FillMask("splade-tiny") as fill:
        candidates = fill.predict("The capital of France is [MASK].", top_k=3)
    assert len(candidates) == 3
    assert [c["probability"] for c in candidates] == sorted((c["probability"] for c in candidates), reverse=True)
    assert all(isinstance(c["token"], str) and isinstance(c["id"], int) for c in candidates)


def test_tokenize():
    with swiftbert.SentenceEncoder("all-MiniLM-L6-v2") as encoder:
        tokens = encoder.tokenize("Hello, world!")
    assert tokens["tokens"][0] == "[CLS]" and tokens["tokens"][-1] == "[SEP]"
    assert len(tokens["ids"]) == len(tokens["tokens"]) == len(tokens["offsets"])


def test_models_lists_what_swiftbert_home_holds():
    listed = swiftbert.models()
    names = {m["name"] for m in listed["installed"]}
    assert {"all-MiniLM-L6-v2", "splade-tiny"} <= names
    assert any(entry["name"] == "all-MiniLM-L6-v2" for entry in listed["catalogue"])


def test_python_dash_m_runs_the_bundled_bert():
    assert bert("--version").stdout.strip()
    assert b"embed" in bert("--help").stdout


def test_bert_console_script_in_the_venv(tmp_path):
    script = Path(sys.executable).parent / "bert"
    assert script.exists()
    out = subprocess.run([str(script), "embed", "--format", "tsv", "SwiftBERT embeds text."],
                         capture_output=True, check=True, timeout=300).stdout.decode()
    assert len(out.strip().split("\t")) == 384


def test_no_toolchain_library_is_loaded():
    """The process maps the wheel's own Swift runtime, none from a toolchain."""
    swiftbert.SentenceEncoder("all-MiniLM-L6-v2").encode("load the library")
    maps = Path("/proc/self/maps").read_text()
    swift_libraries = {line.split()[-1] for line in maps.splitlines() if "swift" in line.lower() and ".so" in line}
    assert swift_libraries, "no Swift library mapped at all"
    assert not [path for path in swift_libraries if path.startswith("/opt/swift") or "/usr/lib/swift" in path], swift_libraries


def test_pull_of_a_pulled_model_gives_its_folder_without_fetching():
    """The repository's models were pulled by `bert pull` (their .pulled stamps): swiftbert.pull
    finds them up to date in SWIFTBERT_HOME and fetches nothing (no network needed)."""
    folder = swiftbert.pull("all-MiniLM-L6-v2", progress=False)
    assert folder == os.path.join(os.environ["SWIFTBERT_HOME"], "weights", "all-MiniLM-L6-v2")
    with swiftbert.SentenceEncoder(folder) as encoder:
        assert encoder.encode("pulled").shape == (384,)
