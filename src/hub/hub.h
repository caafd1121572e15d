// Models on the Hugging Face Hub, as `ztvm pull` and `-m ORG/REPO[:TAG]` name them: which files of a
// repository to fetch, and where they live on this machine. The network part is pull.h.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "hub/http.h"

namespace ztvm::hub {

// "ORG/REPO", "ORG/REPO:Q4_K_M" (a quantization tag) or "ORG/REPO:path/in/repo.gguf" (a file);
// also with "hf.co/", "huggingface.co/" or "https://huggingface.co/" before it.
struct RepoSpec {
  std::string repo;      // ORG/REPO
  std::string selector;  // after ':', may be empty
  std::string text() const { return selector.empty() ? repo : repo + ":" + selector; }
};
// nullopt when `s` is not of that form (or names a file: a REPO part ending in .gguf).
std::optional<RepoSpec> parse_repo_spec(const std::string& s);

struct RepoFile {
  std::string path;    // in the repository, '/'-separated
  uint64_t size = 0;
  std::string sha256;  // of the content, for files stored with Git LFS (weights); empty otherwise
  std::string git_oid; // the git blob id (sha1 of "blob SIZE\0" + content); empty when unknown
};
// The entries of the hub's tree listing (/api/models/ORG/REPO/tree/REV?recursive=true) that are files.
std::vector<RepoFile> parse_tree_listing(const std::string& json_text);

// What a spec asks for in a repository's files: one GGUF file, or the files of a Hugging Face model
// directory (config.json, tokenizer and template files, safetensors) when the repository has no GGUF.
struct Choice {
  std::vector<RepoFile> files;
  bool directory = false;  // the model is the repository's directory, not one file
};
// Throws HubError saying what the repository does have when the spec matches nothing or several.
Choice choose_files(const std::vector<RepoFile>& files, const RepoSpec& spec);

// A directory choice narrowed to the weights the model loads: with model.safetensors.index.json
// (its text given), the shards its weight_map names; else model.safetensors when there is one. Some
// repositories also hold the same weights in another layout (Mistral's consolidated.safetensors).
void keep_indexed_weights(Choice& choice, const std::string& index_json);

// Whether a GGUF file name carries a quantization tag ("Q4_K_M" in "model-q4_k_m.gguf"), with
// neither a letter or digit before it nor a letter, digit or '_' after it (so Q4_K is not Q4_K_M).
bool name_has_tag(const std::string& path, const std::string& tag);

// "2.50 GB", "379.3 MB": sizes as pull and list show them.
std::string size_text(uint64_t bytes);

// Where pulled models go: $ZTVM_MODELS, else $XDG_CACHE_HOME/ztvm/models, else ~/.cache/ztvm/models.
std::string models_dir();
// The hub's address: $HF_ENDPOINT, else https://huggingface.co.
std::string hub_endpoint();
// The user's hub token: $HF_TOKEN, else the file `huggingface-cli login` writes; empty when none.
std::string hub_token();

// The local path of a model already pulled for `spec` into `dir` (a file, or a model directory
// with all its files), or nullopt: lets `-m ORG/REPO:TAG` run without the network once pulled.
std::optional<std::string> find_pulled(const RepoSpec& spec, const std::string& dir);

}  // namespace ztvm::hub
