# partsim: `make demo` and `make test` work on a fresh machine (they set everything up).
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
OV_VENV := .venv-openvino

.PHONY: demo test setup graphviz browser clean bench lint-rules

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[test]'
	touch $(STAMP)

setup: $(STAMP) graphviz

graphviz:
	@command -v dot >/dev/null 2>&1 || { \
	  echo "installing graphviz (for 'dot')"; \
	  if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
	  $$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq graphviz >/dev/null; }

demo: setup
	mkdir -p out
	$(BIN)/partsim simulate fixtures/demo.onnx --providers nnapi
	$(BIN)/partsim simulate fixtures/demo.onnx --providers nnapi --format json -o out/demo.summary.json
	@echo "wrote out/demo.summary.json"

# headless Chromium for the HTML report tests (tests skip without it); a failed install is not fatal
browser:
	@command -v chromium >/dev/null 2>&1 || { \
	  echo "installing chromium (headless browser tests of partsim render)"; \
	  if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
	  { $$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq chromium >/dev/null; } || \
	    echo "chromium not installed: the browser tests will be skipped"; }

test: setup browser
	$(BIN)/python -m pytest -q

bench: setup
	$(BIN)/python benchmarks/run.py

clean:
	rm -rf $(VENV) $(OV_VENV) out .pytest_cache
