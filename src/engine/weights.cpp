#include "engine/weights.h"

#include <algorithm>

#include "engine/gpu_layout.h"
#include "model/model_error.h"

namespace ztvm {

uint64_t Matrix::bytes() const {
  uint64_t b = 0;
  for (auto& p : parts) b += p.buf.size();
  return b;
}

uint64_t Weights::bytes_per_token() const {
  uint64_t b = lm_head().bytes() + (uint64_t)token_embd.cols * 4;  // embedding reads one row
  for (auto& l : layers) {
    b += l.qkv.bytes() + l.attn_output.bytes() + l.gate_up.bytes() + l.ffn_down.bytes() + l.gate.bytes() +
         l.ssm_beta.bytes() + l.ssm_alpha.bytes() + l.shexp_gate_up.bytes() + l.shexp_down.bytes() + l.shexp_gate.bytes();
    if (l.moe.count) b += l.moe.router.bytes() + experts_per_token * l.moe.bytes_per_expert();
  }
  return b;
}

namespace {

// Rows [first, first + count) of a 2-D tensor as a view of its bytes.
TensorView rows_of(const TensorView& t, uint64_t first, uint64_t count) {
  TensorView v = t;
  const uint64_t rb = row_bytes(t.type, t.cols());
  v.ne = {t.cols(), count};
  v.data = t.data + first * rb;
  v.nbytes = count * rb;
  return v;
}

// Largest buffer one binding may cover; kernels index bytes with u32, so never above 2 GiB.
uint64_t part_limit(gpu::Device& dev) { return std::min<uint64_t>(dev.max_binding_size(), 1ull << 31); }

struct Uploader {
  gpu::Device& dev;
  const std::function<void(uint64_t, uint64_t)>& progress;
  uint64_t done = 0, total = 0;

  // WebGPU writes whole words at word offsets, and rows of 17-, 18- or 22-byte blocks (MXFP4, Q4_0,
  // Q5_0) may end mid-word: a write's last partial word waits here for the write that continues it
  // (the up rows after the gate rows of one part), or flush() writes it padded with zeros.
  struct Carry {
    const gpu::Buffer* buf = nullptr;
    uint64_t at = 0;  // a word offset
    std::vector<uint8_t> bytes;  // 1..3
  } carry;

  // Writes in slices so Dawn's staging memory stays small.
  void write(const gpu::Buffer& b, const uint8_t* src, uint64_t size, uint64_t offset) {
    if (offset % 4) {  // completes the carried word first
      if (carry.buf != &b || carry.at + carry.bytes.size() != offset)
        throw std::logic_error("upload: an unaligned write to '" + b.label() + "' continues no earlier one");
      const uint64_t k = std::min<uint64_t>(4 - offset % 4, size);
      carry.bytes.insert(carry.bytes.end(), src, src + k);
      src += k, size -= k, offset += k, done += k;
      if (carry.bytes.size() < 4) return;
    }
    flush();
    const uint64_t whole = size & ~uint64_t(3), slice = 64ull << 20;
    for (uint64_t o = 0; o < whole; o += slice) {
      uint64_t n = std::min(slice, whole - o);
      dev.write(b, src + o, n, offset + o);
      done += n;
      if (progress) progress(done, total);
    }
    if (whole < size) carry = {&b, offset + whole, std::vector<uint8_t>(src + whole, src + size)}, done += size - whole;
  }
  void flush() {
    if (carry.buf) dev.write(*carry.buf, carry.bytes.data(), carry.bytes.size(), carry.at);
    carry = {};
  }

  // Whole rows of a matrix, in the layout the kernels read (engine/gpu_layout.h).
  void write_rows(const gpu::Buffer& b, GgmlType type, uint64_t cols, const uint8_t* src, uint64_t rows,
                  uint64_t offset) {
    const uint64_t rb = row_bytes(type, cols);
    if (!gpu_layout_differs(type, cols)) return write(b, src, rows * rb, offset);
    const uint64_t per_slice = std::max<uint64_t>(1, (64ull << 20) / rb);
    std::vector<uint8_t> tmp;
    for (uint64_t r = 0; r < rows; r += per_slice) {
      const uint64_t n = std::min(per_slice, rows - r);
      tmp.resize(n * rb);
      gpu_row_layout(type, cols, src + r * rb, tmp.data(), n, offset + r * rb);
      write(b, tmp.data(), n * rb, offset + r * rb);
    }
  }

  gpu::Buffer vector_f32(const std::string& label, const TensorView& t) {
    std::vector<float> v(t.elements());
    dequantize_row(t.type, t.data, v.data(), v.size());
    gpu::Buffer b = dev.buffer(label, v.size() * 4);
    dev.write(b, v.data(), v.size() * 4);
    return b;
  }

  // Rows of `views` (all with the same column count) appended to m, split into parts that fit a binding.
  void append_split(Matrix& m, const std::string& label, const std::vector<const TensorView*>& views, bool numbered) {
    const uint64_t limit = part_limit(dev);
    for (const TensorView* v : views) {
      uint64_t rb = row_bytes(v->type, v->cols());
      uint32_t per_part = (uint32_t)std::max<uint64_t>(1, limit / rb);
      for (uint32_t r = 0; r < v->rows(); r += per_part) {
        uint32_t n = std::min<uint32_t>(per_part, (uint32_t)v->rows() - r);
        MatrixPart p;
        p.type = v->type;
        p.row0 = m.rows + r;
        p.rows = n;
        p.buf = dev.buffer(label + (numbered || v->rows() > per_part ? "." + std::to_string(m.parts.size()) : ""), n * rb);
        write_rows(p.buf, v->type, m.cols, v->data + r * rb, n, 0);
        flush();
        m.parts.push_back(std::move(p));
      }
      m.rows += (uint32_t)v->rows();
    }
  }

  void check_cols(const std::string& label, const std::vector<const TensorView*>& views) {
    for (const TensorView* v : views)
      if (v->cols() != views[0]->cols())
        throw ModelError(label + ": " + v->name + " has " + std::to_string(v->cols()) + " columns, expected " +
                         std::to_string(views[0]->cols()));
  }

  Matrix matrix(const std::string& label, const std::vector<const TensorView*>& views) {
    check_cols(label, views);
    Matrix m;
    m.cols = (uint32_t)views[0]->cols();
    append_split(m, label, views, views.size() > 1);
    return m;
  }

  // Several tensors concatenated by rows (QKV). Each run of one type is one part where it fits a
  // binding, so a Q4_K_M QKV is two parts (q|k Q4_K, v Q6_K on some layers), not three: a part is a
  // dispatch per pass.
  Matrix concat(const std::string& label, const std::vector<const TensorView*>& views) {
    check_cols(label, views);
    Matrix m;
    m.cols = (uint32_t)views[0]->cols();
    for (size_t i = 0, j; i < views.size(); i = j) {
      uint64_t bytes = 0;
      for (j = i; j < views.size() && views[j]->type == views[i]->type; j++) bytes += views[j]->nbytes;
      const bool whole = i == 0 && j == views.size();
      if (bytes > part_limit(dev)) {
        append_split(m, label, {views.begin() + i, views.begin() + j}, !whole);
        continue;
      }
      MatrixPart p;
      p.type = views[i]->type;
      p.row0 = m.rows;
      p.buf = dev.buffer(label + (whole ? "" : "." + std::to_string(m.parts.size())), bytes);
      for (uint64_t off = 0; i < j; off += views[i]->nbytes, i++) {
        write_rows(p.buf, views[i]->type, m.cols, views[i]->data, views[i]->rows(), off);
        p.rows += (uint32_t)views[i]->rows();
      }
      flush();
      m.rows += p.rows;
      m.parts.push_back(std::move(p));
    }
    return m;
  }

  // gate|up for the gated matmul: each part holds gate rows [a, b) then up rows [a, b).
  Matrix gated(const std::string& label, const TensorView& gate, const TensorView& up) {
    if (gate.type != up.type)
      throw ModelError(label + ": ffn_gate is " + type_name(gate.type) + " but ffn_up is " + type_name(up.type) +
                       " (mixed gate/up types are not supported yet)");
    Matrix m;
    m.cols = (uint32_t)gate.cols();
    m.rows = (uint32_t)gate.rows();
    m.gated = true;
    uint64_t rb = row_bytes(gate.type, gate.cols());
    uint32_t per_part = (uint32_t)std::max<uint64_t>(1, part_limit(dev) / (2 * rb));
    for (uint32_t r = 0; r < m.rows; r += per_part) {
      uint32_t n = std::min(per_part, m.rows - r);
      MatrixPart p;
      p.type = gate.type;
      p.row0 = r;
      p.rows = n;
      p.buf = dev.buffer(label + (n < m.rows ? "." + std::to_string(m.parts.size()) : ""), 2 * n * rb);
      write_rows(p.buf, gate.type, m.cols, gate.data + r * rb, n, 0);
      write_rows(p.buf, up.type, m.cols, up.data + r * rb, n, n * rb);
      flush();
      m.parts.push_back(std::move(p));
    }
    return m;
  }

  // A layer's experts stacked as Experts holds them, each expert's rows written where its matvec
  // reads them (from GGUF's stacked tensors or a checkpoint's per-expert ones alike: the views).
  Experts experts(const std::string& label, const TensorView& router, const ExpertViews& gate,
                  const ExpertViews& up_views, const ExpertViews& down) {
    Experts x;
    x.count = (uint32_t)gate.size(), x.ff = (uint32_t)gate.at(0)->rows(), x.hidden = (uint32_t)gate[0]->cols();
    if (up_views.size() != x.count || down.size() != x.count)
      throw ModelError(label + "experts: " + std::to_string(x.count) + " gate, " + std::to_string(up_views.size()) +
                       " up and " + std::to_string(down.size()) + " down tensors");
    x.router = matrix(label + "ffn_gate_inp", {&router});
    auto stack = [&](const ExpertViews& a, const ExpertViews* b, GgmlType& type, const std::string& name) {
      const TensorView& first = *a[0];
      type = first.type;
      const uint64_t rb = row_bytes(type, first.cols()), bytes = (uint64_t)x.count * first.rows() * rb * (b ? 2 : 1);
      if (bytes > part_limit(dev))
        throw ModelError(label + name + " experts take " + std::to_string(bytes >> 20) +
                         " MiB, more than one GPU binding holds (" + std::to_string(part_limit(dev) >> 20) + " MiB)");
      gpu::Buffer buf = dev.buffer(label + name + "_exps", bytes);
      uint64_t at = 0;
      for (uint32_t e = 0; e < x.count; e++)
        for (const TensorView* v : {a[e], b ? (*b)[e] : nullptr}) {
          if (!v) continue;
          if (v->type != type || v->ne != first.ne)
            throw ModelError(v->name + " is " + type_name(v->type) + " " + v->shape_str() + ", unlike " + first.name +
                             "'s " + type_name(type) + " " + first.shape_str() +
                             " (the experts of one layer must share type and shape)");
          write_rows(buf, type, v->cols(), v->data, v->rows(), at);
          at += v->rows() * rb;
        }
      flush();
      return buf;
    };
    x.gate_up = stack(gate, &up_views, x.gate_up_type, "ffn_gate_up");
    x.down = stack(down, nullptr, x.down_type, "ffn_down");
    if (up_views[0]->ne != gate[0]->ne || down[0]->rows() != x.hidden || down[0]->cols() != x.ff)
      throw ModelError(label + "experts: gate " + gate[0]->shape_str() + ", up " + up_views[0]->shape_str() +
                       ", down " + down[0]->shape_str() + " do not make an FFN");
    return x;
  }
};

}  // namespace

Matrix upload_matrix(gpu::Device& dev, const std::string& label, const std::vector<const TensorView*>& views) {
  std::function<void(uint64_t, uint64_t)> none;
  Uploader up{dev, none};
  return up.concat(label, views);
}

Experts upload_experts(gpu::Device& dev, const std::string& label, const TensorView& router, const ExpertViews& gate,
                       const ExpertViews& up_views, const ExpertViews& down) {
  std::function<void(uint64_t, uint64_t)> none;
  Uploader up{dev, none};
  return up.experts(label, router, gate, up_views, down);
}

Matrix upload_gated(gpu::Device& dev, const std::string& label, const TensorView& gate, const TensorView& up_view) {
  std::function<void(uint64_t, uint64_t)> none;
  Uploader up{dev, none};
  return up.gated(label, gate, up_view);
}

std::unique_ptr<Weights> upload_weights(gpu::Device& dev, const ModelFile& model,
                                        const std::function<void(uint64_t, uint64_t)>& progress) {
  const ModelConfig& c = model.config;
  Uploader up{dev, progress};
  for (auto& [name, t] : model.tensors)  // a stacked experts tensor goes up as its experts' views
    if (!(name.size() > 12 && name.compare(name.size() - 12, 12, "_exps.weight") == 0)) up.total += t.nbytes;
  auto w = std::make_unique<Weights>();
  w->experts_per_token = c.num_experts_per_tok;
  w->token_embd = up.matrix("token_embd", {&model.get("token_embd.weight")});
  if (const TensorView* out = model.find("output.weight")) {
    w->output = up.matrix("output", {out});
  } else {
    w->output_is_embd = true;
  }
  w->output_norm = up.vector_f32("output_norm", model.get("output_norm.weight"));
  const uint32_t hd = c.head_dim, qkv_rows = (c.num_attention_heads + 2 * c.num_key_value_heads) * hd;
  for (uint32_t i = 0; i < c.num_hidden_layers; i++) {
    std::string L = "blk." + std::to_string(i) + ".";
    std::string label = "L" + std::to_string(i) + ".";
    LayerWeights lw;
    lw.attn_norm = up.vector_f32(label + "attn_norm", model.get(L + "attn_norm.weight"));
    lw.ffn_norm = up.vector_f32(label + "ffn_norm", model.get(L + "ffn_norm.weight"));
    const Mixer mixer = c.layer(i).mixer;
    if (mixer == Mixer::GatedDeltaNet) {
      lw.qkv = up.matrix(label + "attn_qkv", {&model.get(L + "attn_qkv.weight")});
      lw.gate = up.matrix(label + "attn_gate", {&model.get(L + "attn_gate.weight")});
      lw.ssm_beta = up.matrix(label + "ssm_beta", {&model.get(L + "ssm_beta.weight")});
      lw.ssm_alpha = up.matrix(label + "ssm_alpha", {&model.get(L + "ssm_alpha.weight")});
      lw.attn_output = up.matrix(label + "ssm_out", {&model.get(L + "ssm_out.weight")});
      lw.ssm_conv1d = up.vector_f32(label + "ssm_conv1d", model.get(L + "ssm_conv1d.weight"));
      lw.ssm_a = up.vector_f32(label + "ssm_a", model.get(L + "ssm_a"));
      lw.ssm_dt = up.vector_f32(label + "ssm_dt", model.get(L + "ssm_dt.bias"));
      lw.ssm_norm = up.vector_f32(label + "ssm_norm", model.get(L + "ssm_norm.weight"));
    } else if (mixer == Mixer::GatedAttention) {
      // attn_q's rows interleave per head [HD query | HD gate]: the query rows join k and v in qkv (the
      // layout rope_kv reads), the gate rows make their own matrix.
      const TensorView& q = model.get(L + "attn_q.weight");
      std::vector<TensorView> rows;
      rows.reserve(2 * c.num_attention_heads);
      for (uint32_t h = 0; h < c.num_attention_heads; h++) rows.push_back(rows_of(q, 2ull * h * hd, hd));
      for (uint32_t h = 0; h < c.num_attention_heads; h++) rows.push_back(rows_of(q, 2ull * h * hd + hd, hd));
      std::vector<const TensorView*> qkv, gate;
      for (uint32_t h = 0; h < c.num_attention_heads; h++) qkv.push_back(&rows[h]), gate.push_back(&rows[c.num_attention_heads + h]);
      qkv.push_back(&model.get(L + "attn_k.weight"));
      qkv.push_back(&model.get(L + "attn_v.weight"));
      lw.qkv = up.concat(label + "attn_qkv", qkv);
      lw.gate = up.concat(label + "attn_gate", gate);
      lw.attn_output = up.matrix(label + "attn_output", {&model.get(L + "attn_output.weight")});
    } else {
      lw.qkv = up.concat(label + "attn_qkv", {&model.get(L + "attn_q.weight"), &model.get(L + "attn_k.weight"),
                                              &model.get(L + "attn_v.weight")});
      lw.attn_output = up.matrix(label + "attn_output", {&model.get(L + "attn_output.weight")});
    }
    if (c.layer(i).ffn == Ffn::Moe) {
      ExpertViews gate, up_views, down;
      for (uint32_t e = 0; e < c.num_experts; e++) {
        gate.push_back(&model.get(expert_tensor(i, "ffn_gate", e)));
        up_views.push_back(&model.get(expert_tensor(i, "ffn_up", e)));
        down.push_back(&model.get(expert_tensor(i, "ffn_down", e)));
      }
      lw.moe = up.experts(label, model.get(L + "ffn_gate_inp.weight"), gate, up_views, down);
      if (c.shared_expert_intermediate_size) {
        lw.shexp_gate_up = up.gated(label + "ffn_gate_up_shexp", model.get(L + "ffn_gate_shexp.weight"),
                                    model.get(L + "ffn_up_shexp.weight"));
        lw.shexp_down = up.matrix(label + "ffn_down_shexp", {&model.get(L + "ffn_down_shexp.weight")});
        lw.shexp_gate = up.matrix(label + "ffn_gate_inp_shexp", {&model.get(L + "ffn_gate_inp_shexp.weight")});
      }
    } else {
      lw.gate_up = up.gated(label + "ffn_gate_up", model.get(L + "ffn_gate.weight"), model.get(L + "ffn_up.weight"));
      lw.ffn_down = up.matrix(label + "ffn_down", {&model.get(L + "ffn_down.weight")});
    }
    // aux: [q_norm | k_norm | bias]; RMSNorm weights of 1 and zero bias when the model has none.
    std::vector<float> aux(2 * hd + qkv_rows, 0.f);
    std::fill(aux.begin(), aux.begin() + 2 * hd, 1.f);
    auto put = [&](const std::string& name, size_t at, size_t n) {
      const TensorView* t = model.find(name);
      if (!t) return;
      if (t->elements() != n) throw ModelError(model.path + ": tensor " + name + ": expected " + std::to_string(n) + " elements, got " + std::to_string(t->elements()));
      dequantize_row(t->type, t->data, aux.data() + at, n);
    };
    put(L + "attn_q_norm.weight", 0, hd);
    put(L + "attn_k_norm.weight", hd, hd);
    put(L + "attn_q.bias", 2 * hd, c.num_attention_heads * hd);
    put(L + "attn_k.bias", 2 * hd + c.num_attention_heads * hd, c.num_key_value_heads * hd);
    put(L + "attn_v.bias", 2 * hd + (c.num_attention_heads + c.num_key_value_heads) * hd, c.num_key_value_heads * hd);
    lw.aux = dev.buffer(label + "aux", aux.size() * 4);
    dev.write(lw.aux, aux.data(), aux.size() * 4);
    w->layers.push_back(std::move(lw));
  }
  dev.wait_idle();
  return w;
}

}  // namespace ztvm
