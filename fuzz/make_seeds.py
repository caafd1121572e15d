#!/usr/bin/env python3
"""Writes the fuzz targets' seed corpora (fuzz/corpus/<target>/seed-*) from the repository's own test
data: small valid inputs of each kind, so the fuzzers start deep inside the formats. Run from the
repository root after a build has staged build/testdata:  python3 fuzz/make_seeds.py
Regression inputs (crash-*, named after the bug) sit beside the seeds and are never rewritten."""
import glob, json, os, shutil, struct

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(REPO, "build", "testdata")
OUT = os.path.join(REPO, "fuzz", "corpus")


def put(target, name, data):
    os.makedirs(os.path.join(OUT, target), exist_ok=True)
    with open(os.path.join(OUT, target, "seed-" + name), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


def small_bpe(path, keep):
    """A real tokenizer.json cut to its first `keep` vocabulary entries and the merges among them."""
    tj = json.load(open(path, encoding="utf-8"))
    vocab = {t: i for t, i in tj["model"]["vocab"].items() if i < keep}
    merges = []
    for m in tj["model"]["merges"]:
        a, b = m.split(" ", 1) if isinstance(m, str) else m
        if a in vocab and b in vocab and a + b in vocab:
            merges.append(m)
    tj["model"]["vocab"] = vocab
    tj["model"]["merges"] = merges
    tj["added_tokens"] = [dict(t, id=keep + k) for k, t in enumerate(tj["added_tokens"][:8])]
    return json.dumps(tj, ensure_ascii=False)


def safetensors(tensors):
    """tensors: name -> (dtype, shape); zero data, f16/f32."""
    header, off = {}, 0
    for name, (dt, shape) in tensors.items():
        n = (2 if dt == "F16" else 4)
        for d in shape:
            n *= d
        header[name] = {"dtype": dt, "shape": shape, "data_offsets": [off, off + n]}
        off += n
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    return struct.pack("<Q", len(h)) + h + bytes(off)


def main():
    for f in ["stories260K/stories260K-Q4_0.gguf", "stories260K/stories260K-Q8_0.gguf"]:
        put("fuzz_gguf", os.path.basename(f), open(os.path.join(DATA, f), "rb").read())
    put("fuzz_gguf", "quant_reference.gguf", open(os.path.join(REPO, "tests/model_data/quant_reference.gguf"), "rb").read())

    d, ff, v, L = 64, 128, 64, 1
    t = {"model.embed_tokens.weight": ("F16", [v, d]), "model.norm.weight": ("F32", [d]), "lm_head.weight": ("F16", [v, d])}
    for i in range(L):
        p = f"model.layers.{i}."
        t.update({p + "input_layernorm.weight": ("F32", [d]), p + "post_attention_layernorm.weight": ("F32", [d]),
                  p + "self_attn.q_proj.weight": ("F16", [d, d]), p + "self_attn.k_proj.weight": ("F16", [d // 2, d]),
                  p + "self_attn.v_proj.weight": ("F16", [d // 2, d]), p + "self_attn.o_proj.weight": ("F16", [d, d]),
                  p + "mlp.gate_proj.weight": ("F16", [ff, d]), p + "mlp.up_proj.weight": ("F16", [ff, d]),
                  p + "mlp.down_proj.weight": ("F16", [d, ff])})
    config = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": d, "intermediate_size": ff,
              "num_attention_heads": 4, "num_key_value_heads": 2, "num_hidden_layers": L, "vocab_size": v,
              "rms_norm_eps": 1e-5, "torch_dtype": "float16", "tie_word_embeddings": False}
    put("fuzz_safetensors", "llama", json.dumps(config).encode() + b"\n#model.safetensors#\n" + safetensors(t))
    for m in glob.glob(os.path.join(REPO, "tests/fixtures/models/*/config.json")):
        put("fuzz_safetensors", os.path.basename(os.path.dirname(m)) + "-config", open(m, "rb").read() + b"\n#model.safetensors#\n")

    put("fuzz_tokenizer_json", "qwen3-small.json", small_bpe(os.path.join(DATA, "tokenizers/qwen3/tokenizer.json"), 600))
    put("fuzz_tokenizer_json", "llama3-small.json", small_bpe(os.path.join(DATA, "tokenizers/llama3_1/tokenizer.json"), 600))

    texts = open(os.path.join(DATA, "vocab/ggml-vocab-qwen35.gguf.inp"), encoding="utf-8").read().split("\n__ggml_vocab_test__\n")
    for k, text in enumerate(texts[:24]):
        put("fuzz_tokenize", f"vec{k}", bytes([k % 4 | 0x30]) + text.encode())
    put("fuzz_tokenize", "special", b"\x33<|im_start|>user\nhi<|im_end|><s></s><|endoftext|>")

    for f in glob.glob(os.path.join(DATA, "chat-templates/*.jinja")):
        put("fuzz_jinja", os.path.basename(f), open(f, "rb").read())

    tools = [{"type": "function", "function": {"name": "get_weather", "description": "weather",
              "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]
    for k, f in enumerate(sorted(glob.glob(os.path.join(REPO, "tests/fixtures/chat/conversations/*.json")))):
        body = json.load(open(f))
        body.setdefault("max_tokens", 8)
        if k % 3 == 0:
            body["tools"] = body.get("tools", tools)
            body["tool_choice"] = "auto"
        if k % 3 == 1:
            body["response_format"] = {"type": "json_schema", "json_schema": {"name": "x", "schema": {
                "type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}}}
        put("fuzz_chat_request", os.path.basename(f), bytes([k % 4]) + json.dumps(body).encode())

    replies = [
        (0, '<think>\nhmm\n</think>\n\n<tool_call>\n{"name": "f", "arguments": {"s": "x", "n": 1}}\n</tool_call>'),
        (1, '<tool_call>\n<function=f>\n<parameter=s>\nhello\n</parameter>\n<parameter=n>\n2\n</parameter>\n</function>\n</tool_call>'),
        (2, '<|python_tag|>{"name": "f", "parameters": {"s": "a"}}; {"name": "f", "parameters": {"n": 3}}'),
        (3, 'Plain answer with <b>markup</b> and a stray </think>.'),
        (0, 'Text first. <tool_call>\n{"name": "f", "arguments": "{\\"s\\": 1}"}\n</tool_call>\n<tool_call>{bad</tool_call>'),
    ]
    for k, (fmt, text) in enumerate(replies):
        put("fuzz_tool_calls", f"reply{k}", bytes([fmt | 4 | (8 if k == 3 else 0), 3 + k]) + text.encode())


if __name__ == "__main__":
    main()
