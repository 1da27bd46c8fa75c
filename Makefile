# Every command a user or CI runs. `make help` lists them.
SHELL := /bin/bash
.DEFAULT_GOAL := help

SWIFT ?= swift
# This checkout of Actomaton, wherever make was started from (`make -C path/to/Actomaton …` or
# `make -f path/to/Actomaton/Makefile …` from your own package).
ACTOMATON_ROOT := $(patsubst %/,%,$(dir $(abspath $(lastword $(MAKEFILE_LIST)))))
# Debian packages the project needs: libffi and SQLite (the journal) for the plugin host;
# PostgreSQL for the cluster's tests (each starts a private server in a temporary directory);
# wasi-libc, binaryen (wasm-opt) and wabt (wasm-objdump) for the wasm build.
APT_PACKAGES := libffi-dev libsqlite3-dev wasi-libc openssl curl postgresql
WASM_APT_PACKAGES := wasi-libc binaryen wabt

.PHONY: help deps build release-build test test-tsan fuzz bench demo readme-check docs wasm-install wasm-build wasm-test embedded-build
.PHONY: web web-serve web-test web-screenshot inspector-assets inspector-test inspector-screenshots

help: ## List the commands.
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-16s %s\n", $$1, $$2}'

# apt-install PACKAGES: installs the Debian packages that are missing (removed but not purged
# counts as missing); silent when none is.
define apt-install
	@missing=""; for p in $(1); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "ok installed" || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "Installing$$missing (apt-get)"; \
	  sudo=""; [ "$$(id -u)" = 0 ] || sudo=sudo; \
	  $$sudo apt-get update -qq && $$sudo apt-get install -y -qq $$missing >/dev/null; \
	fi
endef

deps: ## Install the Debian packages the project needs, when missing.
	$(call apt-install,$(APT_PACKAGES) $(WASM_APT_PACKAGES))

wasm-install: ## Install what the wasm build needs (Debian packages), when missing.
	$(call apt-install,$(WASM_APT_PACKAGES))

wasm-build: wasm-install ## Compile the core and the examples to .wasm modules, and the example .wasm plugins (.build/wasm/plugins/).
	@./wasm/build.sh

wasm-test: wasm-build ## Run scenarios inside the .wasm modules (WasmKit) against the native machines.
	$(SWIFT) test --filter WasmModuleTests

embedded-build: ## Compile the core and the examples for Cortex-M and RISC-V with Embedded Swift; print code sizes.
	@./wasm/embedded-build.sh

# --- The web page ---
# The wasm modules in a browser: a static page in .build/web/ (sources in wasm/web/), served on
# loopback and tested in headless Chromium against the native machines.
WEB_PORT ?= 8000
WEB_APT_PACKAGES := graphviz
WEB_TEST_APT_PACKAGES := chromium chromium-driver python3-venv
WEB_VENV := .build/web-venv

web: wasm-build ## Build the web page (tic-tac-toe, a live CSV tokenizer, the platformer statechart, state diagrams) in .build/web/.
	$(call apt-install,$(WEB_APT_PACKAGES))
	@./wasm/web/build.sh

web-serve: web ## Serve the web page on http://127.0.0.1:8000/ (WEB_PORT=8001 picks another port).
	python3 wasm/web/serve.py --port $(WEB_PORT)

# The test's Python packages (Selenium), in a virtual environment; remade when the list changes.
$(WEB_VENV)/installed: wasm/web/requirements.txt
	$(call apt-install,$(WEB_TEST_APT_PACKAGES))
	rm -rf $(WEB_VENV)
	python3 -m venv $(WEB_VENV)
	$(WEB_VENV)/bin/pip install --quiet --disable-pip-version-check -r wasm/web/requirements.txt
	@touch $@

web-test: web $(WEB_VENV)/installed ## Play the page in headless Chromium; check its DOM against the native machines.
	$(call apt-install,$(WEB_TEST_APT_PACKAGES))
	$(WEB_VENV)/bin/python wasm/web/test.py

web-screenshot: web $(WEB_VENV)/installed ## Retake the README's picture of the page (wasm/web/screenshot.png).
	$(call apt-install,$(WEB_TEST_APT_PACKAGES) pngquant)
	$(WEB_VENV)/bin/python wasm/web/test.py --screenshot wasm/web/screenshot.png

build: deps ## Build every module (debug).
	$(SWIFT) build

# The optimizer is a compiler of its own: Swift 6.3.1's crashed on a change that the debug
# build, and every test, took (an `Atomic` in a class whose initializer throws).
release-build: deps ## Build every module and product optimized (-c release), as the benchmarks and users do.
	$(SWIFT) build -c release

test: deps readme-check wasm-build ## Run every test target, the wasm modules' included.
	$(SWIFT) test
	@# Timing tests measure the concurrency pool's availability: in a process of their own.
	ACTOMATON_TIMING_TESTS=1 $(SWIFT) test --skip-build --filter BlockingTests

test-tsan: deps ## Run the async layer's tests under ThreadSanitizer (own build folder).
	$(SWIFT) test --sanitize=thread --scratch-path .build-tsan --filter 'ActomatonEffectTests|ActomatonTests|ActomatonUITests'

# How long `make fuzz` runs each harness, in seconds; FUZZ names the harnesses to run (all when empty).
FUZZ_SECONDS ?= 60
FUZZ ?=

fuzz: deps ## Fuzz the parsers and the manifest validator (libFuzzer), FUZZ_SECONDS each (60; FUZZ=csv runs one).
	@FUZZ_SECONDS=$(FUZZ_SECONDS) Tests/Fuzz/fuzz.sh $(FUZZ)

readme-check: ## Check that every Swift example in the README and the DocC articles is also a test.
	@python3 scripts/readme-check.py

# The modules that have a DocC catalog (Sources/<Module>/<Module>.docc), in one combined site.
# DOCS_STRICT= (empty) lists every warning instead of stopping at the first module that has one.
DOCS_STRICT ?= --warnings-as-errors
DOC_MODULES := ActomatonCore ActomatonEffect Actomaton ActomatonUI ActomatonTesting ActomatonDebugging \
	ActomatonPluginCore ActomatonPluginKit ActomatonPluginContract ActomatonHost HostCommandLine \
	ActomatonService ActomatonCluster

inspector-test: plugins host $(WEB_VENV)/installed ## The inspector and the games for two in headless Chromium, against a live serve --listen.
	$(call apt-install,$(WEB_TEST_APT_PACKAGES))
	$(WEB_VENV)/bin/python scripts/inspector-test.py $(HOST) $(PLUGIN_DIR)

inspector-screenshots: plugins host $(WEB_VENV)/installed ## Retake the README's pictures of the inspector and the game pages (docs/images/).
	$(call apt-install,$(WEB_TEST_APT_PACKAGES) pngquant)
	$(WEB_VENV)/bin/python scripts/inspector-test.py $(HOST) $(PLUGIN_DIR) --screenshots docs/images

inspector-assets: ## Embed inspector/ (the inspector and the play pages) in the host: Sources/ActomatonService/InspectorAssets.swift.
	python3 scripts/embed-inspector.py

docs: deps ## Build the documentation (DocC) into .build/docs, a static site; any warning fails it.
	$(SWIFT) package --allow-writing-to-directory .build/docs generate-documentation \
	  $(foreach m,$(DOC_MODULES),--target $(m)) \
	  --enable-experimental-combined-documentation \
	  --output-path .build/docs --transform-for-static-hosting $(DOCS_STRICT)
	@echo "Documentation: .build/docs (serve it with: python3 -m http.server -d .build/docs, then open /documentation/)"

bench: wasm-build ## Run the benchmarks (release build of Benchmarks/) and print the ratios.
	cd Benchmarks && $(SWIFT) package --allow-writing-to-package-directory benchmark --format jmh --path .build/results
	python3 Benchmarks/report.py Benchmarks/.build/results
	@python3 Benchmarks/csv_python.py
	@# The JMH export drops a benchmark whose iteration takes over a second (its throughput rounds
	@# to 0): the CSV parsers on 64 MiB. Their figures, as a Markdown table:
	cd Benchmarks && $(SWIFT) package --allow-writing-to-package-directory benchmark --target CoreBenchmarks \
	  --filter 'csv-64mib.*' --format markdown | grep -E '^(###|\| (Time|Malloc))'

demo: host-demo wasm-demo network-demo ## The main job: drive the example plugins through actomaton-host, as .so and as .wasm, and over HTTP.

# --- Plugin host ---
# The Linux plugin host: reducer plugins built to .so files and driven through actomaton-host.
# HOST_SCRATCH is the SwiftPM scratch path (`make plugins HOST_SCRATCH=.build-host`).
HOST_SCRATCH ?= .build
HOST_BIN = $(HOST_SCRATCH)/debug
PLUGIN_DIR = $(HOST_SCRATCH)/plugins
HOST = $(HOST_BIN)/actomaton-host
DEMO = Plugins/demo
# product name : file name in $(PLUGIN_DIR)
HOST_PLUGINS := CounterPlugin:counter CSVTokenizerPlugin:csv TicTacToePlugin:tictactoe LoginPlugin:login PlatformerPlugin:platformer

.PHONY: plugins host host-demo host-bench server-bench wasm-demo network-demo test-api wasm-plugin torture test-cluster cluster-bench

plugins: deps ## Build the example plugins (four in Swift, one in C) to .so files.
	@for entry in $(HOST_PLUGINS); do \
	  $(SWIFT) build --scratch-path $(HOST_SCRATCH) --product $${entry%%:*} || exit 1; \
	done
	@mkdir -p $(PLUGIN_DIR)
	@for entry in $(HOST_PLUGINS); do \
	  install -m 0755 $(HOST_BIN)/lib$${entry%%:*}.so $(PLUGIN_DIR)/$${entry##*:}.so; \
	done
	@echo "Plugins built:"; for f in $(PLUGIN_DIR)/*.so; do echo "  $$f"; done

host: deps ## Build the plugin host executable, actomaton-host.
	$(SWIFT) build --scratch-path $(HOST_SCRATCH) --product actomaton-host

host-demo: plugins host ## Build the example plugins and drive them through actomaton-host.
	@echo; echo "== actomaton-host inspect: each plugin's manifest"
	@for f in counter csv tictactoe login platformer; do $(HOST) inspect $(PLUGIN_DIR)/$$f.so; echo; done
	@echo "== run: the C counter, with a delayed action and a timer ($(DEMO)/counter.txt)"
	$(HOST) run $(PLUGIN_DIR)/counter.so --script $(DEMO)/counter.txt
	@echo; echo "== run: tic-tac-toe ($(DEMO)/tictactoe.txt)"
	$(HOST) run $(PLUGIN_DIR)/tictactoe.so --script $(DEMO)/tictactoe.txt
	@echo; echo "== run: a platformer character, a statechart with history and a parallel weapon ($(DEMO)/platformer.txt)"
	$(HOST) run $(PLUGIN_DIR)/platformer.so --script $(DEMO)/platformer.txt
	@echo; echo "== run: the CSV tokenizer, from standard input"
	$(HOST) run $(PLUGIN_DIR)/csv.so < $(DEMO)/csv.txt
	@echo; echo "== run: login / logout with timers and cancellation, in real time ($(DEMO)/login.txt)"
	$(HOST) run $(PLUGIN_DIR)/login.so --script $(DEMO)/login.txt
	@echo; echo "== run: bad input, each reported with its line (exits 1)"
	@$(HOST) run $(PLUGIN_DIR)/counter.so --script $(DEMO)/bad-input.txt --keep-going; echo "exit status: $$?"
	@echo; echo "== inspect: a file that is not a plugin (exits 1)"
	@$(HOST) inspect $(DEMO)/counter.txt; echo "exit status: $$?"
	@echo; echo "== serve: every plugin of a directory; counter.so is replaced half-way and reloaded"
	@rm -rf $(HOST_SCRATCH)/serve-demo && mkdir -p $(HOST_SCRATCH)/serve-demo
	@cp $(PLUGIN_DIR)/*.so $(HOST_SCRATCH)/serve-demo/
	@( cat $(DEMO)/serve-1.txt; sleep 1.5; \
	   cp $(PLUGIN_DIR)/counter.so $(HOST_SCRATCH)/serve-demo/counter.so.new; \
	   mv $(HOST_SCRATCH)/serve-demo/counter.so.new $(HOST_SCRATCH)/serve-demo/counter.so; \
	   sleep 0.2; cat $(DEMO)/serve-2.txt ) | $(HOST) serve --plugins $(HOST_SCRATCH)/serve-demo
	@echo; echo "== run --state: the counter is killed with a timer pending, and comes back where it was"
	@rm -f $(HOST_SCRATCH)/demo-state.sqlite*
	@# Killed once it has printed (acknowledged) the delayed action, not after a fixed time: a busy
	@# machine may still be creating the database 0.2 s in.
	@( printf 'add 40\nadd_later 2 1.5\n'; sleep 3 ) | $(HOST) run $(PLUGIN_DIR)/counter.so --state $(HOST_SCRATCH)/demo-state.sqlite \
	    > $(HOST_SCRATCH)/demo-state.out & \
	  host=$$!; for i in $$(seq 1 400); do grep -q 'add_later' $(HOST_SCRATCH)/demo-state.out && break; sleep 0.05; done; \
	  kill -9 $$host; cat $(HOST_SCRATCH)/demo-state.out; wait 2>/dev/null; echo "(killed with kill -9)"
	$(HOST) journal $(HOST_SCRATCH)/demo-state.sqlite
	printf ':state\n:sleep 2\n:state\n' | $(HOST) run $(PLUGIN_DIR)/counter.so --state $(HOST_SCRATCH)/demo-state.sqlite

# The network demo's WebSocket client (Python's websockets), in a virtual environment;
# remade when the list changes.
DEMO_VENV := .build/demo-venv
$(DEMO_VENV)/installed: $(DEMO)/requirements.txt
	$(call apt-install,python3-venv curl)
	rm -rf $(DEMO_VENV)
	python3 -m venv $(DEMO_VENV)
	$(DEMO_VENV)/bin/pip install --quiet --disable-pip-version-check -r $(DEMO)/requirements.txt
	@touch $@

network-demo: plugins host $(DEMO_VENV)/installed ## serve --listen: the counter over HTTP with curl, a WebSocket watcher, SIGTERM.
	@echo; echo "== serve --listen: keyed instances of the counter over HTTP and WebSocket ($(DEMO)/network.sh)"
	@rm -rf $(HOST_SCRATCH)/network-demo && mkdir -p $(HOST_SCRATCH)/network-demo
	@cp $(PLUGIN_DIR)/counter.so $(HOST_SCRATCH)/network-demo/
	@$(DEMO)/network.sh $(HOST) $(HOST_SCRATCH)/network-demo $(DEMO_VENV)/bin/python

# schemathesis (PyPI) in a virtual environment, for test-api; remade when the list changes.
API_VENV := .build/api-venv
$(API_VENV)/installed: docs/api-test-requirements.txt
	$(call apt-install,python3-venv)
	rm -rf $(API_VENV)
	python3 -m venv $(API_VENV)
	$(API_VENV)/bin/pip install --quiet --disable-pip-version-check -r docs/api-test-requirements.txt
	@touch $@

API_TEST_SECONDS ?= 60
test-api: plugins host $(API_VENV)/installed ## schemathesis against a live serve --listen (in memory; then --state and --tokens): every response matches docs/openapi.yaml, none is a 5xx.
	docs/test-api.sh $(HOST) $(PLUGIN_DIR)/counter.so $(API_VENV)/bin/st $(API_TEST_SECONDS)

WASM_PLUGINS = .build/wasm/plugins

wasm-demo: wasm-build host ## The same machines as .wasm plugins in the host's sandbox, and a module that misbehaves.
	@echo; echo "== inspect: a .wasm plugin (the C counter, compiled to WebAssembly)"
	@$(HOST) inspect $(WASM_PLUGINS)/counter.wasm
	@echo; echo "== run: tic-tac-toe as a .wasm plugin, the same script as the .so ($(DEMO)/tictactoe.txt)"
	$(HOST) run $(WASM_PLUGINS)/tictactoe.wasm --script $(DEMO)/tictactoe.txt
	@echo; echo "== run: the platformer character as a .wasm plugin, the same script as the .so ($(DEMO)/platformer.txt)"
	$(HOST) run $(WASM_PLUGINS)/platformer.wasm --script $(DEMO)/platformer.txt
	@echo; echo "== run: the counter as a .wasm plugin, with its timers on the host's effect manager"
	$(HOST) run $(WASM_PLUGINS)/counter.wasm --script $(DEMO)/counter.txt
	@echo; echo "== run: a module that loops forever, traps and recurses; each action fails alone (exits 1)"
	@printf 'bump\nspin\ncrash\nrecurse\nbump\n:state\n' | $(HOST) run .build/wasm/hostile/hostile.wasm --fuel 1000000 --keep-going; echo "exit status: $$?"
	@echo; echo "== serve: .so and .wasm plugins side by side"
	@rm -rf $(HOST_SCRATCH)/serve-mixed && mkdir -p $(HOST_SCRATCH)/serve-mixed
	@cp $(PLUGIN_DIR)/csv.so $(WASM_PLUGINS)/tictactoe.wasm $(HOST_SCRATCH)/serve-mixed/
	@printf 'tictactoe.place 1 1\ncsv.feed "a,b\\n"\n:state\n' | $(HOST) serve --plugins $(HOST_SCRATCH)/serve-mixed

# wasm-plugin, from your own package: NAME (a Swift module name), OUTPUT (the .wasm file),
# SOURCES (files or folders), LIBRARY (NAME=PATH modules the sources import, space-separated, in
# dependency order) and CACHE (the compiled core and kit; default: .build/actomaton-wasm). Relative
# paths are taken from CALLER_DIR: the directory you ran make in (the shell's $PWD, which
# `make -C` leaves alone), not this folder.
CALLER_DIR = $(or $(PWD),$(CURDIR))
CACHE = .build/actomaton-wasm
LIBRARY =

wasm-plugin: wasm-install ## Turn your own reducer into a .wasm plugin: make -C path/to/Actomaton wasm-plugin NAME=Blinker OUTPUT=blinker.wasm SOURCES="..." [LIBRARY="Mod=path"] [CACHE=dir]
	@[ -n "$(NAME)" ] && [ -n "$(OUTPUT)" ] && [ -n "$(SOURCES)" ] || { echo "usage: make wasm-plugin NAME=Module OUTPUT=file.wasm SOURCES=\"files or folders\" [LIBRARY=\"Module=path ...\"] [CACHE=dir]"; exit 2; }
	@cd "$(CALLER_DIR)" && "$(ACTOMATON_ROOT)/wasm/actomaton-wasm-plugin" --name "$(NAME)" --output "$(OUTPUT)" --cache "$(CACHE)" \
	  $(foreach library,$(LIBRARY),--library "$(library)") $(SOURCES)

host-bench: wasm-build ## Benchmark a plugin action against the same reducer compiled in (release build).
	cd Benchmarks && $(SWIFT) package --allow-writing-to-package-directory benchmark --target HostBenchmarks --format jmh --path .build/results
	python3 Benchmarks/report.py Benchmarks/.build/results

server-bench: deps $(DEMO_VENV)/installed ## The network service under load (wrk) against a plain Hummingbird handler, instance memory, 1,000 watchers (release build).
	$(call apt-install,wrk)
	$(SWIFT) build -c release --product actomaton-host
	$(SWIFT) build -c release --product CounterPlugin
	$(DEMO_VENV)/bin/python scripts/server-bench.py .build/release/actomaton-host .build/release/libCounterPlugin.so

# --- The cluster: three hosts sharing one private PostgreSQL, under kill -9, SIGSTOP and restarts ---
CLUSTER_ROUNDS ?= 10

test-cluster: deps plugins host ## Three hosts on one private PostgreSQL: kill -9, SIGSTOP past the lease and restarts, CLUSTER_ROUNDS (10) of each; checks exactly-once and prints failover times.
	python3 scripts/cluster-test.py $(HOST) $(PLUGIN_DIR)/counter.so --rounds $(CLUSTER_ROUNDS)

cluster-bench: deps ## The cluster's actions/s and p99 with one, two and three hosts, and a forwarded request against a direct one (release build, wrk).
	$(call apt-install,wrk)
	$(SWIFT) build -c release --product actomaton-host
	$(SWIFT) build -c release --product CounterPlugin
	python3 scripts/cluster-bench.py .build/release/actomaton-host .build/release/libCounterPlugin.so

# --- Torture: the host's promises under kill -9, two hosts and a full database ---
TORTURE_ROUNDS ?= 20

torture: plugins host ## Kill -9 the host TORTURE_ROUNDS times per --sync policy, start two hosts on one state file, fill the database; print what each lost against its bound.
	python3 scripts/torture.py $(HOST) $(PLUGIN_DIR)/counter.so --rounds $(TORTURE_ROUNDS)
