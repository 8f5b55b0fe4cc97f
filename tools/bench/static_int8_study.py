#!/usr/bin/env python3
"""Why int8-static smooths before it quantises: a PyTorch simulation (fake quantisation) of
SwiftBERT's INT8 schemes on all-MiniLM-L6-v2, against its FP32 embeddings (mean-pooled,
normalised) on Tests/SwiftBERTTests/Fixtures/sentences.txt, calibrated on calibration.txt.

    tools/.venv/bin/python tools/bench/static_int8_study.py     # about 2 minutes on 2 cores

Weights are INT8 per output channel in every row, as `bert quantize` makes them. Activations
into every encoder Linear layer:
- dynamic: per token, symmetric, max|x| / 127 at run time (SwiftBERT's `int8`);
- static symmetric: one scale per layer, max|x| over the calibration text;
- static asymmetric: a step and a zero point over the calibrated [min, max];
- SmoothQuant (alpha): x / s and W · s per input channel, s = max|x_c|^a / max|W_c|^(1-a), then
  static asymmetric (SwiftBERT's `int8-static` with alpha 0.75).
Needs the reference group of tools/.venv (`tools/venv.sh reference`) and weights/.cache/hf from
`make setup`."""
import pathlib

import torch
from transformers import AutoModel, AutoTokenizer

ROOT = pathlib.Path(__file__).resolve().parents[2]
MODEL = ROOT / "weights/.cache/hf/all-MiniLM-L6-v2"
FIXTURES = ROOT / "Tests/SwiftBERTTests/Fixtures"


def main():
    torch.manual_seed(0)
    test = (FIXTURES / "sentences.txt").read_text().splitlines()
    calibration = (FIXTURES / "calibration.txt").read_text().splitlines()
    tokenizer = AutoTokenizer.from_pretrained(MODEL)
    model = AutoModel.from_pretrained(MODEL).eval()
    linears = {n: m for n, m in model.named_modules() if isinstance(m, torch.nn.Linear) and "encoder" in n}
    original = {n: m.weight.data.clone() for n, m in linears.items()}
    state = {"transform": None}  # name, x -> the Linear's input as the scheme quantises it

    for name, module in linears.items():
        module.register_forward_pre_hook(lambda mod, args, name=name: (
            None if state["transform"] is None else (state["transform"](name, args[0]),)))

    def embed(sentences):
        vectors = []
        with torch.no_grad():
            for s in sentences:
                hidden = model(**tokenizer([s], return_tensors="pt", truncation=True, max_length=256)).last_hidden_state[0]
                v = hidden.mean(0)
                vectors.append(v / v.norm())
        return torch.stack(vectors)

    def set_weights(smoothing=None):
        for n, m in linears.items():
            w = original[n] * (smoothing[n] if smoothing else 1)
            scale = w.abs().amax(1, keepdim=True) / 127
            m.weight.data = torch.round(w / scale).clamp(-127, 127) * scale

    reference = embed(test)
    low, high = {}, {}  # per layer, per input channel

    def record(name, x):
        flat = x.reshape(-1, x.shape[-1])
        low[name] = torch.minimum(low.get(name, torch.zeros(x.shape[-1])), flat.amin(0))
        high[name] = torch.maximum(high.get(name, torch.zeros(x.shape[-1])), flat.amax(0))
        return x
    state["transform"] = record
    embed(calibration)

    def report(label):
        cosines = (embed(test) * reference).sum(1)
        print(f"{label:42s} mean {cosines.mean():.5f}  min {cosines.min():.5f}")

    def asymmetric(x, lo, hi):
        step = (hi - lo) / 255
        zero = torch.round(-lo / step)
        return (torch.round(x / step) + zero).clamp(0, 255).sub(zero) * step

    set_weights()
    state["transform"] = lambda n, x: torch.round(x / (s := x.abs().amax(-1, keepdim=True).clamp_min(1e-30) / 127)).clamp(-127, 127) * s
    report("dynamic per token (int8)")
    state["transform"] = lambda n, x: torch.round(x / (s := torch.maximum(-low[n], high[n]).max() / 127)).clamp(-127, 127) * s
    report("static symmetric, calibrated max")
    state["transform"] = lambda n, x: asymmetric(x, low[n].min(), high[n].max())
    report("static asymmetric, calibrated range")
    for alpha in (0.5, 0.75):
        smoothing = {}
        for n in linears:
            weight_max = original[n].abs().amax(0).clamp_min(1e-5)
            smoothing[n] = torch.maximum(-low[n], high[n]).clamp_min(1e-5) ** alpha / weight_max ** (1 - alpha)
        set_weights(smoothing)
        state["transform"] = lambda n, x: asymmetric(x / smoothing[n], (low[n] / smoothing[n]).min(),
                                                     (high[n] / smoothing[n]).max())
        report(f"SmoothQuant alpha {alpha}, static asymmetric")


if __name__ == "__main__":
    main()
