// ztvm pull ORG/REPO[:TAG|:FILE]: download a model from the Hugging Face Hub (progress on stderr,
// the local path on stdout, so `ztvm run -m "$(ztvm pull ORG/REPO:Q4_0)"` works).
#include <CLI/CLI.hpp>
#include <cstdio>

#include "cli/command.h"
#include "hub/pull.h"

namespace ztvm::cli {
namespace {

int run_pull(int argc, char** argv) {
  CLI::App app{"Download a model from the Hugging Face Hub: a GGUF file (by quantization tag or file name), or a "
               "safetensors model directory when the repository has no GGUF"};
  std::string spec_text;
  hub::PullOptions o;
  app.add_option("model", spec_text,
                 "ORG/REPO, ORG/REPO:TAG (a quantization such as Q4_K_M, the default when there are several) or "
                 "ORG/REPO:FILE.gguf")
      ->required();
  app.add_option("--dir", o.dir, "models directory (default: $ZTVM_MODELS, else ~/.cache/ztvm/models)");
  app.add_option("--revision", o.revision, "branch, tag or commit of the repository");
  app.footer("The hub is $HF_ENDPOINT (default https://huggingface.co); private and gated models need $HF_TOKEN or "
             "`huggingface-cli login`. An interrupted download resumes when run again. Commands that take -m accept "
             "ORG/REPO[:TAG] too, and pull it on first use.");
  CLI11_PARSE(app, argc, argv);
  const std::optional<hub::RepoSpec> spec = hub::parse_repo_spec(spec_text);
  if (!spec) throw hub::HubError("'" + spec_text + "' is not ORG/REPO, ORG/REPO:TAG or ORG/REPO:FILE.gguf");
  const std::string path = hub::pull(*spec, o);
  std::printf("%s\n", path.c_str());
  return 0;
}

Command reg("pull", "download a model from the Hugging Face Hub (ORG/REPO[:TAG|:FILE]), resumable, checksummed", run_pull);

}  // namespace
}  // namespace ztvm::cli
