#!/usr/bin/env python3
"""The Python package's public API called with random hostile arguments: every call must return
or raise a typed error (a `swiftbert.SwiftBERTError`, or Python's TypeError or ValueError for an
argument of the wrong kind), never kill the interpreter and never raise anything else (ctypes'
ArgumentError, OverflowError, IndexError and the like are findings: the API let a bad value
through to where it was not expected).

A Swift trap kills the whole process, so the calls run in child interpreters, a batch each, each
call announced before it runs: a child that dies names the call that killed it.

    SWIFTBERT_LIBRARY=.build/release/libswiftbert.so PYTHONPATH=python \\
        tools/.venv/bin/python tools/fuzz/python_fuzz.py --calls 3000 --seed 1

Models: all-MiniLM-L6-v2 and splade-tiny (converted, under SWIFTBERT_HOME or ./weights) and the
suite's cross-encoder, classifier, NER and BGE-M3 fixtures (Hugging Face folders, converted on
first use); and the module's own `pull` (unknown names only: no download) and `models`.
"""
import os
import random
import sys

import announced_calls

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
HEADS = os.path.join(ROOT, "Tests/SwiftBERTTests/Fixtures/heads")


def hostile_text(rng):
    sys.path.insert(0, HERE)
    from tokenizer_differential import random_text
    pool = [lambda: random_text(rng), lambda: "", lambda: "\ud800 lone", lambda: "a\udfffb", lambda: "x" * 200_000,
            lambda: "[MASK]", lambda: "The [MASK] sat.", lambda: "\x00nul\x00", lambda: "word " * 3000, lambda: "é" * 10]
    return rng.choice(pool)()


def hostile_texts(rng):
    """Something given where texts go: mostly lists of strings, sometimes not."""
    roll = rng.random()
    if roll < 0.55:
        return [hostile_text(rng) for _ in range(rng.choice([1, 1, 2, 3, 8, 40]))]
    if roll < 0.7:
        return hostile_text(rng)
    return rng.choice([[], None, 5, b"bytes", [None], ["ok", 3], [["nested"]], ("a", "b"), {"a": 1}, iter(["x", "y"]),
                       [b"bytes"], 3.5, True, [""] * 5])


def hostile_number(rng, legal):
    """Mostly a legal value, so that calls reach the engine; else one of every wrong kind."""
    if rng.random() < 0.6:
        return rng.choice(legal)
    return rng.choice([0, -1, 2 ** 31, 2 ** 63, -(2 ** 63), 10 ** 30, 1.5, float("nan"), float("inf"), "3", None, True, [1]])


def calls(rng, swiftbert, models):
    """An endless stream of (description, thunk)."""
    import numpy as np

    def construct(kind):
        model = rng.choice(models[kind] * 6 + ["no-such-model", "", "/", "/dev/null", HEADS, 5, None, "\ud800"])
        precision = rng.choice(["fp32"] * 6 + ["bf16", "int8", "int8-attention", "fp16", "", None, 3])
        threads = rng.choice([None] * 6 + [1, 2, 0, -1, 10 ** 6, 1.5, "2"])
        return f"{kind}({model!r}, precision={precision!r}, threads={threads!r})", \
            lambda: getattr(swiftbert, kind)(model, precision=precision, threads=threads)

    live = {}

    def instance(kind):
        if kind not in live:
            live[kind] = getattr(swiftbert, kind)(models[kind][0])
        return live[kind]

    while True:
        roll = rng.random()
        if roll < 0.12:
            kind = rng.choice([k for k in models if k != "module"])
            yield construct(kind)
            continue
        kind = rng.choice(list(models))
        if kind == "SentenceEncoder":
            texts = hostile_texts(rng)
            kwargs = {}
            for name, legal in [("batch_size", [1, 4, 32]), ("truncate_dim", [None, 64, 384])]:
                if rng.random() < 0.4:
                    kwargs[name] = hostile_number(rng, legal)
            if rng.random() < 0.3:
                kwargs["prompt_name"] = rng.choice(["query", "nope", "", None, 5])
            if rng.random() < 0.2:
                kwargs["prompt"] = rng.choice(["query: ", "", None, 7, "\ud800"])
            if rng.random() < 0.3:
                kwargs["normalize_embeddings"] = rng.choice([True, False, None, "yes", 2])
            method = rng.choice(["encode", "encode", "embed", "query_embed", "passage_embed", "tokenize", "similarity"])
            encoder = instance(kind)
            if method == "encode":
                yield f"SentenceEncoder.encode({short(texts)}, **{kwargs!r})", lambda: encoder.encode(texts, **kwargs)
            elif method == "tokenize":
                text, length = hostile_text(rng), hostile_number(rng, [None, 8, 512])
                yield f"SentenceEncoder.tokenize({short(text)}, max_length={length!r})", lambda: encoder.tokenize(text, max_length=length)
            elif method == "similarity":
                a = rng.choice([np.ones((2, 384), np.float32), np.ones((2, 5), np.float32), np.ones(384), [[1.0] * 384], None, np.zeros((0, 384))])
                b = rng.choice([np.ones((3, 384), np.float32), np.ones((1, 7)), "x", np.full((1, 384), np.nan)])
                yield "SentenceEncoder.similarity(a, b)", lambda: encoder.similarity(a, b)
            else:
                size = hostile_number(rng, [1, 16, 256])
                yield f"SentenceEncoder.{method}({short(texts)}, batch_size={size!r})", lambda: list(getattr(encoder, method)(texts, batch_size=size))
        elif kind == "SparseEncoder":
            texts, size = hostile_texts(rng), hostile_number(rng, [1, 32])
            yield f"SparseEncoder.encode({short(texts)}, batch_size={size!r})", lambda: instance(kind).encode(texts, batch_size=size)
        elif kind == "MultiVectorEncoder":
            texts, size = hostile_texts(rng), hostile_number(rng, [1, 32])
            yield f"MultiVectorEncoder.encode({short(texts)}, batch_size={size!r})", lambda: instance(kind).encode(texts, batch_size=size)
        elif kind == "MultiOutputEncoder":
            texts, length = hostile_texts(rng), hostile_number(rng, [None, 8, 512])
            flags = {name: rng.choice([True, True, False, None, 1]) for name in ("return_dense", "return_sparse", "return_colbert_vecs")}
            yield f"MultiOutputEncoder.encode({short(texts)}, max_length={length!r}, **{flags!r})", \
                lambda: instance(kind).encode(texts, max_length=length, **flags)
        elif kind == "module":
            name = rng.choice(["no-such-model", "", "../etc", "all-MiniLM-L6-v2\x00", 5, None])
            if rng.random() < 0.5:
                yield f"swiftbert.pull({name!r}, progress=False)", lambda: swiftbert.pull(name, progress=False)
            else:
                yield "swiftbert.models()", lambda: swiftbert.models()
        elif kind == "FillMask":
            text, top = hostile_text(rng), hostile_number(rng, [1, 5, 30])
            yield f"FillMask.predict({short(text)}, top_k={top!r})", lambda: instance(kind).predict(text, top_k=top)
        elif kind == "CrossEncoder":
            pairs = rng.choice([[(hostile_text(rng), hostile_text(rng)) for _ in range(rng.choice([1, 3]))],
                                [("a",)], [("a", "b", "c")], [None], [], "ab", [[1, 2]], [("q", None)]])
            if rng.random() < 0.5:
                size = hostile_number(rng, [1, 32])
                yield f"CrossEncoder.predict({short(pairs)}, batch_size={size!r})", lambda: instance(kind).predict(pairs, batch_size=size)
            else:
                query, documents, top = hostile_text(rng), hostile_texts(rng), hostile_number(rng, [None, 1, 3])
                yield f"CrossEncoder.rerank({short(query)}, {short(documents)}, top_k={top!r})", \
                    lambda: instance(kind).rerank(query, documents, top_k=top)
        elif kind == "Classifier":
            texts, top = hostile_texts(rng), hostile_number(rng, [None, 1, 2])
            yield f"Classifier.predict({short(texts)}, top_k={top!r})", lambda: instance(kind).predict(texts, top_k=top)
        elif kind == "TokenClassifier":
            texts = hostile_texts(rng)
            strategy = rng.choice(["simple", "none", "first", "average", "max", "bogus", "", None, 3])
            yield f"TokenClassifier.predict({short(texts)}, aggregation_strategy={strategy!r})", \
                lambda: instance(kind).predict(texts, aggregation_strategy=strategy)
        if rng.random() < 0.02 and live:
            # A closed handle used again.
            closed = rng.choice(list(live))
            live[closed].close()
            yield f"{closed}.close() then use", lambda: instance(closed).model_info()
            del live[closed]


def short(value):
    text = repr(value)
    return text if len(text) < 90 else text[:90] + "…"


def child(seed, count):
    sys.path.insert(0, os.path.join(ROOT, "python"))
    import swiftbert
    models = {"SentenceEncoder": ["all-MiniLM-L6-v2"], "SparseEncoder": ["splade-tiny"], "FillMask": ["splade-tiny"],
              "CrossEncoder": [os.path.join(HEADS, "bert-cross-encoder")], "Classifier": [os.path.join(HEADS, "bert-classifier")],
              "TokenClassifier": [os.path.join(HEADS, "bert-ner")],
              "MultiVectorEncoder": [os.path.join(ROOT, "Tests/SwiftBERTTests/Fixtures/bgem3")],
              "MultiOutputEncoder": [os.path.join(ROOT, "Tests/SwiftBERTTests/Fixtures/bgem3")], "module": [None]}
    rng = random.Random(seed)
    stream = calls(rng, swiftbert, models)
    for index in range(count):
        description, thunk = next(stream)
        announced_calls.announce(index, description)
        try:
            thunk()
            outcome = "ok"
        except swiftbert.SwiftBERTError as error:
            outcome = "typed " + type(error).__name__
        except (TypeError, ValueError) as error:
            outcome = "python " + type(error).__name__
        except Exception as error:  # noqa: BLE001 - any other exception is the finding
            outcome = f"UNTYPED {type(error).__name__}: {str(error)[:300]}"
        announced_calls.report(index, outcome)
    announced_calls.finish(count)


def judge(outcome):
    """Any exception but a SwiftBERTError, TypeError or ValueError is a finding."""
    kind = outcome.split(" ")[0]
    return kind, outcome if kind == "UNTYPED" else None


def main():
    announced_calls.main(__file__, __doc__, 100, child, judge)


if __name__ == "__main__":
    main()
