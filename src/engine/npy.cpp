#include "engine/npy.h"

#include <cstring>
#include <fstream>
#include <stdexcept>

namespace ztvm {

void write_npy(const std::string& path, const float* data, const std::vector<uint64_t>& shape) {
  std::string dims;
  uint64_t n = 1;
  for (uint64_t s : shape) {
    dims += std::to_string(s) + ", ";
    n *= s;
  }
  if (shape.size() > 1) dims.resize(dims.size() - 1);  // "(a, b)" but "(a,)"
  else dims.pop_back();
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + dims + "), }";
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::ofstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("cannot write " + path);
  f.write("\x93NUMPY\x01\x00", 8);
  uint16_t hl = (uint16_t)header.size();
  f.write(reinterpret_cast<const char*>(&hl), 2);
  f.write(header.data(), header.size());
  f.write(reinterpret_cast<const char*>(data), n * 4);
  if (!f) throw std::runtime_error("short write to " + path);
}

NpyArray read_npy(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("cannot open " + path);
  char magic[8];
  f.read(magic, 8);
  if (!f || std::memcmp(magic, "\x93NUMPY", 6) != 0) throw std::runtime_error(path + ": not a .npy file");
  uint32_t hl = 0;
  if (magic[6] == 1) {
    uint16_t h16;
    f.read(reinterpret_cast<char*>(&h16), 2);
    hl = h16;
  } else {
    f.read(reinterpret_cast<char*>(&hl), 4);
  }
  std::string header(hl, '\0');
  f.read(header.data(), hl);
  auto field = [&](const std::string& key) {
    size_t p = header.find("'" + key + "'");
    if (p == std::string::npos) throw std::runtime_error(path + ": npy header lacks " + key);
    return header.substr(header.find(':', p) + 1);
  };
  std::string descr = field("descr");
  descr = descr.substr(descr.find('\'') + 1, 3);
  if (field("fortran_order").find("True") < field("fortran_order").find(',')) throw std::runtime_error(path + ": Fortran order");
  std::string shp = field("shape");
  shp = shp.substr(shp.find('(') + 1, shp.find(')') - shp.find('(') - 1);
  NpyArray a;
  uint64_t n = 1;
  for (size_t p = 0; p < shp.size();) {
    size_t q = shp.find(',', p);
    std::string tok = shp.substr(p, q == std::string::npos ? std::string::npos : q - p);
    if (tok.find_first_of("0123456789") != std::string::npos) {
      a.shape.push_back(std::stoull(tok));
      n *= a.shape.back();
    }
    if (q == std::string::npos) break;
    p = q + 1;
  }
  a.data.resize(n);
  auto read_all = [&](auto zero) {
    std::vector<decltype(zero)> v(n);
    f.read(reinterpret_cast<char*>(v.data()), n * sizeof(zero));
    if (!f) throw std::runtime_error(path + ": truncated data");
    for (uint64_t i = 0; i < n; i++) a.data[i] = (float)v[i];
  };
  if (descr == "<f4") read_all(float{});
  else if (descr == "<f8") read_all(double{});
  else if (descr == "<i4") read_all(int32_t{});
  else if (descr == "<i8") read_all(int64_t{});
  else throw std::runtime_error(path + ": unsupported dtype " + descr);
  return a;
}

}  // namespace ztvm
