#!/usr/bin/env python3
"""SwiftBERT's `bert fill` against transformers on the real-size random-weight MobileBERT
(tools/fixtures/make_random_mobilebert.py, converted to weights/mobilebert-random): one word masked in
each of the first 20 sentences of Debian's MPL-2.0 text that have one; prints how many top-10 id lists are identical
and the largest probability difference. RANDOM weights: near-uniform probabilities, so this
checks exactness at the real size, nothing about suggestions.
    $(tools/venv.sh reference) tools/bench/check_mobilebert_real_size.py
"""
import json, re, subprocess, pathlib, torch, transformers
tok = transformers.AutoTokenizer.from_pretrained('weights/mobilebert-random-hf')
m = transformers.MobileBertForMaskedLM.from_pretrained('weights/mobilebert-random-hf', attn_implementation="eager").eval()
text = re.sub(r"\s+", " ", pathlib.Path("/usr/share/common-licenses/MPL-2.0").read_text())
sents = [s for s in re.split(r"(?<=[.;:])\s+(?=[A-Z])", text) if 40 <= len(s) <= 300][:20]
same, worst, n = 0, 0.0, 0
for s in sents:
    words = [w for w in re.finditer(r"\b[a-z]{3,}\b", s) if len(tok.tokenize(w.group())) == 1]
    if not words: continue
    w = words[len(words) // 2]
    masked = s[:w.start()] + "[MASK]" + s[w.end():]
    enc = tok(masked, return_tensors="pt")
    with torch.no_grad(): lg = m(**enc).logits[0]
    pos = (enc["input_ids"][0] == tok.mask_token_id).nonzero()[0, 0]
    top = lg[pos].softmax(-1).topk(10)
    out = json.loads(subprocess.run([".build/release/bert", "fill", "--model", "weights/mobilebert-random", "--threads", "1", "--json", "--top-k", "10", masked], capture_output=True, text=True, check=True).stdout)
    c = out["masks"][0]["candidates"]
    n += 1
    same += [x["id"] for x in c] == top.indices.tolist()
    worst = max(worst, max(abs(x["probability"] - p) for x, p in zip(c, top.values.tolist())))
print(f"{n} masked sentences (MPL-2.0): top-10 ids identical {same}/{n}, worst probability difference {worst:.2e}, largest top-1 probability {top.values[0].item():.2e}")
