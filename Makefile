# Every command a user or CI runs. `make help` lists them.
SHELL := /bin/bash
.DEFAULT_GOAL := help

SWIFT ?= swift
# Debian packages the project needs: libffi for the plugin host; wasi-libc, binaryen (wasm-opt)
# and wabt (wasm-objdump) for the wasm build.
APT_PACKAGES := libffi-dev wasi-libc
WASM_APT_PACKAGES := wasi-libc binaryen wabt

.PHONY: help deps build test test-tsan bench demo readme-check wasm-install wasm-build wasm-test embedded-build

help: ## List the commands.
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-16s %s\n", $$1, $$2}'

# apt-install PACKAGES: installs the Debian packages that are missing; silent when none is.
define apt-install
	@missing=""; for p in $(1); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
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

wasm-build: wasm-install ## Compile the core and the example machines to .wasm modules in .build/wasm/.
	@./wasm/build.sh

wasm-test: wasm-build ## Run scenarios inside the .wasm modules (WasmKit) against the native machines.
	$(SWIFT) test --filter WasmModuleTests

embedded-build: ## Compile the core and the examples for Cortex-M and RISC-V with Embedded Swift; print code sizes.
	@./wasm/embedded-build.sh

build: deps ## Build every module (debug).
	$(SWIFT) build

test: deps readme-check wasm-build ## Run every test target, the wasm modules' included.
	$(SWIFT) test

test-tsan: deps ## Run the async layer's tests under ThreadSanitizer (own build folder).
	$(SWIFT) test --sanitize=thread --scratch-path .build-tsan --filter 'ActomatonEffectTests|ActomatonTests'

readme-check: ## Check that every Swift example in the README is also a test.
	@python3 scripts/readme-check.py

bench: ## Run the benchmarks (release build of Benchmarks/) and print the ratios.
	cd Benchmarks && $(SWIFT) package --allow-writing-to-package-directory benchmark --format jmh --path .build/results
	python3 Benchmarks/report.py Benchmarks/.build/results

demo: wasm-build embedded-build ## The main job: build the example machines for WebAssembly and microcontrollers.
