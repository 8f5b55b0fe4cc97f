#!/usr/bin/env python3
"""Checks that transformers loads the folder `bert train-classifier` wrote and gives the same
scores as `bert classify` on it (issue 15: "transformers loads it and gives the same logits").

    bert classify --model DIR --json --input texts.txt > swift.jsonl
    $(tools/venv.sh reference) tools/bench/check_trained_classifier.py DIR texts.txt swift.jsonl

Compares every label's probability (softmax of the logits) within 1e-4 and the best label
exactly; prints the largest difference. Needs torch and transformers (`tools/venv.sh reference`).
"""
import json
import sys

import torch
import transformers


def main():
    folder, texts_path, swift_path = sys.argv[1:4]
    texts = [line.rstrip("\n") for line in open(texts_path, encoding="utf-8")]
    swift = [json.loads(line)["labels"] for line in open(swift_path, encoding="utf-8")]
    assert len(texts) == len(swift), f"{len(texts)} texts, {len(swift)} SwiftBERT records"
    tokenizer = transformers.AutoTokenizer.from_pretrained(folder)
    model = transformers.AutoModelForSequenceClassification.from_pretrained(folder, dtype=torch.float32).eval()
    worst, same = 0.0, 0
    for start in range(0, len(texts), 64):
        batch = tokenizer(texts[start:start + 64], padding=True, truncation=True, return_tensors="pt")
        with torch.no_grad():
            probabilities = model(**batch).logits.softmax(-1)
        for i, row in enumerate(probabilities):
            mine = {r["label"]: r["score"] for r in swift[start + i]}
            for j, p in enumerate(row.tolist()):
                worst = max(worst, abs(p - mine[model.config.id2label[j]]))
            same += model.config.id2label[int(row.argmax())] == swift[start + i][0]["label"]
    print(json.dumps({"texts": len(texts), "best_label_agrees": same, "largest_probability_difference": worst,
                      "within_1e-4": worst <= 1e-4}))
    sys.exit(0 if worst <= 1e-4 and same == len(texts) else 1)


if __name__ == "__main__":
    main()
