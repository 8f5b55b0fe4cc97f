#!/usr/bin/env python3
"""scikit-learn baseline for `bert train-classifier` on the task tools/make_langid_task.py makes:
LogisticRegression on the very same pooled sentence features SwiftBERT computes.

The features come from SwiftBERT itself (BERT's pooler output, what the written
BertForSequenceClassification classifies), so both learners see identical inputs:
    D=weights/.cache/langid
    .build/release/bert train-classifier --model weights/.cache/hf/all-MiniLM-L6-v2 \
        --train $D/train.jsonl --valid $D/valid.jsonl --test $D/test.jsonl \
        --output $D/classifier --save-features $D
Needs numpy and scikit-learn (a venv of its own, e.g. /work/headsenv); not the test suite.
Usage: tools/langid_baseline.py [--data weights/.cache/langid] [--C 1.0 ...]
Prints validation-chosen C, test accuracy and training time as one JSON object.
"""
import argparse
import json
import pathlib
import time

import numpy as np
from sklearn.linear_model import LogisticRegression


def load(folder, split):
    labels = [json.loads(line)["label"] for line in open(folder / f"{split}.jsonl", encoding="utf-8")]
    features = np.load(folder / f"{split}.npy")
    assert len(labels) == features.shape[0], f"{split}: {len(labels)} labels, {features.shape[0]} feature rows"
    return features, np.array(labels)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", default="weights/.cache/langid")
    parser.add_argument("--C", type=float, nargs="+", default=[0.1, 1.0, 10.0, 100.0])
    args = parser.parse_args()
    folder = pathlib.Path(args.data)
    (xtr, ytr), (xva, yva), (xte, yte) = (load(folder, s) for s in ["train", "valid", "test"])
    best = None
    for c in args.C:
        start = time.perf_counter()
        model = LogisticRegression(C=c, max_iter=2000).fit(xtr, ytr)
        seconds = time.perf_counter() - start
        valid = float((model.predict(xva) == yva).mean())
        print(f"C={c}: valid accuracy {valid:.4f}, fit {seconds:.2f} s", flush=True)
        if best is None or valid > best[0]:
            best = (valid, c, model, seconds)
    valid, c, model, seconds = best
    test = float((model.predict(xte) == yte).mean())
    print(json.dumps({"learner": "sklearn LogisticRegression (lbfgs, multinomial)", "C": c,
                      "valid_accuracy": valid, "test_accuracy": test, "fit_seconds": round(seconds, 3),
                      "train": len(ytr), "valid": len(yva), "test": len(yte), "features": int(xtr.shape[1])}))


if __name__ == "__main__":
    main()
