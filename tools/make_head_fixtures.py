#!/usr/bin/env python3
"""Writes the fixtures for the task heads (issue 15): small RANDOM-WEIGHT checkpoints made by
transformers, and what transformers' pipelines and sentence-transformers output for them.

The weights are random (fixed seeds): the outputs mean nothing, they only pin down exactness.
Each checkpoint has 2 layers, hidden 128, 4 heads, intermediate 512, and a WordPiece vocabulary
of ~2,500 entries trained with `tokenizers` on the English license and copyright texts Debian
installs (/usr/share/common-licenses, /usr/share/doc/*/copyright).

To keep the fixtures small, weights are stored as float16 (the references are computed in
float32 from exactly those float16 values), and the encoder is shared: every BERT head folder
is a sharded checkpoint (model.safetensors.index.json, as transformers writes for big models)
whose first shard is a symlink to shared/bert-encoder.safetensors, and whose second shard holds
only the head. The same for DistilBERT. Sentence-transformers folders symlink model.safetensors
to the shared encoder.

Random classifier layers give near-equal logits, so classifier weights are scaled up (and the
masked-LM LayerNorm weight too) until labels and top-10 fills are decisive: the smallest gap
between compared scores is written to the metadata, so a 1e-4 tolerance can never flip a label.

Output: Tests/SwiftBERTTests/Fixtures/heads/
    shared/          the two float16 encoders and the trained vocabulary
    <folder>/        one Hugging Face / sentence-transformers folder per head or pooling variant
    reference.json   every expected output (labels, scores, spans, ids, embeddings), with versions
    reference.safetensors  DistilBERT last hidden states (float32)
Needs the reference venv (torch, transformers, sentence-transformers, tokenizers, safetensors).
Called by tools/make_reference_fixtures.py; can be run alone.
"""
import json
import pathlib
import re
import shutil

import numpy as np
import torch
import transformers
from safetensors.torch import save_file
from safetensors.numpy import save_file as save_numpy

from fixture_checkpoints import NOTE, f16_round, floats, link, load, write_sharded

ROOT = pathlib.Path(__file__).resolve().parent.parent
OUT = ROOT / "Tests/SwiftBERTTests/Fixtures/heads"
VOCAB_SIZE = 2500
SIZES = dict(hidden=128, layers=2, heads=4, intermediate=512, positions=512)

SENTIMENT = {0: "negative", 1: "neutral", 2: "positive"}
TOPICS = {0: "license", 1: "warranty", 2: "patent", 3: "software"}
NER_LABELS = ["O", "B-PER", "I-PER", "B-ORG", "I-ORG", "B-LOC", "I-LOC", "B-MISC", "I-MISC"]

# Texts with names, places, accents, punctuation and casing, so that offsets, lowercasing and
# accent stripping are all exercised; plus real license sentences.
TEXTS = [
    "Richard Stallman founded the Free Software Foundation in Boston.",
    "Linus Torvalds released Linux under the GNU General Public License.",
    "José Müller moved from Zürich to São Paulo in 2019.",
    "THE SOFTWARE IS PROVIDED \"AS IS\", WITHOUT WARRANTY OF ANY KIND.",
    "Apache Software Foundation, Mozilla and Debian maintain free software.",
    "Hello!",
    "Copyright (C) 2007 Free Software Foundation, Inc. <https://fsf.org/>",
    "Permission is hereby granted, free of charge, to any person obtaining a copy of this software.",
]
QUERIES = ["what does the warranty disclaimer say", "who may copy the software"]
DOCUMENTS = [
    "THE SOFTWARE IS PROVIDED \"AS IS\", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR IMPLIED.",
    "Permission is hereby granted, free of charge, to any person obtaining a copy of this software.",
    "You may not use this file except in compliance with the License.",
    "Each contributor grants you a patent license.",
    "The Free Software Foundation may publish new versions of the license.",
    "Redistributions of source code must retain the above copyright notice.",
]


def corpus_lines():
    paths = sorted(pathlib.Path("/usr/share/common-licenses").glob("*"))
    paths += sorted(pathlib.Path("/usr/share/doc").glob("*/copyright"))
    for path in paths:
        if path.is_file():
            for line in path.read_text(errors="replace").splitlines():
                if line.strip():
                    yield line


def license_sentences(count):
    found = set()
    for name in ["Apache-2.0", "GPL-3", "MPL-2.0", "BSD", "LGPL-2.1"]:
        text = re.sub(r"\s+", " ", (pathlib.Path("/usr/share/common-licenses") / name).read_text(errors="replace"))
        for s in re.split(r"(?<=[.;:])\s+(?=[A-Z])", text):
            if 30 <= len(s) <= 400 and re.search(r"[a-z]{3}", s):
                found.add(s.strip())
    ordered = sorted(found, key=lambda s: (len(s), s))
    step = len(ordered) / count
    return [ordered[int(i * step + step / 2)] for i in range(count)]


def train_tokenizer(folder):
    from tokenizers import BertWordPieceTokenizer
    wordpiece = BertWordPieceTokenizer(lowercase=True, strip_accents=None, clean_text=True, handle_chinese_chars=True)
    wordpiece.train_from_iterator(corpus_lines(), vocab_size=VOCAB_SIZE, min_frequency=2,
                                  special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"])
    folder.mkdir(parents=True, exist_ok=True)
    wordpiece.save_model(str(folder))  # vocab.txt
    lines = (folder / "vocab.txt").read_text(encoding="utf-8").splitlines()
    tokenizer = transformers.BertTokenizer(vocab={token: i for i, token in enumerate(lines)}, do_lower_case=True)
    tokenizer.model_max_length = 512
    assert len(tokenizer) == len(lines) >= 2000, len(tokenizer)
    unknown = tokenizer(TEXTS)["input_ids"]
    assert sum(ids.count(tokenizer.unk_token_id) for ids in unknown) < 3, "the trained vocabulary misses common words"
    tokenizer.save_pretrained(str(folder / "tokenizer"))
    shutil.copy(folder / "vocab.txt", folder / "tokenizer/vocab.txt")
    return tokenizer


def save_tokenizer(tokenizer, folder):
    """The same files in every folder, saved once before any pipeline touched the tokenizer."""
    for path in sorted((OUT / "shared/tokenizer").iterdir()):
        shutil.copy(path, folder / path.name)


def save_config(config, folder, architecture):
    config.architectures = [architecture]
    config.save_pretrained(str(folder))


def bert_config(**extra):
    return transformers.BertConfig(vocab_size=VOCAB_SIZE, hidden_size=SIZES["hidden"], num_hidden_layers=SIZES["layers"],
                                   num_attention_heads=SIZES["heads"], intermediate_size=SIZES["intermediate"],
                                   max_position_embeddings=SIZES["positions"], **extra)


def distil_config(**extra):
    return transformers.DistilBertConfig(vocab_size=VOCAB_SIZE, dim=SIZES["hidden"], n_layers=SIZES["layers"],
                                         n_heads=SIZES["heads"], hidden_dim=SIZES["intermediate"],
                                         max_position_embeddings=SIZES["positions"], **extra)


def check_same(expected, folder, cls):
    """The folder, loaded the way a user loads it, holds exactly the model built here."""
    loaded = load(cls, folder)
    mine = expected.state_dict()
    for name, value in loaded.state_dict().items():
        assert torch.equal(value, mine[name]), f"{folder.name}: {name} differs after reload"
    return loaded


def margin(values):
    """Smallest gap between the best and second-best of each row."""
    top = torch.as_tensor(values).float().topk(2, dim=-1).values
    return float((top[..., 0] - top[..., 1]).min())


def jsonable(value):
    if isinstance(value, dict):
        return {k: jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, (np.floating, float)):
        return float(value)
    if isinstance(value, (np.integer,)):
        return int(value)
    return value


# ---------------------------------------------------------------- BERT heads

def bert_encoder(tokenizer):
    torch.manual_seed(0)
    base = transformers.BertModel(bert_config()).eval()
    f16_round(base)
    tensors = {"bert." + k: v for k, v in base.state_dict().items() if "position_ids" not in k}
    path = OUT / "shared/bert-encoder.safetensors"
    save_file({k: v.half().contiguous() for k, v in tensors.items()}, str(path), metadata={"format": "pt", "note": NOTE})
    return base, path, list(tensors)


def classifier_head(cls, config, seed, base_state, scale, bias=None):
    torch.manual_seed(seed)
    model = cls(config).eval()
    model.bert.load_state_dict(base_state, strict=False)
    with torch.no_grad():
        model.classifier.weight.mul_(scale)
        model.classifier.bias.normal_(0, 0.5)
        if bias is not None:
            model.classifier.bias.add_(torch.tensor(bias))
    f16_round(model)
    return model


def sequence_classification(name, model, shared_path, shared_names, tokenizer, texts):
    folder = OUT / name
    write_sharded(folder, shared_path, shared_names, {k: v for k, v in model.state_dict().items() if k.startswith("classifier.")})
    save_config(model.config, folder, type(model).__name__)
    save_tokenizer(tokenizer, folder)
    model = check_same(model, folder, type(model))
    batch = tokenizer(texts, padding=True, return_tensors="pt")
    with torch.no_grad():
        logits = model(**batch).logits
    pipe = transformers.pipeline("text-classification", model=model, tokenizer=tokenizer, device="cpu")
    outputs = pipe(texts, top_k=None)
    scores = logits.sigmoid() if model.config.problem_type == "multi_label_classification" else logits.softmax(-1)
    ranked = scores.sort(-1, descending=True).values
    gap = float((ranked[:, :-1] - ranked[:, 1:]).min())
    return {"folder": name, "architecture": type(model).__name__, "problem_type": model.config.problem_type,
            "id2label": {str(k): v for k, v in model.config.id2label.items()},
            "texts": texts, "input_ids": [tokenizer(t)["input_ids"] for t in texts],
            "logits": [floats(row) for row in logits], "pipeline": jsonable(outputs),
            "smallest_score_gap": gap}


def cross_encoder(model, shared_path, shared_names, tokenizer):
    from sentence_transformers import CrossEncoder
    name = "bert-cross-encoder"
    folder = OUT / name
    write_sharded(folder, shared_path, shared_names, {k: v for k, v in model.state_dict().items() if k.startswith("classifier.")})
    save_config(model.config, folder, type(model).__name__)
    save_tokenizer(tokenizer, folder)
    check_same(model, folder, type(model))
    ce = CrossEncoder(str(folder), device="cpu", model_kwargs={"dtype": torch.float32, "attn_implementation": "eager"})
    assert all(p.dtype == torch.float32 for p in ce.model.parameters())
    cases = []
    for query in QUERIES:
        pairs = [[query, d] for d in DOCUMENTS]
        scores = ce.predict(pairs, convert_to_numpy=True)
        ranked = ce.rank(query, DOCUMENTS, return_documents=True)
        encoded = [tokenizer(query, d) for d in DOCUMENTS]
        batch = tokenizer([query] * len(DOCUMENTS), DOCUMENTS, padding=True, return_tensors="pt")
        with torch.no_grad():
            logits = model(**batch).logits[:, 0]
        s = np.sort(np.asarray(scores))
        cases.append({"query": query, "documents": DOCUMENTS, "scores": floats(scores), "logits": floats(logits),
                      "rank": [{"index": int(r["corpus_id"]), "score": float(r["score"]), "text": r["text"]} for r in ranked],
                      "input_ids": [e["input_ids"] for e in encoded], "token_type_ids": [e["token_type_ids"] for e in encoded],
                      "smallest_score_gap": float(np.diff(s).min())})
    return {"folder": name, "architecture": "BertForSequenceClassification", "activation": "sigmoid", "cases": cases}


def token_classification(name, model, folder_writer, tokenizer, texts):
    folder = OUT / name
    folder_writer(folder)
    save_config(model.config, folder, type(model).__name__)
    save_tokenizer(tokenizer, folder)
    model = check_same(model, folder, type(model))
    out = {"folder": name, "architecture": type(model).__name__,
           "id2label": {str(k): v for k, v in model.config.id2label.items()}, "texts": texts}
    batch = tokenizer(texts, padding=True, return_tensors="pt")
    with torch.no_grad():
        logits = model(**batch).logits
    lengths = batch["attention_mask"].sum(1).tolist()
    out["input_ids"] = [batch["input_ids"][i, :n].tolist() for i, n in enumerate(lengths)]
    out["token_labels"] = [[model.config.id2label[int(j)] for j in logits[i, :n].argmax(-1)] for i, n in enumerate(lengths)]
    out["smallest_logit_margin"] = min(margin(logits[i, :n]) for i, n in enumerate(lengths))
    out["aggregations"] = {}
    for strategy in ["none", "simple", "first", "average", "max"]:
        pipe = transformers.pipeline("token-classification", model=model, tokenizer=tokenizer, device="cpu",
                                     aggregation_strategy=strategy)
        out["aggregations"][strategy] = [jsonable(pipe(t)) for t in texts]
    return out


# ---------------------------------------------------------------- sentence-transformers folders

OLD_FLAGS = {"cls": "pooling_mode_cls_token", "mean": "pooling_mode_mean_tokens", "max": "pooling_mode_max_tokens",
             "mean_sqrt_len_tokens": "pooling_mode_mean_sqrt_len_tokens",
             "weightedmean": "pooling_mode_weightedmean_tokens", "lasttoken": "pooling_mode_lasttoken"}
PROMPTS = {"query": "query: ", "passage": "passage: "}
FREE_PROMPT = "Represent this sentence for searching relevant passages: "
ST_VARIANTS = [
    # name, pooling mode, config format, include_prompt, dense out (None = no Dense), normalize, prompts, default prompt, max_seq_length
    ("st-cls", "cls", "new", True, 64, True, PROMPTS, "query", 48),
    ("st-cls-legacy", "cls", "old", True, None, True, None, None, 256),
    ("st-mean-legacy", "mean", "old", True, None, False, None, None, 256),
    ("st-mean-exclude-prompt", "mean", "new", False, None, True, PROMPTS, None, 256),
    ("st-max", "max", "new", True, None, True, None, None, 256),
    ("st-mean-sqrt-len", "mean_sqrt_len_tokens", "new", True, None, False, None, None, 256),
    ("st-weightedmean", "weightedmean", "new", True, None, True, None, None, 256),
    ("st-lasttoken", "lasttoken", "new", True, None, True, None, None, 256),
]


def st_folder(variant, encoder_path, tokenizer, base_config, versions):
    import sentence_transformers
    from sentence_transformers import SentenceTransformer
    name, mode, fmt, include_prompt, dense_out, normalize, prompts, default_prompt, max_len = variant
    folder = OUT / name
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    link(encoder_path, folder / "model.safetensors")
    save_config(base_config, folder, "BertModel")
    save_tokenizer(tokenizer, folder)
    modules = [{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
               {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}]
    h = SIZES["hidden"]
    pooling_dir = folder / "1_Pooling"
    pooling_dir.mkdir()
    if fmt == "new":
        pooling = {"embedding_dimension": h, "pooling_mode": mode, "include_prompt": include_prompt}
    else:
        pooling = {"word_embedding_dimension": h, **{flag: m == mode for m, flag in OLD_FLAGS.items()}, "include_prompt": include_prompt}
    (pooling_dir / "config.json").write_text(json.dumps(pooling, indent=2) + "\n")
    if dense_out is not None:
        torch.manual_seed(7)
        linear = torch.nn.Linear(h, dense_out)
        with torch.no_grad():
            for p in linear.parameters():
                p.copy_(p.half().float())
        (folder / "2_Dense").mkdir()
        (folder / "2_Dense/config.json").write_text(json.dumps(
            {"in_features": h, "out_features": dense_out, "bias": True,
             "activation_function": "torch.nn.modules.activation.Tanh"}, indent=2) + "\n")
        save_file({"linear.weight": linear.weight.detach().clone(), "linear.bias": linear.bias.detach().clone()},
                  str(folder / "2_Dense/model.safetensors"), metadata={"format": "pt", "note": NOTE})
        modules.append({"idx": 2, "name": "2", "path": "2_Dense", "type": "sentence_transformers.models.Dense"})
    if normalize:
        modules.append({"idx": len(modules), "name": str(len(modules)), "path": f"{len(modules)}_Normalize",
                        "type": "sentence_transformers.models.Normalize"})
        (folder / f"{len(modules) - 1}_Normalize").mkdir()
    (folder / "modules.json").write_text(json.dumps(modules, indent=2) + "\n")
    (folder / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": max_len, "do_lower_case": False}, indent=2) + "\n")
    st_config = {"__version__": {"sentence_transformers": sentence_transformers.__version__, **versions},
                 "prompts": prompts or {}, "default_prompt_name": default_prompt, "similarity_fn_name": "cosine",
                 "model_type": "SentenceTransformer"}
    (folder / "config_sentence_transformers.json").write_text(json.dumps(st_config, indent=2) + "\n")

    st = SentenceTransformer(str(folder), device="cpu", model_kwargs={"dtype": torch.float32, "attn_implementation": "eager"})
    assert all(p.dtype == torch.float32 for p in st.parameters())
    assert st.max_seq_length == max_len, (name, st.max_seq_length)
    pooling_module = st[1]
    description = repr(pooling_module)
    assert mode in description, f"{name}: sentence-transformers read {description}, not {mode}"
    texts = TEXTS + license_sentences(4)
    cases = []

    def encode(label, **kwargs):
        vectors = st.encode(texts, convert_to_numpy=True, **kwargs)
        prompt = kwargs.get("prompt")
        if prompt is None and kwargs.get("prompt_name"):
            prompt = prompts[kwargs["prompt_name"]]
        if prompt is None and "prompt" not in kwargs and default_prompt:
            prompt = prompts[default_prompt]
        cases.append({"call": label, "arguments": kwargs, "effective_prompt": prompt,
                      "input_ids": [tokenizer((prompt or "") + t, truncation=True, max_length=max_len)["input_ids"] for t in texts],
                      "embeddings": [floats(v) for v in vectors]})

    encode("encode(texts)")
    if prompts:
        for prompt_name in prompts:
            encode(f"encode(texts, prompt_name={prompt_name!r})", prompt_name=prompt_name)
    encode(f"encode(texts, prompt={FREE_PROMPT!r})", prompt=FREE_PROMPT)
    if default_prompt:
        encode("encode(texts, prompt='')", prompt="")
    return {"folder": name, "pooling_mode": mode, "config_format": fmt, "include_prompt": include_prompt,
            "dense_out_features": dense_out, "normalize": normalize, "prompts": prompts, "default_prompt_name": default_prompt,
            "max_seq_length": max_len, "sentence_transformers_module": description, "texts": texts, "cases": cases}


# ---------------------------------------------------------------- DistilBERT

def distilbert(tokenizer, versions):
    from sentence_transformers import SentenceTransformer
    torch.manual_seed(1)
    mlm = transformers.DistilBertForMaskedLM(distil_config()).eval()
    with torch.no_grad():
        mlm.vocab_layer_norm.weight.mul_(30.0)  # decisive top-10 from random weights
    f16_round(mlm)
    encoder = {k: v for k, v in mlm.state_dict().items() if k.startswith("distilbert.") and "position_ids" not in k}
    shared = OUT / "shared/distilbert-encoder.safetensors"
    save_file({k: v.half().contiguous() for k, v in encoder.items()}, str(shared), metadata={"format": "pt", "note": NOTE})
    base_state = {k[len("distilbert."):]: v for k, v in encoder.items()}
    result = {}

    # Masked LM (the tied vocab_projector.weight is the word embedding matrix, not stored twice).
    folder = OUT / "distilbert-mlm"
    head = {k: v for k, v in mlm.state_dict().items() if k.startswith("vocab_") and k != "vocab_projector.weight"}
    write_sharded(folder, shared, list(encoder), head)
    save_config(mlm.config, folder, "DistilBertForMaskedLM")
    save_tokenizer(tokenizer, folder)
    mlm = check_same(mlm, folder, transformers.DistilBertForMaskedLM)
    masked = [re.sub(r"\bsoftware\b", "[MASK]", t, count=1) for t in TEXTS if re.search(r"\bsoftware\b", t)]
    masked += ["The [MASK] is provided without warranty.", "Copyright [MASK] [MASK] Free Software Foundation."]
    batch = tokenizer(masked, padding=True, return_tensors="pt")
    with torch.no_grad():
        logits = mlm(**batch).logits
    fills, gaps = [], []
    for i, text in enumerate(masked):
        n = int(batch["attention_mask"][i].sum())
        positions = (batch["input_ids"][i, :n] == tokenizer.mask_token_id).nonzero().flatten().tolist()
        probs = logits[i, positions].softmax(-1)
        top = probs.topk(11)
        top_logits = logits[i, positions].topk(11).values
        gaps.append(float((top_logits[:, :-1] - top_logits[:, 1:]).min()))
        fills.append({"text": text, "input_ids": batch["input_ids"][i, :n].tolist(), "mask_positions": positions,
                      "top_ids": top.indices[:, :10].tolist(), "top_probabilities": [floats(r) for r in top.values[:, :10]]})
    pipe = transformers.pipeline("fill-mask", model=mlm, tokenizer=tokenizer, device="cpu")
    result["fill_mask"] = {"folder": "distilbert-mlm", "architecture": "DistilBertForMaskedLM", "cases": fills,
                           "pipeline_top10": [jsonable(pipe(t, top_k=10)) for t in masked[:2]],
                           "smallest_logit_gap_in_top11": min(gaps)}

    # DistilBertModel: the same folder loaded as the bare encoder; last hidden states.
    base = load(transformers.DistilBertModel, folder)
    texts = TEXTS + license_sentences(4)
    batch = tokenizer(texts, padding=True, return_tensors="pt")
    with torch.no_grad():
        hidden = base(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).last_hidden_state
    lengths = batch["attention_mask"].sum(1).tolist()
    arrays = {f"distilbert.last_hidden_state.{i}": hidden[i, :n].numpy().copy() for i, n in enumerate(lengths)}
    st = SentenceTransformer(str(folder), device="cpu", model_kwargs={"dtype": torch.float32, "attn_implementation": "eager"})
    pooled = st.encode(texts, convert_to_numpy=True)
    result["model"] = {"folder": "distilbert-mlm", "architecture": "DistilBertModel", "texts": texts,
                       "input_ids": [batch["input_ids"][i, :n].tolist() for i, n in enumerate(lengths)],
                       "hidden_states": "reference.safetensors: distilbert.last_hidden_state.<i>",
                       "sentence_transformers_default_module": repr(st[1]),
                       "mean_pooled": [floats(v) for v in pooled]}

    # Sequence classification (pre_classifier -> ReLU -> classifier).
    torch.manual_seed(11)
    seq = transformers.DistilBertForSequenceClassification(distil_config(id2label=SENTIMENT, label2id={v: k for k, v in SENTIMENT.items()})).eval()
    seq.distilbert.load_state_dict(base_state, strict=False)
    with torch.no_grad():
        seq.classifier.weight.mul_(40.0)
        seq.classifier.bias.normal_(0, 0.5)
    f16_round(seq)
    head = {k: v for k, v in seq.state_dict().items() if k.startswith(("pre_classifier.", "classifier."))}
    write_sharded(OUT / "distilbert-classifier", shared, list(encoder), head)
    result["classify"] = distil_sequence(seq, tokenizer)

    # Token classification.
    torch.manual_seed(12)
    tok = transformers.DistilBertForTokenClassification(distil_config(id2label=dict(enumerate(NER_LABELS)),
                                                                      label2id={l: i for i, l in enumerate(NER_LABELS)})).eval()
    tok.distilbert.load_state_dict(base_state, strict=False)
    with torch.no_grad():
        tok.classifier.weight.mul_(15.0)
        tok.classifier.bias.normal_(0, 0.5)
        tok.classifier.bias[0] += 5.0  # most tokens "O", as in real text
    f16_round(tok)
    head = {k: v for k, v in tok.state_dict().items() if k.startswith("classifier.")}
    result["ner"] = token_classification("distilbert-ner", tok, lambda f: write_sharded(f, shared, list(encoder), head), tokenizer, TEXTS)
    return result, arrays


def distil_sequence(model, tokenizer):
    folder = OUT / "distilbert-classifier"
    save_config(model.config, folder, "DistilBertForSequenceClassification")
    save_tokenizer(tokenizer, folder)
    model = check_same(model, folder, transformers.DistilBertForSequenceClassification)
    batch = tokenizer(TEXTS, padding=True, return_tensors="pt")
    with torch.no_grad():
        logits = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits
    pipe = transformers.pipeline("text-classification", model=model, tokenizer=tokenizer, device="cpu")
    ranked = logits.softmax(-1).sort(-1, descending=True).values
    return {"folder": "distilbert-classifier", "architecture": "DistilBertForSequenceClassification", "problem_type": None,
            "id2label": {str(k): v for k, v in model.config.id2label.items()}, "texts": TEXTS,
            "input_ids": [tokenizer(t)["input_ids"] for t in TEXTS], "logits": [floats(r) for r in logits],
            "pipeline": jsonable(pipe(TEXTS, top_k=None)), "smallest_score_gap": float((ranked[:, :-1] - ranked[:, 1:]).min())}


def main():
    import sentence_transformers
    import tokenizers
    torch.set_num_threads(2)
    if OUT.exists():
        shutil.rmtree(OUT)
    (OUT / "shared").mkdir(parents=True)
    versions = {"torch": torch.__version__, "transformers": transformers.__version__,
                "sentence_transformers": sentence_transformers.__version__, "tokenizers": tokenizers.__version__}
    tokenizer = train_tokenizer(OUT / "shared")
    base, encoder_path, encoder_names = bert_encoder(tokenizer)
    base_state = base.state_dict()
    reference = {"note": NOTE, "versions": versions, "sizes": SIZES, "vocab_size": len(tokenizer),
                 "tolerance": "labels, ids and spans identical; scores, probabilities and embeddings within 1e-4"}

    classifier = classifier_head(transformers.BertForSequenceClassification,
                                 bert_config(id2label=SENTIMENT, label2id={v: k for k, v in SENTIMENT.items()}), 2, base_state, 40.0)
    reference["classify"] = sequence_classification("bert-classifier", classifier, encoder_path, encoder_names, tokenizer, TEXTS)
    multi = classifier_head(transformers.BertForSequenceClassification,
                            bert_config(id2label=TOPICS, label2id={v: k for k, v in TOPICS.items()},
                                        problem_type="multi_label_classification"), 3, base_state, 40.0)
    reference["classify_multi_label"] = sequence_classification("bert-classifier-multilabel", multi, encoder_path, encoder_names, tokenizer, TEXTS)
    ce = classifier_head(transformers.BertForSequenceClassification, bert_config(num_labels=1), 4, base_state, 150.0)
    reference["rerank"] = cross_encoder(ce, encoder_path, encoder_names, tokenizer)
    ner = classifier_head(transformers.BertForTokenClassification,
                          bert_config(id2label=dict(enumerate(NER_LABELS)), label2id={l: i for i, l in enumerate(NER_LABELS)}),
                          5, base_state, 15.0, bias=[9.0] + [0.0] * (len(NER_LABELS) - 1))
    ner_head = {k: v for k, v in ner.state_dict().items() if k.startswith("classifier.")}
    reference["ner"] = token_classification("bert-ner", ner, lambda f: write_sharded(f, encoder_path, encoder_names, ner_head), tokenizer, TEXTS)

    reference["sentence_transformers"] = [st_folder(v, encoder_path, tokenizer, base.config, versions) for v in ST_VARIANTS]

    distil, arrays = distilbert(tokenizer, versions)
    reference["distilbert"] = distil
    save_numpy(arrays, str(OUT / "reference.safetensors"), metadata={"note": NOTE})
    (OUT / "reference.json").write_text(json.dumps(reference, indent=1, ensure_ascii=False) + "\n")
    total = sum(p.stat().st_size for p in OUT.rglob("*") if p.is_file() and not p.is_symlink())
    print(f"wrote {OUT} ({total / 1e6:.2f} MB, {NOTE})")


if __name__ == "__main__":
    main()
