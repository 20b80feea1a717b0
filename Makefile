# Every target creates or updates the virtual environment it needs; nothing is installed by hand.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip
# -qq: errors only. pip's -q still relays the build backend's notices (setuptools' "Editable
# installation" banner, a page long) and warnings about this machine's pip configuration.
INSTALL := $(PIP) install -qq

.PHONY: run test test-py313 test-slow conformance sklearn-check scipy-check marray-check bench bench-quick bench-cuda bench-dask \
	bench-pipeline bench-sklearn cuda-check docs docs-check lint stress stress-ci clean

# Installs are silent (@, pip -qq), so that `make run` on a fresh clone prints one line per step
# and then the demo.
$(VENV)/bin/python:
	@echo "make: creating the virtual environment $(VENV) ($$($(PYTHON) --version))"
	@$(PYTHON) -m venv $(VENV)
	@$(INSTALL) --upgrade pip

# setup.py compiles hxarray/_speedups.c and, with Cython, the modules listed in its COMPILED: an
# edit to any of them needs a rebuild (until then, the edited source runs interpreted). Targets
# below add extras by name ('hxarray[test]'): the installed build satisfies it, so only the
# extras' packages are installed, without compiling again.
COMPILED := $(shell sed -n '/^COMPILED = \[/,/^\]/p' setup.py | grep -o 'hxarray/[a-z_/]*\.py')
$(VENV)/.installed: pyproject.toml setup.py hxarray/_speedups.c hxarray/_speedups.h $(COMPILED) \
		$(wildcard hxarray/*.pxd hxarray/hal/*.pxd hxarray/backends/cpu/*.pxd) | $(VENV)/bin/python
	@echo "make: installing hxarray into $(VENV), compiling its Cython modules and C code (minutes)"
	@$(INSTALL) -e .
	@touch $@

# The tests also need the in-repo plug-in backends (device types "toy" and "ref").
$(VENV)/.installed-test: $(VENV)/.installed hxarray_tests/plugin_pkg/pyproject.toml \
		hxarray_tests/ref_pkg/pyproject.toml
	$(INSTALL) 'hxarray[test]' -e hxarray_tests/plugin_pkg -e hxarray_tests/ref_pkg
	touch $@

# The CUDA tests and `make cuda-check` also need NVRTC and CuPy's headers (no GPU).
$(VENV)/.installed-cuda: $(VENV)/.installed-test
	$(INSTALL) 'hxarray[cuda-check]'
	touch $@

run: $(VENV)/.installed
	@echo "make: running the demo (python -m hxarray demo)"
	@$(PY) -m hxarray demo

# Twice: on the compiled speedups, with the CUDA simulator's cuda:0 and the plug-ins' devices
# among the devices the chapter tests run on; then run interpreted (HXARRAY_PURE_PYTHON=1) on
# the CPU device, the one whose code the build changes (the plug-ins' devices and the simulator
# run the same Python either way, through the namespace the CPU's tests run interpreted too).
test: $(VENV)/.installed-cuda
	HXARRAY_CUDA_DRIVER=sim $(PY) -m pytest -n 2 -q
	HXARRAY_PURE_PYTHON=1 HXARRAY_TEST_DEVICES=cpu $(PY) -m pytest -n 2 -q

# The compiled test suite on Python 3.13 (pyenv's 3.13, or PYTHON313=path) with the newest numpy,
# in an environment of its own, on the CPU device: what depends on the interpreter and numpy's
# version (the compiled modules, numpy mode, the protocols). Without CuPy and NVRTC
# (hxarray[cuda-check]); the chapter tests on the devices whose code does not depend on the
# interpreter (the simulated cuda:0, ref, toy) and the CUDA runtime tests are left to `make test`,
# to keep CI within its time (test_simulator_without_cupy.py still runs the simulator here, with
# the headers that come with hxarray). CI runs it.
PYTHON313 ?= $(shell pyenv prefix 3.13 2>/dev/null)/bin/python3.13
test-py313:
	@$(MAKE) --no-print-directory VENV=.venv-3.13 PYTHON=$(PYTHON313) .venv-3.13/.installed-test
	.venv-3.13/bin/python -m pip install -qq --upgrade numpy
	HXARRAY_CUDA_DRIVER=sim HXARRAY_TEST_DEVICES=cpu .venv-3.13/bin/python -m pytest -n 2 -q \
	    --ignore=hxarray_tests/cuda

# Everything, slow tests included, with 500 hypothesis examples per property.
test-slow: $(VENV)/.installed-cuda
	HYPOTHESIS_PROFILE=thorough $(PY) -m pytest -n 2 -q -m "slow or not slow"

# The reliability suite (docs/reliability.md): a fuzzer over the whole API, a leak loop, threads
# against a serial run, out-of-memory under set_memory_limit, processes sharing a corrupted kernel
# cache; on the CPU, the reference device and cuda:0 (the simulator unless HXARRAY_CUDA_DRIVER
# says otherwise), compiled and pure-Python. `make stress-ci` is the bounded run CI makes (about
# two minutes); STRESS_ARGS passes options (e.g. --devices cpu --parts fuzz,leak).
stress: $(VENV)/.installed-cuda
	HXARRAY_CUDA_DRIVER=$${HXARRAY_CUDA_DRIVER:-sim} $(PY) -m stress --scale full $(STRESS_ARGS)

stress-ci: $(VENV)/.installed-cuda
	HXARRAY_CUDA_DRIVER=$${HXARRAY_CUDA_DRIVER:-sim} $(PY) -m stress --scale ci $(STRESS_ARGS)

ifneq ($(filter conformance,$(MAKECMDGOALS)),)
ifndef SUITE
$(error SUITE is not set: clone the suite with `git clone --recursive https://github.com/data-apis/array-api-tests.git`, then run `make conformance SUITE=path/to/array-api-tests`)
endif
endif

conformance: $(VENV)/.installed
	$(INSTALL) 'hxarray[conformance]'
	$(PY) -m conformance --suite $(SUITE) $(CONFORMANCE_ARGS)

# scikit-learn's own array-API tests with hxarray added to the namespaces they test, next to the
# same run for array-api-strict (conformance/sklearn/README.md); a few minutes on two cores.
sklearn-check: $(VENV)/.installed
	$(INSTALL) 'hxarray[sklearn]'
	$(PY) -m conformance.sklearn $(SKLEARN_ARGS)

# SciPy's own array-API tests with hxarray added to the backends they test, module by module,
# next to array-api-strict (conformance/scipy/README.md); SCIPY_ARGS="--devices cpu cuda:0" with
# HXARRAY_CUDA_DRIVER=sim adds the simulated CUDA device. Long: the better part of an hour.
scipy-check: $(VENV)/.installed
	$(INSTALL) 'hxarray[scipy-check]'
	$(PY) -m conformance.scipy $(SCIPY_ARGS)

ifneq ($(filter marray-check,$(MAKECMDGOALS)),)
ifndef MARRAY
$(error MARRAY is not set: clone marray with `git clone https://github.com/mdhaber/marray.git`, then run `make marray-check MARRAY=path/to/marray`)
endif
endif

# marray's tests (masked arrays over any namespace) parametrized over hxarray, next to
# array-api-strict and numpy (conformance/marray/README.md); a few minutes.
marray-check: $(VENV)/.installed
	$(INSTALL) 'hxarray[marray-check]'
	$(PY) -m conformance.marray --marray $(MARRAY) $(MARRAY_ARGS)

bench: $(VENV)/.installed
	$(INSTALL) 'hxarray[bench]'
	$(PY) -m benchmarks $(BENCH_ARGS)

# The CUDA figures: the simulator always, hxarray against CuPy where there is a GPU.
bench-cuda: $(VENV)/.installed-cuda
	$(INSTALL) 'hxarray[bench]'
	$(PY) -m benchmarks.cuda $(BENCH_ARGS)

# dask.array workloads over hxarray chunks against numpy chunks (threads and a 2-worker cluster);
# BENCH_ARGS="--gb 4" for a larger X (peak memory stays a few chunks per worker)
bench-dask: $(VENV)/.installed
	$(INSTALL) 'hxarray[dask]'
	$(PY) -m benchmarks.dask $(BENCH_ARGS)

bench-quick: $(VENV)/.installed
	$(INSTALL) 'hxarray[bench]'
	$(PY) -m benchmarks --quick $(BENCH_ARGS)

# scikit-learn with array-API dispatch: estimators, metrics and kernels on hxarray against numpy
# (docs/performance.md#scikit-learn). BENCH_ARGS="--quick" for a few minutes on two cores; on a
# loaded machine add "--threads 1 --clock cpu".
bench-sklearn: $(VENV)/.installed
	$(INSTALL) 'hxarray[sklearn]'
	SCIPY_ARRAY_API=1 $(PY) -m benchmarks.sklearn $(BENCH_ARGS)

# The overlap of xp.pipeline on the reference device and the simulated CUDA device (a few minutes).
bench-pipeline: $(VENV)/.installed-cuda
	$(INSTALL) 'hxarray[bench]'
	$(PY) -m benchmarks.pipeline $(BENCH_ARGS)

# The documentation site: docs/_build/html, every Sphinx warning an error. The API reference is
# generated from the docstrings of the pure-Python twins (the compiled functions carry the same).
docs: $(VENV)/.installed
	@$(INSTALL) 'hxarray[docs]'
	HXARRAY_PURE_PYTHON=1 $(PY) -m sphinx -c docs -W --keep-going -q -b html . docs/_build/html

# The built site in headless Chromium (Debian's package, installed here if missing): screenshots
# of the main pages in docs/_build/screenshots, and their rendered text checked.
docs-check: docs
	@command -v chromium >/dev/null || (apt-get update -qq && apt-get install -y -qq chromium)
	$(PY) docs/check_site.py docs/_build/html docs/_build/screenshots

# Lint and types: ruff over everything, mypy over the package (pyproject.toml: [tool.mypy]).
lint: $(VENV)/.installed-test
	@$(INSTALL) 'hxarray[lint]'
	$(PY) -m ruff check .
	$(PY) -m mypy

# Every CUDA source of the project through the real NVRTC for sm_80 and sm_90 (no GPU needed);
# any error or warning fails.
cuda-check: $(VENV)/.installed-cuda
	$(PY) -m hxarray.backends.cuda.nvrtc hxarray_tests/cuda/kernels

clean:
	rm -rf $(VENV) .venv-3.13 build *.egg-info .pytest_cache hxarray/_speedups*.so docs/_build docs/_generated
