# flashref: every target sets itself up on a fresh machine (Debian packages via apt-get, Python packages into
# build/venv). `make run` runs the main job, `make test` every test.
BUILD      ?= build
# JOBS: parallel jobs of the inner build and of ctest (`make build JOBS=2`); `make -jN` sets it to N (read from
# MAKEFLAGS when a recipe runs), else every core.
JOBS       ?= $(or $(patsubst -j%,%,$(filter -j%,$(MAKEFLAGS))),$(shell nproc))
CMAKE_ARGS ?=
PREFIX     ?= /usr/local
FUZZ_SECONDS ?= 30
# Quiet builds: progress and results, not make's "Entering/Leaving directory" bookkeeping (the flag reaches the
# makefiles CMake generates through MAKEFLAGS). Compiler errors and warnings still show in full.
MAKEFLAGS += --no-print-directory
# CI builds with -Werror.
ifneq ($(CI),)
CMAKE_ARGS += -DFR_WERROR=ON
endif

DEB_PKGS = cmake gcc clang libclang-rt-14-dev libcjson-dev libopenblas-dev pkg-config python3 python3-venv openmpi-bin libopenmpi-dev
VENV     = $(BUILD)/venv
PY       = $(VENV)/bin/python

.PHONY: all deps venv torch panel-deps build run test test-long test-exhaustive panel hunt asan fuzz coverage bench \
        prove prove-exp install clean python-wheel-check bench-python

all: build

# Debian packages, installed only when missing.
deps: $(BUILD)/.deps
$(BUILD)/.deps:
	@mkdir -p $(BUILD)
	@./scripts/install-deb.sh $(DEB_PKGS)
	@touch $@

# Python venv for the independent numpy reference, the examples and the Python tests.
venv: $(VENV)/.ok
$(VENV)/.ok: $(BUILD)/.deps
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install -q numpy ml_dtypes pytest gcovr
	@touch $@

# PyTorch, ONNX Runtime and onnx (to build the panel's graph) for the panel of real implementations and the
# side-by-side benchmark. Several GB from PyPI the first time, from pip's cache after. Where it cannot be had, the
# tests and benchmarks that need it say so loudly and SKIP: build/venv/.torch-missing records why.
torch: $(VENV)/.torch-onnx
$(VENV)/.torch-onnx: $(VENV)/.ok
	@if $(VENV)/bin/pip install -q torch onnxruntime onnx; then rm -f $(VENV)/.torch-missing; \
	else echo "WARNING: torch/onnxruntime/onnx could not be installed from PyPI: tests and benchmarks that need them will SKIP"; \
	  echo "pip install torch onnxruntime onnx failed on $$(date -u +%F)" > $(VENV)/.torch-missing; fi
	@touch $@

# The frameworks of the wider panel (runners/): OpenVINO, JAX (CPU), mindstudio-probe (Ascend's accuracy tool, with
# its CPU golden of npu_fusion_attention, and its own dumper writes the dumps `flashref verify --msprobe` is tested on:
# tests/python_pkg/test_msprobe.py, docs/ascend.md); torch / onnxruntime come from `torch`. The newest PyPI release of each
# (versions in docs/verifier.md, "The panel"), one at a time so that one that cannot be had does not block the others:
# its runners SKIP loudly (tests/panel/check_panel.py) and build/venv/.panel-missing says which and when.
PANEL_PKGS ?= openvino jax mindstudio-probe
panel-deps: $(VENV)/.panel-deps
$(VENV)/.panel-deps: $(VENV)/.torch-onnx
	@rm -f $(VENV)/.panel-missing; for p in $(PANEL_PKGS); do \
	  if ! $(VENV)/bin/pip install -q "$$p"; then \
	    echo "WARNING: $$p could not be installed from PyPI: its panel runners will SKIP"; \
	    echo "pip install $$p failed on $$(date -u +%F)" >> $(VENV)/.panel-missing; fi; done
	@touch $@

build: $(BUILD)/.deps
	@echo "configure: cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release $(CMAKE_ARGS)"
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release $(CMAKE_ARGS) >/dev/null
	@echo "build: cmake --build $(BUILD) -j $(JOBS)"
	@cmake --build $(BUILD) -j $(JOBS)

# The main job: the full verification suite against flashref's own kernels.
run: build
	./scripts/run-main.sh $(BUILD)

test: build venv torch panel-deps
	cd $(BUILD) && FLASHREF_PYTHON=$(abspath $(PY)) ctest --output-on-failure -j $(JOBS) -LE "exhaustive|long"

# Long-sequence checks (label "long"): the golden at S1 = S2 = 65536 against its row reference, minutes.
test-long: build
	cd $(BUILD) && ctest --output-on-failure -L long

# `pip install .` of a clean clone (HEAD) into a fresh venv, and the installed package used as a user would
# (scripts/python-wheel-check.sh; about 2 minutes, most of it the library's compile).
python-wheel-check: $(BUILD)/.deps
	./scripts/python-wheel-check.sh $(BUILD)

# In-process verify of PyTorch's SDPA vs `flashref suite --impl exec:` with a runner doing the same (bench/python).
BENCH_PY_SET ?= default
bench-python: build venv torch
	$(PY) bench/python/bench_verify.py --set $(BENCH_PY_SET) --build $(BUILD)

# The full panel: every runner of runners/ on the quick and the default set through the persistent protocol (make
# test runs a part of it: the CPU flash backend on default, a few others on quick). Each runner prints its time;
# docs/verifier.md ("The panel") has the measured totals.
PANEL_RUNNERS ?= torch_sdpa.py:flash torch_sdpa.py:math numpy_attention.py onnx_attention.py \
  openvino_sdpa.py:default openvino_sdpa.py:f32 openvino_sdpa.py:bf16 openvino_sdpa.py:f16 \
  ort_attention.py:opset24 ort_attention.py:opset25 ort_contrib.py:gqa ort_contrib.py:mha jax_dpa.py \
  torch_flex.py torch_mha.py:weights torch_mha.py:noweights msprobe_fa.py
PANEL_SETS ?= quick default
# PANEL_REPRO=0 leaves out the reproducers of every runner (make test runs three runners' reproducers).
PANEL_REPRO ?= 1
panel: build venv torch panel-deps
	@rc=0; t0=$$(date +%s); for r in $(PANEL_RUNNERS); do for s in $(PANEL_SETS); do \
	  echo "== panel: $$r on $$s"; t=$$(date +%s); python3 tests/panel/check_panel.py --flashref $(BUILD)/flashref \
	    --python $(abspath $(PY)) --runner $$r --set $$s; st=$$?; echo "   ($$(( $$(date +%s) - t )) s)"; \
	  if [ $$st -eq 77 ]; then echo "   (skipped)"; elif [ $$st -ne 0 ]; then rc=1; fi; done; done; \
	  if [ "$(PANEL_REPRO)" = 1 ]; then \
	  echo "== panel: reproducers of every runner"; t=$$(date +%s); python3 tests/panel/check_repro.py \
	    --flashref $(BUILD)/flashref --python $(abspath $(PY)); st=$$?; echo "   ($$(( $$(date +%s) - t )) s)"; \
	  if [ $$st -ne 0 ] && [ $$st -ne 77 ]; then rc=1; fi; \
	  else echo "== panel: reproducers not run (PANEL_REPRO=$(PANEL_REPRO))"; fi; \
	  echo "== panel: $$(( $$(date +%s) - t0 )) s in all"; exit $$rc

# The hunt (docs/verifier.md, "The hunt"): every installed panel runner hunted for HUNT_BUDGET, findings in
# $(BUILD)/hunt/<runner>/. Not in make test: 10 minutes a runner by default.
HUNT_BUDGET  ?= 10m
HUNT_SEED    ?= 20260101
HUNT_RUNNERS ?= $(PANEL_RUNNERS)
hunt: build venv torch panel-deps
	@./scripts/hunt-panel.sh $(abspath $(BUILD))/flashref $(abspath $(PY)) $(abspath $(BUILD))/hunt $(HUNT_BUDGET) \
	  $(HUNT_SEED) $(HUNT_RUNNERS)

# All 2^32 fp32 inputs through every encoder variant, every code through every decoder; the default-set selftest.
# EXHAUSTIVE_EXCLUDE: a ctest -E regex of tests to leave out (CI runs the conversions once, inside make prove).
EXHAUSTIVE_EXCLUDE ?=
test-exhaustive: build
	cd $(BUILD) && ctest --output-on-failure -L exhaustive $(if $(EXHAUSTIVE_EXCLUDE),-E '$(EXHAUSTIVE_EXCLUDE)')

# ASan + UBSan + LeakSanitizer over the tests, in a build whose every allocation goes through the failure-injection
# hook (-DFR_ALLOC_HOOK=ON): test_alloc_fail (label oom) fails each allocation of the public entry points in turn.
# -O1, as AddressSanitizer's documentation advises for speed (the checks are the same as at -O0). Coverage is not
# measured here: UBSan's checks are branches of their own (about 2100 in src/), which gcov counts.
asan: $(BUILD)/.deps venv
	cmake -S . -B $(BUILD)-asan -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_FLAGS_DEBUG="-O1 -g" -DFR_SANITIZE=ON \
	  -DFR_ALLOC_HOOK=ON -DFR_BUILD_BENCH=OFF $(CMAKE_ARGS) >/dev/null
	cmake --build $(BUILD)-asan -j $(JOBS)
	cd $(BUILD)-asan && FLASHREF_PYTHON=$(abspath $(PY)) ASAN_OPTIONS=detect_leaks=1 \
	  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 ctest --output-on-failure -j $(JOBS) -LE "exhaustive|noasan|long|panel"

# Line and branch coverage of src/ over the C tests (scripts/coverage.sh: which tests, and why those): an HTML report
# in $(BUILD)/coverage, two printed lines (all of src/; src/ less the ISA variants this CPU lacks) and a failure when
# the second is below the floors (docs/reliability.md, "Coverage": the target is 90 % of lines and 80 % of branches;
# the floors stand at the measured shares less a margin). A ratchet: raise them with the coverage, never lower them.
COVERAGE_MIN_LINES    ?= 96
COVERAGE_MIN_BRANCHES ?= 85
coverage: $(BUILD)/.deps venv
	CMAKE_ARGS="$(CMAKE_ARGS)" ./scripts/coverage.sh $(BUILD) $(BUILD)-cov $(JOBS) $(abspath $(PY)) \
	  $(COVERAGE_MIN_LINES) $(COVERAGE_MIN_BRANCHES)

fuzz: $(BUILD)/.deps
	# -Werror is the gcc build's policy; clang's extra warnings must not stop the fuzzers.
	# RelWithDebInfo: the instrumented targets run 1.5-2.5x more executions per second than at -O0.
	CC=clang cmake -S . -B $(BUILD)-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFR_FUZZ=ON -DFR_BUILD_BENCH=OFF $(CMAKE_ARGS) -DFR_WERROR=OFF >/dev/null
	cmake --build $(BUILD)-fuzz -j $(JOBS)
	./scripts/run-fuzz.sh $(BUILD)-fuzz $(FUZZ_SECONDS)

bench: build venv torch
	./scripts/run-bench.sh $(BUILD)

prove: build
	$(MAKE) -C proofs BUILD=$(abspath $(BUILD))

# The exp hypothesis of the proved rounding bound, exhaustively (every fp32 z <= 0; a few minutes on 2 cores): its
# own step in CI, before make prove, which then reads its log.
prove-exp: build
	$(MAKE) -C proofs exp BUILD=$(abspath $(BUILD))

install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

clean:
	rm -rf $(BUILD) $(BUILD)-asan $(BUILD)-fuzz $(BUILD)-cov
