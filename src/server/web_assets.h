// The chat page and its files (web/*), embedded into the binary at build time by cmake/embed_web.cmake:
// no build step, no files to install beside ztvm.
#pragma once
#include <string_view>
#include <vector>

namespace ztvm::server {

struct WebAsset {
  const char* path;          // URL path: "/index.html", "/app.js", ...
  const char* content_type;
  std::string_view body;
};
const std::vector<WebAsset>& web_assets();

}  // namespace ztvm::server
