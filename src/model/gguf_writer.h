// GGUF v3 writer: metadata of every value type plus tensors, data aligned to 32 bytes, tensor
// offsets consecutive in insertion order (llama.cpp requires exactly that layout). Tensor bytes are
// produced by a callback at write time, so a converter never holds the whole output in memory; a
// row-range callback (add_tensor_rows) holds not even one whole tensor (a 30B model's 165 MB
// expert stacks are written in chunks of kChunkBytes).
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "model/gguf.h"

namespace ztvm {

class GgufWriter {
 public:
  // Fills exactly nbytes (row_bytes(type, ne[0]) * rows) at out.
  using FillFn = std::function<void(uint8_t* out, uint64_t nbytes)>;
  // Fills rows [first_row, first_row + n_rows) (rows counted over ne[1..], as ggml lays them out),
  // n_rows * row_bytes(type, ne[0]) bytes at out.
  using RowsFn = std::function<void(uint8_t* out, uint64_t first_row, uint64_t n_rows)>;
  static constexpr uint64_t kChunkBytes = 32ull << 20;  // what add_tensor_rows asks for at a time
  // Called before each tensor's data is written: (index, count, name).
  using ProgressFn = std::function<void(size_t index, size_t count, const std::string& name)>;

  // Sets or replaces a key (a replaced key keeps its original position). Setting
  // "general.alignment" (an integer power of two) changes the data alignment.
  void set(const std::string& key, GgufValue value);
  void set_string(const std::string& key, std::string v) { set(key, GgufValue::of_string(std::move(v))); }
  void set_u32(const std::string& key, uint32_t v) { set(key, GgufValue::of_uint(GgufValueType::U32, v)); }
  void set_u64(const std::string& key, uint64_t v) { set(key, GgufValue::of_uint(GgufValueType::U64, v)); }
  void set_i32(const std::string& key, int32_t v) { set(key, GgufValue::of_int(GgufValueType::I32, v)); }
  void set_f32(const std::string& key, float v) { set(key, GgufValue::of_float(GgufValueType::F32, v)); }
  void set_bool(const std::string& key, bool v) { set(key, GgufValue::of_bool(v)); }
  void set_string_array(const std::string& key, std::vector<std::string> v) { set(key, GgufValue::of_strings(std::move(v))); }
  void set_f32_array(const std::string& key, const std::vector<float>& v);
  void set_i32_array(const std::string& key, const std::vector<int32_t>& v);
  bool has(const std::string& key) const { return kv_index_.count(key) != 0; }
  void remove(const std::string& key);

  // Adds a tensor (ne in ggml order). Throws ModelError for a duplicate or over-long name (llama.cpp
  // allows 63 bytes) or a row length that is not a multiple of the type's block.
  void add_tensor(const std::string& name, GgmlType type, std::vector<uint64_t> ne, FillFn fill);
  // The same, filled in row ranges of about kChunkBytes (at least one row) at write time.
  void add_tensor_rows(const std::string& name, GgmlType type, std::vector<uint64_t> ne, RowsFn fill);
  // Convenience: copies `bytes` (must be exactly the tensor's size).
  void add_tensor(const std::string& name, GgmlType type, std::vector<uint64_t> ne, std::vector<uint8_t> bytes);
  // Convenience: f32 values, stored as `type` (quantized row by row).
  void add_tensor_f32(const std::string& name, GgmlType type, std::vector<uint64_t> ne, std::vector<float> values);
  size_t tensor_count() const { return tensors_.size(); }

  // Writes path.tmp, then renames it to path. Throws ModelError on I/O failure.
  void write(const std::string& path, const ProgressFn& progress = {}) const;

 private:
  struct Tensor {
    std::string name;
    GgmlType type;
    std::vector<uint64_t> ne;
    uint64_t nbytes;
    FillFn fill;      // one of the two is set
    RowsFn fill_rows;
  };
  void add(const std::string& name, GgmlType type, std::vector<uint64_t> ne, FillFn fill, RowsFn fill_rows);
  uint64_t alignment_ = 32;
  std::vector<std::pair<std::string, GgufValue>> kv_;
  std::unordered_map<std::string, size_t> kv_index_;
  std::vector<Tensor> tensors_;
  std::unordered_map<std::string, size_t> tensor_index_;
};

}  // namespace ztvm
