# The two set-up commands: `make demo` and `make test`. Both install what they need first.
BUILD      ?= build
DEMO_BUILD ?= build-demo
ASAN_BUILD ?= build-asan
TSAN_BUILD ?= build-tsan
JOBS       ?= $(shell nproc)
CMAKE_FLAGS ?=

.PHONY: all deps disk build demo test test-fast torch2 sanitize bench clean

all: build

deps:
	bash scripts/install-deps.sh

# Room for what make test writes (builds, torch 2.6's Debian root, /tmp): a clear stop before
# the compiler runs out of it.
disk:
	bash scripts/disk_space.sh $(BUILD) $(ASAN_BUILD) $(TSAN_BUILD)

$(BUILD)/build.ninja:
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_FLAGS)

build: deps $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS)

# First contact: only the compiler, CMake, Ninja and make (apt), then only the library, spmdrun
# and the demo program (in a build folder of its own, without debug information or the
# optional backend modules: the least that trains), then a small MLP trained data-parallel on
# 4 processes through the launcher. `make test` installs and builds everything.
demo:
	bash scripts/install-deps.sh --demo
	cmake -S . -B $(DEMO_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O2 -DNDEBUG" \
	  -DSPMD_BUILD_TESTS=OFF -DSPMD_BUILD_BENCH=OFF -DSPMD_WITH_MPI=OFF -DSPMD_WITH_NCCL=OFF -DSPMD_WITH_TORCH=OFF
	cmake --build $(DEMO_BUILD) -j $(JOBS) --target spmdrun train_mlp
	bash scripts/demo.sh $(DEMO_BUILD)

# Everything: the full suite, the torch 2.x checks in a Debian 13 root, then the
# store/transport tests under ASan+UBSan and TSan.
# Ends the ctest part with what it covered: passed, failed, skipped with reasons
# (scripts/test_summary.py), also when a test failed; at the end, fails if the tests left
# anything of spmd's in /tmp (scripts/tmp_leftovers.sh).
test: disk build
	touch $(BUILD)/.test-start
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS) --timeout 600 --output-junit ctest-junit.xml; \
	  status=$$?; python3 scripts/test_summary.py $(BUILD)/ctest-junit.xml || true; exit $$status
	$(MAKE) torch2
	$(MAKE) sanitize
	bash scripts/tmp_leftovers.sh $(BUILD)/.test-start

# torch 2.6 (Debian 13's) in a debootstrap root: pip install ./python into a venv there, then
# the backend, launcher and store checks with torch 2.x (tests/torch2/run.sh).
torch2:
	bash tests/torch2/run.sh

test-fast: build
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS) --timeout 600

# Builds only the tests labelled "sanitize" (store, transport, common) in sanitizer builds.
sanitize:
	bash scripts/sanitize.sh $(ASAN_BUILD) address
	bash scripts/sanitize.sh $(TSAN_BUILD) thread

bench: build
	bash bench/run_all.sh $(BUILD)

clean:
	rm -rf $(BUILD) $(DEMO_BUILD) $(ASAN_BUILD) $(TSAN_BUILD) build-torch2
