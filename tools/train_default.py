#!/usr/bin/env python3
"""Trains ztvm's embedded default model: a small Llama on the King James Bible (public domain).

Run on the GPU machine (PyTorch + transformers, no network):

    python3 tools/train_default.py --ids kjv_ids.u16 --out /tmp/default-hf [--seconds 150]

--ids is the corpus tokenized with the Llama 2 SentencePiece vocabulary by our own tokenizer
(`ztvm tokenize -m build/testdata/vocab/ggml-vocab-llama-spm.gguf -f kjv.txt`, as little-endian
uint16). The last 5% of the tokens are held out: training keeps the checkpoint with the lowest
held-out loss (the corpus is small, so the model starts memorising quickly). The output is a
Hugging Face directory; `ztvm convert OUT -o default.gguf --type Q8_0 --vocab ggml-vocab-llama-spm.gguf`
turns it into the shipped GGUF.
"""
import argparse
import json
import math
import os
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
import numpy as np  # noqa: E402
import torch  # noqa: E402
from transformers import LlamaConfig, LlamaForCausalLM  # noqa: E402

BOS = 1
CTX = 256


def batches(data, batch, rng):
    """Random windows: BOS, then CTX-1 corpus tokens (ztvm run feeds BOS + prompt the same way)."""
    starts = rng.integers(0, len(data) - CTX, size=batch)
    x = np.stack([np.concatenate(([BOS], data[s:s + CTX - 1])) for s in starts])
    return torch.from_numpy(x.astype(np.int64))


def held_out_loss(model, data, device):
    model.eval()
    losses = []
    with torch.no_grad(), torch.autocast("cuda", dtype=torch.bfloat16):
        for s in range(0, len(data) - CTX, CTX - 1):
            x = torch.from_numpy(np.concatenate(([BOS], data[s:s + CTX - 1])).astype(np.int64))[None].to(device)
            losses.append(model(input_ids=x, labels=x).loss.item())
    model.train()
    return float(np.mean(losses))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ids", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--seconds", type=float, default=150)
    ap.add_argument("--seed", type=int, default=1234)
    args = ap.parse_args()
    torch.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    ids = np.fromfile(args.ids, dtype="<u2").astype(np.int64)
    split = int(len(ids) * 0.95)
    train, held = ids[:split], ids[split:]
    print(f"corpus {len(ids)} tokens: train {len(train)}, held out {len(held)}", flush=True)

    cfg = LlamaConfig(vocab_size=32000, hidden_size=256, intermediate_size=768, num_hidden_layers=6,
                      num_attention_heads=8, num_key_value_heads=4, max_position_embeddings=512,
                      rms_norm_eps=1e-5, rope_theta=10000.0, tie_word_embeddings=True,
                      bos_token_id=1, eos_token_id=2)
    device = "cuda"
    model = LlamaForCausalLM(cfg).to(device)
    n_params = sum(p.numel() for p in model.parameters())
    print(f"model: {n_params / 1e6:.1f} M parameters", flush=True)
    opt = torch.optim.AdamW(model.parameters(), lr=2e-3, betas=(0.9, 0.95), weight_decay=0.1)
    batch, warmup = 64, 200
    best, best_state, step, t0 = math.inf, None, 0, time.time()
    log = []
    while time.time() - t0 < args.seconds:
        frac = min(1.0, (time.time() - t0) / args.seconds)
        lr = 2e-3 * min(1.0, (step + 1) / warmup) * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * frac)))
        for g in opt.param_groups:
            g["lr"] = lr
        x = batches(train, batch, rng).to(device)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(input_ids=x, labels=x).loss
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        step += 1
        if step % 250 == 0:
            h = held_out_loss(model, held, device)
            log.append({"step": step, "seconds": round(time.time() - t0, 1), "train_loss": loss.item(), "held_out_loss": h})
            print(f"step {step} ({time.time() - t0:.0f}s) train {loss.item():.3f} held-out {h:.3f} ppl {math.exp(h):.1f}", flush=True)
            if h < best:
                best = h
                best_state = {k: v.detach().clone() for k, v in model.state_dict().items()}
    if best_state is not None:
        model.load_state_dict(best_state)
    model.save_pretrained(args.out)
    with open(os.path.join(args.out, "training.json"), "w") as f:
        json.dump({"corpus": "King James Bible (Debian bible-kjv), tokenized with the Llama 2 SentencePiece vocab",
                   "tokens": len(ids), "held_out_tokens": len(held), "parameters": n_params, "steps": step,
                   "best_held_out_loss": best, "best_held_out_ppl": math.exp(best), "log": log,
                   "torch": torch.__version__}, f, indent=1)
    print(f"saved {args.out}: best held-out loss {best:.3f} (ppl {math.exp(best):.1f}) after {step} steps", flush=True)


if __name__ == "__main__":
    main()
