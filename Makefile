# The two commands of the set-up contract:
#   make demo   installs what is missing, builds, runs the main job
#   make check  installs, builds with sanitizers, runs every test and the fuzzer
BUILD       ?= build
CHECK_BUILD ?= build-check
FUZZ_BUILD  ?= build-fuzz
FUZZ_SECONDS ?= 60
# The other parsers' fuzzers (tests/fuzz/fuzz_<name>.c, seeds in
# tests/fuzz/corpus/<name>/), and how long each runs in `make fuzz`.
FUZZ_PARSERS ?= sched_json shipped_sql npy predict_meta
FUZZ_PARSER_SECONDS ?= 30
JOBS        ?= $(shell nproc 2>/dev/null || echo 2)

.PHONY: all deps build demo check test fuzz clean format

all: build

deps:
	@./scripts/install-deps.sh

build: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo
	cmake --build $(BUILD) -j $(JOBS)

demo: build
	./scripts/demo.sh $(BUILD)/bin/opsched

check: deps
	cmake -S . -B $(CHECK_BUILD) -DCMAKE_BUILD_TYPE=Debug -DOPSCHED_SANITIZE=ON -DOPSCHED_WERROR=ON
	cmake --build $(CHECK_BUILD) -j $(JOBS)
	cd $(CHECK_BUILD) && ctest --output-on-failure -j $(JOBS)
	@echo "GPU tests (label gpu), what they said:"
	@cd $(CHECK_BUILD) && ctest -L gpu -V 2>&1 | grep -E "SKIP|Passed|Failed" || true
	$(MAKE) fuzz

fuzz: deps
	CC=clang cmake -S . -B $(FUZZ_BUILD) -DCMAKE_BUILD_TYPE=Debug -DOPSCHED_FUZZ=ON -DOPSCHED_TESTS=OFF
	cmake --build $(FUZZ_BUILD) -j $(JOBS) --target $(addprefix fuzz_,onnx onnx_run $(FUZZ_PARSERS) sweep_spec)
	./scripts/run-fuzz.sh $(FUZZ_BUILD)/bin/fuzz_onnx $(FUZZ_SECONDS)
	./scripts/run-fuzz.sh $(FUZZ_BUILD)/bin/fuzz_onnx_run $(FUZZ_PARSER_SECONDS) \
	  tests/fuzz/corpus tests/fuzz/regressions/onnx_run
	for t in $(FUZZ_PARSERS); do \
	  ./scripts/run-fuzz.sh $(FUZZ_BUILD)/bin/fuzz_$$t $(FUZZ_PARSER_SECONDS) \
	    tests/fuzz/corpus/$$t tests/fuzz/regressions/$$t || exit 1; \
	done
	d=$$(mktemp -d) && cp examples/sweeps/*.yml bench/specs/*.yml $$d/ && \
	  cp tests/fuzz/sweep_corpus/*.yml $$d/ && \
	  UBSAN_OPTIONS=halt_on_error=1 $(FUZZ_BUILD)/bin/fuzz_sweep_spec -seed=1 -max_total_time=$(FUZZ_PARSER_SECONDS) \
	    -rss_limit_mb=2048 -artifact_prefix=tests/fuzz/regressions/ $$d; rc=$$?; rm -rf $$d; exit $$rc

clean:
	rm -rf $(BUILD) $(CHECK_BUILD) $(FUZZ_BUILD)

format:
	clang-format -i $$(git ls-files '*.c' '*.h')
