# Every target creates or updates the virtual environment it needs; nothing is installed by hand.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip

.PHONY: run test test-slow conformance sklearn-check bench bench-quick bench-cuda cuda-check clean

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip

# setup.py compiles hxarray/_speedups.c; an edit to it needs a rebuild.
$(VENV)/.installed: pyproject.toml setup.py hxarray/_speedups.c | $(VENV)/bin/python
	$(PIP) install --quiet -e .
	touch $@

# The tests also need the in-repo plug-in backends (device types "toy" and "ref").
$(VENV)/.installed-test: $(VENV)/.installed hxarray_tests/plugin_pkg/pyproject.toml \
		hxarray_tests/ref_pkg/pyproject.toml
	$(PIP) install --quiet -e '.[test]' -e hxarray_tests/plugin_pkg -e hxarray_tests/ref_pkg
	touch $@

# The CUDA tests and `make cuda-check` also need NVRTC and CuPy's headers (no GPU).
$(VENV)/.installed-cuda: $(VENV)/.installed-test
	$(PIP) install --quiet -e '.[cuda-check]'
	touch $@

run: $(VENV)/.installed
	$(PY) -m hxarray demo

# Twice: on the compiled speedups, with the CUDA simulator's cuda:0 among the devices the chapter
# tests run on; then on their pure-Python twins (CPU-side types: the CUDA device is left out).
test: $(VENV)/.installed-cuda
	HXARRAY_CUDA_DRIVER=sim $(PY) -m pytest -n 2 -q
	HXARRAY_PURE_PYTHON=1 $(PY) -m pytest -n 2 -q

# Everything, slow tests included, with 500 hypothesis examples per property.
test-slow: $(VENV)/.installed-cuda
	HYPOTHESIS_PROFILE=thorough $(PY) -m pytest -n 2 -q -m "slow or not slow"

ifneq ($(filter conformance,$(MAKECMDGOALS)),)
ifndef SUITE
$(error SUITE is not set: clone the suite with `git clone --recursive https://github.com/data-apis/array-api-tests.git`, then run `make conformance SUITE=path/to/array-api-tests`)
endif
endif

conformance: $(VENV)/.installed
	$(PIP) install --quiet -e '.[conformance]'
	$(PY) -m conformance --suite $(SUITE) $(CONFORMANCE_ARGS)

# scikit-learn's own array-API tests with hxarray added to the namespaces they test, next to the
# same run for array-api-strict (conformance/sklearn/README.md); a few minutes on two cores.
sklearn-check: $(VENV)/.installed
	$(PIP) install --quiet -e '.[sklearn]'
	$(PY) -m conformance.sklearn $(SKLEARN_ARGS)

bench: $(VENV)/.installed
	$(PIP) install --quiet -e '.[bench]'
	$(PY) -m benchmarks $(BENCH_ARGS)

# The CUDA figures: the simulator always, hxarray against CuPy where there is a GPU.
bench-cuda: $(VENV)/.installed-cuda
	$(PIP) install --quiet -e '.[bench]'
	$(PY) -m benchmarks.cuda $(BENCH_ARGS)

bench-quick: $(VENV)/.installed
	$(PIP) install --quiet -e '.[bench]'
	$(PY) -m benchmarks --quick $(BENCH_ARGS)

# Every CUDA source of the project through the real NVRTC for sm_80 and sm_90 (no GPU needed);
# any error or warning fails.
cuda-check: $(VENV)/.installed-cuda
	$(PY) -m hxarray.backends.cuda.nvrtc hxarray_tests/cuda/kernels

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache hxarray/_speedups*.so
