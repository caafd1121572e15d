#!/usr/bin/python3
"""Expected dequantizations for tests/fixtures/quant_ref, computed by llama.cpp's gguf-py.

  /usr/bin/python3 tools/make_quant_reference.py --gguf-py .cache/llamacpp/src/gguf-py --out tests/fixtures/quant_ref

For each GGML block type below it writes TYPE.blocks (random but valid block bytes: random code
bytes, every f16 scale / min field replaced by a finite half of either sign, MXFP4's E8M0 byte in
a range around 2^0) and TYPE.f32 (gguf-py's dequantization of those bytes, little-endian float32),
plus README.md. The numpy seed is fixed, so a rerun with the same gguf-py gives the same files.

  --check-ours DIR   instead: for every TYPE.ours.blocks / TYPE.ours.f32 pair in DIR (our
                     quantize_row's bytes and our dequantize_row's floats, written by
                     Quant.DISABLED_DumpOurBlocksForGgufPy in model_quant_test, see there), dequantize the bytes with gguf-py
                     and report whether the floats are bit-identical. Exit 1 on any mismatch.
"""
import argparse
import os
import subprocess
import sys

import numpy as np

# name -> (elements per block, bytes per block, [(offset, kind)] of the scale fields in a block).
# kind "f16": a half scale / min; "e8m0": MXFP4's exponent byte.
TYPES = {
    "Q8_0": (32, 34, [(0, "f16")]),
    "Q4_0": (32, 18, [(0, "f16")]),
    "Q4_1": (32, 20, [(0, "f16"), (2, "f16")]),
    "Q5_0": (32, 22, [(0, "f16")]),
    "Q5_1": (32, 24, [(0, "f16"), (2, "f16")]),
    "IQ4_NL": (32, 18, [(0, "f16")]),
    "MXFP4": (32, 17, [(0, "e8m0")]),
    "Q2_K": (256, 84, [(80, "f16"), (82, "f16")]),
    "Q3_K": (256, 110, [(108, "f16")]),
    "Q4_K": (256, 144, [(0, "f16"), (2, "f16")]),
    "Q5_K": (256, 176, [(0, "f16"), (2, "f16")]),
    "Q6_K": (256, 210, [(208, "f16")]),
    "IQ4_XS": (256, 136, [(0, "f16")]),
}

ROWS = {32: [512, 512, 512, 96], 256: [1024, 1024, 1024]}  # elements per row, by block size


def random_halves(rng, n):
    """n finite halves: magnitudes 0.01..0.1, either sign, with a few special values mixed in."""
    v = rng.uniform(0.01, 0.1, n) * rng.choice([-1.0, 1.0], n)
    h = v.astype(np.float16)
    special = np.array([0.0, -0.0, 6.0e-8, -3.0e-5, 1.0, 65504.0], dtype=np.float16)  # zero, subnormals, big
    pick = rng.random(n) < 0.04
    h[pick] = rng.choice(special, int(pick.sum()))
    return h


def make_blocks(rng, name, n_elems):
    block_elems, block_bytes, fields = TYPES[name]
    nb = n_elems // block_elems
    blocks = rng.integers(0, 256, size=(nb, block_bytes), dtype=np.uint8)
    for off, kind in fields:
        if kind == "f16":
            blocks[:, off:off + 2] = random_halves(rng, nb).view(np.uint8).reshape(nb, 2)
        else:  # E8M0: mostly 2^-13..2^7 (as real weights have), sometimes an extreme byte
            e = rng.integers(115, 136, size=nb).astype(np.uint8)
            pick = rng.random(nb) < 0.1
            e[pick] = rng.choice(np.array([0, 1, 2, 254], dtype=np.uint8), int(pick.sum()))
            blocks[:, off] = e
    return blocks.reshape(-1)


def load_gguf(path):
    sys.path.insert(0, os.path.abspath(path))
    import gguf  # noqa: E402
    import gguf.quants  # noqa: E402
    return gguf


def dequantize(gguf, name, raw, block_elems, block_bytes, n_elems):
    arr = np.frombuffer(raw, dtype=np.uint8).reshape(1, n_elems // block_elems * block_bytes)
    out = gguf.quants.dequantize(arr, gguf.GGMLQuantizationType[name])
    return np.asarray(out, dtype=np.float32).reshape(-1)


def generate(gguf, gguf_py, out_dir):
    os.makedirs(out_dir, exist_ok=True)
    rng = np.random.default_rng(20240601)
    try:
        commit = subprocess.run(["git", "-C", os.path.join(gguf_py, ".."), "rev-parse", "--short", "HEAD"],
                                capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        commit = "unknown"
    table = []
    for name, (block_elems, block_bytes, _) in TYPES.items():
        rows = ROWS[block_elems]
        raws, values = [], []
        for n in rows:
            raw = make_blocks(rng, name, n).tobytes()
            raws.append(raw)
            values.append(dequantize(gguf, name, raw, block_elems, block_bytes, n))  # one row per call
        raw = b"".join(raws)
        vals = np.concatenate(values).astype("<f4")
        with open(os.path.join(out_dir, name + ".blocks"), "wb") as f:
            f.write(raw)
        with open(os.path.join(out_dir, name + ".f32"), "wb") as f:
            f.write(vals.tobytes())
        table.append((name, block_elems, block_bytes, rows, len(raw), vals.nbytes))
    with open(os.path.join(out_dir, "README.md"), "w") as f:
        f.write("# Quantized-block fixtures dequantized by llama.cpp's gguf-py\n\n")
        f.write("Made by `tools/make_quant_reference.py` (`/usr/bin/python3 tools/make_quant_reference.py "
                "--gguf-py .cache/llamacpp/src/gguf-py --out tests/fixtures/quant_ref`) with llama.cpp's "
                f"gguf-py (`gguf.quants.dequantize`) at llama.cpp commit `{commit}`, numpy {np.__version__}.\n\n")
        f.write("- `TYPE.blocks`: rows of random valid blocks of that GGML type, back to back. The code bytes are "
                "uniformly random; every f16 scale/min field is a random finite half (magnitude 0.01..0.1, either "
                "sign; a few zeros, subnormals, 1.0 and 65504); MXFP4's E8M0 byte is in 115..135, sometimes "
                "0, 1, 2 or 254. The numpy seed is fixed.\n")
        f.write("- `TYPE.f32`: gguf-py's dequantization of those rows, little-endian float32, one per element.\n\n")
        f.write("`tests/model_quant_test.cpp` (`Quant.DequantizeMatchesLlamaCppGgufPy`) decodes each `.blocks` file "
                "with `dequantize_row` and requires the `.f32` values bit for bit.\n\n")
        f.write("| type | block (elements, bytes) | rows (elements) | .blocks bytes | .f32 bytes |\n|---|---|---|---|---|\n")
        for name, be, bb, rows, nraw, nval in table:
            f.write(f"| {name} | {be}, {bb} | {', '.join(map(str, rows))} | {nraw} | {nval} |\n")
    total = sum(t[4] + t[5] for t in table)
    print(f"wrote {len(table)} types to {out_dir} ({total} bytes)")


def check_ours(gguf, in_dir):
    bad = 0
    names = sorted(f[:-len(".ours.blocks")] for f in os.listdir(in_dir) if f.endswith(".ours.blocks"))
    if not names:
        print(f"no *.ours.blocks files in {in_dir}")
        return 1
    for name in names:
        block_elems, block_bytes, _ = TYPES[name]
        raw = open(os.path.join(in_dir, name + ".ours.blocks"), "rb").read()
        ours = np.fromfile(os.path.join(in_dir, name + ".ours.f32"), dtype="<f4")
        n = len(raw) // block_bytes * block_elems
        theirs = dequantize(gguf, name, raw, block_elems, block_bytes, n)
        same = ours.shape == theirs.shape and np.array_equal(ours.view(np.uint32), theirs.view(np.uint32))
        diff = float(np.max(np.abs(ours - theirs))) if ours.shape == theirs.shape else float("nan")
        print(f"{name:7s} {n:7d} elements: gguf-py decode of our bytes {'== ours bit for bit' if same else 'DIFFERS'}"
              f" (max abs diff {diff:.3g})")
        bad += not same
        # Where gguf-py has a quantizer (ggml's reference rounding), compare bytes and error too.
        src_path = os.path.join(in_dir, "source.f32")
        if os.path.exists(src_path) and name in QUANTIZABLE:
            src = np.fromfile(src_path, dtype="<f4")
            cols = 1024  # the dump's row length
            theirs_q = gguf.quants.quantize(src.reshape(-1, cols), gguf.GGMLQuantizationType[name]).reshape(-1)
            ours_q = np.frombuffer(raw, dtype=np.uint8)
            blocks_differ = int(np.any(theirs_q.reshape(-1, block_bytes) != ours_q.reshape(-1, block_bytes), axis=1).sum())
            theirs_y = dequantize(gguf, name, theirs_q.tobytes(), block_elems, block_bytes, n)
            nmse = lambda y: float(np.sum((y.astype(np.float64) - src) ** 2) / np.sum(src.astype(np.float64) ** 2))
            print(f"        gguf-py's quantizer: {blocks_differ} of {len(ours_q) // block_bytes} blocks differ from ours;"
                  f" NMSE ours {nmse(ours):.4g}, gguf-py's {nmse(theirs_y):.4g}")
    return 1 if bad else 0


# The types gguf-py can quantize (its numpy ports of ggml's reference quantizers).
QUANTIZABLE = {"Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "MXFP4"}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gguf-py", required=True, help="llama.cpp's gguf-py folder")
    ap.add_argument("--out", help="output folder (tests/fixtures/quant_ref)")
    ap.add_argument("--check-ours", metavar="DIR", help="check our quantizer's dumped bytes instead")
    a = ap.parse_args()
    gguf = load_gguf(a.gguf_py)
    if a.check_ours:
        sys.exit(check_ours(gguf, a.check_ours))
    if not a.out:
        ap.error("--out or --check-ours is required")
    generate(gguf, a.gguf_py, a.out)


if __name__ == "__main__":
    main()
