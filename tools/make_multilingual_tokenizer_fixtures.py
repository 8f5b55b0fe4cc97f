#!/usr/bin/env python3
"""Trains two small multilingual tokenizers on this machine's text and writes HF `tokenizers`'
output for held-out lines, for the Swift tests (Tests/SwiftBERTTests/Fixtures/multilingual/).

  xlmr-unigram/tokenizer.json   a SentencePiece Unigram model (sentencepiece, byte_fallback on,
                                6,000 pieces) converted by transformers' XLMRobertaConverter: the
                                Precompiled normaliser (nmt_nfkc charsmap), Replace steps, Metaspace,
                                Unigram with byte fallback, XLM-R's <s> A </s></s> B </s> template.
  roberta-bpe/tokenizer.json    a byte-level BPE trained by tokenizers' ByteLevelBPETokenizer (8,000
                                tokens), set up as RoBERTa's: ByteLevel(add_prefix_space=False,
                                trim_offsets=True), RobertaProcessing, <mask> with lstrip.
  reference.jsonl               header, then one record per text: ids and code-point offsets from
                                both tokenizers (tokens too for the stress cases).
  pairs.jsonl                   pairs, with and without specials, with truncation.
  variants.jsonl                roberta-bpe with add_prefix_space / trim_offsets changed, and
                                xlmr-unigram with Metaspace's prepend_scheme changed.

Text: the translated messages of Debian's catalogues (/usr/share/locale/*/LC_MESSAGES/*.mo). A
message is held out of training when a hash of it says so (1 in 8); the reference lines are a
seeded sample of held-out messages per locale, plus stress cases. Deterministic for one machine's
set of catalogues; another machine gives another, equally valid corpus.

    /work/refenv/bin/python tools/make_multilingual_tokenizer_fixtures.py
(any venv with tokenizers, sentencepiece, transformers and protobuf; torch is not needed.)
"""
import hashlib
import json
import random
import sys
import tempfile
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_tokenizer_fixtures import read_mo, script_counts  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "Tests/SwiftBERTTests/Fixtures/multilingual"
SEED = 20261123
HELD_OUT_PER_LOCALE = 7
TRAIN_LINES_PER_LOCALE = 1500


def held_out(text):
    return hashlib.sha256(text.encode("utf-8")).digest()[0] % 8 == 0


def catalogue_messages():
    by_locale = {}
    for mo in sorted(Path("/usr/share/locale").glob("*/LC_MESSAGES/*.mo")):
        by_locale.setdefault(mo.parts[4], set()).update(read_mo(mo))
    return {locale: sorted(s for s in messages if len(s) >= 2) for locale, messages in sorted(by_locale.items())}


def split_corpus(by_locale):
    train, reference = [], []
    for locale, messages in by_locale.items():
        rng = random.Random(f"{SEED}:{locale}")
        trainable = [m for m in messages if not held_out(m)]
        kept = [m for m in messages if held_out(m)]
        train += rng.sample(trainable, min(TRAIN_LINES_PER_LOCALE, len(trainable)))
        reference += [(f"mo:{locale}", m) for m in rng.sample(kept, min(HELD_OUT_PER_LOCALE, len(kept)))]
    return train, reference


STRESS = [
    "", " ", "  ", "\t", "\n", "a  b", "a   b    c", "  leading", "trailing  ", "a\tb\nc\r\nd", "\u3000全角スペース\u3000",
    "``quoted'' text", "it''s ``x``", "\u0000nul", "a\u0000b", "\ufffd", "\u0001\u0002ctrl\u007f", "\u0085nel",
    "\u200bzero\u200cwidth\u200djoin", "\ufeffbom", "co\u00adop", "\u2028line\u2029para", "no\u00a0break",
    "ﬁﬂ ligatures", "ＡＢＣ１２３！？", "ｶﾀｶﾅ ﾊﾞ", "① ½ ² ㎏ ㍻", "Kelvin \u212a Ångström \u212b", "ǅungla",
    "e\u0301 cafe\u0301 a\u0301\u0316", "\u0301abc", "x\u0308\u0301\u0327", "Ελληνικά ΆΈΉΊΌΎΏ ΐΰ", "한국어 텍스트",
    "각\u1100\u1161\u11a8", "Tiếng Việt có dấu", "مَرْحَبًا بِالْعَالَم", "שָׁלוֹם עוֹלָם", "ภาษาไทยง่ายนิดเดียว",
    "हिन्दी भाषा", "ক্ষ্ম", "தமிழ்", "ქართული", "Հայերեն", "ትግርኛ", "བོད་ཡིག", "ᏣᎳᎩ", "ᐃᓄᒃᑎᑐᑦ", "ꦗꦮ",
    "日本語のテキストです。", "中文测试，标点符号！", "𠀀𠀁𠀂 𪜀", "\uf900\ufa6d", "漢字kanji混ざり",
    "👨‍👩‍👧‍👦 family", "🇫🇷🇩🇪🇯🇵", "👍🏽👍🏿", "❤️ ♥", "🏳️‍🌈", "1️⃣ #️⃣", "😀😃🤖🥰🫠", "emoji🙂glued",
    "\ue000\uf8ff private", "\U000f0000", "\u0378 unassigned", "\U0001d400\U0001d401 math", "İstanbul IİıiI",
    "Straße ẞ", "Hello, world! (foo) [bar] {baz} $5 100% a+b=c", "don't won't it's I'm we've",
    "http://example.com/path?q=1&r=2#frag", "3.14159 1,000,000 -42", "a" * 300, "日" * 200, "ab " * 100,
    "<mask>", "a <mask> b", "a<mask>b", "<mask><mask>", "  <mask>  ", "<s>", "</s>", "<s> hi </s>", "<pad><unk>",
    "<MASK>", "< mask >", "<mask", "mask>", "The capital of France is <mask>.", "Paris est la <mask> de la France.",
    "Столица России — <mask>.", "<s><s></s>", "x</s>y", "\u2581", "\u2581\u2581x", "▁ hello", "<0x41>", "<unk>",
]


def train_unigram(train):
    """Training takes minutes: the model is kept in /tmp under the hash of its training text."""
    import sentencepiece as spm
    corpus = "\n".join(t.replace("\n", " ") for t in train) + "\n"
    folder = Path(tempfile.gettempdir()) / ("swiftbert-spm-" + hashlib.sha256(corpus.encode()).hexdigest()[:16])
    if (folder / "unigram.model").exists():
        return folder / "unigram.model"
    folder.mkdir(exist_ok=True)
    text = folder / "train.txt"
    text.write_text(corpus, encoding="utf-8")
    spm.SentencePieceTrainer.train(
        input=str(text), model_prefix=str(folder / "unigram"), model_type="unigram", vocab_size=6000,
        byte_fallback=True, character_coverage=0.9995, normalization_rule_name="nmt_nfkc",
        input_sentence_size=10_000_000, shuffle_input_sentence=False, num_threads=2, seed_sentencepiece_size=200_000,
        max_sentence_length=8192, minloglevel=2)
    return folder / "unigram.model"


def convert_xlmr(model_path):
    from transformers.convert_slow_tokenizer import XLMRobertaConverter

    class Original:  # what the converter reads of a slow XLMRobertaTokenizer
        vocab_file = str(model_path)
        def convert_tokens_to_ids(self, token):
            return {"<s>": 0, "<pad>": 1, "</s>": 2, "<unk>": 3}[token]

    class Converter(XLMRobertaConverter):
        # XLM-R's own model has no byte pieces, so its converter writes byte_fallback false;
        # this model has them, and the Unigram is told to use them (as LlamaConverter does).
        handle_byte_fallback = True

    tok = Converter(Original()).converted()
    # As XLM-R's own tokenizer.json: the specials are added tokens, <mask> takes the space before it.
    from tokenizers import AddedToken
    tok.add_special_tokens([AddedToken(t, normalized=False, special=True) for t in ("<s>", "<pad>", "</s>", "<unk>")]
                           + [AddedToken("<mask>", lstrip=True, normalized=False, special=True)])
    return tok


def train_bpe(train):
    from tokenizers import AddedToken, ByteLevelBPETokenizer, processors
    bpe = ByteLevelBPETokenizer(add_prefix_space=False, trim_offsets=True)
    bpe.train_from_iterator(train, vocab_size=8000, min_frequency=2,
                            special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"], show_progress=False)
    tok = bpe._tokenizer
    tok.post_processor = processors.RobertaProcessing(("</s>", tok.token_to_id("</s>")), ("<s>", tok.token_to_id("<s>")),
                                                      trim_offsets=True, add_prefix_space=False)
    tok.add_special_tokens([AddedToken("<mask>", lstrip=True, rstrip=False, normalized=False, special=True)])
    return tok


def flat(offsets):
    return [x for pair in offsets for x in pair]


def encoding_record(tok, text, pair=None, with_tokens=False, special=True):
    e = tok.encode(text, pair, add_special_tokens=special) if pair is not None else tok.encode(text, add_special_tokens=special)
    record = {"ids": e.ids, "offsets": flat(e.offsets)}
    if pair is not None or not special:
        record["type_ids"] = e.type_ids
    if with_tokens:
        record["tokens"] = e.tokens
    return record


def main():
    from tokenizers import Tokenizer, __version__ as tokenizers_version
    import sentencepiece
    import transformers
    OUT.mkdir(parents=True, exist_ok=True)
    by_locale = catalogue_messages()
    train, reference = split_corpus(by_locale)
    reference += [("stress", s) for s in STRESS]
    print(f"{len(by_locale)} locales, {len(train)} training lines, {len(reference)} reference lines", file=sys.stderr)

    xlmr = convert_xlmr(train_unigram(train))
    bpe = train_bpe(train)
    for name, tok in (("xlmr-unigram", xlmr), ("roberta-bpe", bpe)):
        (OUT / name).mkdir(exist_ok=True)
        tok.save(str(OUT / name / "tokenizer.json"), pretty=False)
    # The tests read the saved files: reload them so the reference comes from exactly those.
    xlmr = Tokenizer.from_file(str(OUT / "xlmr-unigram/tokenizer.json"))
    bpe = Tokenizer.from_file(str(OUT / "roberta-bpe/tokenizer.json"))
    for tok in (xlmr, bpe):
        tok.no_truncation()
        tok.no_padding()

    header = {
        "header": True, "tokenizers_version": tokenizers_version, "sentencepiece_version": sentencepiece.__version__,
        "transformers_version": transformers.__version__, "lines": len(reference),
        "training_lines": len(train), "locales": len(by_locale),
        "scripts": script_counts(t for _, t in reference),
    }
    with open(OUT / "reference.jsonl", "w", encoding="utf-8") as f:
        f.write(json.dumps(header, ensure_ascii=False) + "\n")
        for source, text in reference:
            stress = source == "stress"
            record = {"source": source, "text": text,
                      "xlmr": encoding_record(xlmr, text, with_tokens=stress),
                      "roberta": encoding_record(bpe, text, with_tokens=stress)}
            if stress or hash_pick(text, 4):
                record["xlmr"]["decoded"] = xlmr.decode(record["xlmr"]["ids"])
                record["roberta"]["decoded"] = bpe.decode(record["roberta"]["ids"])
            f.write(json.dumps(record, ensure_ascii=False) + "\n")

    rng = random.Random(f"{SEED}:pairs")
    texts = [t for _, t in reference]
    with open(OUT / "pairs.jsonl", "w", encoding="utf-8") as f:
        for k in range(80):
            a, b = rng.choice(texts), rng.choice(texts)
            special = k % 5 != 4
            max_length = [None, None, 8, 16, 32, 64][k % 6]
            record = {"text": a, "pair": b, "add_special_tokens": special, "max_length": max_length}
            for name, tok in (("xlmr", xlmr), ("roberta", bpe)):
                if max_length is not None:
                    tok.enable_truncation(max_length=max_length, strategy="longest_first")
                record[name] = encoding_record(tok, a, b, with_tokens=True, special=special)
                tok.no_truncation()
            f.write(json.dumps(record, ensure_ascii=False) + "\n")

    base_bpe = json.loads((OUT / "roberta-bpe/tokenizer.json").read_text(encoding="utf-8"))
    base_xlmr = json.loads((OUT / "xlmr-unigram/tokenizer.json").read_text(encoding="utf-8"))
    variant_texts = [t for _, t in reference[::25]] + STRESS
    with open(OUT / "variants.jsonl", "w", encoding="utf-8") as f:
        for name, base, patch in variants(base_bpe, base_xlmr):
            tok = Tokenizer.from_str(json.dumps(patched(base, patch)))
            records = [{"text": t, **encoding_record(tok, t, with_tokens=True)} for t in variant_texts]
            f.write(json.dumps({"variant": name, "base": "roberta-bpe" if base is base_bpe else "xlmr-unigram",
                                "patch": patch, "records": records}, ensure_ascii=False) + "\n")
    for path in sorted(OUT.rglob("*")):
        if path.is_file():
            print(f"{path.relative_to(ROOT)}: {path.stat().st_size / 1e6:.2f} MB", file=sys.stderr)


def patched(base, patch):
    """base with the patch's top-level sections replaced; "model_fields" are set inside "model"."""
    out = {**base, **{k: v for k, v in patch.items() if k != "model_fields"}}
    out["model"] = {**base["model"], **patch.get("model_fields", {})}
    return out


def hash_pick(text, n):
    return hashlib.sha256(("pick:" + text).encode("utf-8")).digest()[0] % n == 0


def variants(base_bpe, base_xlmr):
    pre = base_bpe["pre_tokenizer"]
    post = base_bpe["post_processor"]
    meta = base_xlmr["pre_tokenizer"]
    out = [
        ("bpe_prefix_space", base_bpe, {"pre_tokenizer": {**pre, "add_prefix_space": True},
                                        "post_processor": {**post, "add_prefix_space": True}}),
        ("bpe_no_trim_offsets", base_bpe, {"pre_tokenizer": {**pre, "trim_offsets": False},
                                           "post_processor": {**post, "trim_offsets": False}}),
        ("bpe_prefix_space_no_trim", base_bpe, {"pre_tokenizer": {**pre, "add_prefix_space": True, "trim_offsets": False},
                                                "post_processor": {**post, "add_prefix_space": True, "trim_offsets": False}}),
        ("unigram_prepend_never", base_xlmr, {"pre_tokenizer": {**meta, "prepend_scheme": "never"}}),
        ("unigram_prepend_first", base_xlmr, {"pre_tokenizer": {**meta, "prepend_scheme": "first"}}),
        ("unigram_no_split", base_xlmr, {"pre_tokenizer": {**meta, "split": False}}),
        ("unigram_no_byte_fallback", base_xlmr, {"model_fields": {"byte_fallback": False}}),
    ]
    return out


if __name__ == "__main__":
    main()
