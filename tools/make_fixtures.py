#!/usr/bin/env python3
"""Makes small random Hugging Face models and their PyTorch reference outputs.

The models are test fixtures for Zero-TVM's loaders, converter and forward
pass: tiny, randomly initialised, saved with transformers' own save_pretrained
(F32 safetensors + config.json), and paired with what transformers computes
for a fixed id sequence. transformers is the outside reference here; nothing
in this script re-implements a model.

Run where PyTorch and transformers are installed (no network needed):

    python3 tools/make_fixtures.py --out /tmp/fixtures

Output, for each NAME in llama-gqa, llama-tied, qwen3, phi3, qwen3-moe, qwen3.5,
qwen3.5-moe (the last three where this transformers has them):

    NAME/            config.json, generation_config.json, model.safetensors (F32)
                     ids.npy, ids.txt        16 fixed ids, first = 1 (BOS)
                     logits.npy              float32 [16, 512], every position
                     greedy24.txt            24 greedy ids continuing ids
                     fixture.json            how it was made (seed, versions, config)
    NAME-f16/        the same weights saved as float16, with its own
                     logits.npy / greedy24.txt computed in float32 on the
                     f16-rounded weights

Every weight matrix row has a length that is a multiple of 256, so the K-quants
(Q4_K, Q6_K: 256-element super-blocks) apply to every matrix.

Deterministic: fixed seeds, CPU only, one thread, eager attention.
"""

import argparse
import copy
import inspect
import json
import os
import sys

# No network on the GPU machine: never let transformers try the Hub.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402
import transformers  # noqa: E402
from transformers import AutoModelForCausalLM, LlamaConfig, Phi3Config, Qwen3Config  # noqa: E402

SEED = 20240531
N_IDS = 16
N_GREEDY = 24
VOCAB = 512  # the stories260K SentencePiece vocab: 0 unk, 1 BOS, 2 EOS
WEIGHT_STD = 0.05  # larger than the default 0.02 so the logits are not flat
NORM_NOISE = 0.1  # norm weights = 1 + N(0, NORM_NOISE)

# Shared by every model: the shape the 512-token vocab and the K-quants need.
COMMON = dict(
    vocab_size=VOCAB,
    hidden_size=256,
    intermediate_size=256,
    num_hidden_layers=2,
    max_position_embeddings=512,
    rms_norm_eps=1e-5,
    bos_token_id=1,
    eos_token_id=2,
    pad_token_id=None,
)

LLAMA3_SCALING = dict(
    rope_type="llama3",
    factor=8.0,
    low_freq_factor=1.0,
    high_freq_factor=4.0,
    original_max_position_embeddings=64,
)

# name -> (config class, extra config fields, rope theta, rope scaling or None)
MODELS = {
    "llama-gqa": (LlamaConfig, dict(num_attention_heads=8, num_key_value_heads=2,
                                    tie_word_embeddings=False), 10000.0, None),
    "llama-tied": (LlamaConfig, dict(num_attention_heads=8, num_key_value_heads=4,
                                     tie_word_embeddings=True), 10000.0, LLAMA3_SCALING),
    # head_dim 128 with 4 heads: the attention width (512) differs from hidden
    # (256), as in the real Qwen3 models (e.g. 0.6B: 16 x 128 vs 1024).
    "qwen3": (Qwen3Config, dict(num_attention_heads=4, num_key_value_heads=2, head_dim=128,
                                tie_word_embeddings=True), 1000000.0, None),
    "phi3": (Phi3Config, dict(num_attention_heads=8, num_key_value_heads=8,
                              tie_word_embeddings=False, original_max_position_embeddings=512),
             10000.0, None),
    # The architectures of issues 53/54, by class name: a transformers without one skips it. Kept
    # small (the repository carries them): 4 experts of 2 chosen, 128-wide experts (Q8_0/Q4_0 rows;
    # the K-quants need 256), 64-dim heads. Qwen3-MoE: every layer sparse, top-k renormalised.
    "qwen3-moe": ("Qwen3MoeConfig", dict(num_attention_heads=4, num_key_value_heads=2, head_dim=64,
                                         num_experts=4, num_experts_per_tok=2, moe_intermediate_size=128,
                                         norm_topk_prob=True, decoder_sparse_step=1, mlp_only_layers=[],
                                         tie_word_embeddings=False), 1000000.0, None),
    # Qwen3.5: a gated DeltaNet layer, then a gated full-attention layer (quarter rotary).
    "qwen3.5": ("Qwen3_5TextConfig", dict(num_attention_heads=4, num_key_value_heads=2, head_dim=64,
                                          layer_types=["linear_attention", "full_attention"],
                                          linear_num_key_heads=2, linear_num_value_heads=4,
                                          linear_key_head_dim=64, linear_value_head_dim=64,
                                          linear_conv_kernel_dim=4, partial_rotary_factor=0.25,
                                          tie_word_embeddings=False), 10000000.0, None),
    # Qwen3.5-MoE / Qwen3.6-A3B: the same layers, a sparse FFN with a gated shared expert.
    "qwen3.5-moe": ("Qwen3_5MoeTextConfig", dict(num_attention_heads=4, num_key_value_heads=2, head_dim=64,
                                                 layer_types=["linear_attention", "full_attention"],
                                                 linear_num_key_heads=2, linear_num_value_heads=4,
                                                 linear_key_head_dim=64, linear_value_head_dim=64,
                                                 linear_conv_kernel_dim=4, partial_rotary_factor=0.25,
                                                 num_experts=4, num_experts_per_tok=2,
                                                 moe_intermediate_size=128, shared_expert_intermediate_size=128,
                                                 tie_word_embeddings=False), 10000000.0, None),
}
# Weights drawn wider than WEIGHT_STD: routers, so that top-k choices are not near-ties a rounding
# flips; A_log about 0 (decay rates near 1 per step, not e).
SPECIAL_STD = {"mlp.gate.weight": 0.25, "shared_expert_gate.weight": 0.25}


def uses_rope_parameters(cls):
    """True on transformers 5, whose configs take one rope_parameters dict
    (rope_type, rope_theta, scaling fields); 4.x took rope_theta + rope_scaling.
    Asked of the class, because 4.x would silently store an unknown
    rope_parameters keyword as a plain attribute and ignore it."""
    if "rope_parameters" in getattr(cls, "__dataclass_fields__", {}):
        return True
    try:
        return "rope_parameters" in inspect.signature(cls.__init__).parameters
    except (TypeError, ValueError):
        return False


def effective_rope(cfg):
    """(theta, scaling dict or None) as the config will actually use them.
    Reading back what the config holds is how we know a requested scaling
    was accepted rather than dropped."""
    if uses_rope_parameters(type(cfg)):
        rp = getattr(cfg, "rope_parameters", None) or {}
        rope_type = rp.get("rope_type", rp.get("type", "default"))
        scaling = None if rope_type == "default" else {k: v for k, v in rp.items() if k != "rope_theta"}
        return float(rp.get("rope_theta", float("nan"))), scaling
    return float(getattr(cfg, "rope_theta", float("nan"))), getattr(cfg, "rope_scaling", None)


def make_config(cls, extra, theta, scaling):
    """Builds the config in the form this transformers takes. If the llama3
    scaling is refused, builds it without and says so. Returns (config, note)."""
    fields = dict(COMMON, **extra)
    if uses_rope_parameters(cls):
        form = "rope_parameters"
        rp = dict(rope_type="default") if scaling is None else dict(scaling)
        kwargs = dict(fields, rope_parameters=dict(rp, rope_theta=theta))
    else:
        form = "rope_theta/rope_scaling"
        kwargs = dict(fields, rope_theta=theta)
        if scaling is not None:
            kwargs["rope_scaling"] = dict(scaling)
    try:
        cfg = cls(**kwargs)
        got_theta, got_scaling = effective_rope(cfg)
        want_type = None if scaling is None else scaling["rope_type"]
        got_type = None if not got_scaling else got_scaling.get("rope_type", got_scaling.get("type"))
        if got_theta == theta and got_type == want_type:
            return cfg, f"rope via {form}"
        problem = f"config holds theta={got_theta} scaling={got_scaling}"
    except (TypeError, ValueError, KeyError) as e:
        problem = f"{type(e).__name__}: {e}"
    if scaling is None:
        raise RuntimeError(f"{cls.__name__}: could not build the config via {form}: {problem}")
    # The brief allows dropping the llama3 scaling if transformers refuses it.
    cfg, note = make_config(cls, extra, theta, None)
    return cfg, note + f"; llama3 rope scaling NOT accepted ({problem})"


def build_model(cfg, seed):
    """Random float32 model, eager attention, weights drawn from a seeded generator."""
    torch.manual_seed(seed)
    try:
        model = AutoModelForCausalLM.from_config(cfg, attn_implementation="eager")
    except TypeError:
        cfg._attn_implementation = "eager"
        model = AutoModelForCausalLM.from_config(cfg)
    model = model.to(torch.float32).eval()
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        # named_parameters() lists a tied embedding/LM head once.
        for name, p in model.named_parameters():
            special = next((v for k, v in SPECIAL_STD.items() if name.endswith(k)), None)
            if special is not None:
                p.copy_(torch.randn(p.shape, generator=gen) * special)
            elif name.endswith("A_log"):
                p.copy_(torch.randn(p.shape, generator=gen) * 0.5)
            elif p.dim() >= 2:
                p.copy_(torch.randn(p.shape, generator=gen) * WEIGHT_STD)
            elif name.endswith("bias"):
                p.copy_(torch.randn(p.shape, generator=gen) * WEIGHT_STD)
            else:  # RMSNorm weights (input/post-attention/final, Qwen3 q_norm/k_norm)
                p.copy_(1.0 + torch.randn(p.shape, generator=gen) * NORM_NOISE)
    if cfg.tie_word_embeddings:
        model.tie_weights()  # no-op when already tied; else the LM head becomes the embedding
        if model.get_output_embeddings().weight.data_ptr() != model.get_input_embeddings().weight.data_ptr():
            raise RuntimeError("tie_word_embeddings=True but the LM head is not the embedding")
    return model


def fixed_ids():
    rng = np.random.RandomState(SEED)
    return np.concatenate([[1], rng.randint(3, VOCAB, size=N_IDS - 1)]).astype(np.int64)


@torch.no_grad()
def all_logits(model, ids):
    out = model(input_ids=torch.from_numpy(ids)[None, :], use_cache=False)
    return out.logits[0].to(torch.float32).numpy().copy()


@torch.no_grad()
def greedy_manual(model, ids, n):
    """Greedy by re-running the whole sequence each step (no KV cache): the
    plainest possible argmax loop, to cross-check generate(). torch.argmax
    returns the first maximal index, as dump_logits does."""
    seq = list(int(i) for i in ids)
    for _ in range(n):
        logits = model(input_ids=torch.tensor([seq]), use_cache=False).logits[0, -1]
        seq.append(int(torch.argmax(logits)))
    return seq[len(ids):]


@torch.no_grad()
def greedy_generate(model, ids, n):
    """generate(do_sample=False) with EOS disabled so it always runs n tokens.
    The model's generation_config is restored afterwards: it is saved later."""
    gc = model.generation_config
    saved = (gc.eos_token_id, gc.pad_token_id)
    gc.eos_token_id, gc.pad_token_id = None, None
    try:
        out = model.generate(
            torch.from_numpy(ids)[None, :],
            attention_mask=torch.ones((1, len(ids)), dtype=torch.long),
            do_sample=False,
            max_new_tokens=n,
            eos_token_id=None,
            pad_token_id=0,  # never used (batch of one, no padding); silences a warning
        )
    finally:
        gc.eos_token_id, gc.pad_token_id = saved
    return [int(t) for t in out[0, len(ids):]]


def greedy(model, ids, label):
    manual = greedy_manual(model, ids, N_GREEDY)
    try:
        gen = greedy_generate(model, ids, N_GREEDY)
    except Exception as e:  # keep going: the manual loop is the ground truth anyway
        print(f"WARNING {label}: generate() failed ({e}); writing the manual greedy loop", file=sys.stderr)
        return manual
    if gen != manual:
        print(f"WARNING {label}: generate() {gen} != manual loop {manual}; writing the manual loop",
              file=sys.stderr)
        return manual
    return gen


def write_ids(path, ids):
    with open(path, "w") as f:
        f.write(" ".join(str(int(i)) for i in ids) + "\n")


def write_refs(out_dir, model, ids, label):
    logits = all_logits(model, ids)
    assert logits.shape == (N_IDS, VOCAB) and logits.dtype == np.float32, logits.shape
    np.save(os.path.join(out_dir, "ids.npy"), ids)
    write_ids(os.path.join(out_dir, "ids.txt"), ids)
    np.save(os.path.join(out_dir, "logits.npy"), logits)
    g = greedy(model, ids, label)
    write_ids(os.path.join(out_dir, "greedy24.txt"), g)
    return logits, g


def reload_check(model_dir, ids, expected, label):
    """Loads the saved directory back and checks it reproduces the logits
    exactly: the files on disk, not the in-memory model, are the fixture."""
    kwargs = dict(attn_implementation="eager")
    try:
        m = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32, **kwargs)
    except TypeError:
        m = AutoModelForCausalLM.from_pretrained(model_dir, torch_dtype=torch.float32, **kwargs)
    m = m.to(torch.float32).eval()
    got = all_logits(m, ids)
    diff = float(np.max(np.abs(got - expected)))
    if diff > 1e-4:
        raise RuntimeError(f"{label}: reloading {model_dir} changes the logits (max |diff| {diff})")
    if diff != 0.0:  # same weights and ops should be bit-identical; say so, but it is usable
        print(f"WARNING {label}: reloaded logits differ by up to {diff:.3e}", file=sys.stderr)


def dir_size(path):
    return sum(os.path.getsize(os.path.join(path, f)) for f in os.listdir(path))


def config_class(cls):
    """A class, or a class name looked up in this transformers (None if it has none)."""
    return getattr(transformers, cls, None) if isinstance(cls, str) else cls


def make_one(out_root, index, name, ids):
    cls, extra, theta, scaling = MODELS[name]
    cls = config_class(cls)
    cfg, note = make_config(cls, extra, theta, scaling)
    seed = SEED + index
    model = build_model(cfg, seed)
    rows = []

    # F32 directory.
    d32 = os.path.join(out_root, name)
    os.makedirs(d32, exist_ok=True)
    model.save_pretrained(d32)
    logits32, g32 = write_refs(d32, model, ids, name)
    reload_check(d32, ids, logits32, name)

    # F16 directory: save a float16 copy; its references come from float32
    # arithmetic on the f16-rounded weights (what an f16-weight engine computes
    # when it widens each weight before the multiply).
    d16 = os.path.join(out_root, name + "-f16")
    os.makedirs(d16, exist_ok=True)
    half = copy.deepcopy(model).to(torch.float16)
    half.save_pretrained(d16)
    rounded = copy.deepcopy(model)
    with torch.no_grad():
        for p in rounded.parameters():
            p.copy_(p.to(torch.float16).to(torch.float32))
    logits16, g16 = write_refs(d16, rounded, ids, name + "-f16")
    reload_check(d16, ids, logits16, name + "-f16")

    rope_theta, rope_scaling = effective_rope(cfg)
    meta = dict(
        name=name,
        made_by="tools/make_fixtures.py",
        seed=seed,
        ids_seed=SEED,
        weight_init=f"matrices N(0, {WEIGHT_STD}); norm weights 1 + N(0, {NORM_NOISE})",
        torch=torch.__version__,
        transformers=transformers.__version__,
        numpy=np.__version__,
        architecture=type(model).__name__,
        attn_implementation="eager",
        rope_theta=rope_theta,
        rope_scaling=rope_scaling,
        note=note,
        n_params=sum(p.numel() for p in model.parameters()),
        parameters={k: list(v.shape) for k, v in model.state_dict().items()},
    )
    for d, kind in ((d32, "float32"), (d16, "float16 weights, float32 arithmetic")):
        with open(os.path.join(d, "fixture.json"), "w") as f:
            json.dump(dict(meta, weights=kind), f, indent=2, sort_keys=True)
            f.write("\n")

    for d, logits, g in ((d32, logits32, g32), (d16, logits16, g16)):
        rows.append((os.path.basename(d), dir_size(d), float(logits.std()),
                     float(np.abs(logits - logits32).max()), g[:8], note))
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="output folder (created)")
    ap.add_argument("--only", nargs="*", choices=sorted(MODELS), help="make only these models")
    args = ap.parse_args()

    torch.set_num_threads(1)  # bitwise-reproducible CPU reductions
    torch.use_deterministic_algorithms(True, warn_only=True)
    torch.set_default_dtype(torch.float32)
    os.makedirs(args.out, exist_ok=True)
    ids = fixed_ids()

    rows = []
    failed = []
    for index, name in enumerate(MODELS):  # fixed order -> fixed seeds
        if args.only and name not in args.only:
            continue
        if config_class(MODELS[name][0]) is None:
            print(f"SKIP {name}: transformers {transformers.__version__} has no {MODELS[name][0]}", file=sys.stderr)
            failed.append(name)
            continue
        try:
            rows.extend(make_one(args.out, index, name, ids))
        except Exception as e:  # the others still get made; the failure is reported and fails the run
            import traceback
            traceback.print_exc()
            print(f"FAILED {name}: {type(e).__name__}: {e}", file=sys.stderr)
            failed.append(name)

    print(f"torch {torch.__version__}, transformers {transformers.__version__}, numpy {np.__version__}")
    print("ids:", " ".join(str(int(i)) for i in ids))
    print(f"{'dir':16} {'bytes':>10} {'logit std':>10} {'max|d-f32|':>11}  greedy[:8]  notes")
    total = 0
    for name, size, std, dmax, g, note in rows:
        total += size
        print(f"{name:16} {size:10d} {std:10.4f} {dmax:11.3e}  {g}  {note}")
    print(f"total {total} bytes in {args.out}")
    if failed:
        print("not made: " + " ".join(failed), file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
