#include "model/gguf_writer.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include "model/model_error.h"

namespace ztvm {

namespace {

constexpr size_t kMaxTensorName = 63;  // ggml's GGML_MAX_NAME (64) minus the terminating NUL

// Buffered little-endian output to a FILE*, with one error path.
class Out {
 public:
  Out(const std::string& path) : path_(path), f_(std::fopen(path.c_str(), "wb")) {
    if (!f_) throw ModelError(path + ": cannot create: " + std::strerror(errno));
  }
  ~Out() {
    if (f_) std::fclose(f_);
  }
  void bytes(const void* p, uint64_t n) {
    if (n && std::fwrite(p, 1, n, f_) != n) throw ModelError(path_ + ": write failed: " + std::strerror(errno));
    written_ += n;
  }
  template <typename T>
  void pod(T v) { bytes(&v, sizeof v); }
  void string(const std::string& s) {
    pod<uint64_t>(s.size());
    bytes(s.data(), s.size());
  }
  void pad(uint64_t alignment) {
    static const uint8_t zeros[256] = {};
    while (written_ % alignment) bytes(zeros, std::min<uint64_t>(alignment - written_ % alignment, sizeof zeros));
  }
  void close() {
    FILE* f = f_;
    f_ = nullptr;
    if (std::fclose(f) != 0) throw ModelError(path_ + ": close failed: " + std::strerror(errno));
  }
  uint64_t written() const { return written_; }

 private:
  std::string path_;
  FILE* f_;
  uint64_t written_ = 0;
};

void write_scalar(Out& out, GgufValueType t, int64_t i, double r) {
  switch (t) {
    case GgufValueType::U8: case GgufValueType::Bool: out.pod<uint8_t>(uint8_t(i)); break;
    case GgufValueType::I8: out.pod<int8_t>(int8_t(i)); break;
    case GgufValueType::U16: out.pod<uint16_t>(uint16_t(i)); break;
    case GgufValueType::I16: out.pod<int16_t>(int16_t(i)); break;
    case GgufValueType::U32: out.pod<uint32_t>(uint32_t(i)); break;
    case GgufValueType::I32: out.pod<int32_t>(int32_t(i)); break;
    case GgufValueType::U64: out.pod<uint64_t>(uint64_t(i)); break;
    case GgufValueType::I64: out.pod<int64_t>(i); break;
    case GgufValueType::F32: out.pod<float>(float(r)); break;
    case GgufValueType::F64: out.pod<double>(r); break;
    default: break;
  }
}

void write_value(Out& out, const GgufValue& v) {
  if (v.type == GgufValueType::String) return out.string(v.str);
  if (v.type != GgufValueType::Array) return write_scalar(out, v.type, v.integer, v.real);
  out.pod<uint32_t>(uint32_t(v.elem_type));
  out.pod<uint64_t>(v.array_size());
  if (v.elem_type == GgufValueType::String) {
    for (const std::string& s : v.strings) out.string(s);
  } else if (v.elem_type == GgufValueType::Array) {
    for (const GgufValue& item : v.items) write_value(out, item);
  } else if (gguf_type_is_float(v.elem_type)) {
    for (double r : v.reals) write_scalar(out, v.elem_type, 0, r);
  } else {
    for (int64_t i : v.ints) write_scalar(out, v.elem_type, i, 0);
  }
}

}  // namespace

void GgufWriter::set(const std::string& key, GgufValue value) {
  if (key == "general.alignment") {
    if (!gguf_type_is_integer(value.type) || value.integer <= 0 || (value.integer & (value.integer - 1)))
      throw ModelError("general.alignment: expected a power of two, got " + value.summary());
    alignment_ = uint64_t(value.integer);
  }
  auto it = kv_index_.find(key);
  if (it != kv_index_.end()) {
    kv_[it->second].second = std::move(value);
    return;
  }
  kv_index_[key] = kv_.size();
  kv_.emplace_back(key, std::move(value));
}

void GgufWriter::set_f32_array(const std::string& key, const std::vector<float>& v) {
  set(key, GgufValue::of_floats(GgufValueType::F32, std::vector<double>(v.begin(), v.end())));
}

void GgufWriter::set_i32_array(const std::string& key, const std::vector<int32_t>& v) {
  set(key, GgufValue::of_ints(GgufValueType::I32, std::vector<int64_t>(v.begin(), v.end())));
}

void GgufWriter::remove(const std::string& key) {
  auto it = kv_index_.find(key);
  if (it == kv_index_.end()) return;
  kv_.erase(kv_.begin() + long(it->second));
  kv_index_.clear();
  for (size_t i = 0; i < kv_.size(); ++i) kv_index_[kv_[i].first] = i;
  if (key == "general.alignment") alignment_ = 32;
}

void GgufWriter::add_tensor(const std::string& name, GgmlType type, std::vector<uint64_t> ne, FillFn fill) {
  add(name, type, std::move(ne), std::move(fill), {});
}

void GgufWriter::add_tensor_rows(const std::string& name, GgmlType type, std::vector<uint64_t> ne, RowsFn fill) {
  add(name, type, std::move(ne), {}, std::move(fill));
}

void GgufWriter::add(const std::string& name, GgmlType type, std::vector<uint64_t> ne, FillFn fill, RowsFn fill_rows) {
  if (name.empty() || name.size() > kMaxTensorName)
    throw ModelError("tensor name '" + name + "': expected 1.." + std::to_string(kMaxTensorName) + " bytes, got " +
                     std::to_string(name.size()));
  if (ne.empty() || ne.size() > 4)
    throw ModelError("tensor '" + name + "': expected 1..4 dimensions, got " + std::to_string(ne.size()));
  if (tensor_index_.count(name)) throw ModelError("tensor '" + name + "' added twice");
  uint64_t rows = 1;
  for (size_t i = 1; i < ne.size(); ++i) rows *= ne[i];
  uint64_t nbytes;
  try {
    nbytes = row_bytes(type, ne[0]) * rows;
  } catch (const ModelError& e) {
    throw ModelError("tensor '" + name + "': " + e.what());
  }
  tensor_index_[name] = tensors_.size();
  tensors_.push_back(Tensor{name, type, std::move(ne), nbytes, std::move(fill), std::move(fill_rows)});
}

void GgufWriter::add_tensor(const std::string& name, GgmlType type, std::vector<uint64_t> ne, std::vector<uint8_t> bytes) {
  auto data = std::make_shared<std::vector<uint8_t>>(std::move(bytes));
  add_tensor(name, type, std::move(ne), [data, name](uint8_t* out, uint64_t nbytes) {
    if (data->size() != nbytes)
      throw ModelError("tensor '" + name + "': expected " + std::to_string(nbytes) + " bytes, got " +
                       std::to_string(data->size()));
    std::memcpy(out, data->data(), nbytes);
  });
}

void GgufWriter::add_tensor_f32(const std::string& name, GgmlType type, std::vector<uint64_t> ne, std::vector<float> values) {
  auto data = std::make_shared<std::vector<float>>(std::move(values));
  const uint64_t cols = ne.at(0);
  add_tensor(name, type, std::move(ne), [data, name, type, cols](uint8_t* out, uint64_t nbytes) {
    const uint64_t rb = row_bytes(type, cols);
    if (data->size() != nbytes / rb * cols)
      throw ModelError("tensor '" + name + "': expected " + std::to_string(nbytes / rb * cols) + " values, got " +
                       std::to_string(data->size()));
    for (uint64_t r = 0; r < nbytes / rb; ++r) quantize_row(type, data->data() + r * cols, out + r * rb, cols);
  });
}

void GgufWriter::write(const std::string& path, const ProgressFn& progress) const {
  const std::string tmp = path + ".tmp";
  try {
    Out out(tmp);
    out.bytes("GGUF", 4);
    out.pod<uint32_t>(3);
    out.pod<uint64_t>(tensors_.size());
    out.pod<uint64_t>(kv_.size());
    for (const auto& [key, value] : kv_) {
      out.string(key);
      out.pod<uint32_t>(uint32_t(value.type));
      write_value(out, value);
    }
    // Tensor infos: offsets are consecutive, each tensor padded to the alignment.
    uint64_t offset = 0;
    for (const Tensor& t : tensors_) {
      out.string(t.name);
      out.pod<uint32_t>(uint32_t(t.ne.size()));
      for (uint64_t n : t.ne) out.pod<uint64_t>(n);
      out.pod<uint32_t>(uint32_t(t.type));
      out.pod<uint64_t>(offset);
      offset += (t.nbytes + alignment_ - 1) / alignment_ * alignment_;
    }
    out.pad(alignment_);
    std::vector<uint8_t> buf;
    for (size_t i = 0; i < tensors_.size(); ++i) {
      const Tensor& t = tensors_[i];
      if (progress) progress(i, tensors_.size(), t.name);
      if (t.fill_rows) {
        const uint64_t rb = row_bytes(t.type, t.ne[0]), rows = t.nbytes / rb;
        const uint64_t chunk = std::clamp<uint64_t>(kChunkBytes / rb, 1, std::max<uint64_t>(rows, 1));
        buf.assign(chunk * rb, 0);
        for (uint64_t r = 0; r < rows; r += chunk) {
          const uint64_t n = std::min(chunk, rows - r);
          t.fill_rows(buf.data(), r, n);
          out.bytes(buf.data(), n * rb);
        }
      } else {
        buf.assign(t.nbytes, 0);
        t.fill(buf.data(), t.nbytes);
        out.bytes(buf.data(), t.nbytes);
      }
      out.pad(alignment_);
    }
    out.close();
  } catch (...) {
    std::remove(tmp.c_str());
    throw;
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    std::remove(tmp.c_str());
    throw ModelError(path + ": cannot rename from " + tmp + ": " + std::strerror(err));
  }
}

}  // namespace ztvm
