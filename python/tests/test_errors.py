"""Bad input raises a SwiftBERTError subclass (or TypeError/ValueError) with the engine's
message and never crashes: each case runs in a child interpreter, so a trap would fail the test
(a non-zero exit without our marker) instead of killing pytest."""
import pytest

from conftest import run_python

CASES = {
    "unknown model": (
        "swiftbert.SentenceEncoder('no-such-model-xyz')",
        "ModelNotFoundError", "no-such-model-xyz"),
    "misspelt model": (
        "swiftbert.SentenceEncoder('all-minilm-l6-v2')",
        "ModelNotFoundError", "Did you mean all-MiniLM-L6-v2?"),
    "unknown precision": (
        "swiftbert.SentenceEncoder('all-MiniLM-L6-v2', precision='fp64')",
        "InvalidArgumentError", "precision 'fp64'"),
    "wrong type": (
        "swiftbert.SentenceEncoder('all-MiniLM-L6-v2').encode([1, 2])",
        "TypeError", "must be str"),
    "bytes instead of str": (
        "swiftbert.SentenceEncoder('all-MiniLM-L6-v2').encode(b'raw bytes')",
        "TypeError", "bytes"),
    "lone surrogate": (
        "swiftbert.SentenceEncoder('all-MiniLM-L6-v2').encode(['fine', 'broken \\ud800 text'])",
        "InvalidArgumentError", "UTF-8"),
    "closed handle": (
        "e = swiftbert.SentenceEncoder('all-MiniLM-L6-v2'); e.close(); e.encode('after close')",
        "ClosedHandleError", "closed"),
    "missing head: sparse of a dense model": (
        "swiftbert.SparseEncoder('all-MiniLM-L6-v2').encode('x')",
        "InvalidInputError", "head"),
    "missing head: classifier of an embedding model": (
        "swiftbert.Classifier('all-MiniLM-L6-v2').predict('x')",
        "InvalidInputError", "head"),
    "missing head: fill-mask of an embedding model": (
        "swiftbert.FillMask('all-MiniLM-L6-v2').predict('a [MASK] b')",
        "InvalidInputError", "head"),
    "missing head: multi-vector of a SPLADE model": (
        "swiftbert.MultiVectorEncoder('splade-tiny').encode('x')",
        "InvalidInputError", "head"),
    "missing head: all outputs of a dense model": (
        "swiftbert.MultiOutputEncoder('all-MiniLM-L6-v2').encode(['x'], return_sparse=True)",
        "InvalidInputError", "head"),
    "fill-mask without a mask": (
        "swiftbert.FillMask('splade-tiny').predict('no mask here')",
        "InvalidInputError", "MASK"),
    "bad batch size": (
        "swiftbert.SentenceEncoder('all-MiniLM-L6-v2').encode(['x'], batch_size=0)",
        "ValueError", "batch_size"),
    # Found by tools/fuzz/python_fuzz.py: ctypes' ArgumentError, and a silently wrong answer.
    "fractional max_length": (
        "swiftbert.SentenceEncoder('all-MiniLM-L6-v2').tokenize('x', max_length=1.5)",
        "ValueError", "max_length"),
    "negative rerank top_k": (
        "swiftbert.CrossEncoder('all-MiniLM-L6-v2').rerank('q', ['a', 'b'], top_k=-1)",
        "ValueError", "top_k"),
    "batch size past 2**31": (
        "swiftbert.SentenceEncoder('all-MiniLM-L6-v2').encode(['x'], batch_size=2**32 + 1)",
        "ValueError", "below 2**31"),
    "unknown pull": (
        "swiftbert.pull('no-such-model-xyz', progress=False)",
        "PullError", "no-such-model-xyz"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_bad_input_raises_in_a_child(name):
    statement, error, fragment = CASES[name]
    result = run_python(f"""
        import swiftbert
        try:
            {statement}
        except Exception as e:
            print("RAISED", type(e).__name__, isinstance(e, swiftbert.SwiftBERTError), str(e))
        else:
            print("NO ERROR")
    """)
    assert result.returncode == 0, f"the child died (status {result.returncode}): {result.stderr[-2000:]}"
    line = result.stdout.strip().splitlines()[-1]
    assert line.startswith(f"RAISED {error} "), line
    assert fragment in line, line
    if error.endswith("Error") and error not in ("TypeError", "ValueError"):
        assert " True " in line, f"{error} is not a SwiftBERTError: {line}"


def test_ten_megabyte_string_is_truncated_not_fatal():
    result = run_python("""
        import swiftbert
        e = swiftbert.SentenceEncoder('all-MiniLM-L6-v2')
        v = e.encode('word ' * 2_000_000)   # 10 MB
        print('SHAPE', v.shape, v.dtype)
    """, timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "SHAPE (384,) float32" in result.stdout


def test_nul_characters_are_text():
    result = run_python("""
        import swiftbert
        e = swiftbert.SentenceEncoder('all-MiniLM-L6-v2')
        print('SHAPE', e.encode(['a\\x00b', '\\x00']).shape)
    """)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "SHAPE (2, 384)" in result.stdout


def test_concurrent_close_and_encode_never_crash():
    result = run_python("""
        import threading, swiftbert
        e = swiftbert.SentenceEncoder('all-MiniLM-L6-v2')
        outcomes = []
        def work():
            for _ in range(20):
                try:
                    e.encode(['racing a close'])
                    outcomes.append('ok')
                except swiftbert.ClosedHandleError:
                    outcomes.append('closed')
        threads = [threading.Thread(target=work) for _ in range(4)]
        for t in threads: t.start()
        e.close()
        for t in threads: t.join()
        print('DONE', len(outcomes))
    """)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "DONE 80" in result.stdout
