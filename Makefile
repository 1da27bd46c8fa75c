# Every command a user or CI runs. `make help` lists them.
SHELL := /bin/bash
.DEFAULT_GOAL := help

SWIFT ?= swift
# Debian packages the project needs: libffi for the plugin host, wasi-libc for the wasm build.
APT_PACKAGES := libffi-dev wasi-libc

.PHONY: help deps build test bench demo readme-check

help: ## List the commands.
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-16s %s\n", $$1, $$2}'

deps: ## Install the Debian packages the project needs, when missing.
	@missing=""; for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "Installing$$missing (apt-get)"; \
	  sudo=""; [ "$$(id -u)" = 0 ] || sudo=sudo; \
	  $$sudo apt-get update -qq && $$sudo apt-get install -y -qq $$missing >/dev/null; \
	fi

build: deps ## Build every module (debug).
	$(SWIFT) build

test: deps readme-check ## Run every test target.
	$(SWIFT) test

readme-check: ## Check that every Swift example in the README is also a test.
	@python3 scripts/readme-check.py

bench: ## Run the benchmarks (release build of Benchmarks/) and print the ratios.
	cd Benchmarks && $(SWIFT) package --allow-writing-to-package-directory benchmark --format jmh --path .build/results
	python3 Benchmarks/report.py Benchmarks/.build/results
