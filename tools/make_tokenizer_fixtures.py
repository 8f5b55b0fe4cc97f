#!/usr/bin/env python3
"""Builds the tokenizer fixtures in Tests/SwiftBERTTests/Fixtures/tokenizer/ from Hugging Face `tokenizers`.

Reference environment (any venv works; the tests themselves never need Python):

    python3 -m venv /tmp/hfenv && /tmp/hfenv/bin/pip install tokenizers==0.23.3
    /tmp/hfenv/bin/python tools/make_tokenizer_fixtures.py

The model folders must be there first: tools/fetch_models.sh.

What it writes (plain JSON, read by Tests/SwiftBERTTests/Tokenizer*.swift via Bundle.module):
  corpus.jsonl   one line = one text: its ids and code-point offsets from all-MiniLM-L6-v2's
                 tokenizer.json (with [CLS]/[SEP]); a "splade" object only where splade-tiny's
                 tokenizer.json disagrees; HF's decode for some lines. The first line is a header.
  pairs.jsonl    text pairs, truncation (longest_first) and padded batches.
  variants.jsonl tokenizer.json variants (normalizer flags, added-token flags, post-processors, ...).
  unicode.json   what HF's BertNormalizer and BertPreTokenizer do to every code point on its own,
                 so the Swift side can be checked on the whole code space, not only on the corpus.

The corpus is real text from this machine: translated messages of the Debian message catalogs
(/usr/share/locale/*/LC_MESSAGES/*.mo, parsed with struct) and license texts
(/usr/share/common-licenses), sampled deterministically (sorted, seeded), plus hand-made stress cases.
"""
import json
import os
import random
import struct
import sys
import unicodedata
from collections import Counter
from pathlib import Path

from tokenizers import Tokenizer, __version__ as TOKENIZERS_VERSION
from tokenizers import normalizers, pre_tokenizers
from tokenizers.implementations import BertWordPieceTokenizer

ROOT = Path(__file__).resolve().parent.parent
MODELS = ROOT / "weights/.cache/hf"
OUT = ROOT / "Tests/SwiftBERTTests/Fixtures/tokenizer"
SEED = 20240603
LINES_PER_LOCALE = 12
LICENSE_PARAGRAPHS = 120

# ---------------------------------------------------------------- real text


def read_mo(path):
    """The translated strings (msgstr, each plural form separately) of a GNU .mo catalog."""
    data = path.read_bytes()
    if len(data) < 28:
        return []
    magic = struct.unpack("<I", data[:4])[0]
    order = "<" if magic == 0x950412DE else ">" if magic == 0xDE120495 else None
    if order is None:
        return []
    _, count, ids_at, strs_at = struct.unpack(order + "4I", data[4:20])
    charset = "utf-8"
    out = []
    for i in range(count):
        id_len, id_off = struct.unpack(order + "2I", data[ids_at + 8 * i: ids_at + 8 * i + 8])
        len_, off = struct.unpack(order + "2I", data[strs_at + 8 * i: strs_at + 8 * i + 8])
        raw = data[off: off + len_]
        if id_len == 0:  # the header entry: learn the charset, keep nothing
            header = raw.decode("ascii", "replace")
            for line in header.splitlines():
                if line.lower().startswith("content-type:") and "charset=" in line:
                    charset = line.split("charset=")[1].strip()
            continue
        try:
            text = raw.decode(charset)
        except (LookupError, UnicodeDecodeError):
            continue
        out.extend(form for form in text.split("\x00") if form.strip())
    return out


def catalog_lines():
    """A seeded sample of translated messages for every locale folder."""
    by_locale = {}
    for mo in sorted(Path("/usr/share/locale").glob("*/LC_MESSAGES/*.mo")):
        locale = mo.parts[4]
        by_locale.setdefault(locale, set()).update(read_mo(mo))
    lines = []
    for locale in sorted(by_locale):
        pool = sorted(s for s in by_locale[locale] if len(s) >= 2)
        rng = random.Random(f"{SEED}:{locale}")
        lines += [(f"mo:{locale}", s) for s in rng.sample(pool, min(LINES_PER_LOCALE, len(pool)))]
    return lines


def license_lines():
    paragraphs = []
    for path in sorted(Path("/usr/share/common-licenses").iterdir()):
        if path.is_file():
            text = path.read_text(encoding="utf-8", errors="replace")
            paragraphs += [(f"license:{path.name}", p) for p in text.split("\n\n") if p.strip()]
    rng = random.Random(f"{SEED}:licenses")
    return rng.sample(paragraphs, min(LICENSE_PARAGRAPHS, len(paragraphs)))


# ---------------------------------------------------------------- stress cases


def stress_lines(license_words):
    long_line = " ".join(license_words[i % len(license_words)] for i in range(1200))
    cases = [
        # empty, blank, whitespace and control characters
        "", " ", "     ", "\t", "\n", "\r\n", " \t\r\n\u000b\u000c ", "a\tb\r\nc\n\nd",
        "\u0000", "a\u0000b", "\ufffd", "a\ufffdb\ufffd", "\u0001\u0002abc\u007f", "a\u000bb\u000cc",
        "\u0085next line", "\u001c\u001d\u001e\u001fx", "\u2028line\u2029para", "no\u00a0break",
        "ideographic\u3000space", "ogham\u1680space", "thin\u2009space\u202fnarrow\u205fmath",
        # zero-width and format characters
        "a\u200db", "a\u200cb", "\ufeffhello", "word\u200bword", "a\u2060b", "co\u00adop", "\u200e\u200fltr rtl",
        "\U000e0001\U000e0065\U000e006e tags", "[MA\u200bSK]",
        # combining marks, canonical ordering
        "e\u0301", "cafe\u0301", "a\u0301\u0316", "\u0301abc", "\u0301", "\u0316\u0301", "x\u0308\u0301\u0327",
        "Z\u0351\u0352\u0353\u0354\u0355\u0356a\u0357\u0358\u0359l\u035a\u035bg\u035co",
        "\u0f73\u0f75\u0f81", "\u0f40\u0f71\u0f72\u0f74", "x\U0001d165\U0001d16d\U0001d166", "\u1e0b\u0323",
        "q\u0307\u0323", "\u0344\u0345", "x\U0001e944\U0001e94a", "x\u1df6\u1df9", "\u302e\u302f\u0301",
        "Tiếng Việt có dấu", "Ελληνικά ΆΈΉΊΌΎΏ ΐΰ", "한국어 텍스트 입니다", "각",
        # emoji sequences
        "👨‍👩‍👧‍👦 family", "🇫🇷🇩🇪🇯🇵", "👍🏽👍🏿", "❤️ ♥ ❤", "🏳️‍🌈", "1️⃣ #️⃣", "🧑🏿‍🚀 astronaut", "😀😃🤖🥰🫠",
        "emoji🙂glued", "🙂", "\U0001fae9",
        # CJK and its extensions, compatibility ideographs, full-width and half-width forms
        "日本語のテキストです。", "中文测试，标点符号！", "𠀀𠀁𠀂", "𪜀𪜁", "\U0002b740\U0002b81f", "\U0002b820\U0002b91f",
        "\U0002b920", "\U0002ceb0", "\U00030000", "\U00031350", "\u3400\u4dbf\u4e00\u9fff\ua000",
        "\uf900\ufa6d\ufad9", "\U0002f800\U0002fa1d", "ＡＢＣ１２３！？", "ｶﾀｶﾅ ﾊﾞ", "漢字kanji混ざり",
        # scripts
        "مَرْحَبًا بِالْعَالَم", "שָׁלוֹם עוֹלָם", "ภาษาไทยง่ายนิดเดียว", "हिन्दी भाषा", "বাংলা", "தமிழ்", "ქართული",
        "Հայերեն և", "ትግርኛ", "ꦗꦮ\ua9bd", "\u1734\u1885\u1886", "\U000111c9\U0001171e\u166d\U00011938", "\u2e43\u061d",
        "𝐀𝐁𝐂 𝒜", "ﬁﬂ ligatures", "Kelvin \u212a Ångström \u212b Ohm \u2126", "ǅungla ǈ ǋ", "½ ² ⁴ ①",
        # case mappings that expand or depend on position
        "İstanbul", "IİıiI", "İ", "Straße STRASSE ẞ", "ΟΔΟΣ Σίσυφος ς", "ŉ ǰ ΐ ﬀ",
        # unassigned, private use, noncharacters, Cf
        "\u0378\u0379", "\ue000\uf8ff", "\U000f0000\U0010fffd", "\ufdd0\uffff", "\U0001d173\U0001d17a",
        # punctuation and symbols
        "Hello, world! (foo) [bar] {baz} <qux> $5 100% a+b=c ^_^ `tick` ~tilde~ |pipe| \\back/",
        "«guillemets» „quotes“ ‹›  ¿¡ — – … ‰ † ‡ • ‧ ※ ¶ §", "a.b.c...d", "e-mail: user@example.com",
        "http://example.com/path?q=1&r=2#frag", "3.14159 1,000,000 -42 +7", "don't won't it's",
        # word length limit (max_input_chars_per_word = 100)
        "a" * 99, "a" * 100, "a" * 101, "é" * 99, "é" * 100, "é" * 101, "ab" * 50, "ab" * 50 + "c",
        "x" * 100 + "!", "\u0301" + "a" * 100, "a\u0301" * 100, "日" * 150, "Ａ" * 101, "abc " * 40,
        # literal special tokens
        "foo[MASK]bar", "[MASK][MASK]", "[mask]", "[ MASK ]", "[CLS] hello [SEP]", "[MASK", "MASK]",
        "[[MASK]]", "[UNK]", "[PAD]", "[SEP][CLS]", "[MASK]日本", "é[MASK]\u0301", " [MASK] ", "\t[MASK]\n",
        "[MASK]" * 10, "a[UNK]b[PAD]c", "[Mask] [MASK.] [MASKS]",
        # a very long line
        long_line,
    ]
    return [("stress", c) for c in cases]


# ---------------------------------------------------------------- references


def load(name):
    tok = Tokenizer.from_file(str(MODELS / name / "tokenizer.json"))
    tok.no_truncation()
    tok.no_padding()
    return tok


def flat_offsets(encoding):
    return [x for pair in encoding.offsets for x in pair]


def encode_record(tok, text):
    e = tok.encode(text)
    return {"ids": e.ids, "offsets": flat_offsets(e)}


def write_corpus(lines, minilm, splade, vocab_txt):
    header = {
        "header": True,
        "tokenizers_version": TOKENIZERS_VERSION,
        "reference": "all-MiniLM-L6-v2/tokenizer.json; splade-tiny/tokenizer.json where it differs",
        "lines": len(lines),
        "sources": dict(Counter(source.split(":")[0] for source, _ in lines)),
        "locales": len({source for source, _ in lines if source.startswith("mo:")}),
        "scripts": script_counts(text for _, text in lines),
    }
    records, splade_differs = [], 0
    for i, (source, text) in enumerate(lines):
        record = {"source": source, "text": text, **encode_record(minilm, text)}
        other = encode_record(splade, text)
        if other != {k: record[k] for k in ("ids", "offsets")}:
            record["splade"] = other
            splade_differs += 1
        from_vocab = vocab_txt.encode(text)
        if from_vocab.ids != record["ids"] or flat_offsets(from_vocab) != record["offsets"]:
            sys.exit(f"vocab.txt and tokenizer.json disagree on line {i}: {text!r}")
        if source == "stress" or i % 5 == 0:
            record["decoded"] = minilm.decode(record["ids"])
            record["decoded_with_specials"] = minilm.decode(record["ids"], skip_special_tokens=False)
        records.append(record)
    header["splade_differs_on_lines"] = splade_differs
    header["vocab_txt_matches_tokenizer_json"] = True
    with open(OUT / "corpus.jsonl", "w", encoding="utf-8") as f:
        for record in [header] + records:
            f.write(json.dumps(record, ensure_ascii=False) + "\n")
    return header


def script_counts(texts):
    """Rough script census for the header: the first word of each letter's Unicode name."""
    counts = Counter()
    for text in texts:
        scripts = Counter(unicodedata.name(c, "?").split()[0] for c in text if c.isalpha())
        if scripts:
            counts[scripts.most_common(1)[0][0]] += 1
    return dict(counts.most_common())


def write_pairs(lines, tok):
    """Pairs with and without truncation, single texts truncated, and padded batches."""
    rng = random.Random(f"{SEED}:pairs")
    texts = [t for _, t in lines if t.strip()]
    records = []
    for k in range(40):
        a, b = rng.choice(texts), rng.choice(texts)
        max_length = [None, 8, 16, 24, 32, 64, 128][k % 7]
        special = k % 5 != 4
        records.append(pair_record(tok, a, b, max_length, special))
    records.append(pair_record(tok, "", "", 5, True))
    records.append(pair_record(tok, "short", "a much longer second segment than the first one", 10, True))
    records.append(pair_record(tok, "a much longer first segment than the second one", "short", 10, True))
    records.append(pair_record(tok, "one two three four five six", "seven eight nine ten eleven", 7, True))
    records.append(pair_record(tok, "one two", "three", 3, True))
    records.append(pair_record(tok, "one two", "three", 2, False))
    for k in range(12):
        records.append(pair_record(tok, rng.choice(texts), None, [1, 2, 3, 5, 9, 17][k % 6], k % 4 != 3))
    for k in range(6):
        batch = [rng.choice(texts) for _ in range(1 + k)] + ["", "[MASK]"]
        tok.enable_padding(pad_id=tok.token_to_id("[PAD]"), pad_token="[PAD]")
        encodings = tok.encode_batch(batch)
        tok.no_padding()
        records.append({
            "batch": batch,
            "ids": [e.ids for e in encodings],
            "type_ids": [e.type_ids for e in encodings],
            "attention_mask": [e.attention_mask for e in encodings],
        })
    with open(OUT / "pairs.jsonl", "w", encoding="utf-8") as f:
        for record in records:
            f.write(json.dumps(record, ensure_ascii=False) + "\n")


def pair_record(tok, a, b, max_length, add_special_tokens):
    if max_length is None:
        tok.no_truncation()
    else:
        tok.enable_truncation(max_length=max_length, strategy="longest_first")
    e = tok.encode(a, b, add_special_tokens=add_special_tokens) if b is not None else \
        tok.encode(a, add_special_tokens=add_special_tokens)
    tok.no_truncation()
    return {
        "text": a, "pair": b, "max_length": max_length, "add_special_tokens": add_special_tokens,
        "ids": e.ids, "type_ids": e.type_ids, "offsets": flat_offsets(e),
        "truncated": len(e.overflowing) > 0,
    }


# ---------------------------------------------------------------- tokenizer.json variants


def variants():
    """Changes to MiniLM's tokenizer.json (top-level sections replaced) that exercise each flag."""
    bert = {"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True,
            "strip_accents": None, "lowercase": True}
    base = json.loads((MODELS / "all-MiniLM-L6-v2/tokenizer.json").read_text(encoding="utf-8"))
    # The ids written here are not the ones HF uses: "cat" is in the vocabulary and keeps its id,
    # so the tokens after it are renumbered. The Swift side must do the same.
    added = base["added_tokens"] + [
        {"id": 30522, "content": "<ent>", "single_word": False, "lstrip": True, "rstrip": True,
         "normalized": False, "special": True},
        {"id": 30523, "content": "new york", "single_word": False, "lstrip": False, "rstrip": False,
         "normalized": True, "special": False},
        {"id": 30524, "content": "cat", "single_word": True, "lstrip": False, "rstrip": False,
         "normalized": True, "special": False},
        {"id": 30525, "content": "Ünï", "single_word": False, "lstrip": False, "rstrip": False,
         "normalized": True, "special": False},
        {"id": 30526, "content": "[MASK]x", "single_word": False, "lstrip": False, "rstrip": False,
         "normalized": False, "special": False},
    ]
    bert_processing = {"type": "BertProcessing", "sep": ["[SEP]", 102], "cls": ["[CLS]", 101]}
    return {
        "cased": {"normalizer": {**bert, "lowercase": False}},
        "lowercase_keep_accents": {"normalizer": {**bert, "strip_accents": False}},
        "strip_accents_keep_case": {"normalizer": {**bert, "lowercase": False, "strip_accents": True}},
        "no_clean_text": {"normalizer": {**bert, "clean_text": False}},
        "no_chinese_chars": {"normalizer": {**bert, "handle_chinese_chars": False}},
        "no_normalizer": {"normalizer": None},
        "no_pre_tokenizer": {"pre_tokenizer": None},
        "added_token_flags": {"added_tokens": added},
        "bert_processing": {"post_processor": bert_processing},
        "no_post_processor": {"post_processor": None},
        "short_words": {"model": {**base["model"], "max_input_chars_per_word": 5}},
    }


VARIANT_TEXTS = [
    "Hello World", "İstanbul IİıiI", "Straße ẞ", "Crème Brûlée à la CAFÉ", "e\u0301 a\u0301\u0316 x\u0308\u0301\u0327",
    "日本語 中文", "a\u0000b\u0007c\tD\r\nE\u000bF\u0085G", "word\u200bword \ufeffx", "  spaced   out  ",
    "I love New York and new  york", "NEW YORK", "cat catalog bobcat cat. (cat) _cat", "Ünï ÜNÏ uni",
    "x <ent> y", "x<ent>y", "x \t<ent>\n y", "<ent><ent>", "[MASK]x [MASK] x[MASK]xx", "[CLS] ok [SEP]",
    "abcdef abcde abc", "ǅungla ΟΔΟΣ", "👍🏽 🇫🇷", "Tiếng Việt", "ｶﾀｶﾅ ＡＢＣ", "",
]


def write_variants(texts):
    base = json.loads((MODELS / "all-MiniLM-L6-v2/tokenizer.json").read_text(encoding="utf-8"))
    with open(OUT / "variants.jsonl", "w", encoding="utf-8") as f:
        for name, patch in variants().items():
            tok = Tokenizer.from_str(json.dumps({**base, **patch}))
            tok.no_truncation()
            tok.no_padding()
            records = []
            for text in texts:
                e = tok.encode(text)
                records.append({"text": text, "ids": e.ids, "tokens": e.tokens, "offsets": flat_offsets(e),
                                "decoded": tok.decode(e.ids)})
            shown = {k: v for k, v in patch.items() if k != "model"}  # the model patch is rebuilt in Swift
            if "model" in patch:
                shown["max_input_chars_per_word"] = patch["model"]["max_input_chars_per_word"]
            f.write(json.dumps({"variant": name, "patch": shown, "records": records}, ensure_ascii=False) + "\n")
    # Truncation from the left (tokenizer.json's truncation direction) on pairs.
    tok = Tokenizer.from_file(str(MODELS / "all-MiniLM-L6-v2/tokenizer.json"))
    tok.no_padding()
    with open(OUT / "variants.jsonl", "a", encoding="utf-8") as f:
        records = []
        for max_length in (4, 6, 9):
            tok.enable_truncation(max_length=max_length, direction="left")
            for a, b in [("one two three four five", "six seven"), ("alpha beta", None)]:
                e = tok.encode(a, b) if b is not None else tok.encode(a)
                records.append({"text": a, "pair": b, "max_length": max_length, "ids": e.ids,
                                "offsets": flat_offsets(e)})
        f.write(json.dumps({"variant": "truncate_left", "patch": {"truncation": {
            "direction": "Left", "max_length": 512, "strategy": "LongestFirst", "stride": 0}},
            "records": records}, ensure_ascii=False) + "\n")


# ---------------------------------------------------------------- every code point


def ranges(code_points):
    out = []
    for c in sorted(code_points):
        if out and out[-1][1] + 1 == c:
            out[-1][1] = c
        else:
            out.append([c, c])
    return out


def write_unicode():
    """HF's view of each code point: which the normalizer drops, maps or changes, and how the
    pre-tokenizer splits. Maps hold only code points that do not come out as themselves."""
    def bert(clean=False, chinese=False, strip=False, lower=False):
        return normalizers.BertNormalizer(clean_text=clean, handle_chinese_chars=chinese,
                                          strip_accents=strip, lowercase=lower)
    clean, chinese, strip, lower = bert(clean=True), bert(chinese=True), bert(strip=True), bert(lower=True)
    pretok = pre_tokenizers.BertPreTokenizer()
    removed, to_space, chinese_chars, whitespace, punctuation = [], [], [], [], []
    strip_map, lower_map = {}, {}
    for c in range(0x110000):
        if 0xD800 <= c <= 0xDFFF:
            continue
        ch = chr(c)
        cleaned = clean.normalize_str(ch)
        if cleaned == "":
            removed.append(c)
        elif cleaned == " " and ch != " ":
            to_space.append(c)
        elif cleaned != ch:
            sys.exit(f"unexpected clean_text result for U+{c:04X}")
        if chinese.normalize_str(ch) != ch:
            chinese_chars.append(c)
        if (s := strip.normalize_str(ch)) != ch:
            strip_map[f"{c:X}"] = s
        if (s := lower.normalize_str(ch)) != ch:
            lower_map[f"{c:X}"] = s
        splits = len(pretok.pre_tokenize_str(f"x{ch}x"))
        if splits == 2:
            whitespace.append(c)
        elif splits == 3:
            punctuation.append(c)
    # Canonical ordering: each combining character (as Python's Unicode sees it) after a starter,
    # next to a musical-symbol stem (U+1D165, ccc 216, not a nonspacing mark so never stripped).
    ordering = {}
    for c in range(0x110000):
        if 0xD800 <= c <= 0xDFFF or unicodedata.combining(chr(c)) == 0:
            continue
        for probe in (f"x{chr(c)}\U0001d165", f"x\U0001d165{chr(c)}", f"x{chr(c)}\U0001d16d"):
            ordering[probe] = strip.normalize_str(probe)
    doc = {
        "tokenizers_version": TOKENIZERS_VERSION,
        "clean_text_removes": ranges(removed),
        "clean_text_to_space": ranges(to_space),
        "chinese": ranges(chinese_chars),
        "pretokenizer_whitespace": ranges(whitespace),
        "pretokenizer_punctuation": ranges(punctuation),
        "strip_accents": strip_map,
        "lowercase": lower_map,
        "canonical_ordering": ordering,
    }
    (OUT / "unicode.json").write_text(json.dumps(doc, ensure_ascii=False, separators=(",", ":")) + "\n",
                                      encoding="utf-8")


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    minilm, splade = load("all-MiniLM-L6-v2"), load("splade-tiny")
    vocab_txt = BertWordPieceTokenizer(str(MODELS / "all-MiniLM-L6-v2/vocab.txt"), lowercase=True)
    licenses = license_lines()
    license_words = [w for _, p in licenses for w in p.split()]
    lines = catalog_lines() + licenses + stress_lines(license_words)
    header = write_corpus(lines, minilm, splade, vocab_txt)
    write_pairs(lines, load("all-MiniLM-L6-v2"))
    write_variants(VARIANT_TEXTS + [t for _, t in stress_lines(["w"])[:-1]])
    write_unicode()
    print(json.dumps({k: header[k] for k in ("lines", "sources", "locales", "splade_differs_on_lines")}))
    for path in sorted(OUT.iterdir()):
        print(f"{path.relative_to(ROOT)}: {path.stat().st_size / 1e6:.2f} MB")


if __name__ == "__main__":
    main()
