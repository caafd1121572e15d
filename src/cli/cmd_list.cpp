// ztvm list: the models `ztvm pull` put in the models directory, each under the name -m takes.
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <vector>

#include "cli/command.h"
#include "hub/hub.h"

namespace fs = std::filesystem;

namespace ztvm::cli {
namespace {

struct Entry {
  std::string name;  // ORG/REPO:FILE.gguf or ORG/REPO
  uint64_t bytes = 0;
  fs::file_time_type modified{};
  bool partial = false;  // a download stopped before the end (FILE.part)
};

std::string date_text(fs::file_time_type t) {
  const auto sys = std::chrono::time_point_cast<std::chrono::system_clock::duration>(
      t - fs::file_time_type::clock::now() + std::chrono::system_clock::now());
  const std::time_t tt = std::chrono::system_clock::to_time_t(sys);
  char s[32];
  std::strftime(s, sizeof s, "%Y-%m-%d %H:%M", std::localtime(&tt));
  return s;
}

// DIR/ORG/REPO/...: a GGUF file is a model of its own; a directory with config.json is one model.
std::vector<Entry> scan(const fs::path& dir) {
  std::vector<Entry> out;
  std::error_code ec;
  for (const auto& org : fs::directory_iterator(dir, ec)) {
    if (!org.is_directory()) continue;
    for (const auto& repo : fs::directory_iterator(org.path(), ec)) {
      if (!repo.is_directory()) continue;
      const std::string base = org.path().filename().string() + "/" + repo.path().filename().string();
      Entry hf{base};
      bool is_hf = fs::exists(repo.path() / "config.json");
      for (const auto& f : fs::recursive_directory_iterator(repo.path(), ec)) {
        if (!f.is_regular_file()) continue;
        std::string rel = fs::relative(f.path(), repo.path()).generic_string();
        const bool part = rel.size() > 5 && rel.compare(rel.size() - 5, 5, ".part") == 0;
        if (part) rel.resize(rel.size() - 5);
        if (is_hf) {
          hf.bytes += f.file_size();
          hf.modified = std::max(hf.modified, f.last_write_time());
          hf.partial |= part;
        } else if (rel.size() > 5 && rel.compare(rel.size() - 5, 5, ".gguf") == 0) {
          out.push_back(Entry{base + ":" + rel, f.file_size(), f.last_write_time(), part});
        }
      }
      if (is_hf) out.push_back(hf);
    }
  }
  std::sort(out.begin(), out.end(), [](const Entry& a, const Entry& b) { return a.name < b.name; });
  return out;
}

int run_list(int argc, char** argv) {
  CLI::App app{"List the models pulled into the models directory, by the name -m takes"};
  std::string dir;
  app.add_option("--dir", dir, "models directory (default: $ZTVM_MODELS, else ~/.cache/ztvm/models)");
  CLI11_PARSE(app, argc, argv);
  if (dir.empty()) dir = hub::models_dir();
  const std::vector<Entry> models = scan(dir);
  if (models.empty()) {
    std::printf("no models in %s (`ztvm pull ORG/REPO[:TAG]` fetches one)\n", dir.c_str());
    return 0;
  }
  size_t width = 4;
  for (const Entry& e : models) width = std::max(width, e.name.size());
  std::printf("%-*s  %9s  %-16s\n", (int)width, "NAME", "SIZE", "MODIFIED");
  for (const Entry& e : models)
    std::printf("%-*s  %9s  %-16s%s\n", (int)width, e.name.c_str(), hub::size_text(e.bytes).c_str(),
                date_text(e.modified).c_str(), e.partial ? "  (partial: `ztvm pull` again resumes it)" : "");
  std::printf("in %s\n", dir.c_str());
  return 0;
}

Command reg("list", "list the models pulled from the Hugging Face Hub, by the name -m takes", run_list);

}  // namespace
}  // namespace ztvm::cli
