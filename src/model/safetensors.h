// Hugging Face safetensors: one or more *.safetensors files in a model directory, each mapped.
// File layout: u64 header length N, N bytes of JSON {name: {dtype, shape, data_offsets: [begin,
// end]}, "__metadata__": {...}}, then the data; offsets are relative to the byte after the header.
// Views keep the HF names; shapes are reversed into ggml order (HF [out, in] -> ne {in, out}).
#pragma once
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "model/tensor.h"

namespace ztvm {

class MappedFile;

class SafetensorsDir {
 public:
  // dir holds config.json and either model.safetensors.index.json (its weight_map names the
  // shards) or any number of *.safetensors files. Throws ModelError on any malformed input.
  static std::unique_ptr<SafetensorsDir> open(const std::string& dir);
  ~SafetensorsDir();

  const std::string& dir() const { return dir_; }
  const std::vector<std::string>& files() const { return files_; }
  const std::vector<TensorView>& tensors() const { return tensors_; }
  const TensorView* find(const std::string& hf_name) const;

  // Parses one mapped file's header and appends its views (exposed for tests).
  static void parse_file(const MappedFile& file, std::vector<TensorView>* out);

 private:
  SafetensorsDir() = default;
  std::string dir_;
  std::vector<std::string> files_;
  std::vector<std::shared_ptr<MappedFile>> maps_;
  std::vector<TensorView> tensors_;
  std::unordered_map<std::string, size_t> index_;
};

}  // namespace ztvm
