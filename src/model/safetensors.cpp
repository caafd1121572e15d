#include "model/safetensors.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "model/mapped_file.h"
#include "model/model_error.h"

namespace ztvm {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr uint64_t kMaxHeader = uint64_t(100) << 20;  // the format's own limit is 100 MB

bool dtype_to_ggml(const std::string& dtype, GgmlType* out) {
  if (dtype == "F32") *out = GgmlType::F32;
  else if (dtype == "F16") *out = GgmlType::F16;
  else if (dtype == "BF16") *out = GgmlType::BF16;
  else return false;
  return true;
}

json read_json_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw ModelError(path + ": cannot open");
  try {
    return json::parse(in);
  } catch (const json::exception& e) {
    throw ModelError(path + ": invalid JSON: " + e.what());
  }
}

}  // namespace

void SafetensorsDir::parse_file(const MappedFile& file, std::vector<TensorView>* out) {
  const std::string& path = file.path();
  if (file.size() < 8)
    throw ModelError(path + ": truncated: " + std::to_string(file.size()) + " bytes, expected an 8-byte header length");
  uint64_t header_len;
  std::memcpy(&header_len, file.data(), 8);
  if (header_len > kMaxHeader || header_len > file.size() - 8)
    throw ModelError(path + ": header length " + std::to_string(header_len) + " exceeds the file (" +
                     std::to_string(file.size()) + " bytes) or the 100 MB limit: not a safetensors file?");
  json header;
  try {
    header = json::parse(file.data() + 8, file.data() + 8 + header_len);
  } catch (const json::exception& e) {
    throw ModelError(path + ": invalid JSON header: " + e.what());
  }
  if (!header.is_object()) throw ModelError(path + ": header is not a JSON object");
  const uint8_t* base = file.data() + 8 + header_len;
  const uint64_t data_len = file.size() - 8 - header_len;

  for (auto& [name, entry] : header.items()) {
    if (name == "__metadata__") continue;
    const std::string what = path + ": tensor '" + name + "'";
    try {
      const std::string dtype = entry.at("dtype").get<std::string>();
      const std::vector<uint64_t> shape = entry.at("shape").get<std::vector<uint64_t>>();
      const std::vector<uint64_t> offsets = entry.at("data_offsets").get<std::vector<uint64_t>>();
      TensorView t;
      t.name = name;
      if (!dtype_to_ggml(dtype, &t.type))
        throw ModelError(what + ": dtype " + dtype + " is not supported (expected F32, F16 or BF16)");
      if (shape.size() > 4) throw ModelError(what + ": expected at most 4 dimensions, got " + std::to_string(shape.size()));
      t.ne.assign(shape.rbegin(), shape.rend());  // row-major [.., rows, cols] -> ggml {cols, rows, ..}
      if (t.ne.empty()) t.ne.push_back(1);         // a scalar is one element
      uint64_t elements = 1;
      for (uint64_t n : t.ne) {
        if (n != 0 && elements > (uint64_t(1) << 58) / n) throw ModelError(what + ": shape overflows");
        elements *= n;
      }
      t.nbytes = elements * block_bytes(t.type);
      if (offsets.size() != 2 || offsets[0] > offsets[1] || offsets[1] > data_len)
        throw ModelError(what + ": data_offsets " + json(offsets).dump() + " outside the data section of " +
                         std::to_string(data_len) + " bytes: truncated?");
      if (offsets[1] - offsets[0] != t.nbytes)
        throw ModelError(what + ": " + dtype + " " + json(shape).dump() + " needs " + std::to_string(t.nbytes) +
                         " bytes, data_offsets span " + std::to_string(offsets[1] - offsets[0]));
      t.data = base + offsets[0];
      out->push_back(std::move(t));
    } catch (const json::exception& e) {
      throw ModelError(what + ": malformed header entry: " + e.what());
    }
  }
}

std::unique_ptr<SafetensorsDir> SafetensorsDir::open(const std::string& dir) {
  std::unique_ptr<SafetensorsDir> d(new SafetensorsDir());
  d->dir_ = dir;
  const fs::path root(dir);
  const fs::path index_path = root / "model.safetensors.index.json";
  std::vector<std::string> files;
  if (fs::exists(index_path)) {
    const json index = read_json_file(index_path.string());
    if (!index.contains("weight_map") || !index["weight_map"].is_object())
      throw ModelError(index_path.string() + ": missing object 'weight_map'");
    std::set<std::string> shards;
    for (auto& [name, file] : index["weight_map"].items()) {
      if (!file.is_string()) throw ModelError(index_path.string() + ": weight_map['" + name + "'] is not a string");
      shards.insert(file.get<std::string>());
    }
    for (const std::string& shard : shards) files.push_back((root / shard).string());
  } else {
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(root, ec))
      if (entry.path().extension() == ".safetensors") files.push_back(entry.path().string());
    if (ec) throw ModelError(dir + ": cannot list directory: " + ec.message());
    std::sort(files.begin(), files.end());
  }
  if (files.empty()) throw ModelError(dir + ": no *.safetensors files");

  for (const std::string& file : files) {
    d->maps_.push_back(MappedFile::open(file));
    const size_t first = d->tensors_.size();
    parse_file(*d->maps_.back(), &d->tensors_);
    for (size_t i = first; i < d->tensors_.size(); ++i)
      if (!d->index_.emplace(d->tensors_[i].name, i).second)
        throw ModelError(file + ": tensor '" + d->tensors_[i].name + "' also appears in another shard");
  }
  d->files_ = std::move(files);
  return d;
}

SafetensorsDir::~SafetensorsDir() = default;

const TensorView* SafetensorsDir::find(const std::string& hf_name) const {
  auto it = index_.find(hf_name);
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

}  // namespace ztvm
