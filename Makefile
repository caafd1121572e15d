# Convenience wrappers around scripts/setup.sh + CMake. `make run` and `make test` work on a fresh machine.
BUILD ?= build
JOBS ?= $(shell nproc)
SETUP_STAMP := $(BUILD)/.setup-done

.PHONY: all setup build run test clean

all: build

$(SETUP_STAMP): scripts/setup.sh
	bash scripts/setup.sh
	@mkdir -p $(BUILD) && touch $@

setup: $(SETUP_STAMP)

build: $(SETUP_STAMP)
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	cmake --build $(BUILD) -j $(JOBS)

# With no -m, ztvm uses the embedded default model (models/README.md).
ARGS ?= -p "And God said" -n 100

run: build
	./$(BUILD)/ztvm run $(ARGS)

test: build
	cd $(BUILD) && ctest --output-on-failure -j 1

clean:
	rm -rf $(BUILD)
