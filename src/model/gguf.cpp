// GGUF parsing: a bounds-checked cursor over the mapping. Every count and length read from the file
// is checked against the bytes that remain before anything is allocated, so corrupt or truncated
// files end in a one-line ModelError, never in a crash or a huge allocation.
#include "model/gguf.h"

#include <cstring>

#include "model/mapped_file.h"
#include "model/model_error.h"

namespace ztvm {

namespace {

constexpr uint64_t kDefaultAlignment = 32;
constexpr uint32_t kMaxDims = 4;        // ggml's GGML_MAX_DIMS
constexpr int kMaxArrayNesting = 8;     // arrays of arrays deeper than this are surely corrupt

class Cursor {
 public:
  Cursor(const std::string& path, const uint8_t* data, uint64_t size) : path_(path), data_(data), size_(size) {}

  uint64_t pos() const { return pos_; }
  uint64_t remaining() const { return size_ - pos_; }

  void need(uint64_t n, const std::string& what) const {
    if (n > remaining())
      throw ModelError(path_ + ": truncated reading " + what + " at byte " + std::to_string(pos_) + " (need " +
                       std::to_string(n) + " bytes, " + std::to_string(remaining()) + " left)");
  }
  template <typename T>
  T read(const std::string& what) {
    need(sizeof(T), what);
    T v;
    std::memcpy(&v, data_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  std::string read_string(const std::string& what) {
    const uint64_t len = read<uint64_t>(what + " length");
    need(len, what + " (" + std::to_string(len) + " bytes)");
    std::string s(reinterpret_cast<const char*>(data_ + pos_), len);
    pos_ += len;
    return s;
  }

 private:
  const std::string& path_;
  const uint8_t* data_;
  uint64_t size_;
  uint64_t pos_ = 0;
};

// Encoded size of one scalar element (0 for String/Array, which are variable).
uint64_t scalar_size(GgufValueType t) {
  switch (t) {
    case GgufValueType::U8: case GgufValueType::I8: case GgufValueType::Bool: return 1;
    case GgufValueType::U16: case GgufValueType::I16: return 2;
    case GgufValueType::U32: case GgufValueType::I32: case GgufValueType::F32: return 4;
    case GgufValueType::U64: case GgufValueType::I64: case GgufValueType::F64: return 8;
    default: return 0;
  }
}

bool valid_value_type(uint32_t t) { return t <= uint32_t(GgufValueType::F64); }

int64_t read_integer(Cursor& c, GgufValueType t, const std::string& what) {
  switch (t) {
    case GgufValueType::U8: return c.read<uint8_t>(what);
    case GgufValueType::I8: return c.read<int8_t>(what);
    case GgufValueType::Bool: return c.read<uint8_t>(what) != 0;
    case GgufValueType::U16: return c.read<uint16_t>(what);
    case GgufValueType::I16: return c.read<int16_t>(what);
    case GgufValueType::U32: return c.read<uint32_t>(what);
    case GgufValueType::I32: return c.read<int32_t>(what);
    case GgufValueType::U64: return int64_t(c.read<uint64_t>(what));
    default: return c.read<int64_t>(what);
  }
}

GgufValue read_value(Cursor& c, const std::string& path, GgufValueType t, const std::string& key, int depth) {
  GgufValue v;
  v.type = t;
  if (t == GgufValueType::String) {
    v.str = c.read_string("value of key '" + key + "'");
  } else if (gguf_type_is_float(t)) {
    v.real = t == GgufValueType::F32 ? double(c.read<float>(key)) : c.read<double>(key);
  } else if (t != GgufValueType::Array) {
    v.integer = read_integer(c, t, "value of key '" + key + "'");
  } else {
    if (depth >= kMaxArrayNesting)
      throw ModelError(path + ": key '" + key + "': arrays nested deeper than " + std::to_string(kMaxArrayNesting));
    const uint32_t et = c.read<uint32_t>("array type of key '" + key + "'");
    if (!valid_value_type(et))
      throw ModelError(path + ": key '" + key + "': unknown array element type " + std::to_string(et));
    v.elem_type = GgufValueType(et);
    const uint64_t n = c.read<uint64_t>("array length of key '" + key + "'");
    // Smallest possible encoding per element: strings need their 8-byte length, arrays 12 bytes.
    const uint64_t min_elem = v.elem_type == GgufValueType::String ? 8
                              : v.elem_type == GgufValueType::Array ? 12 : scalar_size(v.elem_type);
    if (n > c.remaining() / min_elem)
      throw ModelError(path + ": key '" + key + "': array of " + std::to_string(n) + " " +
                       gguf_type_name(v.elem_type) + " elements exceeds the " + std::to_string(c.remaining()) +
                       " bytes left in the file");
    if (v.elem_type == GgufValueType::String) {
      v.strings.reserve(n);
      for (uint64_t i = 0; i < n; ++i) v.strings.push_back(c.read_string("element of key '" + key + "'"));
    } else if (v.elem_type == GgufValueType::Array) {
      v.items.reserve(n);
      for (uint64_t i = 0; i < n; ++i) v.items.push_back(read_value(c, path, GgufValueType::Array, key, depth + 1));
    } else if (gguf_type_is_float(v.elem_type)) {
      v.reals.reserve(n);
      for (uint64_t i = 0; i < n; ++i)
        v.reals.push_back(v.elem_type == GgufValueType::F32 ? double(c.read<float>(key)) : c.read<double>(key));
    } else {
      v.ints.reserve(n);
      for (uint64_t i = 0; i < n; ++i) v.ints.push_back(read_integer(c, v.elem_type, "element of key '" + key + "'"));
    }
  }
  return v;
}

}  // namespace

std::unique_ptr<GgufFile> GgufFile::open(const std::string& path) {
  std::unique_ptr<GgufFile> f(new GgufFile());
  f->path_ = path;
  f->map_ = MappedFile::open(path);
  f->parse();
  return f;
}

GgufFile::~GgufFile() = default;

uint64_t GgufFile::file_size() const { return map_->size(); }

void GgufFile::parse() {
  Cursor c(path_, map_->data(), map_->size());
  if (map_->size() < 4 || std::memcmp(map_->data(), "GGUF", 4) != 0) {
    std::string got = map_->size() < 4 ? "file of " + std::to_string(map_->size()) + " bytes"
                                       : "magic '" + std::string(reinterpret_cast<const char*>(map_->data()), 4) + "'";
    throw ModelError(path_ + ": not a GGUF file: expected magic 'GGUF', got " + got);
  }
  c.read<uint32_t>("magic");
  version_ = c.read<uint32_t>("version");
  if (version_ != 2 && version_ != 3) {
    std::string hint = version_ == 1 ? " (GGUF v1 is obsolete: re-convert the model)"
                       : (version_ & 0xffff) == 0 ? " (a big-endian file?)" : "";
    throw ModelError(path_ + ": unsupported GGUF version " + std::to_string(version_) + ", expected 2 or 3" + hint);
  }
  const uint64_t n_tensors = c.read<uint64_t>("tensor count");
  const uint64_t n_kv = c.read<uint64_t>("metadata count");
  // Each key/value needs at least 8 (key length) + 4 (type) + 1 bytes; each tensor info 8+4+8+4+8.
  if (n_kv > c.remaining() / 13 || n_tensors > c.remaining() / 32)
    throw ModelError(path_ + ": header claims " + std::to_string(n_kv) + " metadata keys and " +
                     std::to_string(n_tensors) + " tensors, more than the file's " + std::to_string(map_->size()) +
                     " bytes can hold");

  kv_.reserve(n_kv);
  for (uint64_t i = 0; i < n_kv; ++i) {
    std::string key = c.read_string("metadata key #" + std::to_string(i));
    const uint32_t t = c.read<uint32_t>("type of key '" + key + "'");
    if (!valid_value_type(t))
      throw ModelError(path_ + ": key '" + key + "': unknown value type " + std::to_string(t) + " (expected 0..12)");
    GgufValue v = read_value(c, path_, GgufValueType(t), key, 0);
    if (!kv_index_.emplace(key, kv_.size()).second) throw ModelError(path_ + ": duplicate metadata key '" + key + "'");
    kv_.emplace_back(std::move(key), std::move(v));
  }

  if (const GgufValue* a = find_value("general.alignment")) {
    if (!gguf_type_is_integer(a->type) || a->integer <= 0 || (a->integer & (a->integer - 1)) != 0)
      throw ModelError(path_ + ": key 'general.alignment': expected a power of two, got " + a->summary());
    alignment_ = uint64_t(a->integer);
  } else {
    alignment_ = kDefaultAlignment;
  }

  struct RawInfo {
    uint64_t offset;
  };
  std::vector<RawInfo> raw;
  tensors_.reserve(n_tensors);
  for (uint64_t i = 0; i < n_tensors; ++i) {
    TensorView t;
    t.name = c.read_string("tensor name #" + std::to_string(i));
    const std::string what = "tensor '" + t.name + "'";
    const uint32_t n_dims = c.read<uint32_t>(what + " dimension count");
    if (n_dims == 0 || n_dims > kMaxDims)
      throw ModelError(path_ + ": " + what + ": expected 1.." + std::to_string(kMaxDims) + " dimensions, got " +
                       std::to_string(n_dims));
    uint64_t elements = 1;
    for (uint32_t d = 0; d < n_dims; ++d) {
      const uint64_t ne = c.read<uint64_t>(what + " shape");
      if (ne != 0 && elements > (uint64_t(1) << 58) / ne)
        throw ModelError(path_ + ": " + what + ": shape " + shape_to_string(t.ne) + " x " + std::to_string(ne) +
                         " overflows");
      elements *= ne;
      t.ne.push_back(ne);
    }
    const uint32_t type_id = c.read<uint32_t>(what + " type");
    if (!type_known(type_id))
      throw ModelError(path_ + ": " + what + ": unknown tensor type id " + std::to_string(type_id));
    t.type = GgmlType(type_id);
    if (t.ne[0] % block_elems(t.type) != 0)
      throw ModelError(path_ + ": " + what + ": row length " + std::to_string(t.ne[0]) + " is not a multiple of the " +
                       type_name(t.type) + " block size " + std::to_string(block_elems(t.type)));
    t.nbytes = row_bytes(t.type, t.ne[0]) * t.rows();
    raw.push_back({c.read<uint64_t>(what + " offset")});
    if (!tensor_index_.emplace(t.name, tensors_.size()).second)
      throw ModelError(path_ + ": duplicate tensor name '" + t.name + "'");
    tensors_.push_back(std::move(t));
  }

  // The data section starts at the next multiple of the alignment after the tensor infos.
  data_offset_ = (c.pos() + alignment_ - 1) / alignment_ * alignment_;
  const uint64_t size = map_->size();
  for (size_t i = 0; i < tensors_.size(); ++i) {
    TensorView& t = tensors_[i];
    const uint64_t off = raw[i].offset;
    if (off % alignment_ != 0)
      throw ModelError(path_ + ": tensor '" + t.name + "': data offset " + std::to_string(off) +
                       " is not a multiple of the alignment " + std::to_string(alignment_));
    if (data_offset_ > size || off > size - data_offset_ || t.nbytes > size - data_offset_ - off)
      throw ModelError(path_ + ": tensor '" + t.name + "': data at file bytes [" + std::to_string(data_offset_ + off) +
                       ", " + std::to_string(data_offset_ + off + t.nbytes) + ") extends past the end of the file (" +
                       std::to_string(size) + " bytes): truncated?");
    t.data = map_->data() + data_offset_ + off;
  }
}

const GgufValue* GgufFile::find_value(const std::string& key) const {
  auto it = kv_index_.find(key);
  return it == kv_index_.end() ? nullptr : &kv_[it->second].second;
}

const TensorView* GgufFile::find(const std::string& name) const {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

void GgufFile::type_error(const std::string& key, const char* wanted, const GgufValue& v) const {
  std::string got = gguf_type_name(v.type);
  if (v.type == GgufValueType::Array) got += " of " + std::string(gguf_type_name(v.elem_type));
  throw ModelError(path_ + ": key '" + key + "': expected " + wanted + ", got " + got + " " + v.summary(3));
}

const GgufValue& GgufFile::require(const std::string& key, const char* wanted) const {
  const GgufValue* v = find_value(key);
  if (!v) throw ModelError(path_ + ": missing metadata key '" + key + "' (expected " + wanted + ")");
  return *v;
}

std::string GgufFile::get_string(const std::string& key) const {
  const GgufValue& v = require(key, "a string");
  if (v.type != GgufValueType::String) type_error(key, "a string", v);
  return v.str;
}

std::optional<std::string> GgufFile::find_string(const std::string& key) const {
  const GgufValue* v = find_value(key);
  if (!v) return std::nullopt;
  if (v->type != GgufValueType::String) type_error(key, "a string", *v);
  return v->str;
}

uint64_t GgufFile::get_uint(const std::string& key, std::optional<uint64_t> dflt) const {
  const GgufValue* v = find_value(key);
  if (!v && dflt) return *dflt;
  if (!v) require(key, "an unsigned integer");
  if (!gguf_type_is_integer(v->type)) type_error(key, "an unsigned integer", *v);
  if (gguf_type_is_signed(v->type) && v->integer < 0) type_error(key, "a non-negative integer", *v);
  return uint64_t(v->integer);
}

int64_t GgufFile::get_int(const std::string& key, std::optional<int64_t> dflt) const {
  const GgufValue* v = find_value(key);
  if (!v && dflt) return *dflt;
  if (!v) require(key, "an integer");
  if (!gguf_type_is_integer(v->type)) type_error(key, "an integer", *v);
  if (v->type == GgufValueType::U64 && v->integer < 0) type_error(key, "an integer below 2^63", *v);
  return v->integer;
}

double GgufFile::get_float(const std::string& key, std::optional<double> dflt) const {
  const GgufValue* v = find_value(key);
  if (!v && dflt) return *dflt;
  if (!v) require(key, "a number");
  if (gguf_type_is_float(v->type)) return v->real;
  if (!gguf_type_is_integer(v->type)) type_error(key, "a number", *v);
  return v->type == GgufValueType::U64 ? double(uint64_t(v->integer)) : double(v->integer);
}

bool GgufFile::get_bool(const std::string& key, std::optional<bool> dflt) const {
  const GgufValue* v = find_value(key);
  if (!v && dflt) return *dflt;
  if (!v) require(key, "a bool");
  if (v->type != GgufValueType::Bool) type_error(key, "a bool", *v);
  return v->integer != 0;
}

std::vector<std::string> GgufFile::get_string_array(const std::string& key) const {
  const GgufValue& v = require(key, "an array of strings");
  if (v.type != GgufValueType::Array || v.elem_type != GgufValueType::String) type_error(key, "an array of strings", v);
  return v.strings;
}

std::vector<float> GgufFile::get_float_array(const std::string& key) const {
  const GgufValue& v = require(key, "an array of numbers");
  if (v.type != GgufValueType::Array) type_error(key, "an array of numbers", v);
  if (gguf_type_is_float(v.elem_type)) return std::vector<float>(v.reals.begin(), v.reals.end());
  if (!gguf_type_is_integer(v.elem_type)) type_error(key, "an array of numbers", v);
  return std::vector<float>(v.ints.begin(), v.ints.end());
}

std::vector<int64_t> GgufFile::get_int_array(const std::string& key) const {
  const GgufValue& v = require(key, "an array of integers");
  if (v.type != GgufValueType::Array || !(gguf_type_is_integer(v.elem_type) || v.elem_type == GgufValueType::Bool))
    type_error(key, "an array of integers", v);
  return v.ints;
}

}  // namespace ztvm
