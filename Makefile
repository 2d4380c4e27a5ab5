# arkfs: every target installs what it needs first; nothing is installed by hand.
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
SYSTEM_PACKAGES := fuse3 libfuse3-dev pkg-config attr fio curl postgresql mount util-linux zsh chromium rsync nginx haproxy squid
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
STAMP := $(VENV)/.installed
TEST_ARGS ?=
# Workers of `make test` (pytest-xdist); each module stays on one worker, with its fixtures.
TEST_WORKERS ?= 2

.PHONY: install system-packages install-system uninstall-system compile test test-fast lint demo bench dist clean

# Where mount(8) finds arkfs: mount.fuse3 runs `arkfs` for -t fuse.arkfs through /bin/sh
# with the default PATH (so /usr/local/bin), and mount(8) looks for /sbin/mount.TYPE helpers
# (not /usr/local/sbin) for -t arkfs.
BINDIR ?= /usr/local/bin
SBINDIR ?= /sbin
ARKFS_BIN = $(abspath $(VENV))/bin/arkfs

install: $(STAMP)

# Link this checkout's arkfs as $(BINDIR)/arkfs and $(SBINDIR)/mount.arkfs (root; idempotent).
install-system: install
	$(SUDO) ln -sfn $(ARKFS_BIN) $(BINDIR)/arkfs
	$(SUDO) ln -sfn $(ARKFS_BIN) $(SBINDIR)/mount.arkfs

# Remove those links, and only links (idempotent).
uninstall-system:
	@for f in $(BINDIR)/arkfs $(SBINDIR)/mount.arkfs; do \
	  if [ -L $$f ]; then $(SUDO) rm -f $$f && echo "removed $$f"; fi; \
	done

system-packages:
	@missing=""; \
	for p in $(SYSTEM_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing system packages:$$missing"; \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	fi

$(STAMP): pyproject.toml $(wildcard arkfs/*/*.c arkfs/*/*/*.[ch]) | system-packages
	@[ -x $(PY) ] || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[fuse,s3,test,dev]'
	@touch $@

lint: install
	$(VENV)/bin/ruff check arkfs tests benchmarks
	$(VENV)/bin/ruff format --check arkfs tests benchmarks
	$(VENV)/bin/mypy

# arkfs's bytecode, compiled ahead as a wheel install would have it: with
# PYTHONDONTWRITEBYTECODE set (as on CI), every arkfs process would compile its modules
# from source at start (~0.1 s of each short command, of each test's subprocesses).
compile: install
	$(PY) -m compileall -q arkfs

test: install lint compile
	$(PY) -m pytest -n $(TEST_WORKERS) --dist loadscope $(TEST_ARGS)

# The unit tests only (no FUSE, no subprocess, no server): the fast loop while changing one layer.
test-fast: install
	$(PY) -m pytest -m unit -q $(TEST_ARGS)

demo: install
	@bash examples/demo.sh $(VENV)

# The bench extra (numpy, matplotlib) goes into the venv without reinstalling arkfs itself.
bench: install compile
	$(PY) -m pip install -q $$($(PY) -c "import tomllib; \
	  print(*tomllib.load(open('pyproject.toml', 'rb'))['project']['optional-dependencies']['bench'])")
	$(PY) benchmarks/run.py

# A release in dist/: the sdist, and a wheel for this machine built from it as pip would.
dist: install
	rm -rf dist
	$(PY) -m build --sdist -o dist .
	$(PY) -m pip wheel -q --no-deps -w dist dist/arkfs-*.tar.gz

clean:
	rm -rf $(VENV) build dist *.egg-info arkfs/*/*.so
