#!/usr/bin/python3
"""Opens a GGUF file ztvm wrote with llama.cpp's gguf-py and compares every tensor with a source.

  /usr/bin/python3 tools/check_gguf_with_gguf_py.py --gguf-py .cache/llamacpp/src/gguf-py OUT.gguf SOURCE.gguf

Each tensor of OUT is read by gguf-py's GGUFReader and dequantized by gguf.quants.dequantize; the
tensor of the same name in SOURCE (a GGUF file of the same model: ztvm convert's input) is read the
same way. Prints, per tensor, its type and the NMSE (sum (out - src)^2 / sum src^2) and max abs
difference against the source, then general.file_type. Exit 1 when a tensor is missing, has another
shape, or exceeds --max-nmse (default: no limit).
"""
import argparse
import os
import sys

import numpy as np


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gguf-py", required=True, help="llama.cpp's gguf-py folder")
    ap.add_argument("--max-nmse", type=float, default=float("inf"))
    ap.add_argument("out")
    ap.add_argument("source")
    a = ap.parse_args()
    sys.path.insert(0, os.path.abspath(a.gguf_py))
    import gguf  # noqa: E402
    import gguf.quants  # noqa: E402

    def tensors(path):
        r = gguf.GGUFReader(path)
        return r, {t.name: t for t in r.tensors}

    def values(t):
        return np.asarray(gguf.quants.dequantize(t.data, t.tensor_type), dtype=np.float64)

    out_reader, out = tensors(a.out)
    _, src = tensors(a.source)
    bad = 0
    worst = {}
    for name, t in out.items():
        if name not in src:
            print(f"{name}: not in {a.source}")
            bad += 1
            continue
        y, x = values(t), values(src[name])
        if y.shape != x.shape:
            print(f"{name}: shape {y.shape} vs source {x.shape}")
            bad += 1
            continue
        den = float(np.sum(x * x))
        nmse = float(np.sum((y - x) ** 2)) / den if den > 0 else float(np.sum((y - x) ** 2))
        tname = t.tensor_type.name
        print(f"{name:28s} {tname:6s} {str(list(t.shape)):14s} NMSE {nmse:.3g}  max |diff| {float(np.max(np.abs(y - x))):.3g}")
        worst[tname] = max(worst.get(tname, 0.0), nmse)
        bad += nmse > a.max_nmse
    ft = out_reader.get_field("general.file_type")
    print("general.file_type", int(ft.parts[ft.data[0]][0]) if ft else None)
    print("worst NMSE per type: " + ", ".join(f"{k} {v:.3g}" for k, v in sorted(worst.items())))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
