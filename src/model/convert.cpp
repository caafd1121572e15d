// convert_model: each output tensor is a list of source views (one, or several concatenated by rows
// for Phi-3's fused tensors and for a layer's experts stacked into one 3-D tensor), optionally with
// llama's Q/K row permutation, re-encoded row by row while the file is written, in chunks of rows,
// so memory stays at one chunk whatever the model's size.
#include "model/convert.h"

#include <algorithm>
#include <cstring>
#include <exception>
#include <functional>
#include <thread>

#include "model/gguf_meta.h"
#include "model/gguf_writer.h"
#include "model/model_error.h"
#include "model/quant.h"
#include "model/qwen35_layout.h"

namespace ztvm {

namespace {

struct OutTensor {
  std::string name;
  std::vector<const TensorView*> parts;  // concatenated by rows, all with the same row length
  uint64_t permute_head_dim = 0;         // nonzero: apply llama_permuted_row within each part
  GgmlType type = GgmlType::F32;
  std::vector<uint64_t> ne = {};         // the written shape; empty: {cols, all parts' rows}
  VHeadOrder vheads = {};                // Qwen3.5's value heads, grouped -> tiled (rows or columns)
  uint32_t nk = 0, nv = 0;               // ... of nk key heads and nv value heads
};

// The output row r's row (or a 1-D tensor's element) before Qwen3.5's value heads were tiled.
uint64_t vhead_row(const OutTensor& t, uint64_t r) {
  const VHeadOrder& v = t.vheads;
  if (!v.row_head || r < v.first_row) return r;
  return v.first_row + tiled_vhead_source(r - v.first_row, t.nk, t.nv, v.row_head);
}

uint64_t total_rows(const OutTensor& t) {
  uint64_t rows = 0;
  for (const TensorView* p : t.parts) rows += p->rows();
  return rows;
}

// Output row r (or element r of a 1-D tensor) -> the source view and its row (element).
std::pair<const TensorView*, uint64_t> source_of(const OutTensor& t, uint64_t r) {
  r = vhead_row(t, r);
  for (const TensorView* p : t.parts) {
    const uint64_t n = p->ne.size() == 1 ? p->cols() : p->rows();
    if (r < n) return {p, t.permute_head_dim ? llama_permuted_row(r, t.permute_head_dim) : r};
    r -= n;
  }
  throw ModelError("convert: row out of range in " + t.name);
}

// Output rows [first, first + n) at out. Rows are independent, so large ranges are re-encoded on
// all cores (K-quant search is slow).
void fill_rows(const OutTensor& t, uint64_t first, uint64_t n, uint8_t* out) {
  const uint64_t cols = t.parts[0]->cols();
  const uint64_t out_rb = row_bytes(t.type, cols);
  const uint64_t col_head = t.vheads.col_head;
  auto encode_rows = [&](uint64_t begin, uint64_t end) {
    std::vector<float> row(cols), moved(col_head ? cols : 0);
    for (uint64_t r = begin; r < end; ++r) {
      auto [src, src_row] = source_of(t, first + r);
      const uint64_t src_rb = row_bytes(src->type, cols);
      if (src->type == t.type && !col_head) {  // rows move as bytes: exact, and quantized data is not re-rounded
        std::memcpy(out + r * out_rb, src->data + src_row * src_rb, out_rb);
      } else {
        dequantize_row(src->type, src->data + src_row * src_rb, row.data(), cols);
        if (col_head)  // each row's value heads, as its rows are elsewhere (exact for float types)
          for (uint64_t i = 0; i < cols; ++i) moved[i] = row[tiled_vhead_source(i, t.nk, t.nv, col_head)];
        quantize_row(t.type, col_head ? moved.data() : row.data(), out + r * out_rb, cols);
      }
    }
  };
  const uint64_t min_elems_per_thread = 1 << 16;
  const uint64_t threads = std::clamp<uint64_t>(n * cols / min_elems_per_thread, 1, std::max(1u, std::thread::hardware_concurrency()));
  if (threads == 1) return encode_rows(0, n);
  std::vector<std::thread> pool;
  std::vector<std::exception_ptr> errors(threads);
  for (uint64_t k = 0; k < threads; ++k) {
    pool.emplace_back([&, k] {
      try {
        encode_rows(n * k / threads, n * (k + 1) / threads);
      } catch (...) {
        errors[k] = std::current_exception();
      }
    });
  }
  for (std::thread& th : pool) th.join();
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
}

// 1-D tensors (norms, biases) are always F32; a permuted bias moves elements, not rows.
std::vector<float> vector_values(const OutTensor& t) {
  std::vector<float> out;
  for (const TensorView* p : t.parts) {
    std::vector<float> v(p->cols());
    dequantize_row(p->type, p->data, v.data(), p->cols());
    out.insert(out.end(), v.begin(), v.end());
  }
  if (t.vheads.row_head) {
    std::vector<float> tiled(out.size());
    for (uint64_t i = 0; i < out.size(); ++i) tiled[i] = out[vhead_row(t, i)];
    return tiled;
  }
  if (!t.permute_head_dim) return out;
  std::vector<float> permuted(out.size());
  for (uint64_t i = 0; i < out.size(); ++i) permuted[i] = out[llama_permuted_row(i, t.permute_head_dim)];
  return permuted;
}

bool is_float(GgmlType t) { return t == GgmlType::F32 || t == GgmlType::F16 || t == GgmlType::BF16; }

}  // namespace

size_t quantize_weights(ModelFile& m, GgmlType type,
                        const std::function<void(size_t, size_t, const std::string&, GgmlType)>& progress) {
  // Only the types the GPU engine reads in place (this re-encodes for running, not for a file).
  if (type != GgmlType::Q8_0 && type != GgmlType::Q4_0 && type != GgmlType::Q4_K)
    throw ModelError(std::string("cannot quantize weights to ") + type_name(type) + " (supported: Q8_0, Q4_0, Q4_K)");
  const GgmlType head_type = convert_head_type(type);
  // Float matrices, largest first, so that a fused tensor is re-encoded before the views inside it.
  std::vector<std::pair<const std::string*, TensorView*>> todo;
  // A mixture-of-experts router stays float, as convert_model writes it (F32) and llama.cpp keeps it.
  for (auto& [name, v] : m.tensors)
    if (v.ne.size() >= 2 && is_float(v.type) && name.find(".ffn_gate_inp.") == std::string::npos)
      todo.push_back({&name, &v});
  std::stable_sort(todo.begin(), todo.end(), [](const auto& a, const auto& b) { return a.second->nbytes > b.second->nbytes; });
  struct Reencoded {
    const TensorView before;  // where its rows were, and how wide
    const uint8_t* data;      // where they are now
    GgmlType type;
  };
  std::vector<Reencoded> done;
  size_t count = 0;
  for (size_t i = 0; i < todo.size(); ++i) {
    const std::string& name = *todo[i].first;
    TensorView& v = *todo[i].second;
    const uint64_t cols = v.cols();
    auto inside = std::find_if(done.begin(), done.end(), [&](const Reencoded& d) {
      return d.before.cols() == cols && v.data >= d.before.data && v.data + v.nbytes <= d.before.data + d.before.nbytes;
    });
    if (inside != done.end()) {  // a row range of a fused tensor: the same rows in the new bytes
      const uint64_t first_row = (uint64_t)(v.data - inside->before.data) / row_bytes(inside->before.type, cols);
      v.type = inside->type;
      v.data = inside->data + first_row * row_bytes(v.type, cols);
      v.nbytes = row_bytes(v.type, cols) * v.rows();
      continue;
    }
    const bool head = name == "output.weight" || (m.config.tie_word_embeddings && name == "token_embd.weight");
    const GgmlType t = convert_matrix_type(head ? head_type : type, cols);
    if (is_float(t)) continue;  // rows that no block of this type divides: kept as they are
    if (progress) progress(i, todo.size(), name, t);
    std::vector<uint8_t> bytes(row_bytes(t, cols) * v.rows());
    fill_rows(OutTensor{name, {&v}, 0, t}, 0, v.rows(), bytes.data());
    done.push_back({v, bytes.data(), t});
    m.requantized.push_back(std::move(bytes));  // moving a vector keeps its buffer where it is
    v.type = t;
    v.data = m.requantized.back().data();
    v.nbytes = m.requantized.back().size();
    count++;
  }
  return count;
}

uint64_t llama_permuted_row(uint64_t r, uint64_t head_dim) {
  const uint64_t head = r / head_dim, j = r % head_dim;
  return head * head_dim + (j % 2) * (head_dim / 2) + j / 2;
}

namespace {

// What `ztvm convert --type T` writes: llama.cpp's `general.file_type` id (enum llama_ftype in
// llama.h), the LM head's type, and the 32-element type for rows a 256-element block does not
// divide (llama-quant.cpp's tensor_type_fallback, except Q4_K -> Q4_0 where it picks Q5_0: kept
// from before the engine read Q5_0). Every type but F32/F16/BF16/Q8_0/Q4_0 gets a Q6_K head, as
// llama-quantize gives one; the ids name the mix that is "T everywhere, Q6_K head" (*_K_S).
struct ConvertType {
  GgmlType type;
  uint32_t file_type;
  GgmlType head;
  GgmlType narrow;  // for rows of a multiple of 32 but not of block_elems(type)
};
constexpr ConvertType kConvertTypes[] = {
    {GgmlType::F32, 0, GgmlType::F32, GgmlType::F32},       {GgmlType::F16, 1, GgmlType::F16, GgmlType::F16},
    {GgmlType::BF16, 32, GgmlType::BF16, GgmlType::BF16},   {GgmlType::Q8_0, 7, GgmlType::Q8_0, GgmlType::Q8_0},
    {GgmlType::Q4_0, 2, GgmlType::Q4_0, GgmlType::Q4_0},    {GgmlType::Q4_1, 3, GgmlType::Q6_K, GgmlType::Q4_1},
    {GgmlType::Q5_0, 8, GgmlType::Q6_K, GgmlType::Q5_0},    {GgmlType::Q5_1, 9, GgmlType::Q6_K, GgmlType::Q5_1},
    {GgmlType::Q2_K, 10, GgmlType::Q6_K, GgmlType::Q4_0},   // MOSTLY_Q2_K
    {GgmlType::Q3_K, 11, GgmlType::Q6_K, GgmlType::Q4_0},   // MOSTLY_Q3_K_S
    {GgmlType::Q4_K, 14, GgmlType::Q6_K, GgmlType::Q4_0},   // MOSTLY_Q4_K_S
    {GgmlType::Q5_K, 16, GgmlType::Q6_K, GgmlType::Q5_1},   // MOSTLY_Q5_K_S
    {GgmlType::Q6_K, 18, GgmlType::Q6_K, GgmlType::Q8_0},   // MOSTLY_Q6_K
    {GgmlType::IQ4_NL, 25, GgmlType::Q6_K, GgmlType::IQ4_NL},
    {GgmlType::IQ4_XS, 30, GgmlType::Q6_K, GgmlType::IQ4_NL},
};
constexpr const char* kConvertTypeList = "F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS";

const ConvertType* find_convert_type(GgmlType t) {
  for (const ConvertType& c : kConvertTypes)
    if (c.type == t) return &c;
  return nullptr;
}

const ConvertType& convert_type_or_throw(GgmlType t) {
  const ConvertType* c = find_convert_type(t);
  if (!c) throw ModelError(std::string("convert: cannot write type ") + type_name(t) + " (supported: " + kConvertTypeList + ")");
  return *c;
}

}  // namespace

GgmlType convert_matrix_type(GgmlType requested, uint64_t cols) {
  GgmlType t = requested;
  if (cols % block_elems(t) != 0) {
    const ConvertType* c = find_convert_type(t);
    if (c) t = c->narrow;
  }
  if (cols % block_elems(t) != 0) t = GgmlType::F16;
  return t;
}

GgmlType convert_head_type(GgmlType requested) { return convert_type_or_throw(requested).head; }

uint32_t gguf_file_type(GgmlType type) { return convert_type_or_throw(type).file_type; }

const char* convert_type_list() { return kConvertTypeList; }

namespace {

// The type a matrix is written as: (role, layer, row length) -> type.
using TypeRule = std::function<GgmlType(TensorRole role, uint32_t layer, uint64_t cols)>;

// The architectures written here; others are refused by name rather than failing on a tensor they
// do not have. And what llama.cpp's qwen3moe / qwen35moe cannot say: they have experts in every
// layer and always renormalise the top-k router weights (their GGUFs have no key for either), so a
// file that differs would run wrongly; qwen35moe's shared expert is not optional, and qwen35 takes
// the DeltaNet's value head width from ssm.state_size, the key heads' width.
void check_llama_cpp_can_run(const ModelFile& in) {
  const ModelConfig& c = in.config;
  const bool qwen35 = c.arch == Arch::Qwen35 || c.arch == Arch::Qwen35Moe;
  if (c.arch != Arch::Llama && c.arch != Arch::Qwen2 && c.arch != Arch::Qwen3 && c.arch != Arch::Phi3 &&
      c.arch != Arch::Qwen3Moe && !qwen35)
    throw ModelError(in.path + ": convert writes llama, qwen2, qwen3, phi3, qwen3moe, qwen35 and qwen35moe, not " + c.arch_name);
  if (qwen35 && c.has_recurrent_state() && c.linear_value_head_dim != c.linear_key_head_dim)
    throw ModelError(in.path + ": DeltaNet value heads of " + std::to_string(c.linear_value_head_dim) + " and key heads of " +
                     std::to_string(c.linear_key_head_dim) + ": llama.cpp's " + c.arch_name +
                     " reads one width for both (ssm.state_size), so the GGUF would not load there");
  if (c.arch == Arch::Qwen35Moe && c.shared_expert_intermediate_size == 0)
    throw ModelError(in.path + ": no shared expert, but llama.cpp's qwen35moe requires one (ffn_*_shexp)");
  if (c.arch != Arch::Qwen3Moe && c.arch != Arch::Qwen35Moe) return;
  for (uint32_t l = 0; l < c.num_hidden_layers; ++l)
    if (c.layer(l).ffn != Ffn::Moe)
      throw ModelError(in.path + ": layer " + std::to_string(l) + " has a dense FFN, but llama.cpp's " + c.arch_name +
                       " has experts in every layer (mlp_only_layers, decoder_sparse_step), so the GGUF would not load there");
  if (!c.norm_topk_prob)
    throw ModelError(in.path + ": norm_topk_prob is false, but llama.cpp's " + c.arch_name + " always renormalises the top-" +
                     std::to_string(c.num_experts_per_tok) + " router weights (GGUF has no key for it)");
}

void write_model(const ModelFile& in, const std::string& out_path, uint32_t file_type, bool quantized,
                 const TypeRule& rule, const GgufFile* vocab_source, const ConvertOptions& options) {
  check_llama_cpp_can_run(in);  // before anything is written
  const ModelConfig& c = in.config;
  GgufWriter w;
  write_config_metadata(w, c, file_type, quantized, options.name.empty() ? c.name : options.name);
  // Tokenizer: every tokenizer.* key of the vocabulary source, which must match the embedding.
  copy_tokenizer_metadata(w, c, vocab_source ? vocab_source : in.gguf.get(), in.path);
  // RoPE factor tensors come from the config (HF sources have them only as config.json fields).
  add_rope_factor_tensors(w, c);

  // The list of output tensors, in llama.cpp's usual order.
  const bool permute = c.arch == Arch::Llama && c.rope_style == RopeStyle::Neox;  // HF llama -> GGUF llama
  std::vector<OutTensor> outs;
  auto vec = [&](const std::string& name, std::vector<const TensorView*> parts, uint64_t permute_hd = 0) {
    outs.push_back(OutTensor{name, std::move(parts), permute_hd, GgmlType::F32});
  };
  auto mat = [&](const std::string& name, std::vector<const TensorView*> parts, TensorRole role, uint32_t layer,
                 uint64_t permute_hd = 0, std::vector<uint64_t> ne = {}) {
    const GgmlType t = rule(role, layer, parts[0]->cols());
    outs.push_back(OutTensor{name, std::move(parts), permute_hd, t, std::move(ne)});
  };
  mat("token_embd.weight", {&in.get("token_embd.weight")}, TensorRole::TokenEmbd, 0);
  const bool qwen35 = c.arch == Arch::Qwen35 || c.arch == Arch::Qwen35Moe;
  for (uint32_t l = 0; l < c.num_hidden_layers; ++l) {
    if (qwen35) {  // qwen35_layout.cpp lists them; HF's grouped value heads are tiled on the way
      for (const Qwen35Tensor& q : qwen35_layer_tensors(c, l)) {
        std::vector<const TensorView*> parts;
        if (q.expert_role)
          for (uint32_t e = 0; e < c.num_experts; ++e) parts.push_back(&in.get(expert_tensor(l, q.expert_role, e)));
        else
          parts.push_back(&in.get(q.source));
        uint64_t n = 0;
        for (const TensorView* p : parts) n += p->elements();
        uint64_t want = 1;
        for (uint64_t x : q.ne) want *= x;
        if (n != want || (parts[0]->ne.size() > 1 && parts[0]->cols() != q.ne[0]))
          throw ModelError(in.path + ": tensor " + parts[0]->name + ": " + parts[0]->shape_str() + " cannot be written as " +
                           q.name + " " + shape_to_string(q.ne));
        const bool vector = parts[0]->ne.size() == 1;  // also ffn_gate_inp_shexp, written [d, 1] as HF's [1, d]
        OutTensor o{q.name, std::move(parts), 0, vector ? GgmlType::F32 : rule(q.role, l, q.ne[0]), q.ne};
        if (!c.linear_v_heads_tiled) o.vheads = q.vheads, o.nk = c.linear_num_key_heads, o.nv = c.linear_num_value_heads;
        outs.push_back(std::move(o));
      }
      continue;
    }
    auto g = [&](const char* role, const char* suffix = "weight") { return &in.get(layer_tensor(l, role, suffix)); };
    const uint64_t hd = permute ? c.head_dim : 0;
    vec(layer_tensor(l, "attn_norm"), {g("attn_norm")});
    if (c.arch == Arch::Phi3) {
      mat(layer_tensor(l, "attn_qkv"), {g("attn_q"), g("attn_k"), g("attn_v")}, TensorRole::AttnQkv, l);
    } else {
      mat(layer_tensor(l, "attn_q"), {g("attn_q")}, TensorRole::AttnQ, l, hd);
      mat(layer_tensor(l, "attn_k"), {g("attn_k")}, TensorRole::AttnK, l, hd);
      mat(layer_tensor(l, "attn_v"), {g("attn_v")}, TensorRole::AttnV, l);
    }
    if (c.attn_bias) {
      vec(layer_tensor(l, "attn_q", "bias"), {g("attn_q", "bias")}, hd);
      vec(layer_tensor(l, "attn_k", "bias"), {g("attn_k", "bias")}, hd);
      vec(layer_tensor(l, "attn_v", "bias"), {g("attn_v", "bias")});
    }
    if (c.qk_norm) {
      vec(layer_tensor(l, "attn_q_norm"), {g("attn_q_norm")});
      vec(layer_tensor(l, "attn_k_norm"), {g("attn_k_norm")});
    }
    mat(layer_tensor(l, "attn_output"), {g("attn_output")}, TensorRole::AttnOutput, l);
    vec(layer_tensor(l, "ffn_norm"), {g("ffn_norm")});
    if (c.layer(l).ffn == Ffn::Moe) {
      // The router, then each role's experts stacked into one tensor: GGUF ne [cols, rows, experts],
      // expert e's rows after expert e-1's, as llama.cpp's converter torch.stack()s them.
      mat(layer_tensor(l, "ffn_gate_inp"), {g("ffn_gate_inp")}, TensorRole::FfnGateInp, l);
      const uint64_t d = c.hidden_size, ff = c.moe_intermediate_size, E = c.num_experts;
      auto experts = [&](const char* role, TensorRole r, uint64_t cols, uint64_t rows) {
        std::vector<const TensorView*> parts;
        for (uint32_t e = 0; e < E; ++e) parts.push_back(&in.get(expert_tensor(l, role, e)));
        mat(layer_tensor(l, (std::string(role) + "_exps").c_str()), std::move(parts), r, l, 0, {cols, rows, E});
      };
      experts("ffn_gate", TensorRole::FfnGate, d, ff);
      experts("ffn_up", TensorRole::FfnUp, d, ff);
      experts("ffn_down", TensorRole::FfnDown, ff, d);
      continue;
    }
    if (c.arch == Arch::Phi3) {
      // llama.cpp's phi3: gate rows, then up
      mat(layer_tensor(l, "ffn_up"), {g("ffn_gate"), g("ffn_up")}, TensorRole::FfnUp, l);
    } else {
      mat(layer_tensor(l, "ffn_gate"), {g("ffn_gate")}, TensorRole::FfnGate, l);
      mat(layer_tensor(l, "ffn_up"), {g("ffn_up")}, TensorRole::FfnUp, l);
    }
    mat(layer_tensor(l, "ffn_down"), {g("ffn_down")}, TensorRole::FfnDown, l);
  }
  vec("output_norm.weight", {&in.get("output_norm.weight")});
  if (!c.tie_word_embeddings) mat("output.weight", {&in.get("output.weight")}, TensorRole::Output, 0);

  // The rows of Q/K heads: Q has num_attention_heads heads, K num_key_value_heads, both head_dim
  // rows each, so permuting within head_dim-sized groups is the same for both.
  std::vector<GgmlType> written_types;
  for (size_t i = 0; i < w.tensor_count(); ++i) written_types.push_back(GgmlType::F32);
  for (const OutTensor& t : outs) {
    written_types.push_back(t.type);
    const TensorView& first = *t.parts[0];
    if (first.ne.size() == 1) {
      std::vector<float> values = vector_values(t);
      const uint64_t n = values.size();
      w.add_tensor_f32(t.name, GgmlType::F32, t.ne.empty() ? std::vector<uint64_t>{n} : t.ne, std::move(values));
    } else {
      const std::vector<uint64_t> ne = t.ne.empty() ? std::vector<uint64_t>{first.cols(), total_rows(t)} : t.ne;
      w.add_tensor_rows(t.name, t.type, ne, [t](uint8_t* out, uint64_t r, uint64_t n) { fill_rows(t, r, n, out); });
    }
  }
  GgufWriter::ProgressFn progress;
  if (options.progress)
    progress = [&](size_t i, size_t n, const std::string& name) { options.progress(i, n, name, written_types[i]); };
  w.write(out_path, progress);
}

}  // namespace

void convert_model(const ModelFile& in, const std::string& out_path, GgmlType type, const GgufFile* vocab_source,
                   const ConvertOptions& options) {
  convert_type_or_throw(type);  // before anything is written
  const GgmlType head_type = convert_head_type(type);
  const bool tied = in.config.tie_word_embeddings;
  const TypeRule rule = [&](TensorRole role, uint32_t, uint64_t cols) {
    // llama.cpp's converter forces the router (and Qwen3.5's conv, shared expert gate) to F32
    if (role == TensorRole::FfnGateInp || role == TensorRole::Unquantized) return GgmlType::F32;
    const bool head = role == TensorRole::Output || (tied && role == TensorRole::TokenEmbd);
    return convert_matrix_type(head ? head_type : type, cols);
  };
  write_model(in, out_path, gguf_file_type(type), block_elems(type) > 1, rule, vocab_source, options);
}

void convert_model(const ModelFile& in, const std::string& out_path, QuantMix mix, const GgufFile* vocab_source,
                   const ConvertOptions& options) {
  const ModelConfig& c = in.config;
  const uint32_t gqa = c.num_attention_heads / std::max(1u, c.num_key_value_heads);
  const TypeRule rule = [&](TensorRole role, uint32_t layer, uint64_t cols) {
    return quant_mix_type(mix, role, layer, c.num_hidden_layers, c.tie_word_embeddings, cols, gqa, c.num_experts);
  };
  write_model(in, out_path, quant_mix_file_type(mix), mix != QuantMix::F16, rule, vocab_source, options);
}

}  // namespace ztvm
