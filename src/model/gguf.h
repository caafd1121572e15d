// GGUF reader (versions 2 and 3). The file is memory-mapped; metadata is parsed into GgufValue,
// tensors become TensorViews into the mapping. Every malformed input raises ModelError.
//
// Layout (little-endian): "GGUF" u32 version, u64 n_tensors, u64 n_kv; n_kv x {string key, u32 type,
// value}; n_tensors x {string name, u32 n_dims, u64 ne[n_dims], u32 ggml_type, u64 offset};
// padding to `general.alignment` (default 32); the data section (offsets are relative to it).
// Strings are u64 length + bytes; arrays are u32 element type + u64 count + elements.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "model/tensor.h"

namespace ztvm {

class MappedFile;

enum class GgufValueType : uint32_t {
  U8 = 0, I8 = 1, U16 = 2, I16 = 3, U32 = 4, I32 = 5, F32 = 6, Bool = 7,
  String = 8, Array = 9, U64 = 10, I64 = 11, F64 = 12,
};
const char* gguf_type_name(GgufValueType t);  // "u32", "string", "array", ...
bool gguf_type_is_integer(GgufValueType t);
bool gguf_type_is_signed(GgufValueType t);
bool gguf_type_is_float(GgufValueType t);

// One metadata value. Scalars use one field by kind; arrays fill exactly one vector by element kind.
struct GgufValue {
  GgufValueType type = GgufValueType::U32;
  GgufValueType elem_type = GgufValueType::U32;  // meaningful when type == Array
  int64_t integer = 0;   // integer and bool scalars (a u64 is kept as its bit pattern)
  double real = 0;       // f32 / f64 scalars
  std::string str;       // string scalars
  std::vector<int64_t> ints;          // arrays of integers or bools
  std::vector<double> reals;          // arrays of f32 / f64
  std::vector<std::string> strings;   // arrays of strings
  std::vector<GgufValue> items;       // arrays of arrays

  uint64_t array_size() const;
  // Human-readable value: strings quoted and escaped, long strings and arrays cut short
  // ("[string x 32000] "<unk>", "<s>", ... "), used by `ztvm info`.
  std::string summary(size_t max_items = 6, size_t max_chars = 60) const;

  static GgufValue of_uint(GgufValueType t, uint64_t v);  // U8/U16/U32/U64
  static GgufValue of_int(GgufValueType t, int64_t v);    // I8/I16/I32/I64
  static GgufValue of_float(GgufValueType t, double v);   // F32/F64
  static GgufValue of_bool(bool v);
  static GgufValue of_string(std::string v);
  static GgufValue of_ints(GgufValueType elem, std::vector<int64_t> v);  // any integer or Bool elem
  static GgufValue of_floats(GgufValueType elem, std::vector<double> v);
  static GgufValue of_strings(std::vector<std::string> v);
  static GgufValue of_arrays(std::vector<GgufValue> v);  // elements must themselves be arrays
};

class GgufFile {
 public:
  static std::unique_ptr<GgufFile> open(const std::string& path);
  ~GgufFile();

  const std::string& path() const { return path_; }
  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }
  uint64_t data_offset() const { return data_offset_; }  // file offset of the tensor data section
  uint64_t file_size() const;

  // Metadata, in file order. Typed getters throw ModelError naming file and key when the key is
  // missing (and no default is given) or holds an incompatible type.
  const std::vector<std::pair<std::string, GgufValue>>& metadata() const { return kv_; }
  const GgufValue* find_value(const std::string& key) const;
  bool has(const std::string& key) const { return find_value(key) != nullptr; }
  std::string get_string(const std::string& key) const;
  std::optional<std::string> find_string(const std::string& key) const;
  uint64_t get_uint(const std::string& key, std::optional<uint64_t> dflt = {}) const;  // any integer type, >= 0
  int64_t get_int(const std::string& key, std::optional<int64_t> dflt = {}) const;     // any integer type
  double get_float(const std::string& key, std::optional<double> dflt = {}) const;     // f32/f64/integers
  bool get_bool(const std::string& key, std::optional<bool> dflt = {}) const;
  std::vector<std::string> get_string_array(const std::string& key) const;
  std::vector<float> get_float_array(const std::string& key) const;     // float or integer elements
  std::vector<int64_t> get_int_array(const std::string& key) const;     // integer or bool elements

  const std::vector<TensorView>& tensors() const { return tensors_; }
  const TensorView* find(const std::string& name) const;
  const std::shared_ptr<MappedFile>& mapping() const { return map_; }

 private:
  GgufFile() = default;
  void parse();
  const GgufValue& require(const std::string& key, const char* wanted) const;
  [[noreturn]] void type_error(const std::string& key, const char* wanted, const GgufValue& v) const;

  std::string path_;
  std::shared_ptr<MappedFile> map_;
  uint32_t version_ = 0;
  uint64_t alignment_ = 32;
  uint64_t data_offset_ = 0;
  std::vector<std::pair<std::string, GgufValue>> kv_;
  std::unordered_map<std::string, size_t> kv_index_;
  std::vector<TensorView> tensors_;
  std::unordered_map<std::string, size_t> tensor_index_;
};

}  // namespace ztvm
