# Convenience wrappers around scripts/setup.sh + CMake. `make run` and `make test` work on a fresh machine.
BUILD ?= build
JOBS ?= $(shell nproc)
SETUP_STAMP := $(BUILD)/.setup-done

.PHONY: all setup configure build run test test-full soak asan-configure fuzz fuzz-smoke test-asan clean

all: build

$(SETUP_STAMP): scripts/setup.sh
	bash scripts/setup.sh
	@mkdir -p $(BUILD) && touch $@

setup: $(SETUP_STAMP)

configure: $(SETUP_STAMP)
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null

build: configure
	cmake --build $(BUILD) -j $(JOBS)

# With no -m, ztvm uses the embedded default model (models/README.md).
ARGS ?= -p "And God said" -n 100

# Only the binary it runs, so the first command answers in minutes.
run: configure
	cmake --build $(BUILD) -j $(JOBS) --target ztvm
	./$(BUILD)/ztvm run $(ARGS)

# Tests are independent (each makes its own temporary files and server ports), so CTest runs them
# side by side; the second-subgroup-size kernel sweep runs its short form (label "full" left out).
test: build fuzz
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) -LE full
	$(MAKE) fuzz-smoke

# Every shape and variant of the kernel sweeps too.
test-full: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

# 32 clients for SOAK_SECONDS against one server: no 5xx, flat RSS, every text equal to its solo
# answer (tests/node/server/soak.mjs). Not part of `make test`: it runs for minutes.
SOAK_SECONDS ?= 600
soak: build
	ZTVM_BIN=$(BUILD)/ztvm SOAK_SECONDS=$(SOAK_SECONDS) node tests/node/server/soak.mjs

# The sanitizer build (clang, ASan + UBSan; cmake/sanitize.cmake) and the fuzz targets in it (fuzz/).
ASAN_BUILD ?= build-asan
FUZZ_SECONDS ?= 15
asan-configure: $(SETUP_STAMP)
	CC=clang CXX=clang++ cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DZTVM_SANITIZE=ON \
	  -DZTVM_FUZZ_SECONDS=$(FUZZ_SECONDS) >/dev/null

fuzz: asan-configure
	cmake --build $(ASAN_BUILD) -j $(JOBS) --target fuzz

# Each fuzz target for FUZZ_SECONDS over its corpus (part of `make test`); longer campaigns: fuzz/README.md.
fuzz-smoke: fuzz
	cd $(ASAN_BUILD) && ctest --output-on-failure -j $(JOBS) -L fuzz

# The unit and server tests under ASan + UBSan. Leak checks are off: the Vulkan driver (lavapipe)
# keeps allocations until exit that LeakSanitizer reports as leaks.
test-asan: asan-configure
	cmake --build $(ASAN_BUILD) -j $(JOBS)
	cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=0 ctest --output-on-failure -j $(JOBS) -LE fuzz

clean:
	rm -rf $(BUILD) $(ASAN_BUILD)
