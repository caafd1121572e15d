// `ztvm pull`: fetch a model from the Hugging Face Hub into the models directory, with progress,
// resume after an interruption (the bytes received stay in FILE.part) and checksums.
#pragma once
#include <cstdio>
#include <string>

#include "hub/hub.h"

namespace ztvm::hub {

struct PullOptions {
  std::string dir;                  // models directory; empty: models_dir()
  std::string revision = "main";    // branch, tag or commit
  FILE* log = stderr;               // progress and notes; nullptr: silent
};

// Lists the repository, picks the files the spec asks for (choose_files), and makes each present
// and whole under DIR/ORG/REPO/: kept if already there with the listed size, else downloaded
// (resumed from FILE.part), checked against the hub's size and hash, and only then given its name.
// Returns the model's local path: the GGUF file, or the model directory. Ctrl-C stops it with the
// part file kept. Throws HubError with what went wrong and what to do.
std::string pull(const RepoSpec& spec, const PullOptions& options = {});

// -m's rule for commands that load a model: an existing path is used as it is; ORG/REPO[:TAG] is
// the model pulled before if it is here (no network), else pulled now; anything else is returned
// unchanged for the model loader to report.
std::string resolve_model(const std::string& arg, FILE* log = stderr);

}  // namespace ztvm::hub
