#include "hub/hub.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>

namespace fs = std::filesystem;

namespace ztvm::hub {

namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return (char)std::tolower(c); });
  return s;
}
bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && lower(s.substr(s.size() - tail.size())) == tail;
}
std::string base_name(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}
std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

// llama.cpp's default when a repository holds several quantizations and none is named.
constexpr const char* kDefaultTag = "Q4_K_M";

// Model files of a GGUF repository: vision projectors (mmproj-*) are not models of their own.
std::vector<RepoFile> gguf_models(const std::vector<RepoFile>& files) {
  std::vector<RepoFile> out;
  for (const auto& f : files)
    if (ends_with(f.path, ".gguf") && lower(base_name(f.path)).rfind("mmproj", 0) != 0) out.push_back(f);
  return out;
}

std::string list_names(const std::vector<RepoFile>& files) {
  std::string s;
  for (size_t i = 0; i < files.size() && i < 24; i++) s += (i ? ", " : "") + files[i].path;
  if (files.size() > 24) s += ", ... (" + std::to_string(files.size()) + " in all)";
  return s;
}

bool is_split_part(const std::string& path) {
  static const std::regex re(R"(-\d{5}-of-\d{5}\.gguf$)", std::regex::icase);
  return std::regex_search(path, re);
}

// The GGUF a tag or a file name picks (all its parts when it is split), with errors that show what
// there is instead.
std::vector<RepoFile> pick_gguf(const std::vector<RepoFile>& ggufs, const RepoSpec& spec) {
  const std::string& sel = spec.selector;
  std::vector<RepoFile> hits;
  if (ends_with(sel, ".gguf")) {
    for (const auto& f : ggufs)
      if (f.path == sel || base_name(f.path) == sel) hits.push_back(f);
    if (hits.empty()) throw HubError(spec.repo + " has no file " + sel + "; its GGUF files: " + list_names(ggufs));
  } else {
    const std::string tag = sel.empty() ? kDefaultTag : sel;
    for (const auto& f : ggufs)
      if (name_has_tag(f.path, tag)) hits.push_back(f);
    if (hits.empty() && sel.empty() && ggufs.size() == 1) hits = ggufs;
    if (hits.empty()) {
      throw HubError(sel.empty() ? spec.repo + " has several GGUF files and none tagged " + tag +
                                       "; name one as " + spec.repo + ":TAG or :FILE from: " + list_names(ggufs)
                                 : spec.repo + " has no GGUF file tagged " + sel + "; its GGUF files: " + list_names(ggufs));
    }
  }
  // A split GGUF (NAME-0000K-of-0000N.gguf): all N parts, the first first. Naming one part by file
  // name picks its whole set.
  if (!hits.empty() && std::all_of(hits.begin(), hits.end(), [](const RepoFile& f) { return is_split_part(f.path); })) {
    const std::string stem = hits[0].path.substr(0, hits[0].path.size() - 20);  // without "-0000K-of-0000N.gguf"
    const std::string of = hits[0].path.substr(hits[0].path.size() - 14);      // "-of-0000N.gguf"
    std::vector<RepoFile> set;
    for (const auto& f : ggufs)
      if (is_split_part(f.path) && f.path.size() == stem.size() + 20 && f.path.compare(0, stem.size(), stem) == 0 &&
          f.path.compare(f.path.size() - 14, 14, of) == 0)
        set.push_back(f);
    for (const auto& h : hits)
      if (h.path.compare(0, stem.size(), stem) != 0 || h.path.size() != stem.size() + 20)
        throw HubError("several files of " + spec.repo + " match '" + (sel.empty() ? kDefaultTag : sel) + "': " +
                       list_names(hits) + "; name one as " + spec.repo + ":FILE");
    std::sort(set.begin(), set.end(), [](const RepoFile& a, const RepoFile& b) { return a.path < b.path; });
    const size_t count = std::stoul(of.substr(4, 5));
    if (set.size() != count)
      throw HubError(spec.repo + ": " + stem + " is split into " + std::to_string(count) + " files, " +
                     std::to_string(set.size()) + " of them are here (" + list_names(set) + ")");
    return set;
  }
  if (hits.size() > 1)
    throw HubError("several files of " + spec.repo + " match '" + (sel.empty() ? kDefaultTag : sel) + "': " +
                   list_names(hits) + "; name one as " + spec.repo + ":FILE");
  return hits;
}

// The files a Hugging Face model directory needs: configs, tokenizer, template and weights at the
// top level (not READMEs, images, or weights in other formats).
bool directory_file(const std::string& path) {
  if (path.find('/') != std::string::npos) return false;
  return ends_with(path, ".json") || ends_with(path, ".safetensors") || ends_with(path, ".jinja") ||
         path == "tokenizer.model";
}

}  // namespace

std::optional<RepoSpec> parse_repo_spec(const std::string& text) {
  std::string s = text;
  for (const char* prefix : {"https://huggingface.co/", "http://huggingface.co/", "huggingface.co/", "hf.co/"}) {
    if (s.rfind(prefix, 0) == 0) {
      s = s.substr(std::string(prefix).size());
      break;
    }
  }
  static const std::regex re(R"(^([A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*)(?::(.+))?$)");
  std::smatch m;
  if (!std::regex_match(s, m, re)) return std::nullopt;
  RepoSpec spec{m[1].str(), m[2].str()};
  if (ends_with(spec.repo, ".gguf") || ends_with(spec.repo, ".safetensors")) return std::nullopt;
  const std::string& sel = spec.selector;
  if (sel.find("..") != std::string::npos || sel[0] == '/' || sel.find('\\') != std::string::npos) return std::nullopt;
  return spec;
}

std::vector<RepoFile> parse_tree_listing(const std::string& json_text) {
  nlohmann::json j = nlohmann::json::parse(json_text, nullptr, false);
  if (!j.is_array()) throw HubError("the hub's file listing is not a JSON list");
  std::vector<RepoFile> out;
  for (const auto& e : j) {
    if (!e.is_object() || e.value("type", "") != "file" || !e.contains("path") || !e["path"].is_string()) continue;
    RepoFile f;
    f.path = e["path"].get<std::string>();
    if (e.contains("size") && e["size"].is_number_unsigned()) f.size = e["size"].get<uint64_t>();
    if (e.contains("oid") && e["oid"].is_string()) f.git_oid = e["oid"].get<std::string>();
    if (e.contains("lfs") && e["lfs"].is_object()) {
      const auto& lfs = e["lfs"];
      if (lfs.contains("oid") && lfs["oid"].is_string()) f.sha256 = lfs["oid"].get<std::string>();
      if (lfs.contains("size") && lfs["size"].is_number_unsigned()) f.size = lfs["size"].get<uint64_t>();
      f.git_oid.clear();  // the blob is the LFS pointer, not the content
    }
    out.push_back(std::move(f));
  }
  return out;
}

bool name_has_tag(const std::string& path, const std::string& tag) {
  const std::string name = lower(base_name(path)), t = lower(tag);
  if (t.empty()) return false;
  for (size_t at = name.find(t); at != std::string::npos; at = name.find(t, at + 1)) {
    const bool start_ok = at == 0 || !std::isalnum((unsigned char)name[at - 1]);
    const size_t end = at + t.size();
    const bool end_ok = end == name.size() || !(std::isalnum((unsigned char)name[end]) || name[end] == '_');
    if (start_ok && end_ok) return true;
  }
  return false;
}

Choice choose_files(const std::vector<RepoFile>& files, const RepoSpec& spec) {
  const std::vector<RepoFile> ggufs = gguf_models(files);
  if (!ggufs.empty() || ends_with(spec.selector, ".gguf")) return Choice{pick_gguf(ggufs, spec), false};
  Choice c{{}, true};
  for (const auto& f : files)
    if (directory_file(f.path)) c.files.push_back(f);
  const bool has_config = std::any_of(c.files.begin(), c.files.end(), [](const RepoFile& f) { return f.path == "config.json"; });
  const bool has_weights =
      std::any_of(c.files.begin(), c.files.end(), [](const RepoFile& f) { return ends_with(f.path, ".safetensors"); });
  if (!has_config || !has_weights)
    throw HubError(spec.repo + " has no GGUF file and no config.json with safetensors weights, nothing ztvm can run" +
                   (files.empty() ? std::string(" (it has no files)") : "; its files: " + list_names(files)));
  if (!spec.selector.empty())
    throw HubError(spec.repo + " has no GGUF files, so ':" + spec.selector +
                   "' picks nothing; `ztvm pull " + spec.repo + "` fetches its safetensors model");
  return c;
}

void keep_indexed_weights(Choice& choice, const std::string& index_json) {
  std::set<std::string> wanted;
  if (!index_json.empty()) {
    nlohmann::json j = nlohmann::json::parse(index_json, nullptr, false);
    if (j.is_object() && j.contains("weight_map") && j["weight_map"].is_object())
      for (const auto& [tensor, shard] : j["weight_map"].items())
        if (shard.is_string()) wanted.insert(shard.get<std::string>());
  }
  if (wanted.empty()) {
    for (const auto& f : choice.files)
      if (f.path == "model.safetensors") wanted.insert(f.path);
    if (wanted.empty()) return;  // no way to tell: every weights file
  }
  std::erase_if(choice.files, [&](const RepoFile& f) { return ends_with(f.path, ".safetensors") && !wanted.count(f.path); });
}

std::string size_text(uint64_t bytes) {
  char b[32];
  if (bytes >= 1000000000ull) std::snprintf(b, sizeof b, "%.2f GB", bytes / 1e9);
  else std::snprintf(b, sizeof b, "%.1f MB", bytes / 1e6);
  return b;
}

std::string models_dir() {
  if (!env("ZTVM_MODELS").empty()) return env("ZTVM_MODELS");
  if (!env("XDG_CACHE_HOME").empty()) return env("XDG_CACHE_HOME") + "/ztvm/models";
  if (!env("HOME").empty()) return env("HOME") + "/.cache/ztvm/models";
  throw HubError("no place for models: set ZTVM_MODELS (or HOME)");
}

std::string hub_endpoint() {
  std::string e = env("HF_ENDPOINT").empty() ? "https://huggingface.co" : env("HF_ENDPOINT");
  while (!e.empty() && e.back() == '/') e.pop_back();
  return e;
}

std::string hub_token() {
  for (const char* name : {"HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"})
    if (!env(name).empty()) return env(name);
  std::string path = env("HF_TOKEN_PATH");
  if (path.empty() && !env("HF_HOME").empty()) path = env("HF_HOME") + "/token";
  if (path.empty() && !env("XDG_CACHE_HOME").empty()) path = env("XDG_CACHE_HOME") + "/huggingface/token";
  if (path.empty() && !env("HOME").empty()) path = env("HOME") + "/.cache/huggingface/token";
  std::ifstream f(path);
  std::string token;
  if (f) std::getline(f, token);
  while (!token.empty() && std::isspace((unsigned char)token.back())) token.pop_back();
  return token;
}

std::optional<std::string> find_pulled(const RepoSpec& spec, const std::string& dir) {
  const fs::path root = fs::path(dir) / spec.repo;
  std::error_code ec;
  if (!fs::is_directory(root, ec)) return std::nullopt;
  std::vector<RepoFile> local;
  bool partial = false;  // a download under way or stopped: the directory is not whole
  for (auto it = fs::recursive_directory_iterator(root, ec); !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (!it->is_regular_file()) continue;
    const std::string rel = fs::relative(it->path(), root).generic_string();
    if (ends_with(rel, ".part")) partial = true;
    else local.push_back(RepoFile{rel, (uint64_t)it->file_size()});
  }
  try {
    Choice c = choose_files(local, spec);
    if (!c.directory) return (root / c.files[0].path).string();
    if (partial) return std::nullopt;
    // Sharded weights: every shard the index names must be here.
    std::ifstream idx(root / "model.safetensors.index.json");
    if (idx) {
      nlohmann::json j = nlohmann::json::parse(idx, nullptr, false);
      if (j.is_object() && j.contains("weight_map") && j["weight_map"].is_object())
        for (const auto& [tensor, shard] : j["weight_map"].items())
          if (!shard.is_string() || !fs::exists(root / shard.get<std::string>())) return std::nullopt;
    }
    return root.string();
  } catch (const HubError&) {
    return std::nullopt;
  }
}

}  // namespace ztvm::hub
