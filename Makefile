# arkfs: every target installs what it needs first; nothing is installed by hand.
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
SYSTEM_PACKAGES := fuse3 libfuse3-dev pkg-config attr fio curl postgresql
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
STAMP := $(VENV)/.installed
TEST_ARGS ?=

.PHONY: install system-packages test lint demo bench clean

install: $(STAMP)

system-packages:
	@missing=""; \
	for p in $(SYSTEM_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing system packages:$$missing"; \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	fi

$(STAMP): pyproject.toml arkfs/xet/_gearcut.c | system-packages
	@[ -x $(PY) ] || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[s3,test,dev]'
	@touch $@

lint: install
	$(VENV)/bin/ruff check arkfs tests benchmarks
	$(VENV)/bin/ruff format --check arkfs tests benchmarks
	$(VENV)/bin/mypy

test: install lint
	$(PY) -m pytest $(TEST_ARGS)

demo: install
	@bash examples/demo.sh $(VENV)

# The bench extra (numpy, matplotlib) goes into the venv without reinstalling arkfs itself.
bench: install
	$(PY) -m pip install -q $$($(PY) -c "import tomllib; \
	  print(*tomllib.load(open('pyproject.toml', 'rb'))['project']['optional-dependencies']['bench'])")
	$(PY) benchmarks/run.py

clean:
	rm -rf $(VENV) build *.egg-info arkfs/xet/*.so
