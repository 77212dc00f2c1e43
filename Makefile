# Two commands for a newcomer: `make demo` and `make test`. Both create/reuse .venv and install
# the pinned, tested versions (constraints.txt) first; nothing else is needed.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip
STAMP  := $(VENV)/.dynkit-installed
PYTEST_WORKERS ?= 2

.PHONY: install demo test bench docs clean

install: $(STAMP)

$(STAMP): pyproject.toml constraints.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	# torch first, alone: the CPU wheel 2.13.0 then satisfies every torch range below.
	$(PIP) install -q -c constraints.txt torch==2.13.0
	$(PIP) install -q -c constraints.txt -e ".[dev,docs,timeseries]"
	# test-only peer; --no-deps because its declared needs would pull a CUDA torchvision
	$(PIP) install -q --no-deps momentumnet==0.10
	touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/dynkit report --out report

test: $(STAMP)
	$(VENV)/bin/lint-imports
	$(PY) -m pytest -q -n $(PYTEST_WORKERS) tests

bench: $(STAMP)
	$(PY) -m benchmarks

docs: $(STAMP)
	$(PY) -m sphinx -W --keep-going -b html docs docs/_build/html

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .hypothesis report docs/_build docs/generated
