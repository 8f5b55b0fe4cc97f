"""Shared helpers of the wheel's tests (tools/python/test_wheel.sh runs them against the
installed wheel, with SWIFTBERT_HOME pointing at the repository's converted models)."""
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

FIXTURES = Path(os.environ.get("SWIFTBERT_TEST_FIXTURES", Path(__file__).resolve().parents[2] / "Tests/SwiftBERTTests/Fixtures"))


@pytest.fixture(scope="session")
def sentences():
    """The suite's 300 real sentences (Tests/SwiftBERTTests/Fixtures/sentences.txt)."""
    lines = (FIXTURES / "sentences.txt").read_text(encoding="utf-8").splitlines()
    assert len(lines) == 300
    return lines


def bert(*args, input_text=None, timeout=600):
    """The wheel's own `bert` command (python -m swiftbert), as a user runs it."""
    return subprocess.run([sys.executable, "-m", "swiftbert", *args], input=input_text, capture_output=True,
                          timeout=timeout, check=True, text=input_text is not None or None)


def bert_embed_npy(tmp_path, model, texts, *extra):
    """`bert embed --format npy` of `texts` (one per line), read back with numpy."""
    source, output = tmp_path / "input.txt", tmp_path / "output.npy"
    source.write_text("\n".join(texts) + "\n", encoding="utf-8")
    bert("embed", "--model", model, "--input", str(source), "--format", "npy", "--output", str(output), *extra)
    return np.load(output)


def run_python(code, timeout=300):
    """`code` in a child interpreter: a crash (a Swift trap kills the process) fails the test
    without taking pytest down. Returns the CompletedProcess."""
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=timeout)


def with_prompts(tmp_path_factory, model, prompts, default_prompt_name=None):
    """A folder of `model` with `prompts` (and a default prompt) in its config.json, as conversion
    writes them from config_sentence_transformers.json; its other files are symlinks to the real ones."""
    import swiftbert
    with swiftbert.SentenceEncoder(model) as plain:
        source = Path(plain.model_info["folder"])
    folder = tmp_path_factory.mktemp("prompts")
    for item in source.iterdir():
        if item.name != "config.json":
            (folder / item.name).symlink_to(item.resolve())
    config = json.loads((source / "config.json").read_text())
    config["prompts"], config["default_prompt_name"] = prompts, default_prompt_name
    (folder / "config.json").write_text(json.dumps(config))
    return folder
