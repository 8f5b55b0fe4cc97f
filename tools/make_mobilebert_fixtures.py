#!/usr/bin/env python3
"""Writes the MobileBERT fixtures: small RANDOM-WEIGHT MobileBertForMaskedLM checkpoints made by
transformers, and what transformers computes on them, module by module.

No real MobileBERT weights can be reached here (no hub access): the weights are random (fixed
seeds), so the outputs mean nothing; they pin down exactness only. Two variants cover both
paths of every config switch:
    mobilebert-nonorm     as google/mobilebert-uncased is built: trigram input, bottlenecks with
                          the key/query bottleneck shared, NoNorm, ReLU, stacked FFNs
    mobilebert-layernorm  LayerNorm, use_bottleneck_attention (one bottleneck for Q, K, V),
                          no trigram (the embedding projection alone), GELU, one FFN
Tiny sizes: 2 layers, true hidden 64, embedding 32, intra bottleneck 32, 4 heads, 128 positions,
and the ~2,500-entry WordPiece vocabulary of the head fixtures (heads/shared/tokenizer, trained
on Debian's license texts). NoNorm and LayerNorm weights and biases are random too (transformers
initialises them to 1 and 0, which would leave them untested), and the masked-LM transform's
LayerNorm weight is scaled up so the top-10 fills are decisive (the smallest gap between
neighbouring top-11 logits is written to the metadata).

Weights are stored as float16 (references computed in float32 from exactly those values).
Sentences are run one at a time, unpadded: with padding, MobileBERT's trigram input reads the
[PAD] row after the last token, which a packed engine never does.

Output: Tests/SwiftBERTTests/Fixtures/mobilebert/<variant>/ (a Hugging Face folder),
        <variant>.json (ids, fill-mask top-10) and <variant>.safetensors (float32 tensors:
        per sentence the embeddings, each layer's bottlenecks, attention, FFN outputs, output).
    /work/refenv/bin/python tools/make_mobilebert_fixtures.py
"""
import json
import pathlib
import re
import shutil

import torch
import transformers
from safetensors.torch import save_file

ROOT = pathlib.Path(__file__).resolve().parent.parent
OUT = ROOT / "Tests/SwiftBERTTests/Fixtures/mobilebert"
TOKENIZER = ROOT / "Tests/SwiftBERTTests/Fixtures/heads/shared/tokenizer"
NOTE = "RANDOM weights (fixed seeds), for exactness tests only; outputs are meaningless"
LAYER_CHECK_SENTENCES = 3

VARIANTS = {
    "mobilebert-nonorm": dict(normalization_type="no_norm", hidden_act="relu", trigram_input=True,
                              use_bottleneck=True, key_query_shared_bottleneck=True,
                              use_bottleneck_attention=False, num_feedforward_networks=2),
    "mobilebert-layernorm": dict(normalization_type="layer_norm", hidden_act="gelu", trigram_input=False,
                                 use_bottleneck=True, key_query_shared_bottleneck=False,
                                 use_bottleneck_attention=True, num_feedforward_networks=1),
}


def sentences(tokenizer, count=12):
    """Sentences of varied length from Debian's license texts, chosen deterministically."""
    found = set()
    for name in ["Apache-2.0", "GPL-3", "MPL-2.0", "BSD", "Artistic"]:
        text = re.sub(r"\s+", " ", (pathlib.Path("/usr/share/common-licenses") / name).read_text(errors="replace"))
        for s in re.split(r"(?<=[.;:])\s+(?=[A-Z])", text):
            if 20 <= len(s) <= 400 and len(tokenizer(s)["input_ids"]) <= 120:
                found.add(s.strip())
    ordered = sorted(found, key=lambda s: (len(s), s))
    step = len(ordered) / count
    return [ordered[int(i * step + step / 2)] for i in range(count)]


def masked(sentence, tokenizer, n):
    """One real word (two in every third sentence) replaced by [MASK]."""
    words = [m for m in re.finditer(r"\b[A-Za-z]{3,}\b", sentence) if len(tokenizer.tokenize(m.group())) == 1]
    if not words:
        return None
    picks = [words[len(words) // 2]] + ([words[len(words) // 4]] if n % 3 == 0 and len(words) > 4 else [])
    for m in sorted(picks, key=lambda m: -m.start()):
        sentence = sentence[:m.start()] + "[MASK]" + sentence[m.end():]
    return sentence


def build(name, switches, vocab_size, seed):
    config = transformers.MobileBertConfig(
        vocab_size=vocab_size, hidden_size=64, embedding_size=32, intra_bottleneck_size=32, num_hidden_layers=2,
        num_attention_heads=4, intermediate_size=64, max_position_embeddings=128, type_vocab_size=2,
        initializer_range=0.1, **switches)
    config.architectures = ["MobileBertForMaskedLM"]
    torch.manual_seed(seed)
    model = transformers.MobileBertForMaskedLM(config).eval()
    with torch.no_grad():
        for module_name, p in model.named_parameters():
            if "LayerNorm" in module_name:  # NoNorm and LayerNorm: random around (1, 0)
                p.copy_(1 + 0.2 * torch.randn_like(p) if module_name.endswith("weight") else 0.1 * torch.randn_like(p))
        model.cls.predictions.bias.copy_(0.1 * torch.randn_like(model.cls.predictions.bias))
        model.cls.predictions.transform.LayerNorm.weight.mul_(8)
        for p in model.parameters():
            p.copy_(p.half().float())
    return model


def capture(model, ids):
    """Every module output the tests compare, for one unpadded sentence."""
    seen = {}
    hooks = [model.mobilebert.embeddings.register_forward_hook(lambda m, a, o: seen.__setitem__("embeddings", o))]
    for l, layer in enumerate(model.mobilebert.encoder.layer):
        def keep(key):
            return lambda m, a, o: seen.__setitem__(key, o[0] if isinstance(o, tuple) else o)
        hooks.append(layer.register_forward_hook(keep(f"layer.{l}")))
        hooks.append(layer.bottleneck.input.register_forward_hook(keep(f"layer.{l}.bottleneck.input")))
        if hasattr(layer.bottleneck, "attention"):
            hooks.append(layer.bottleneck.attention.register_forward_hook(keep(f"layer.{l}.bottleneck.attention")))
        hooks.append(layer.attention.register_forward_hook(keep(f"layer.{l}.attention")))
        for j, ffn in enumerate(getattr(layer, "ffn", [])):
            hooks.append(ffn.register_forward_hook(keep(f"layer.{l}.ffn.{j}")))
    with torch.no_grad():
        out = model.mobilebert(torch.tensor([ids]))
    for h in hooks:
        h.remove()
    return {k: v[0].clone() for k, v in seen.items()}, out.last_hidden_state[0].clone()


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    tokenizer = transformers.BertTokenizer.from_pretrained(str(TOKENIZER))
    texts = sentences(tokenizer)
    for seed, (name, switches) in enumerate(VARIANTS.items()):
        model = build(name, switches, len(tokenizer), seed)
        folder = OUT / name
        if folder.exists():
            shutil.rmtree(folder)
        model.save_pretrained(str(folder))
        # float16 on disk; the model already holds exactly these values.
        from safetensors.torch import load_file
        state = load_file(str(folder / "model.safetensors"))
        save_file({k: v.half().contiguous() for k, v in state.items()}, str(folder / "model.safetensors"),
                  metadata={"format": "pt", "note": NOTE})
        for path in TOKENIZER.iterdir():
            shutil.copy(path, folder / path.name)
        reloaded = transformers.MobileBertForMaskedLM.from_pretrained(str(folder), dtype=torch.float32).eval()
        for key, value in reloaded.state_dict().items():
            assert torch.equal(value, model.state_dict()[key]), f"{name}: {key} differs after reload"
        model = reloaded

        tensors, ids = {}, []
        for i, text in enumerate(texts):
            encoded = tokenizer(text)["input_ids"]
            ids.append(encoded)
            captured, last = capture(model, encoded)
            tensors[f"last_hidden_state.{i}"] = last
            if i < LAYER_CHECK_SENTENCES:
                for key, value in captured.items():
                    tensors[f"{key}.{i}"] = value
        fills, gaps = [], []
        for n, text in enumerate(texts):
            text = masked(text, tokenizer, n)
            if text is None:
                continue
            encoded = tokenizer(text)["input_ids"]
            positions = [p for p, t in enumerate(encoded) if t == tokenizer.mask_token_id]
            with torch.no_grad():
                logits = model(torch.tensor([encoded])).logits[0, positions]
            probabilities = logits.softmax(-1)
            top = probabilities.topk(11)
            ranked = logits.topk(11).values
            gaps.append(float((ranked[:, :-1] - ranked[:, 1:]).min()))
            fills.append({"text": text, "input_ids": encoded, "mask_positions": positions,
                          "top_ids": top.indices[:, :10].tolist(), "top_probabilities": top.values[:, :10].tolist()})
        save_file({k: v.contiguous() for k, v in tensors.items()}, str(OUT / f"{name}.safetensors"),
                  metadata={"note": NOTE})
        meta = {"model": name, "note": NOTE, "switches": switches, "sentences": texts, "input_ids": ids,
                "layer_check_sentences": LAYER_CHECK_SENTENCES, "fill_mask": fills,
                "smallest_top11_logit_gap": min(gaps),
                "versions": {"torch": torch.__version__, "transformers": transformers.__version__}}
        (OUT / f"{name}.json").write_text(json.dumps(meta, indent=1, ensure_ascii=False) + "\n")
        scale = max(float(t.abs().max()) for t in tensors.values())
        print(f"{name}: {len(tensors)} tensors, largest |value| {scale:.3g}, "
              f"smallest top-11 logit gap {min(gaps):.3g}, top-1 {[f['top_probabilities'][0][0] for f in fills][:4]}")


if __name__ == "__main__":
    main()
