#!/usr/bin/env python3
"""Differential fuzzing of SwiftBERT's tokenizers against Hugging Face `tokenizers`: random
texts built from pieces that stress normalisers and pre-tokenisers (scripts, combining marks,
emoji sequences, odd whitespace, controls, special-token look-alikes, long runs), encoded by
`bert tokenize --json` and by `tokenizers.Tokenizer.from_file(tokenizer.json)`, ids and offsets
compared.

    tools/.venv/bin/python tools/fuzz/tokenizer_differential.py [--bert PATH] [--count N] [--seed S] [--max-length N] [--decode] [MODEL ...]

MODEL: a converted model folder or a model name under weights/ (default: every folder of
weights/ with a tokenizer.json, and the tokenizer fixtures below). Prints, per model, the texts
compared and the mismatches (the first few in full), then `N passed, M failed` (one per model);
exits 1 on a mismatch. Outside CI: it needs `tokenizers` (tools/venv.sh). Results in
docs/tokenizer.md.
"""
import argparse
import hashlib
import json
import os
import random
import subprocess
import sys
import tempfile

from tokenizers import Tokenizer

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

WORDS = ["the", "The", "THE", "unbelievable", "isn't", "naïve", "Straße", "İstanbul", "ﬁnancial", "café", "résumé",
         "2026", "3.14159", "1,000,000", "e-mail", "foo_bar", "x86-64", "C++", "#hashtag", "@user", "https://example.com/a?b=c",
         "Москва", "東京", "서울", "القاهرة", "मुंबई", "ภาษาไทย", "ἀρχή", "עִבְרִית", "ጤና", "ᏣᎳᎩ", "こんにちは", "ｆｕｌｌｗｉｄｔｈ",
         "𝕄𝕒𝕥𝕙", "𠀀𠀁", "⾀", "㍿", "½", "Ⅻ", "ǅ", "ﬀ", "ŉ", "İi̇", "ß", "ẞ", "Ω", "Å", "K", "ﷺ", "ǰ"]
PUNCT = list(".,;:!?'\"()[]{}<>/\\|-_=+*&^%$#@~`…—–‘’“”«»¡¿・、。，！？")
SPACES = [" ", "  ", "\t", "\u00a0", "\u2009", "\u3000", "\u200b", "\u2028", "\r", "\n", "\u0085", "\u180e", "\ufeff", " \t "]
MARKS = ["\u0301", "\u0308", "\u0327", "\u0323\u0302", "\u20dd", "\u0e31", "\u093f", "\u05b8", "\u1ab0", "\ufe0f", "\u200d"]
EMOJI = ["😀", "👍🏽", "👨‍👩‍👧‍👦", "🇫🇷", "🏳️‍🌈", "❤️", "🫠", "🧑🏿‍🚀", "#️⃣", "©", "™"]
CONTROLS = ["\x00", "\x01", "\x07", "\x1b", "\x7f", "\u0080", "\u009f", "\ufffd", "\ue000", "\U000f0000", "\U0010fffd", "\ufffe"]
SPECIALS = ["[CLS]", "[SEP]", "[MASK]", "[PAD]", "[UNK]", "<s>", "</s>", "<mask>", "<unk>", "<pad>", "<|endoftext|>",
            "<|im_start|>", "<bos>", "<eos>", "<start_of_turn>", "[cls]", "[ MASK ]", "<mask >"]


def random_text(rng):
    pieces = []
    for _ in range(rng.randint(1, 24)):
        kind = rng.random()
        if kind < 0.35:
            word = rng.choice(WORDS)
        elif kind < 0.5:
            word = "".join(rng.choice(PUNCT) for _ in range(rng.randint(1, 3)))
        elif kind < 0.62:
            word = rng.choice(WORDS) + rng.choice(MARKS) * rng.randint(1, 3)
        elif kind < 0.72:
            word = rng.choice(EMOJI)
        elif kind < 0.78:
            word = rng.choice(CONTROLS)
        elif kind < 0.84:
            word = rng.choice(SPECIALS)
        elif kind < 0.9:
            word = chr(rng.choice([rng.randint(0x20, 0x2FF), rng.randint(0x370, 0x1FFF), rng.randint(0x2000, 0x2BFF),
                                   rng.randint(0x3000, 0x9FFF), rng.randint(0xAC00, 0xD7A3), rng.randint(0xF900, 0xFFEF),
                                   rng.randint(0x10000, 0x1FAFF), rng.randint(0x20000, 0x2FA1F)]))
        elif kind < 0.95:
            word = rng.choice("aZ9é漢-.") * rng.randint(2, 120)
        else:
            word = "".join(chr(rng.randint(0x21, 0x7E)) for _ in range(rng.randint(1, 12)))
        pieces.append(word)
        pieces.append(rng.choice(SPACES) if rng.random() < 0.25 else (" " if rng.random() < 0.8 else ""))
    text = "".join(pieces)
    # Lone surrogates cannot be UTF-8: the generator never makes them.
    return text


def swift_ids(bert, folder, texts, max_length=None):
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False, encoding="utf-8") as f:
        for text in texts:
            f.write(json.dumps(text, ensure_ascii=False) + "\n")
        path = f.name
    try:
        out = subprocess.run([bert, "tokenize", "--json", "--quiet", "--model", folder, "--input", path, "--input-format", "jsonl"]
                             + (["--max-length", str(max_length)] if max_length else []),
                             check=True, capture_output=True, text=True, cwd=ROOT).stdout
    finally:
        os.unlink(path)
    rows = [json.loads(line) for line in out.split("\n") if line.strip()]  # not splitlines: U+2028 may stand raw in a string
    return [(row["ids"], [tuple(o) for o in row["offsets"]]) for row in sorted(rows, key=lambda r: r["index"])]


def default_models():
    """Every model folder (config.json beside tokenizer.json) of weights/ and of the test
    fixtures, one per distinct tokenizer.json."""
    candidates = []
    weights = os.path.join(ROOT, "weights")
    for name in sorted(os.listdir(weights)) if os.path.isdir(weights) else []:
        candidates.append(os.path.join(weights, name))
    for parent, _, files in sorted(os.walk(os.path.join(ROOT, "Tests/SwiftBERTTests/Fixtures"))):
        if "tokenizer.json" in files:
            candidates.append(parent)
    folders, seen = [], set()
    for folder in candidates:
        tokenizer = os.path.join(folder, "tokenizer.json")
        if not (os.path.isfile(tokenizer) and os.path.isfile(os.path.join(folder, "config.json"))):
            continue
        with open(tokenizer, "rb") as f:
            digest = hashlib.sha256(f.read()).hexdigest()
        if digest not in seen:
            seen.add(digest)
            folders.append(folder)
    return folders


def check_decode(bert, folder, seed, count, port=18291):
    """`POST /decode` of `bert serve` against `Tokenizer.decode_batch`, with and without
    skip_special_tokens, on the encodings of `count` random texts and `count` sequences of random
    ids (byte-fallback pieces that make invalid UTF-8 among them). Returns the texts that differ."""
    import time
    import urllib.request
    reference = Tokenizer.from_file(os.path.join(folder, "tokenizer.json"))
    rng = random.Random(seed)
    sequences = [reference.encode(random_text(rng)).ids for _ in range(count)]
    sequences += [[rng.randrange(reference.get_vocab_size()) for _ in range(rng.randint(1, 30))] for _ in range(count)]
    server = subprocess.Popen([bert, "serve", "--model", folder, "--port", str(port)], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, cwd=ROOT)
    wrong = []
    try:
        for _ in range(240):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/health").read()
                break
            except OSError:
                time.sleep(0.5)
        for skip in (True, False):
            body = json.dumps({"ids": sequences, "skip_special_tokens": skip}).encode()
            request = urllib.request.Request(f"http://127.0.0.1:{port}/decode", data=body, headers={"Content-Type": "application/json"})
            got = json.loads(urllib.request.urlopen(request).read())
            expected = reference.decode_batch(sequences, skip_special_tokens=skip)
            wrong += [(sequences[i], skip, a, b) for i, (a, b) in enumerate(zip(expected, got)) if a != b]
    finally:
        server.terminate()
        server.wait()
    return wrong, 2 * len(sequences)


class Tally:
    """Each check's line (`ok` or `FAIL`), then `N passed, M failed`."""

    def __init__(self):
        self.passed = self.failed = 0

    def check(self, ok, line):
        print(f"{'ok  ' if ok else 'FAIL'} {line}")
        self.passed, self.failed = self.passed + bool(ok), self.failed + (not ok)

    def finish(self):
        """Prints the count; the exit status."""
        print(f"{self.passed} passed, {self.failed} failed")
        return 1 if self.failed else 0


def fuzz_arguments(doc, models, count, seed):
    """The options both fuzzers take: the models, the bert binary, how many texts, the seed."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("models", nargs=models)
    parser.add_argument("--bert", default=os.path.join(ROOT, ".build/release/bert"))
    parser.add_argument("--count", type=int, default=count)
    parser.add_argument("--seed", type=int, default=seed)
    return parser


def main():
    parser = fuzz_arguments(__doc__, "*", count=2000, seed=1)
    parser.add_argument("--max-length", type=int, help="truncate both to this many tokens (HF: enable_truncation, right)")
    parser.add_argument("--decode", action="store_true",
                        help="check decoding instead: bert serve's POST /decode against decode_batch (--count texts and id sequences)")
    args = parser.parse_args()
    models = [m if os.path.isdir(m) else os.path.join(ROOT, "weights", m) for m in args.models] or default_models()
    tally = Tally()
    for folder in models:
        if args.decode:
            wrong, decodes = check_decode(args.bert, folder, args.seed, args.count)
            tally.check(not wrong, f"{os.path.relpath(folder, ROOT)}: {decodes} decodes, {len(wrong)} differ")
            for ids, skip, a, b in wrong[:5]:
                print(f"   ids {ids[:16]} skip_special_tokens={skip}: tokenizers {a!r:.120} vs SwiftBERT {b!r:.120}")
            continue
        rng = random.Random(args.seed)
        texts = [random_text(rng) for _ in range(args.count)]
        reference = Tokenizer.from_file(os.path.join(folder, "tokenizer.json"))
        # As `bert tokenize` encodes: specials on, no truncation.
        if args.max_length:
            reference.enable_truncation(max_length=args.max_length)
        else:
            reference.no_truncation()
        reference.no_padding()
        # Ids and offsets (code points, as Python's str indices; specials (0, 0)).
        expected = [(encoding.ids, [tuple(o) for o in encoding.offsets])
                    for encoding in reference.encode_batch(texts, add_special_tokens=True)]
        got = swift_ids(args.bert, folder, texts, args.max_length)
        wrong = [i for i, (a, b) in enumerate(zip(expected, got)) if a != b]
        if len(got) != len(texts):
            wrong = wrong or [len(got)]
        name = os.path.relpath(folder, ROOT)
        tally.check(not wrong, f"{name}: {len(texts)} texts, {len(wrong)} differ")
        for i in wrong[:5]:
            print(f"   text {i}: {json.dumps(texts[i], ensure_ascii=True)[:300]}")
            for what, k in (("ids", 0), ("offsets", 1)):
                a = expected[i][k] if i < len(expected) else []
                b = got[i][k] if i < len(got) else []
                if a == b:
                    continue
                first = next((j for j in range(min(len(a), len(b))) if a[j] != b[j]), min(len(a), len(b)))
                print(f"     {what}: tokenizers {len(a)}, SwiftBERT {len(b)}, first difference at {first}:"
                      f" {a[max(0, first - 2):first + 4]} vs {b[max(0, first - 2):first + 4]}")
    sys.exit(tally.finish())


if __name__ == "__main__":
    main()
