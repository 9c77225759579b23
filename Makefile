# Two set-up commands, each creating the environment on first use:
#   make demo   ingest the sample document and answer questions (no key, no Discord)
#   make test   lint and run the test suite
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
export HF_HUB_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false

# torch's CPU build first (about 190 MB), from PyTorch's CPU wheel index: a bare `torch` from the
# default index is, on Linux, the CUDA build with several GB of NVIDIA libraries. Where that index
# cannot be reached (no internet, only a mirror), pip fails in seconds and torch comes from the
# default index (or the mirror) instead.
$(STAMP): pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q --timeout 10 --retries 0 --index-url https://download.pytorch.org/whl/cpu torch==2.13.0 \
	  || { echo "PyTorch's CPU wheel index cannot be reached: torch comes from the default index"; \
	       $(PY) -m pip install -q torch==2.13.0; }
	$(PY) -m pip install -q -e '.[dev]'
	touch $(STAMP)

DOCS := .env.example docs/CLI.md docs/CONFIGURATION.md

.PHONY: install demo test bench lint docs
install: $(STAMP)

# The knowledge base `demo` in the default data directory (./data), so that `raptor ask ... --kb demo`
# works afterwards; README.md shows what these commands print (`make docs` runs them to regenerate it).
demo: $(STAMP)
	$(VENV)/bin/raptor ingest raptor_tools/samples/lighthouse_keepers.md --kb demo
	$(VENV)/bin/raptor tree --kb demo
	$(VENV)/bin/raptor ask "What is the central theme of this document?" --kb demo
	$(VENV)/bin/raptor ask "Who kept the light in 1887?" --kb demo

lint: $(STAMP)
	$(VENV)/bin/ruff check raptor_engine raptor_tools bot tests

test: $(STAMP) lint
	$(PY) -m pytest -q

# Regenerate what is generated from the code: the CLI reference, the settings table, .env.example
docs: $(STAMP)
	$(VENV)/bin/cog -r $(DOCS)

bench: $(STAMP)
	$(VENV)/bin/raptor bench
