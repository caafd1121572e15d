// Helpers shared by tests/model_*_test.cpp: temp directories, file bytes, HF directories written
// from scratch (config.json + safetensors), and tensor values as floats.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "model/model_error.h"
#include "model/quant.h"
#include "model/tensor.h"

namespace ztvm::test {

namespace fs = std::filesystem;

inline const std::string kStories = ZTVM_TESTDATA "/stories260K/";
inline const std::string kVocab = ZTVM_TESTDATA "/vocab/";

// Expects fn to throw a ModelError whose message holds every word in `words`, on one line.
template <typename Fn>
void expect_model_error(Fn fn, std::initializer_list<const char*> words, const std::string& context = "") {
  try {
    fn();
    ADD_FAILURE() << context << ": no ModelError";
  } catch (const ModelError& e) {
    const std::string msg = e.what();
    for (const char* w : words) EXPECT_NE(msg.find(w), std::string::npos) << context << ": '" << w << "' not in: " << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << "message is not one line: " << msg;
  }
}

// A fresh directory under the system temp dir, removed when the object dies.
struct TempDir {
  fs::path path;
  TempDir() {
    const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path = fs::temp_directory_path() / ("ztvm_" + std::string(info ? info->name() : "test") + "_" +
                                        std::to_string(std::random_device{}()));
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string file(const std::string& name) const { return (path / name).string(); }
};

inline std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

inline void write_bytes(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
}

inline void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
}

// All values of a tensor as f32.
inline std::vector<float> values(const TensorView& t) {
  std::vector<float> out(t.elements());
  for (uint64_t r = 0; r < t.rows(); ++r)
    dequantize_row(t.type, t.data + r * row_bytes(t.type, t.cols()), out.data() + r * t.cols(), t.cols());
  return out;
}

inline std::vector<float> random_values(size_t n, uint32_t seed, float scale = 0.05f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> gauss(0.f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = gauss(rng);
  return v;
}

inline double nmse(const std::vector<float>& a, const std::vector<float>& ref) {
  double num = 0, den = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    num += double(a[i] - ref[i]) * (a[i] - ref[i]);
    den += double(ref[i]) * ref[i];
  }
  return den > 0 ? num / den : num;
}

// One tensor of a safetensors file: HF shape (row-major, [out, in]) and f32 values, stored as dtype.
struct StTensor {
  std::string name;
  std::vector<uint64_t> shape;
  std::vector<float> data;
  std::string dtype = "F32";  // F32, F16 or BF16 (anything else: raw zero bytes of 8-byte elements)
};

// Writes a safetensors file: u64 header length, JSON header, data in the listed order.
inline void write_safetensors(const std::string& path, const std::vector<StTensor>& tensors) {
  nlohmann::json header = nlohmann::json::object();
  header["__metadata__"] = {{"format", "pt"}};
  std::vector<uint8_t> data;
  for (const StTensor& t : tensors) {
    const uint64_t begin = data.size();
    for (float v : t.data) {
      if (t.dtype == "F32") {
        uint8_t b[4];
        std::memcpy(b, &v, 4);
        data.insert(data.end(), b, b + 4);
      } else if (t.dtype == "F16" || t.dtype == "BF16") {
        const uint16_t h = t.dtype == "F16" ? f32_to_f16(v) : f32_to_bf16(v);
        data.push_back(uint8_t(h & 0xff));
        data.push_back(uint8_t(h >> 8));
      } else {
        data.insert(data.end(), 8, 0);
      }
    }
    header[t.name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {begin, data.size()}}};
  }
  std::string h = header.dump();
  while (h.size() % 8) h += ' ';  // the format pads the header with spaces to 8 bytes
  std::vector<uint8_t> bytes(8);
  const uint64_t n = h.size();
  std::memcpy(bytes.data(), &n, 8);
  bytes.insert(bytes.end(), h.begin(), h.end());
  bytes.insert(bytes.end(), data.begin(), data.end());
  write_bytes(path, bytes);
}

// A small random model in Hugging Face layout (config.json + safetensors), of any supported
// architecture. write_hf_model returns every tensor's values by HF name.
struct HfSpec {
  std::string model_type = "llama";
  uint32_t hidden = 64, layers = 2, heads = 4, kv_heads = 2, head_dim = 0 /* 0: hidden / heads */, ff = 96, vocab = 80;
  bool tie = false;
  bool write_tie_key = true;       // false: config.json omits tie_word_embeddings
  bool transformers5 = false;      // rope_parameters {...} instead of top-level rope_theta
  bool bias = false;               // attention_bias (llama); qwen2 always has biases
  std::string dtype = "F32";
  int shards = 1;                  // > 1: model-0000N-of-0000M.safetensors + index.json
  nlohmann::json extra = nlohmann::json::object();  // merged into config.json last
};

inline std::map<std::string, std::vector<float>> write_hf_model(const std::string& dir, const HfSpec& s) {
  fs::create_directories(dir);
  const uint32_t hd = s.head_dim ? s.head_dim : s.hidden / s.heads;
  const uint64_t q = uint64_t(s.heads) * hd, kv = uint64_t(s.kv_heads) * hd;
  std::vector<StTensor> tensors;
  uint32_t seed = 100;
  auto add = [&](const std::string& name, std::vector<uint64_t> shape, bool norm = false) {
    uint64_t n = 1;
    for (uint64_t d : shape) n *= d;
    std::vector<float> v = random_values(n, seed++, norm ? 0.1f : 0.05f);
    if (norm) for (float& x : v) x += 1.f;  // norm weights sit around 1
    tensors.push_back({name, shape, v, s.dtype});
  };
  add("model.embed_tokens.weight", {s.vocab, s.hidden});
  for (uint32_t l = 0; l < s.layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    add(p + "input_layernorm.weight", {s.hidden}, true);
    if (s.model_type == "phi3") {
      add(p + "self_attn.qkv_proj.weight", {q + 2 * kv, s.hidden});
    } else {
      add(p + "self_attn.q_proj.weight", {q, s.hidden});
      add(p + "self_attn.k_proj.weight", {kv, s.hidden});
      add(p + "self_attn.v_proj.weight", {kv, s.hidden});
      if (s.model_type == "qwen2" || s.bias) {
        add(p + "self_attn.q_proj.bias", {q});
        add(p + "self_attn.k_proj.bias", {kv});
        add(p + "self_attn.v_proj.bias", {kv});
      }
      if (s.model_type == "qwen3") {
        add(p + "self_attn.q_norm.weight", {hd}, true);
        add(p + "self_attn.k_norm.weight", {hd}, true);
      }
    }
    add(p + "self_attn.o_proj.weight", {s.hidden, q});
    add(p + "post_attention_layernorm.weight", {s.hidden}, true);
    if (s.model_type == "phi3") {
      add(p + "mlp.gate_up_proj.weight", {2ull * s.ff, s.hidden});
    } else {
      add(p + "mlp.gate_proj.weight", {s.ff, s.hidden});
      add(p + "mlp.up_proj.weight", {s.ff, s.hidden});
    }
    add(p + "mlp.down_proj.weight", {s.hidden, s.ff});
  }
  add("model.norm.weight", {s.hidden}, true);
  if (!s.tie) add("lm_head.weight", {s.vocab, s.hidden});

  nlohmann::json cfg = {{"model_type", s.model_type}, {"hidden_size", s.hidden}, {"num_hidden_layers", s.layers},
                        {"intermediate_size", s.ff}, {"num_attention_heads", s.heads},
                        {"num_key_value_heads", s.kv_heads}, {"vocab_size", s.vocab}, {"rms_norm_eps", 1e-6},
                        {"max_position_embeddings", 256}, {"bos_token_id", 1}, {"eos_token_id", 2}};
  if (s.head_dim) cfg["head_dim"] = s.head_dim;
  if (s.write_tie_key) cfg["tie_word_embeddings"] = s.tie;
  if (s.bias) cfg["attention_bias"] = true;
  if (s.transformers5) cfg["rope_parameters"] = {{"rope_theta", 1000000.0}, {"rope_type", "default"}};
  else cfg["rope_theta"] = 10000.0;
  cfg.merge_patch(s.extra);
  write_text(dir + "/config.json", cfg.dump(2));

  if (s.shards <= 1) {
    write_safetensors(dir + "/model.safetensors", tensors);
  } else {
    nlohmann::json index = {{"metadata", {{"total_size", 0}}}, {"weight_map", nlohmann::json::object()}};
    const size_t per = (tensors.size() + size_t(s.shards) - 1) / size_t(s.shards);
    for (int k = 0; k < s.shards; ++k) {
      char name[64];
      std::snprintf(name, sizeof name, "model-%05d-of-%05d.safetensors", k + 1, s.shards);
      std::vector<StTensor> part;
      for (size_t i = size_t(k) * per; i < std::min(tensors.size(), size_t(k + 1) * per); ++i) {
        part.push_back(tensors[i]);
        index["weight_map"][tensors[i].name] = name;
      }
      write_safetensors(dir + "/" + name, part);
    }
    write_text(dir + "/model.safetensors.index.json", index.dump(2));
  }
  std::map<std::string, std::vector<float>> out;
  for (StTensor& t : tensors) {  // the values as stored (rounded to the dtype)
    for (float& x : t.data) x = s.dtype == "F16" ? f16_to_f32(f32_to_f16(x)) : s.dtype == "BF16" ? bf16_to_f32(f32_to_bf16(x)) : x;
    out[t.name] = std::move(t.data);
  }
  return out;
}

// Rows [first, first + count) of a row-major matrix with `cols` columns.
inline std::vector<float> rows_of(const std::vector<float>& m, uint64_t cols, uint64_t first, uint64_t count) {
  return std::vector<float>(m.begin() + long(first * cols), m.begin() + long((first + count) * cols));
}

}  // namespace ztvm::test

#include "model/gguf.h"
#include "model/gguf_writer.h"

namespace ztvm::test {

// Writes `in` as `parts` files PREFIX-0000K-of-0000N.gguf the way llama.cpp's gguf-split does: the
// first holds every metadata key, each holds split.no / split.count / split.tensors.count, and the
// tensors are spread over them in file order (reversed: the first tensors land in the last part).
// Returns the parts' paths.
inline std::vector<std::string> split_gguf(const std::string& in, const std::string& prefix, uint32_t parts,
                                           bool reversed = false) {
  auto g = GgufFile::open(in);
  std::vector<TensorView> ts = g->tensors();
  if (reversed) std::reverse(ts.begin(), ts.end());
  std::vector<std::string> paths;
  for (uint32_t k = 0; k < parts; k++) {
    GgufWriter w;
    if (k == 0)
      for (const auto& [key, value] : g->metadata()) w.set(key, value);
    w.set("split.no", GgufValue::of_uint(GgufValueType::U16, k));
    w.set("split.count", GgufValue::of_uint(GgufValueType::U16, parts));
    w.set("split.tensors.count", GgufValue::of_int(GgufValueType::I32, (int64_t)ts.size()));
    for (size_t i = k * ts.size() / parts; i < (k + 1) * ts.size() / parts; i++)
      w.add_tensor(ts[i].name, ts[i].type, ts[i].ne, std::vector<uint8_t>(ts[i].data, ts[i].data + ts[i].nbytes));
    char tail[40];
    std::snprintf(tail, sizeof tail, "-%05u-of-%05u.gguf", k + 1, parts);
    paths.push_back(prefix + tail);
    w.write(paths.back());
  }
  return paths;
}

}  // namespace ztvm::test
