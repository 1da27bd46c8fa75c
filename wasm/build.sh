#!/usr/bin/env bash
# Builds the Actomaton wasm modules with Embedded Swift: `make wasm-build` runs this.
#
#   .build/wasm/counter.wasm    a counter on NoOpEffectManager
#   .build/wasm/csv.wasm        the streaming CSV tokenizer (Plugins/CSVExample)
#   .build/wasm/tictactoe.wasm  the tic-tac-toe rules (Plugins/TicTacToeExample)
#   .build/wasm/platformer.wasm the character controller statechart (Plugins/PlatformerExample)
#
# and the example plugins for actomaton-host, on the contract of wasm/kit/actomaton_wasm_plugin.h,
# built with wasm/actomaton-wasm-plugin from the reducer sources the .so plugins use:
#
#   .build/wasm/plugins/{counter,csv,tictactoe,login,platformer}.wasm
#
# and the modules the host's tests load: the lamp (.build/wasm/fixtures/, a Swift plugin whose
# vocabulary the kit's tests export as a .so too) and the hostile ones (.build/wasm/hostile/,
# from WebAssembly text).
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
compile PlatformerExample Plugins/PlatformerExample/*.swift
compile CounterWasm wasm/CounterModule.swift wasm/WasmABI.swift
compile CSVWasm wasm/CSVModule.swift wasm/WasmABI.swift
compile TicTacToeWasm wasm/TicTacToeModule.swift wasm/WasmABI.swift
compile PlatformerWasm wasm/PlatformerModule.swift wasm/WasmABI.swift
clang --target=wasm32-unknown-unknown -Oz -fno-builtin -c wasm/runtime.c -o "$out/objects/runtime.o"

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
link platformer PlatformerWasm PlatformerExample ActomatonCore

for name in counter csv tictactoe platformer; do
    printf '%-36s %6d bytes\n' "$out/$name.wasm" "$(stat -c %s "$out/$name.wasm")"
done

# The example plugins.
plugin() {
    local name=$1; shift
    ./wasm/actomaton-wasm-plugin --cache "$out/plugin-cache" --output "$out/plugins/$name.wasm" "$@" |
        awk '{ printf "%-36s %6d bytes\n", $1, $2 }'
}
ACTOMATON_WASM_CFLAGS="-I Plugins/CounterPlugin/include" plugin counter --name CounterWasmPlugin wasm/plugins/counter_wasm.c
plugin csv --name CSVWasmPlugin --library CSVExample=Plugins/CSVExample \
    Plugins/CSVTokenizerPlugin/Sheet.swift wasm/plugins/CSVPlugin.swift
plugin tictactoe --name TicTacToeWasmPlugin --library TicTacToeExample=Plugins/TicTacToeExample \
    Plugins/TicTacToePlugin/Game.swift wasm/plugins/TicTacToePlugin.swift
plugin login --name LoginWasmPlugin Plugins/LoginPlugin/Login.swift wasm/plugins/LoginPlugin.swift
plugin platformer --name PlatformerWasmPlugin --library PlatformerExample=Plugins/PlatformerExample \
    Plugins/PlatformerPlugin/Character.swift wasm/plugins/PlatformerPlugin.swift

# Test fixtures: the lamp, whose vocabulary the kit's tests also export as a .so plugin.
fixture() {
    local name=$1; shift
    ./wasm/actomaton-wasm-plugin --cache "$out/plugin-cache" --output "$out/fixtures/$name.wasm" "$@" |
        awk '{ printf "%-36s %6d bytes\n", $1, $2 }'
}
fixture lamp --name LampWasmPlugin Tests/ActomatonPluginKitTests/Lamp.swift Tests/ActomatonHostTests/Fixtures/wasm/LampPlugin.swift

# Hostile modules for the host's tests, from WebAssembly text.
mkdir -p "$out/hostile"
for source in Tests/ActomatonHostTests/Fixtures/wasm/*.wat; do
    [ -e "$source" ] || continue
    wat2wasm "$source" -o "$out/hostile/$(basename "$source" .wat).wasm"
done
