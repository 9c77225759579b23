# Two set-up commands, each creating the environment on first use:
#   make demo   ingest the sample document and answer questions (no key, no Discord)
#   make test   lint and run the test suite (on several workers: pytest-xdist)
# and for the inner loop, `make test-fast`: the suite without its end-to-end `slow` tests
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
export HF_HUB_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false

$(STAMP): pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	# torch's CPU build first: a bare `torch` requirement would pull a multi-GB CUDA build
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e '.[dev]'
	touch $(STAMP)

DOCS := .env.example docs/CLI.md docs/CONFIGURATION.md

# Workers for the suite: most tests wait on subprocesses, sockets and SQLite, so more workers than
# cores keeps both cores busy; override with `make test WORKERS=1`.
WORKERS ?= 4

.PHONY: install demo test test-fast bench lint docs
install: $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/raptor --data-dir data/demo ingest raptor_tools/samples/lighthouse_keepers.md --kb demo
	$(VENV)/bin/raptor --data-dir data/demo tree --kb demo
	$(VENV)/bin/raptor --data-dir data/demo ask "What is the central theme of this document?" --kb demo
	$(VENV)/bin/raptor --data-dir data/demo ask "Who kept the light in 1887?" --kb demo

lint: $(STAMP)
	$(VENV)/bin/ruff check raptor_engine raptor_tools bot tests

test: $(STAMP) lint
	$(PY) -m pytest -q -n $(WORKERS) --dist loadfile

test-fast: $(STAMP) lint
	$(PY) -m pytest -q -n $(WORKERS) --dist loadfile -m "not slow and not e2e and not wheel"

# Regenerate what is generated from the code: the CLI reference, the settings table, .env.example
docs: $(STAMP)
	$(VENV)/bin/cog -r $(DOCS)

bench: $(STAMP)
	$(VENV)/bin/raptor bench
