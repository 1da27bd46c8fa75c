#!/usr/bin/env bash
# Builds the Actomaton wasm modules with Embedded Swift: `make wasm-build` runs this.
#
#   .build/wasm/counter.wasm    a counter on NoOpEffectManager
#   .build/wasm/csv.wasm        the streaming CSV tokenizer (Plugins/CSVExample)
#   .build/wasm/tictactoe.wasm  the tic-tac-toe rules (Plugins/TicTacToeExample)
#
# Each is a reactor module (no start function, no imports) exporting the C ABI of
# wasm/actomaton_wasm.h and its `memory`. Optimised for size: -Osize, section GC, stripped,
# then binaryen's wasm-opt -Oz.
set -euo pipefail
cd "$(dirname "$0")/.."

out=.build/wasm
mkdir -p "$out/modules" "$out/objects"
swiftc=(swiftc -target wasm32-unknown-none-wasm -enable-experimental-feature Embedded
        -enable-experimental-feature Extern -wmo -Osize -parse-as-library -swift-version 6
        -Xfrontend -disable-stack-protector -I "$out/modules")

# compile MODULE SOURCES...: one Swift module to an object file (and its .swiftmodule).
compile() {
    local module=$1; shift
    "${swiftc[@]}" -module-name "$module" -emit-module -emit-module-path "$out/modules/$module.swiftmodule" \
        -c "$@" -o "$out/objects/$module.o"
}

compile ActomatonCore $(find Sources/ActomatonCore -name '*.swift' | sort)
compile CSVExample Plugins/CSVExample/*.swift
compile TicTacToeExample Plugins/TicTacToeExample/*.swift
compile CounterWasm wasm/CounterModule.swift wasm/WasmABI.swift
compile CSVWasm wasm/CSVModule.swift wasm/WasmABI.swift
compile TicTacToeWasm wasm/TicTacToeModule.swift wasm/WasmABI.swift
clang --target=wasm32-unknown-unknown -Oz -c wasm/runtime.c -o "$out/objects/runtime.o"

# link NAME OBJECTS...: a stripped reactor module. No libc: runtime.c has the heap, and LLVM
# lowers memcpy and memset to bulk-memory instructions.
link() {
    local name=$1; shift
    local objects=()
    for object in "$@" runtime; do objects+=("$out/objects/$object.o"); done
    wasm-ld --no-entry --gc-sections --strip-all "${objects[@]}" -o "$out/$name.wasm"
    wasm-opt -Oz --enable-bulk-memory --enable-sign-ext --enable-mutable-globals \
        --enable-nontrapping-float-to-int "$out/$name.wasm" -o "$out/$name.wasm"
}

link counter CounterWasm ActomatonCore
link csv CSVWasm CSVExample ActomatonCore
link tictactoe TicTacToeWasm TicTacToeExample ActomatonCore

for name in counter csv tictactoe; do
    printf '%-16s %6d bytes\n' "$out/$name.wasm" "$(stat -c %s "$out/$name.wasm")"
done
