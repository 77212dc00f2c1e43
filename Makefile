# Two commands for a newcomer: `make demo` and `make test`. Both create/reuse .venv and install
# the pinned, tested versions (constraints.txt) first; nothing else is needed.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip
CORE   := $(VENV)/.dynkit-core
STAMP  := $(VENV)/.dynkit-installed
PYTEST_WORKERS ?= 2

.PHONY: install kernels demo test bench docs clean browser

install: $(STAMP) kernels

# The core alone (what `import dynkit` and the demo's report need): `make demo` installs no more.
$(CORE): pyproject.toml constraints.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	# torch first, alone: the CPU wheel 2.13.0 then satisfies every torch range below.
	$(PIP) install -q -c constraints.txt torch==2.13.0
	$(PIP) install -q -c constraints.txt -e .
	touch $(CORE)

# Everything the tests, the docs and the benchmarks need, on top of the core (jit: numba, so that the tests
# exercise the compiled path; `make demo` stays core-only).
$(STAMP): $(CORE)
	$(PIP) install -q -c constraints.txt -e ".[dev,docs,timeseries,cli,jit]"
	# test-only peer; --no-deps because its declared needs would pull a CUDA torchvision
	$(PIP) install -q --no-deps momentumnet==0.10
	touch $(STAMP)

# The compiled path's kernels into numba's on-disk cache once (about a minute of CPU), so that no
# first `compile=True` solve compiles them; a second when the cache is up to date (numba's cache key
# is the kernels' code and versions: an edit or an upgrade recompiles, as on first use).
kernels: $(STAMP)
	$(VENV)/bin/dynkit build-kernels

demo: $(CORE)
	$(VENV)/bin/dynkit report --out report

test: $(STAMP) kernels browser
	$(VENV)/bin/lint-imports
	$(VENV)/bin/ruff format --check --quiet .
	$(VENV)/bin/ruff check --quiet .
	$(PY) -m pytest -q -n $(PYTEST_WORKERS) tests

# The report and docs tests load pages in a real headless Chromium (offline). Install Debian's package when
# absent (CI runs as root on Debian); anything else stops here with the reason, never a silent skip.
CHROMIUM := $(or $(DYNKIT_CHROMIUM),$(shell command -v chromium || command -v chromium-browser || command -v google-chrome))
browser:
ifeq ($(CHROMIUM),)
	@echo "make test: installing Chromium (Debian package) for the browser tests"
	@command -v apt-get >/dev/null && [ "$$(id -u)" = 0 ] || { echo "make test needs Chromium: run 'apt-get install chromium' as root, or set DYNKIT_CHROMIUM=/path/to/chrome" >&2; exit 1; }
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium >/dev/null || { DEBIAN_FRONTEND=noninteractive apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium >/dev/null; }
endif
	@# a font with a MATH table, for the brackets of the report's matrices (the browser test measures them)
	@fc-list 2>/dev/null | grep -qi "math" || { command -v apt-get >/dev/null && [ "$$(id -u)" = 0 ] && DEBIAN_FRONTEND=noninteractive apt-get install -y -q fonts-dejavu-extra >/dev/null; } || echo "make test: no math font found (apt-get install fonts-dejavu-extra): the bracket test will fail" >&2

bench: $(STAMP)
	$(PY) -m benchmarks

docs: $(STAMP)
	$(PY) -m sphinx -W --keep-going -b html docs docs/_build/html

clean:
	rm -rf $(VENV) build *.egg-info src/*.egg-info .pytest_cache .hypothesis report docs/_build docs/generated
