"""What the fixture scripts of random-weight transformers checkpoints share
(make_encoder_fixtures.py, make_head_fixtures.py): float16 rounding, sharded folders whose first
shard links to a shared encoder, reloading as a user does. Needs the reference venv (torch, safetensors).
"""
import json
import os

import numpy as np
import torch
from safetensors.torch import save_file

NOTE = "RANDOM weights (fixed seeds), for exactness tests only; outputs are meaningless"


def f16_round(model):
    """Makes every parameter exactly what the float16 file will hold."""
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(p.half().float())


def link(target, at):
    """A relative symlink at `at` to `target`, replacing what was there."""
    if at.is_symlink() or at.exists():
        at.unlink()
    os.symlink(os.path.relpath(target, at.parent), at)


def write_sharded(folder, shared_file, shared_names, head_tensors):
    """A transformers sharded checkpoint: shard 1 is a symlink to the shared encoder."""
    folder.mkdir(parents=True, exist_ok=True)
    first, second = "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"
    link(shared_file, folder / first)
    save_file({k: v.half().contiguous() for k, v in head_tensors.items()}, str(folder / second),
              metadata={"format": "pt", "note": NOTE})
    weight_map = {name: first for name in shared_names}
    weight_map.update({name: second for name in head_tensors})
    total = os.path.getsize(shared_file) + os.path.getsize(folder / second)
    index = {"metadata": {"total_size": total, "note": NOTE}, "weight_map": dict(sorted(weight_map.items()))}
    (folder / "model.safetensors.index.json").write_text(json.dumps(index, indent=1) + "\n")


def load(cls, folder):
    """The folder as a user loads it, in float32 with eager attention."""
    model = cls.from_pretrained(str(folder), dtype=torch.float32, attn_implementation="eager").eval()
    assert all(p.dtype == torch.float32 for p in model.parameters())
    return model


def floats(x):
    return [float(v) for v in np.asarray(x, dtype=np.float64).ravel()]
