#!/usr/bin/env python3
"""Makes a MobileBertForMaskedLM of google/mobilebert-uncased's size with RANDOM weights, for
timing only, and its ONNX exports for the ONNX Runtime comparison (tools/bench_mobilebert.py).

No real MobileBERT weights can be reached here (no hub access); speed depends only on the
shapes. Its outputs are meaningless: everything that reports a figure measured on it names it
'mobilebert-random'. Sizes are transformers' MobileBertConfig defaults, which are
google/mobilebert-uncased's: 24 layers, hidden 512, intra bottleneck 128, embedding 128 with
trigram input, 4 heads, 4 stacked FFNs of 512, NoNorm, ReLU, vocabulary 30,522 (borrowed with
its tokenizer from splade-tiny, the same uncased BERT WordPiece vocabulary).

    /work/refenv/bin/python tools/make_random_mobilebert.py
    .build/release/bert convert weights/mobilebert-random-hf weights/mobilebert-random
    .build/release/bert quantize weights/mobilebert-random

Writes (all gitignored build outputs):
    weights/mobilebert-random-hf/            the Hugging Face folder (float32 safetensors)
    weights/mobilebert-random-onnx/keystroke.onnx       encoder + masked-LM head at the
        [MASK] (the token before the last, [SEP]): what one keystroke runs, as the suggester does
    weights/mobilebert-random-onnx/keystroke.int8.onnx  the same, onnxruntime quantize_dynamic
"""
import pathlib
import shutil

import torch
import transformers

ROOT = pathlib.Path(__file__).resolve().parent.parent
HF = ROOT / "weights/mobilebert-random-hf"
ONNX = ROOT / "weights/mobilebert-random-onnx"
VOCAB_FROM = ROOT / "weights/.cache/hf/splade-tiny"
NOTE = "RANDOM weights (seed 0), for timing only; outputs are meaningless"


class Keystroke(torch.nn.Module):
    """Logits at the [MASK] of `[CLS] context [MASK] [SEP]`: the encoder, then the head on one row."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids):
        hidden = self.model.mobilebert(input_ids=input_ids).last_hidden_state
        return self.model.cls(hidden[:, -2, :])


def main():
    config = transformers.MobileBertConfig()  # google/mobilebert-uncased's sizes
    config.architectures = ["MobileBertForMaskedLM"]
    torch.manual_seed(0)
    model = transformers.MobileBertForMaskedLM(config).eval()
    if HF.exists():
        shutil.rmtree(HF)
    model.save_pretrained(str(HF))
    for name in ["tokenizer.json", "vocab.txt", "tokenizer_config.json"]:
        if (VOCAB_FROM / name).exists():
            shutil.copy(VOCAB_FROM / name, HF / name)
    (HF / "README.md").write_text(f"# mobilebert-random\n\n{NOTE}. Made by tools/make_random_mobilebert.py.\n")
    print(f"{HF}: {sum(p.numel() for p in model.parameters()) / 1e6:.1f} M parameters")

    ONNX.mkdir(parents=True, exist_ok=True)
    raw = ONNX / "keystroke.onnx"
    ids = torch.randint(1000, 2000, (1, 16))
    torch.onnx.export(Keystroke(model), (ids,), str(raw), input_names=["input_ids"], output_names=["logits"],
                      dynamic_axes={"input_ids": {1: "sequence"}}, opset_version=17, dynamo=False)
    from onnxruntime.quantization import QuantType, quantize_dynamic
    quantize_dynamic(str(raw), str(ONNX / "keystroke.int8.onnx"), weight_type=QuantType.QInt8)
    import onnxruntime
    session = onnxruntime.InferenceSession(str(raw), providers=["CPUExecutionProvider"])
    saved = transformers.MobileBertForMaskedLM.from_pretrained(str(HF), attn_implementation="eager").eval()
    with torch.no_grad():
        expected = Keystroke(saved)(ids).numpy()
    got = session.run(None, {"input_ids": ids.numpy()})[0]
    print(f"{raw}: max |ORT - PyTorch (the saved folder)| {abs(got - expected).max():.2e}")


if __name__ == "__main__":
    main()
