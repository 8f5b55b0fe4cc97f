#!/usr/bin/env python3
"""Builds a real labelled task for `bert train-classifier`: which language a user-interface
message is in, from the translated message catalogues Debian installs
(/usr/share/locale/<lang>/LC_MESSAGES/*.mo, read with Python's gettext).

Each record is one translated message (`msgstr`), labelled with its catalogue's language.
Messages are split by catalogue (the .mo file's name, e.g. "coreutils"), not by message, so
the test set holds programs the classifier never saw: a hash of the catalogue name puts it in
train (80 %), valid (10 %) or test (10 %). Duplicates within a split are dropped; very short
strings (fewer than 12 letters) and format-only strings are left out.

Standard library only. Writes (not committed; this script makes them):
    <out>/train.jsonl  <out>/valid.jsonl  <out>/test.jsonl   lines of {"text": ..., "label": ...}
    <out>/summary.json                                        counts per language and split
Usage: tools/make_langid_task.py [--out weights/.cache/langid] [--per-language 1200]
"""
import argparse
import gettext
import hashlib
import json
import pathlib
import random
import re
from collections import Counter

# Latin-script languages with many catalogues here: the hard case for an English-vocabulary
# encoder (scripts such as Cyrillic or CJK would be told apart by [UNK] alone).
LANGUAGES = ["ca", "cs", "da", "de", "es", "fi", "fr", "hu", "id", "it", "nl", "pl", "pt_BR", "ro", "sv", "tr"]
LOCALE = pathlib.Path("/usr/share/locale")


def split_of(domain):
    bucket = int(hashlib.sha256(domain.encode()).hexdigest(), 16) % 10
    return "test" if bucket == 0 else "valid" if bucket == 1 else "train"


def messages(path):
    """The translated strings of one .mo file, cleaned to plain one-line text."""
    try:
        with open(path, "rb") as f:
            catalog = gettext.GNUTranslations(f)._catalog
    except Exception:
        return []
    out = []
    for key, value in catalog.items():
        if not key or not isinstance(value, str):  # key "" is the header
            continue
        text = re.sub(r"%[-#0 +]*[\d*]*(?:\.[\d*]+)?[hlLqjzt]*[a-zA-Z%]|\{[^}]*\}|\$\{[^}]*\}|_(?=\w)|&(?=\w)", "", value)
        text = re.sub(r"\s+", " ", text).strip()
        if sum(c.isalpha() for c in text) >= 12:
            out.append(text)
    return out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default="weights/.cache/langid")
    parser.add_argument("--per-language", type=int, default=1200, help="training records per language (valid/test get a ninth of it)")
    args = parser.parse_args()
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rng = random.Random(0)
    caps = {"train": args.per_language, "valid": args.per_language // 9, "test": args.per_language // 9}
    records = {"train": [], "valid": [], "test": []}
    summary = {}
    for lang in LANGUAGES:
        by_split = {"train": set(), "valid": set(), "test": set()}
        for path in sorted((LOCALE / lang / "LC_MESSAGES").glob("*.mo")):
            by_split[split_of(path.stem)].update(messages(path))
        summary[lang] = {}
        for split, texts in by_split.items():
            texts = sorted(texts)
            rng.shuffle(texts)
            kept = texts[:caps[split]]
            summary[lang][split] = len(kept)
            records[split] += [{"text": t, "label": lang} for t in kept]
    for split, rows in records.items():
        rng.shuffle(rows)
        with open(out / f"{split}.jsonl", "w", encoding="utf-8") as f:
            for row in rows:
                f.write(json.dumps(row, ensure_ascii=False) + "\n")
    (out / "summary.json").write_text(json.dumps({"languages": LANGUAGES, "per_language": summary,
                                                  "totals": {s: len(r) for s, r in records.items()}}, indent=1) + "\n")
    print({s: len(r) for s, r in records.items()}, "->", out)


if __name__ == "__main__":
    main()
