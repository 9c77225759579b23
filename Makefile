# Two set-up commands, each creating the environment on first use:
#   make demo   ingest the sample document and answer questions (no key, no Discord)
#   make test   lint and run the test suite (on several workers: pytest-xdist)
# and for the inner loop, `make test-fast`: the suite without its end-to-end `slow` tests
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

# Workers for the suite: most tests wait on subprocesses, sockets and SQLite, so more workers than
# cores keeps both cores busy; override with `make test WORKERS=1`.
WORKERS ?= 4
# The suite starts hundreds of Python processes (workers, CLI runs, bots, parse children): let them
# write and reuse bytecode, and pytest its rewritten test modules, even where the environment says not to
# (PYTHONDONTWRITEBYTECODE): each process then compiles nothing already compiled.
PYTEST := PYTHONDONTWRITEBYTECODE= $(PY) -m pytest -q -n $(WORKERS) --dist loadfile

.PHONY: install demo test test-fast bench lint docs picture
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
	$(PYTEST)

test-fast: $(STAMP) lint
	$(PYTEST) -m "not slow and not e2e and not wheel"

# Regenerate what is generated from the code: the CLI reference, the settings table, .env.example, and
# README.md's demo output (by running the demo's commands in a new data directory: about a minute)
docs: $(STAMP)
	$(VENV)/bin/cog -r $(DOCS) README.md

bench: $(STAMP)
	$(VENV)/bin/raptor bench

# docs/tree.png, the picture in README.md and docs/HOW_IT_WORKS.md: the sample and two small documents in
# one knowledge base, with the context of a question highlighted (64 colours, to keep the repository small)
PICTURE_DATA := $(or $(TMPDIR),/tmp)/raptor-picture
picture: $(STAMP)
	rm -rf $(PICTURE_DATA)
	$(VENV)/bin/raptor --data-dir $(PICTURE_DATA) ingest --kb demo --quiet raptor_tools/samples/lighthouse_keepers.md \
	  raptor_tools/samples/railway.md raptor_tools/samples/bees.md
	$(VENV)/bin/raptor --data-dir $(PICTURE_DATA) ask "Who kept the light in 1887?" --kb demo --tree-png docs/tree.png
	$(PY) -c "from PIL import Image; Image.open('docs/tree.png').quantize(64).save('docs/tree.png', optimize=True)"
	rm -rf $(PICTURE_DATA)
