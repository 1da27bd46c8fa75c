#!/usr/bin/env bash
# Compiles ActomatonCore and the example machines with Embedded Swift for microcontrollers:
# `make embedded-build` runs this, and prints the code size of each object.
#
#   armv7em-none-none-eabi   Arm Cortex-M4/M7
#   riscv32-none-none-eabi   32-bit RISC-V
#
# Two sizes are printed. The objects: everything in each module, an upper bound. And
# programs: the wasm modules' entry points (wasm/*Module.swift) linked with section GC, so
# only what a firmware built on them would carry stays. The firmware's own runtime (allocator,
# memcpy, …) is left out of both, as it would come from the firmware's SDK.
set -euo pipefail
cd "$(dirname "$0")/.."

for target in armv7em-none-none-eabi riscv32-none-none-eabi; do
    out=.build/embedded/$target
    mkdir -p "$out/modules"
    swiftc=(swiftc -target "$target" -enable-experimental-feature Embedded -wmo -Osize -parse-as-library
            -swift-version 6 -Xfrontend -disable-stack-protector -Xfrontend -function-sections -I "$out/modules")
    "${swiftc[@]}" -module-name ActomatonCore -emit-module -emit-module-path "$out/modules/ActomatonCore.swiftmodule" \
        -c $(find Sources/ActomatonCore -name '*.swift' | sort) -o "$out/ActomatonCore.o"
    for example in CSVExample TicTacToeExample PlatformerExample; do
        "${swiftc[@]}" -module-name "$example" -emit-module -emit-module-path "$out/modules/$example.swiftmodule" \
            -c Plugins/$example/*.swift -o "$out/$example.o"
    done
    for program in Counter CSV TicTacToe Platformer; do
        "${swiftc[@]}" -enable-experimental-feature Extern -module-name "${program}Program" \
            -c wasm/${program}Module.swift wasm/WasmABI.swift -o "$out/${program}Program.o"
    done
    link() {
        local name=$1; shift
        ld.lld --gc-sections --unresolved-symbols=ignore-all --entry=am_abi_version \
            $(for symbol in $(grep -ho '@_cdecl("[a-z_]*")' wasm/${name}Module.swift | cut -d'"' -f2); do echo "-u $symbol"; done) \
            "$@" -o "$out/$name.elf"
    }
    link Counter "$out/CounterProgram.o" "$out/ActomatonCore.o"
    link CSV "$out/CSVProgram.o" "$out/CSVExample.o" "$out/ActomatonCore.o"
    link TicTacToe "$out/TicTacToeProgram.o" "$out/TicTacToeExample.o" "$out/ActomatonCore.o"
    link Platformer "$out/PlatformerProgram.o" "$out/PlatformerExample.o" "$out/ActomatonCore.o"

    echo "$target: objects"
    llvm-size --format=berkeley "$out"/ActomatonCore.o "$out"/*Example.o | sed 's/^/  /'
    echo "$target: linked programs"
    llvm-size --format=berkeley "$out"/*.elf | sed 's/^/  /'
done
