#!/usr/bin/env python3
"""The C ABI (Sources/SwiftBERTCABI/swiftbert.h) called directly, past the Python package's own
checks, with the misuse it promises to catch: handles that are 0, made up, freed or of the other
kind; NULL where an argument or an out-pointer goes; counts with NULL arrays; negative, zero and
huge batch sizes, lengths and top-k; an output buffer smaller than the answer; invalid UTF-8;
unknown precisions, strategies and output sets. Every call must return (any status: a non-zero
one with `swiftbert_last_error` saying why) and never kill the process. Calls that pass pointers
the header cannot check (an array shorter than its count) are not made: that is the caller's
promise in C.

The calls run in child processes, each announced before it runs, so a crash names its call.

    SWIFTBERT_LIBRARY=.build/release/libswiftbert.so tools/.venv/bin/python tools/fuzz/cabi_fuzz.py --calls 3000
"""
import ctypes
import os
import random
import sys

import announced_calls

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def child(seed, count):
    sys.path.insert(0, os.path.join(ROOT, "python"))
    from swiftbert import _native
    lib = ctypes.CDLL(os.environ["SWIFTBERT_LIBRARY"])
    for name, argtypes in _native._SIGNATURES.items():
        getattr(lib, name).argtypes = argtypes
        getattr(lib, name).restype = _native._RETURNS.get(name, ctypes.c_int32)
    rng = random.Random(seed)
    u64 = ctypes.c_uint64

    def load(name):
        handle = u64(0)
        status = lib.swiftbert_load(name.encode(), b"fp32", 1, ctypes.byref(handle))
        assert status == 0, lib.swiftbert_last_error()
        return handle.value

    heads = os.path.join(ROOT, "Tests/SwiftBERTTests/Fixtures/heads")
    models = {"embed": load("all-MiniLM-L6-v2"), "mlm": load("splade-tiny"),
              "cross": load(os.path.join(heads, "bert-cross-encoder")), "ner": load(os.path.join(heads, "bert-ner"))}
    freed = load("all-MiniLM-L6-v2")
    lib.swiftbert_free(freed)
    result = u64(0)
    lib.swiftbert_models(ctypes.byref(result))
    stale_result = result.value
    lib.swiftbert_result_free(stale_result)

    def handle():
        return rng.choice(list(models.values()) * 3 + [0, freed, stale_result, 2 ** 64 - 1, rng.getrandbits(64)])

    def text():
        return rng.choice([b"a fine day", b"", b"The [MASK] sat.", b"\xff\xfe bad utf-8", b"\xed\xa0\x80", b"x" * 100_000, b"nul\x00inside"])

    def texts():
        n = rng.choice([0, 1, 2, 5])
        items = [text() for _ in range(n)]
        array = (ctypes.c_char_p * max(n, 1))(*items) if n else None
        lengths = (ctypes.c_size_t * max(n, 1))(*[len(t) for t in items]) if n else None
        if n and rng.random() < 0.15:
            lengths = None  # NULL lengths: the texts are NUL-terminated
        if n and rng.random() < 0.1:
            array = None  # NULL texts with a count
        return array, lengths, n

    def number():
        return rng.choice([0, 1, 2, 8, 32, -1, -(2 ** 31), 2 ** 31 - 1])

    def out_result():
        return rng.choice([ctypes.byref(u64(0))] * 4 + [None])

    def call():
        name = rng.choice(["embed", "embed_tokens", "embed_sparse", "embed_multi_vector", "embed_outputs", "rerank", "logits", "classify",
                           "token_classify", "fill_mask", "tokenize", "dimension", "model_info", "result", "load", "free_twice"])
        if name == "embed":
            array, lengths, n = texts()
            capacity = rng.choice([n * 384, 0, n * 384 - 1, 10])
            out = (ctypes.c_float * max(capacity, 1))() if rng.random() < 0.9 else None
            args = (handle(), array, lengths, n, rng.choice([-1, 0, 1, 7]), number(), rng.choice([None, b"query", b"nope"]),
                    rng.choice([None, b"", b"q: ", b"\xff"]), number(), out, capacity)
            return f"embed(n={n}, capacity={capacity}, batch={args[5]}, max_length={args[8]}, out={'set' if out else 'NULL'})", \
                lambda: lib.swiftbert_embed(*args)
        if name == "embed_tokens":
            array, lengths, n = texts()
            args = (handle(), array, lengths, n, rng.choice([-1, 0, 1, 7]), number(), rng.choice([None, b"query", b"nope"]),
                    rng.choice([None, b"", b"q: ", b"\xff"]), number(), out_result())
            return f"embed_tokens(n={n}, normalize={args[4]}, batch={args[5]}, max_length={args[8]})", \
                lambda: lib.swiftbert_embed_tokens(*args)
        if name in ("embed_sparse", "embed_multi_vector", "classify"):
            array, lengths, n = texts()
            args = (handle(), array, lengths, n, number(), number(), out_result())
            return f"{name}(n={n}, {args[4]}, {args[5]})", lambda: getattr(lib, "swiftbert_" + name)(*args)
        if name == "embed_outputs":
            array, lengths, n = texts()
            args = (handle(), array, lengths, n, rng.choice([0, 1, 2, 4, 7, 8, -1]), rng.choice([-1, 0, 1, 5]), number(), number(), out_result())
            return f"embed_outputs(n={n}, outputs={args[4]}, normalize={args[5]})", lambda: lib.swiftbert_embed_outputs(*args)
        if name == "rerank":
            array, lengths, n = texts()
            query = text()
            capacity = rng.choice([n, 0, max(n - 1, 0)])
            scores = (ctypes.c_float * max(capacity, 1))() if rng.random() < 0.9 else None
            args = (handle(), query, len(query), array, lengths, n, number(), scores, capacity)
            return f"rerank(n={n}, capacity={capacity})", lambda: lib.swiftbert_rerank(*args)
        if name == "logits":
            array, lengths, n = texts()
            pairs, pair_lengths, _ = texts() if rng.random() < 0.5 else (array, lengths, n)
            capacity = rng.choice([n, n * 3, 0])
            out = (ctypes.c_float * max(capacity, 1))()
            if pairs is not None and n and (ctypes.sizeof(pairs) // ctypes.sizeof(ctypes.c_char_p)) < n:
                pairs, pair_lengths = None, None  # shorter than count: not a checkable misuse
            args = (handle(), array, lengths, pairs, pair_lengths, n, number(), out, capacity)
            return f"logits(n={n}, capacity={capacity})", lambda: lib.swiftbert_logits(*args)
        if name == "token_classify":
            array, lengths, n = texts()
            args = (handle(), array, lengths, n, rng.choice([b"simple", b"none", b"max", b"bogus", None, b"\xff"]), number(), out_result())
            return f"token_classify(n={n}, strategy={args[4]!r})", lambda: lib.swiftbert_token_classify(*args)
        if name in ("fill_mask", "tokenize"):
            t = text()
            length = rng.choice([len(t), 0, len(t) + 0 if t else 0])
            args = (handle(), t if rng.random() < 0.95 else None, length, number(), out_result())
            return f"{name}(len={length}, {args[3]})", lambda: getattr(lib, "swiftbert_" + name)(*args)
        if name == "dimension":
            args = (handle(), rng.choice([ctypes.byref(ctypes.c_size_t(0)), None]))
            return "dimension()", lambda: lib.swiftbert_dimension(*args)
        if name == "model_info":
            args = (handle(), out_result())
            return "model_info()", lambda: lib.swiftbert_model_info(*args)
        if name == "result":
            which = rng.choice(["json", "floats", "ints", "free"])
            h = rng.choice([0, stale_result, 2 ** 64 - 1, rng.getrandbits(64)] + list(models.values()))
            if which == "free":
                return f"result_free({h})", lambda: lib.swiftbert_result_free(h)
            kinds = {"json": ctypes.c_char_p, "floats": ctypes.POINTER(ctypes.c_float), "ints": ctypes.POINTER(ctypes.c_int32)}
            value, size = kinds[which](), ctypes.c_size_t(0)
            args = (h, rng.choice([ctypes.byref(value), None]), rng.choice([ctypes.byref(size), None]))
            return f"result_{which}({h})", lambda: getattr(lib, "swiftbert_result_" + which)(*args)
        if name == "load":
            args = (rng.choice([b"all-MiniLM-L6-v2", b"", None, b"\xff", b"no-such-model", b"/dev/null"]),
                    rng.choice([b"fp32", b"fp64", None, b"", b"int8-static"]), rng.choice([0, 1, -1, 2 ** 31 - 1]),
                    rng.choice([ctypes.byref(u64(0)), None]))
            return f"load({args[0]!r}, {args[1]!r}, {args[2]})", lambda: (lib.swiftbert_load(*args), free_loaded(args[3]))
        return "free(freed)", lambda: lib.swiftbert_free(rng.choice([freed, 0, 2 ** 64 - 1]))

    def free_loaded(out):
        if out is not None:
            value = ctypes.cast(out, ctypes.POINTER(ctypes.c_uint64)).contents.value
            if value:
                lib.swiftbert_free(value)

    for index in range(count):
        description, thunk = call()
        announced_calls.announce(index, description)
        status = thunk()
        status = status[0] if isinstance(status, tuple) else status
        message = lib.swiftbert_last_error() if status else b""
        announced_calls.report(index, [status, (message or b"").decode("utf-8", "replace")[:200]])
    announced_calls.finish(count)


def judge(result):
    """A failure status must come with its message."""
    status, message = result
    return status, "a failure status without a message" if status != 0 and not message else None


def main():
    env = dict(os.environ)
    env.setdefault("SWIFTBERT_LIBRARY", os.path.join(ROOT, ".build/release/libswiftbert.so"))
    announced_calls.main(__file__, __doc__, 200, child, judge, env)


if __name__ == "__main__":
    main()
