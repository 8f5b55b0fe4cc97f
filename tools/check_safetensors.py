"""Checks that the safetensors files SwiftBERT writes load in Python's own `safetensors` reader,
which refuses a file whose tensors leave gaps between them (as `bert convert` once wrote them).

Converts small fixtures with `bert convert` (and quantizes one with `bert quantize`, so an
INT8 file with I8 and F32 tensors is read too), then loads every file with
safetensors.numpy.load_file and compares each tensor with what SwiftBERT's header says.
Needs numpy and safetensors only (no torch):

    $(tools/venv.sh reference) tools/check_safetensors.py [--bert .build/release/bert] [FILE ...]

FILE arguments are checked as they are, without converting anything.
"""
import argparse
import json
import pathlib
import struct
import subprocess
import sys
import tempfile

from safetensors.numpy import load_file

ROOT = pathlib.Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "Tests/SwiftBERTTests/Fixtures"
# Odd-sized tensors (a 3-label classifier bias, MobileBERT's widened decoder, XLM-R's shards).
SOURCES = ["heads/bert-classifier", "mobilebert/mobilebert-nonorm", "encoders/xlmr-mlm"]
DTYPES = {"F32": "float32", "F16": "float16", "I8": "int8", "U8": "uint8", "I32": "int32", "I64": "int64"}


def check(path):
    """Loads `path` with safetensors and checks each tensor's dtype and shape against the header."""
    tensors = load_file(str(path))
    raw = path.read_bytes()
    (length,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + length])
    header.pop("__metadata__", None)
    assert set(tensors) == set(header), f"{path}: tensor names differ"
    for name, entry in header.items():
        if entry["dtype"] in DTYPES:
            assert str(tensors[name].dtype) == DTYPES[entry["dtype"]], f"{path}: {name} dtype"
        assert list(tensors[name].shape) == entry["shape"], f"{path}: {name} shape"
    print(f"ok  {path} ({len(tensors)} tensors, {path.stat().st_size} bytes)")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bert", default=str(ROOT / ".build/release/bert"), help="the bert command")
    parser.add_argument("files", nargs="*", type=pathlib.Path)
    args = parser.parse_args()
    if args.files:
        for path in args.files:
            check(path)
        return
    with tempfile.TemporaryDirectory(prefix="swiftbert-safetensors-") as scratch:
        for source in SOURCES:
            destination = pathlib.Path(scratch) / pathlib.Path(source).name
            subprocess.run([args.bert, "convert", str(FIXTURES / source), str(destination)], check=True,
                           stdout=subprocess.DEVNULL, env={"SWIFTBERT_NO_BUILD_WARNING": "1"})
            check(destination / "model.safetensors")
        classifier = pathlib.Path(scratch) / "bert-classifier"
        subprocess.run([args.bert, "quantize", str(classifier)], check=True, stdout=subprocess.DEVNULL,
                       env={"SWIFTBERT_NO_BUILD_WARNING": "1"})
        check(classifier / "model.int8.safetensors")


if __name__ == "__main__":
    sys.exit(main())
