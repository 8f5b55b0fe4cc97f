#!/usr/bin/env python3
"""Writes the XLM-RoBERTa and RoBERTa fixtures (issue 17): small RANDOM-WEIGHT checkpoints made
by transformers, with the multilingual tokenizers trained here
(tools/make_multilingual_tokenizer_fixtures.py), and what transformers and sentence-transformers
output for them.

The weights are random (fixed seeds): the outputs mean nothing, they only pin down exactness.
Each model has 2 layers, hidden 128, 4 heads, intermediate 512, 130 positions (128 tokens after
RoBERTa's padding_idx + 1 offset), one token type. Weights are stored as float16 (the references
are computed in float32 from exactly those values) to keep the files small.

Output: Tests/SwiftBERTTests/Fixtures/encoders/
    xlmr-mlm/      XLMRobertaForMaskedLM saved WITHOUT the `roberta.` prefix, as BGE-M3 and other
                   XLMRobertaModel checkpoints are (embeddings.*, encoder.*, pooler.*), in two
                   shards: the shared encoder (a symlink) and the lm_head; tokenizer.json is a
                   symlink to the XLM-R Unigram tokenizer fixture.
    xlmr-st/       a sentence-transformers folder in BGE-M3's layout (XLMRobertaModel, CLS pooling,
                   Normalize), on the same encoder.
    xlmr-reranker/ XLMRobertaForSequenceClassification with one label (bge-reranker's layout), on
                   the same encoder, scored by sentence-transformers' CrossEncoder.
    roberta-mlm/   RobertaForMaskedLM as save_pretrained writes it (roberta.* and lm_head.*), with
                   the byte-level BPE tokenizer fixture.
    shared/xlmr-encoder.safetensors
    reference.json         ids, fill-mask top-10 ids and probabilities, embeddings, versions
    reference.safetensors  float32 hidden states: <model>.hidden_states.<layer>.<text> (layer 0 is
                           the embeddings' output, 2 the last hidden state)

The masked-LM head's LayerNorm weight is scaled up (x30) so that the random head's top-10 is
decisive: the smallest logit gap inside each top-11 is written to reference.json.

    /work/refenv/bin/python tools/make_encoder_fixtures.py
"""
import json
import pathlib
import shutil

import numpy as np
import torch
import transformers
from safetensors.numpy import save_file as save_numpy
from safetensors.torch import save_file

from fixture_checkpoints import NOTE, f16_round, floats, link, load, write_sharded

ROOT = pathlib.Path(__file__).resolve().parent.parent
OUT = ROOT / "Tests/SwiftBERTTests/Fixtures/encoders"
TOKENIZERS = ROOT / "Tests/SwiftBERTTests/Fixtures/multilingual"
SIZES = dict(hidden_size=128, num_hidden_layers=2, num_attention_heads=4, intermediate_size=512,
             max_position_embeddings=130, type_vocab_size=1, pad_token_id=1, bos_token_id=0, eos_token_id=2,
             layer_norm_eps=1e-5)
HEAD_LAYER_NORM_SCALE = 30.0

TEXTS = [
    "The quick brown fox jumps over the lazy dog.",
    "Le fichier n'a pas pu être ouvert : permission refusée.",
    "Die Datei konnte nicht gespeichert werden.",
    "Не удалось открыть файл «%s».",
    "ファイルを開けませんでした。",
    "无法打开文件：权限不足",
    "Ο φάκελος δεν βρέθηκε.",
    "ไม่สามารถเปิดไฟล์ได้",
    "<s>Special tokens</s> written in the text, and a <mask> too",
    "Hello!",
]
MASKED = [
    "The quick brown <mask> jumps over the lazy dog.",
    "Le fichier n'a pas pu être <mask> : permission refusée.",
    "Die <mask> konnte nicht gespeichert werden.",
    "Не удалось <mask> файл.",
    "<mask> を開けませんでした。",
    "Two masks: <mask> and<mask>.",
]
# Long enough to be cut at the sentence-transformers folder's max_seq_length.
LONG = " ".join(TEXTS[:8]) * 3


def tokenizer_for(kind):
    path = TOKENIZERS / kind / "tokenizer.json"
    cls = transformers.XLMRobertaTokenizer if kind == "xlmr-unigram" else transformers.RobertaTokenizer
    tokenizer = cls(tokenizer_file=str(path))
    tokenizer.model_max_length = SIZES["max_position_embeddings"] - 2
    assert tokenizer.pad_token_id == SIZES["pad_token_id"] and tokenizer.mask_token == "<mask>"
    return tokenizer, path


def save_folder_files(folder, tokenizer, tokenizer_json, config, architecture):
    folder.mkdir(parents=True, exist_ok=True)
    if (folder / "tokenizer.json").is_symlink():
        (folder / "tokenizer.json").unlink()  # never write through the link into the tokenizer fixture
    config.architectures = [architecture]
    config.save_pretrained(str(folder))
    tokenizer.save_pretrained(str(folder))
    # The tokenizer.json written by transformers is the fixture's own; link it instead of a copy.
    # (the same model; transformers prints the float32 scores with fewer digits)
    saved, own = (json.loads(p.read_text())["model"] for p in (folder / "tokenizer.json", tokenizer_json))
    assert json.dumps(saved, sort_keys=True) == json.dumps(own, sort_keys=True) or (
        saved["type"] == "Unigram" and [t for t, _ in saved["vocab"]] == [t for t, _ in own["vocab"]]
        and np.array_equal(np.float32([s for _, s in saved["vocab"]]), np.float32([s for _, s in own["vocab"]])))
    link(tokenizer_json, folder / "tokenizer.json")


def check_same(expected, loaded, what):
    mine = expected.state_dict()
    for name, value in loaded.state_dict().items():
        assert torch.equal(value, mine[name]), f"{what}: {name} differs after reload"


def make_mlm(cls, config, seed):
    torch.manual_seed(seed)
    model = cls(config).eval()
    with torch.no_grad():
        model.lm_head.layer_norm.weight.mul_(HEAD_LAYER_NORM_SCALE)
        model.lm_head.bias.normal_(0, 0.5)
    f16_round(model)
    return model


def hidden_states(name, model, tokenizer, texts, arrays):
    """Every layer's output for each text alone (no padding), plus one sequence holding <pad>
    ids inside it (attended to, as transformers does with an all-ones mask): its positions skip."""
    ids = [tokenizer(t)["input_ids"] for t in texts]
    pad = tokenizer.pad_token_id
    ids.append(ids[0][:3] + [pad, pad] + ids[0][3:])
    for i, sequence in enumerate(ids):
        with torch.no_grad():
            out = model(input_ids=torch.tensor([sequence]), output_hidden_states=True)
        for layer, h in enumerate(out.hidden_states):
            arrays[f"{name}.hidden_states.{layer}.{i}"] = h[0].numpy().copy()
    return ids


def fill_mask(model, tokenizer):
    batch = tokenizer(MASKED, padding=True, return_tensors="pt")
    with torch.no_grad():
        logits = model(**batch).logits
    fills, gaps = [], []
    for i, text in enumerate(MASKED):
        n = int(batch["attention_mask"][i].sum())
        positions = (batch["input_ids"][i, :n] == tokenizer.mask_token_id).nonzero().flatten().tolist()
        assert positions, text
        rows = logits[i, positions]
        top = rows.softmax(-1).topk(10)
        top_logits = rows.topk(11).values
        gaps.append(float((top_logits[:, :-1] - top_logits[:, 1:]).min()))
        fills.append({"text": text, "input_ids": batch["input_ids"][i, :n].tolist(), "mask_positions": positions,
                      "top_ids": top.indices.tolist(), "top_probabilities": [floats(r) for r in top.values]})
    pipe = transformers.pipeline("fill-mask", model=model, tokenizer=tokenizer, device="cpu")
    pipeline = [[{"token": int(c["token"]), "token_str": c["token_str"], "score": float(c["score"])} for c in pipe(t, top_k=10)]
                for t in MASKED[:1]]
    return {"cases": fills, "pipeline_top10": pipeline, "smallest_logit_gap_in_top11": min(gaps)}


def xlmr(arrays, versions):
    tokenizer, tokenizer_json = tokenizer_for("xlmr-unigram")
    config = transformers.XLMRobertaConfig(vocab_size=len(tokenizer), **SIZES)
    mlm = make_mlm(transformers.XLMRobertaForMaskedLM, config, seed=17)
    # The encoder as XLMRobertaModel saves it (with its pooler, random too), without the prefix.
    torch.manual_seed(18)
    base = transformers.XLMRobertaModel(config).eval()
    base.load_state_dict(mlm.roberta.state_dict(), strict=False)
    f16_round(base)
    encoder = {k: v for k, v in base.state_dict().items() if "position_ids" not in k and "token_type_ids" not in k}
    shared = OUT / "shared/xlmr-encoder.safetensors"
    save_file({k: v.half().contiguous() for k, v in encoder.items()}, str(shared), metadata={"format": "pt", "note": NOTE})

    folder = OUT / "xlmr-mlm"
    save_folder_files(folder, tokenizer, tokenizer_json, mlm.config, "XLMRobertaForMaskedLM")
    head = {k: v for k, v in mlm.state_dict().items() if k.startswith("lm_head.") and k not in ("lm_head.decoder.weight", "lm_head.decoder.bias")}
    write_sharded(folder, shared, list(encoder), head)
    loaded = load(transformers.XLMRobertaForMaskedLM, folder)
    check_same(mlm, loaded, "xlmr-mlm")
    result = {"folder": "xlmr-mlm", "architecture": "XLMRobertaForMaskedLM", "texts": TEXTS,
              "input_ids": hidden_states("xlmr", loaded.roberta, tokenizer, TEXTS, arrays),
              "fill_mask": fill_mask(loaded, tokenizer)}

    # BGE-M3's layout: XLMRobertaModel, then CLS pooling and Normalize (its dense output).
    result["sentence_transformers"] = st_folder(shared, base, tokenizer, tokenizer_json, versions)
    result["rerank"] = reranker(shared, encoder, mlm.roberta.state_dict(), tokenizer, tokenizer_json)
    return result


QUERIES = ["fichier introuvable", "the file could not be saved"]
DOCUMENTS = TEXTS[:8]


def reranker(shared, encoder, base_state, tokenizer, tokenizer_json):
    """bge-reranker's layout: XLMRobertaForSequenceClassification with one label (classifier.dense
    + tanh on <s>, then classifier.out_proj), scored by sentence-transformers' CrossEncoder."""
    from sentence_transformers import CrossEncoder
    config = transformers.XLMRobertaConfig(vocab_size=len(tokenizer), num_labels=1, **SIZES)
    torch.manual_seed(21)
    model = transformers.XLMRobertaForSequenceClassification(config).eval()
    model.roberta.load_state_dict(base_state, strict=False)
    with torch.no_grad():
        model.classifier.out_proj.weight.mul_(40.0)  # spread the random scores apart
        model.classifier.out_proj.bias.normal_(0, 0.5)
    f16_round(model)
    folder = OUT / "xlmr-reranker"
    save_folder_files(folder, tokenizer, tokenizer_json, model.config, "XLMRobertaForSequenceClassification")
    head = {k: v for k, v in model.state_dict().items() if k.startswith("classifier.")}
    write_sharded(folder, shared, list(encoder), head)
    check_same(model, load(transformers.XLMRobertaForSequenceClassification, folder), "xlmr-reranker")
    ce = CrossEncoder(str(folder), device="cpu", model_kwargs={"dtype": torch.float32, "attn_implementation": "eager"})
    assert all(p.dtype == torch.float32 for p in ce.model.parameters())
    cases = []
    for query in QUERIES:
        scores = ce.predict([[query, d] for d in DOCUMENTS], convert_to_numpy=True)
        ranked = ce.rank(query, DOCUMENTS)
        gaps = np.diff(np.sort(np.asarray(scores)))
        cases.append({"query": query, "documents": DOCUMENTS, "scores": floats(scores),
                      "rank": [int(r["corpus_id"]) for r in ranked],
                      "input_ids": [tokenizer(query, d)["input_ids"] for d in DOCUMENTS],
                      "smallest_score_gap": float(gaps.min())})
    return {"folder": "xlmr-reranker", "architecture": "XLMRobertaForSequenceClassification", "activation": "sigmoid",
            "cases": cases}


def st_folder(shared, base, tokenizer, tokenizer_json, versions):
    import sentence_transformers
    from sentence_transformers import SentenceTransformer
    folder = OUT / "xlmr-st"
    save_folder_files(folder, tokenizer, tokenizer_json, base.config, "XLMRobertaModel")
    link(shared, folder / "model.safetensors")
    modules = [{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
               {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
               {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}]
    (folder / "1_Pooling").mkdir(exist_ok=True)
    (folder / "2_Normalize").mkdir(exist_ok=True)
    pooling = {"word_embedding_dimension": SIZES["hidden_size"], "pooling_mode_cls_token": True,
               "pooling_mode_mean_tokens": False, "pooling_mode_max_tokens": False,
               "pooling_mode_mean_sqrt_len_tokens": False, "pooling_mode_weightedmean_tokens": False,
               "pooling_mode_lasttoken": False, "include_prompt": True}
    (folder / "1_Pooling/config.json").write_text(json.dumps(pooling, indent=2) + "\n")
    (folder / "modules.json").write_text(json.dumps(modules, indent=2) + "\n")
    max_len = SIZES["max_position_embeddings"] - 2
    (folder / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": max_len, "do_lower_case": False}, indent=2) + "\n")
    (folder / "config_sentence_transformers.json").write_text(json.dumps(
        {"__version__": {"sentence_transformers": sentence_transformers.__version__, **versions},
         "prompts": {}, "default_prompt_name": None, "similarity_fn_name": "cosine"}, indent=2) + "\n")
    st = SentenceTransformer(str(folder), device="cpu", model_kwargs={"dtype": torch.float32, "attn_implementation": "eager"})
    assert all(p.dtype == torch.float32 for p in st.parameters())
    assert st.max_seq_length == max_len
    check_same(base, st[0].auto_model, "xlmr-st")
    texts = TEXTS + [LONG]
    vectors = st.encode(texts, convert_to_numpy=True)
    ids = [tokenizer(t, truncation=True, max_length=max_len)["input_ids"] for t in texts]
    assert len(ids[-1]) == max_len, "the long text is cut"
    return {"folder": "xlmr-st", "modules": repr(st), "texts": texts, "input_ids": ids, "max_seq_length": max_len,
            "embeddings": [floats(v) for v in vectors]}


def roberta(arrays):
    tokenizer, tokenizer_json = tokenizer_for("roberta-bpe")
    config = transformers.RobertaConfig(vocab_size=len(tokenizer), **SIZES)
    mlm = make_mlm(transformers.RobertaForMaskedLM, config, seed=19)
    folder = OUT / "roberta-mlm"
    mlm.save_pretrained(str(folder))  # float32 first, to see the names transformers writes
    names = json.loads((folder / "model.safetensors").read_bytes()[8:8 + int.from_bytes((folder / "model.safetensors").read_bytes()[:8], "little")])
    names = sorted(k for k in names if k != "__metadata__")
    assert all(n.startswith(("roberta.", "lm_head.")) for n in names), names
    state = mlm.state_dict()
    save_file({k: state[k].half().contiguous() for k in names}, str(folder / "model.safetensors"),
              metadata={"format": "pt", "note": NOTE})
    save_folder_files(folder, tokenizer, tokenizer_json, mlm.config, "RobertaForMaskedLM")
    loaded = load(transformers.RobertaForMaskedLM, folder)
    check_same(mlm, loaded, "roberta-mlm")
    return {"folder": "roberta-mlm", "architecture": "RobertaForMaskedLM", "saved_tensor_names": names, "texts": TEXTS,
            "input_ids": hidden_states("roberta", loaded.roberta, tokenizer, TEXTS, arrays),
            "pair": {"texts": TEXTS[:2], "input_ids": tokenizer(TEXTS[0], TEXTS[1])["input_ids"]},
            "fill_mask": fill_mask(loaded, tokenizer)}


def main():
    import sentence_transformers
    import tokenizers
    torch.set_num_threads(2)
    if OUT.exists():
        shutil.rmtree(OUT)
    (OUT / "shared").mkdir(parents=True)
    versions = {"transformers": transformers.__version__, "pytorch": torch.__version__}
    arrays = {}
    reference = {"note": NOTE, "sizes": SIZES, "head_layer_norm_scale": HEAD_LAYER_NORM_SCALE,
                 "versions": {**versions, "tokenizers": tokenizers.__version__,
                              "sentence_transformers": sentence_transformers.__version__},
                 "xlmr": xlmr(arrays, versions), "roberta": roberta(arrays)}
    save_numpy(arrays, str(OUT / "reference.safetensors"), metadata={"note": NOTE})
    (OUT / "reference.json").write_text(json.dumps(reference, indent=1, ensure_ascii=False) + "\n")
    total = sum(p.stat().st_size for p in OUT.rglob("*") if p.is_file() and not p.is_symlink())
    print(f"wrote {OUT} ({total / 1e6:.2f} MB)")


if __name__ == "__main__":
    main()
