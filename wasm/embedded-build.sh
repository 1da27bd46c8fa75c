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
    # What a firmware puts in flash and what it needs in RAM. `.data.rel.ro` holds the
    # statically initialized arrays (the compiled tables): pointers the linker resolves, never
    # written at run time (the check below), so it goes to flash beside `.rodata`.
    echo "$target: flash (code, constants, .data.rel.ro) and RAM (.data, .bss), in bytes"
    for elf in "$out"/*.elf; do
        llvm-size -A "$elf" | awk -v name="$(basename "$elf")" '
            $1 == ".data" || $1 == ".bss" || $1 == ".tbss" || $1 == ".tdata" { ram += $2; next }
            $1 ~ /^\.(text|rodata|data\.rel\.ro|ARM\.exidx|swift_modhash|init_array|fini_array)/ { flash += $2 }
            END { printf "  %-16s flash %6d  RAM %5d\n", name, flash, ram }'
    done
done

# The read-only check: the platformer program, built the same way for x86-64 Linux and linked
# with full RELRO (`-z relro -z now`: the loader makes `.data.rel.ro` read-only before `main`),
# runs 100,000 events. A write to its tables at run time (a reference count, a lazy
# initialization) would end it with SIGSEGV.
out=.build/embedded/x86_64-relro-check
mkdir -p "$out/modules"
swiftc=(swiftc -target x86_64-unknown-linux-gnu -enable-experimental-feature Embedded -wmo -Osize -parse-as-library
        -swift-version 6 -Xfrontend -function-sections -Xcc -fPIC -I "$out/modules")
"${swiftc[@]}" -module-name ActomatonCore -emit-module -emit-module-path "$out/modules/ActomatonCore.swiftmodule" \
    -c $(find Sources/ActomatonCore -name '*.swift' | sort) -o "$out/ActomatonCore.o"
"${swiftc[@]}" -module-name PlatformerExample -emit-module -emit-module-path "$out/modules/PlatformerExample.swiftmodule" \
    -c Plugins/PlatformerExample/*.swift -o "$out/PlatformerExample.o"
"${swiftc[@]}" -enable-experimental-feature Extern -module-name PlatformerProgram \
    -c wasm/PlatformerModule.swift wasm/WasmABI.swift -o "$out/PlatformerProgram.o"
clang -O1 -fPIE -pie -Wl,-z,relro,-z,now -Wl,--gc-sections wasm/embedded-relro-check.c \
    "$out/PlatformerProgram.o" "$out/PlatformerExample.o" "$out/ActomatonCore.o" -o "$out/platformer"
# The check means something only if the tables are inside the write-protected range: each of
# their arrays (the symbols `platformerTables_WZTv…_r`) must lie within GNU_RELRO.
read -r relro_start relro_size < <(llvm-readelf -lW "$out/platformer" | awk '$1 == "GNU_RELRO" { print $3, $6 }')
tables=0
while read -r address size _ name; do
    if (( 16#$address < relro_start || 16#$address + 16#$size > relro_start + relro_size )); then
        echo "error: the platformer's table $name is not in the write-protected (RELRO) range: the read-only check would prove nothing" >&2
        exit 1
    fi
    tables=$((tables + 16#$size))
done < <(llvm-nm -S "$out/platformer" | grep 'platformerTables_WZTv[0-9]*_r$')
if (( tables < 10000 )); then
    echo "error: found only $tables bytes of the platformer's tables in the program: the read-only check would prove nothing" >&2
    exit 1
fi
if ! result=$("$out/platformer"); then
    echo "error: the platformer program failed under full RELRO: something writes to its read-only data at run time" >&2
    exit 1
fi
echo "read-only check (x86-64, full RELRO): $result; its tables ($tables bytes, all in the write-protected .data.rel.ro) were never written"

