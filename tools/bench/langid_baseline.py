#!/usr/bin/env python3
"""scikit-learn baseline for `bert train-classifier` on the task tools/fixtures/make_langid_task.py makes:
LogisticRegression on the very same pooled sentence features SwiftBERT computes.

The features come from SwiftBERT itself (BERT's pooler output, what the written
BertForSequenceClassification classifies), so both learners see identical inputs:
    D=/tmp/langid
    .build/release/bert train-classifier --model weights/.cache/hf/all-MiniLM-L6-v2 \
        --train $D/train.jsonl --valid $D/valid.jsonl --test $D/test.jsonl \
        --output $D/classifier --save-features $D
Needs numpy and scikit-learn (the reference group of tools/.venv: `tools/venv.sh reference`); not the test suite.

Usage: tools/bench/langid_baseline.py [--data DIR] [--C 0.1 1 10 100] [--threads N]
    Fits LogisticRegression (lbfgs, max_iter 2000) for each C, picks C on valid, prints valid and
    test accuracy, iterations and fit time as one JSON object.
       tools/bench/langid_baseline.py --data DIR --bert .build/release/bert --model M --repeats 3 [--threads N]
    Then times both learners side by side at the chosen C, interleaved (sklearn, bert, sklearn,
    bert, ...), both on N threads (threadpoolctl for sklearn, --threads for bert, which reads the
    same features with --features): medians of the fit times, and each one's test accuracy.
"""
import argparse
import json
import pathlib
import re
import statistics
import subprocess
import time

import numpy as np
from sklearn.linear_model import LogisticRegression
from threadpoolctl import threadpool_limits


def load(folder, split):
    labels = [json.loads(line)["label"] for line in open(folder / f"{split}.jsonl", encoding="utf-8")]
    features = np.load(folder / f"{split}.npy")
    assert len(labels) == features.shape[0], f"{split}: {len(labels)} labels, {features.shape[0]} feature rows"
    return features, np.array(labels)


def fit(c, xtr, ytr):
    start = time.perf_counter()
    model = LogisticRegression(C=c, max_iter=2000).fit(xtr, ytr)
    return model, time.perf_counter() - start


def bert_fit(args, folder, c):
    """One `bert train-classifier` run on the saved features: its own training seconds and test accuracy."""
    command = [args.bert, "train-classifier", "--model", args.model, "--features", str(folder),
               "--train", str(folder / "train.jsonl"), "--valid", str(folder / "valid.jsonl"),
               "--test", str(folder / "test.jsonl"), "--output", str(folder / "classifier"), "--C", str(c)]
    if args.threads:
        command += ["--threads", str(args.threads)]
    log = subprocess.run(command, capture_output=True, text=True, check=True).stderr
    seconds = float(re.search(r"C [0-9.e+-]+: \d+ iterations, \d+ evaluations, [^,]+, ([0-9.]+) s", log).group(1))
    iterations = int(re.search(r"C [0-9.e+-]+: (\d+) iterations", log).group(1))
    test = float(re.search(r"test accuracy ([0-9.]+)%", log).group(1)) / 100
    return seconds, iterations, test


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", default="/tmp/langid")
    parser.add_argument("--C", type=float, nargs="+", default=[0.1, 1.0, 10.0, 100.0])
    parser.add_argument("--threads", type=int, help="BLAS/OpenMP threads for scikit-learn (and bert with --bert)")
    parser.add_argument("--bert", help="the bert binary: time both learners side by side at the chosen C")
    parser.add_argument("--model", default="weights/.cache/hf/all-MiniLM-L6-v2")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    folder = pathlib.Path(args.data)
    (xtr, ytr), (xva, yva), (xte, yte) = (load(folder, s) for s in ["train", "valid", "test"])
    with threadpool_limits(limits=args.threads):
        best = None
        for c in args.C:
            model, seconds = fit(c, xtr, ytr)
            valid = float((model.predict(xva) == yva).mean())
            print(f"C={c}: valid accuracy {valid:.4f}, {int(model.n_iter_[0])} iterations, fit {seconds:.2f} s", flush=True)
            if best is None or valid > best[0]:
                best = (valid, c, model, seconds)
        valid, c, model, seconds = best
        test = float((model.predict(xte) == yte).mean())
        print(json.dumps({"learner": "sklearn LogisticRegression (lbfgs, multinomial)", "C": c,
                          "valid_accuracy": valid, "test_accuracy": test, "iterations": int(model.n_iter_[0]),
                          "fit_seconds": round(seconds, 3), "threads": args.threads,
                          "train": len(ytr), "valid": len(yva), "test": len(yte), "features": int(xtr.shape[1])}), flush=True)
        if not args.bert:
            return
        sklearn_times, bert_times = [], []
        for _ in range(args.repeats):
            model, seconds = fit(c, xtr, ytr)
            sklearn_times.append(seconds)
            seconds, iterations, bert_test = bert_fit(args, folder, c)
            bert_times.append(seconds)
        print(json.dumps({"side_by_side_C": c, "threads": args.threads, "repeats": args.repeats,
                          "sklearn_fit_seconds": [round(t, 3) for t in sklearn_times],
                          "bert_fit_seconds": bert_times,
                          "sklearn_median": round(statistics.median(sklearn_times), 3),
                          "bert_median": round(statistics.median(bert_times), 3),
                          "ratio_sklearn_over_bert": round(statistics.median(sklearn_times) / statistics.median(bert_times), 1),
                          "sklearn_iterations": int(model.n_iter_[0]), "bert_iterations": iterations,
                          "sklearn_test_accuracy": test, "bert_test_accuracy": bert_test}))


if __name__ == "__main__":
    main()
