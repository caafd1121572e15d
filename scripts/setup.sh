#!/usr/bin/env bash
# Installs everything Zero-TVM C++ needs on Debian 12 (run as root; idempotent).
#  - compiler, CMake, the -dev libraries we link (GoogleTest, nlohmann-json, CLI11, PCRE2, utf8proc, cpp-httplib,
#    OpenSSL's libcrypto) and libcurl (`ztvm pull` loads it at run time; its headers for the build)
#  - the Vulkan loader and Mesa 25 lavapipe from bookworm-backports (Debian 12's Mesa 22.3 is rejected by Dawn)
#  - the Vulkan and SPIRV-Tools headers for tools/shader-stats
#  - clang with its sanitizer and libFuzzer runtimes (make test-asan, the fuzz targets in fuzz/)
#  - the prebuilt Dawn (libwebgpu_wrapper.so) from npm bun-webgpu-linux-x64@0.1.7, integrity-checked, into third_party/dawn
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive

PKGS="build-essential cmake pkg-config git ca-certificates curl xz-utils \
  libgtest-dev libgmock-dev nlohmann-json3-dev libcli11-dev libpcre2-dev libutf8proc-dev libcpp-httplib-dev libssl-dev libcurl4-openssl-dev chromium \
  libvulkan1 vulkan-tools libvulkan-dev spirv-tools \
  clang libclang-rt-14-dev"

# bookworm-backports, from the machine's own Debian mirror, for Mesa 25 (lavapipe).
if [ ! -f /etc/apt/sources.list.d/backports.sources ]; then
  uri=$(awk '/^URIs:/{print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
  [ -n "$uri" ] || uri=$(awk '/^deb /{print $2; exit}' /etc/apt/sources.list 2>/dev/null || true)
  printf 'Types: deb\nURIs: %s\nSuites: bookworm-backports\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
    "$uri" | $SUDO tee /etc/apt/sources.list.d/backports.sources >/dev/null
  NEED_UPDATE=1
fi

missing=""
# Node.js/npm (for the pinned Dawn tarball and the npm test clients): keep an existing install.
command -v npm >/dev/null 2>&1 || missing="nodejs npm"
for p in $PKGS; do dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"; done
mesa_ok=0
v=$(dpkg-query -W -f='${Version}' mesa-vulkan-drivers 2>/dev/null || true)
case "$v" in 2[5-9].*|[3-9][0-9].*) mesa_ok=1 ;; esac
if [ -n "$missing" ] || [ "$mesa_ok" = 0 ]; then
  $SUDO apt-get update -q
  [ -n "$missing" ] && $SUDO apt-get install -y -q --no-install-recommends $missing
  [ "$mesa_ok" = 0 ] && $SUDO apt-get install -y -q --no-install-recommends -t bookworm-backports mesa-vulkan-drivers
fi

# Dawn: pinned npm tarball, checked against its pinned sha512 integrity and the .so's sha256.
DAWN_DIR=third_party/dawn
DAWN_PKG=bun-webgpu-linux-x64@0.1.7
DAWN_SO_SHA256=3190c3777f2c07fcf6a0640833cbf5d0cde859dc53aed6d9083946d093198788
if [ ! -f "$DAWN_DIR/libwebgpu_wrapper.so" ] || ! echo "$DAWN_SO_SHA256  $DAWN_DIR/libwebgpu_wrapper.so" | sha256sum -c --quiet 2>/dev/null; then
  tmp=$(mktemp -d)
  (cd "$tmp" && npm pack --silent "$DAWN_PKG" >/dev/null)
  tgz=$(ls "$tmp"/*.tgz)
  want="sha512-UEP7UZdEhx9otvkZczjsszL8ZVlrODANQvgl+C88/bNVmxDoFi7w1fWzGi1sZyakiETjmtFDq2/xCLhbSZxjqw=="
  got="sha512-$(openssl dgst -sha512 -binary "$tgz" | base64 -w0)"
  [ "$want" = "$got" ] || { echo "setup: $DAWN_PKG integrity mismatch ($got vs $want)" >&2; exit 1; }
  tar xzf "$tgz" -C "$tmp"
  echo "$DAWN_SO_SHA256  $tmp/package/libwebgpu_wrapper.so" | sha256sum -c --quiet \
    || { echo "setup: libwebgpu_wrapper.so sha256 differs from the pinned one" >&2; exit 1; }
  mkdir -p "$DAWN_DIR" && cp "$tmp/package/libwebgpu_wrapper.so" "$DAWN_DIR/"
  rm -rf "$tmp"
fi
# npm packages the tests use as references (Hugging Face `tokenizers`), pinned by tests/node/package-lock.json.
if [ ! -d tests/node/node_modules/tokenizers ] || [ tests/node/package-lock.json -nt tests/node/node_modules/.package-lock.json ]; then
  (cd tests/node && npm ci --no-audit --no-fund --loglevel=error)
fi

echo "setup: ok (Mesa $(dpkg-query -W -f='${Version}' mesa-vulkan-drivers), Dawn $DAWN_PKG)"
