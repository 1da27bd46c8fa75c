#!/usr/bin/env bash
# Builds the libFuzzer harnesses and runs each for a while: `make fuzz` runs this.
#
#   Tests/Fuzz/fuzz.sh [HARNESS...]               build and run the harnesses (all when none is named)
#   Tests/Fuzz/fuzz.sh --build-only [HARNESS...]  build them only
#
#   csv         the CSV tokenizer against a plain RFC 4180 reader (Plugins/CSVExample)
#   input-line  the host's input-line and JSON parsers (Sources/HostCommandLine)
#   manifest    the plugin manifest validator, on random manifests (Sources/ActomatonPluginContract)
#
# FUZZ_SECONDS (default 60) is how long each harness runs. Each one's check lives in its
# module's test target (Tests/<Module>Tests/<Name>FuzzCheck.swift) so that `make test` replays
# the corpus with the same code; Tests/Fuzz/Harnesses only holds libFuzzer's entry points.
#
# The harnesses are compiled with swiftc straight from the sources, with AddressSanitizer and
# libFuzzer's coverage, into .build/fuzz/ (SwiftPM would build every dependency first).
#
#   Tests/Fuzz/Corpus/<harness>/   seeds (committed), and the crash-* files a run finds
#   .build/fuzz/corpus/<harness>/  the inputs the runs generate (not committed)
#   .build/fuzz/logs/<harness>.log the last run's output
set -euo pipefail
cd "$(dirname "$0")/../.."

all=(csv input-line manifest)
seconds=${FUZZ_SECONDS:-60}
build_only=false
if [[ ${1:-} == --build-only ]]; then build_only=true; shift; fi
selected=("$@")
[[ ${#selected[@]} -gt 0 ]] || selected=("${all[@]}")
for name in "${selected[@]}"; do
    [[ " ${all[*]} " == *" $name "* ]] || { echo "fuzz: no harness '$name' (known: ${all[*]})" >&2; exit 2; }
done

out=.build/fuzz
mkdir -p "$out/modules" "$out/objects" "$out/bin" "$out/logs" "$out/include/ActomatonPluginABI"
swiftc=(swiftc -sanitize=fuzzer,address -O -g -parse-as-library -swift-version 6
        -I "$out/modules" -I "$out/include/ActomatonPluginABI" -I Sources/CFFI)

# compile MODULE SOURCES...: one Swift module to an object file and its .swiftmodule.
compile() {
    local module=$1; shift
    "${swiftc[@]}" -module-name "$module" -emit-module -emit-module-path "$out/modules/$module.swiftmodule" \
        -wmo -c "$@" -o "$out/objects/$module.o"
}

# link HARNESS SOURCES... -- OBJECTS...: the harness executable, with libFuzzer's main.
link() {
    local name=$1; shift
    local sources=() objects=()
    while [[ $1 != -- ]]; do sources+=("$1"); shift; done
    shift
    for object in "$@"; do objects+=("$out/objects/$object.o"); done
    "${swiftc[@]}" -module-name FuzzHarness "${sources[@]}" "${objects[@]}" -lffi -o "$out/bin/$name" \
        2> >(grep -v "Cannot export local symbol '__asan" >&2)
}

# The C contract as a Clang module, its one helper compiled with the same sanitizer.
plugin_abi() {
    cat > "$out/include/ActomatonPluginABI/module.modulemap" <<EOF
module ActomatonPluginABI {
    header "$PWD/Sources/ActomatonPluginABI/include/actomaton_plugin.h"
    export *
}
EOF
    clang -fsanitize=address,fuzzer-no-link -O1 -g -I Sources/ActomatonPluginABI/include \
        -c Sources/ActomatonPluginABI/actomaton_plugin.c -o "$out/objects/ActomatonPluginABI.o"
}

plugin_contract() {
    plugin_abi
    compile ActomatonPluginContract Sources/ActomatonPluginContract/*.swift
}

build() {
    echo "== building the '$1' harness"
    case $1 in
    csv)
        compile ActomatonCore $(find Sources/ActomatonCore -name '*.swift' | sort)
        compile CSVExample Plugins/CSVExample/*.swift
        link csv Tests/Fuzz/Harnesses/CSVFuzzEntry.swift \
            Tests/CSVExampleTests/CSVFuzzCheck.swift Tests/CSVExampleTests/RFC4180ReferenceReader.swift \
            -- CSVExample ActomatonCore
        ;;
    input-line)
        plugin_contract
        # InputLine.swift imports ActomatonHost but uses nothing of it; an empty module stands in,
        # so the harness needs neither the host nor its dependencies.
        echo "// Stands in for ActomatonHost in the fuzz build." > "$out/ActomatonHostStandIn.swift"
        compile ActomatonHost "$out/ActomatonHostStandIn.swift"
        compile HostCommandLine Sources/HostCommandLine/InputLine.swift Sources/HostCommandLine/InputLineError.swift \
            Sources/HostCommandLine/JSON/*.swift
        link input-line Tests/Fuzz/Harnesses/InputLineFuzzEntry.swift Tests/HostCommandLineTests/InputLineFuzzCheck.swift \
            -- HostCommandLine ActomatonHost ActomatonPluginContract ActomatonPluginABI
        ;;
    manifest)
        plugin_contract
        link manifest Tests/Fuzz/Harnesses/ManifestFuzzEntry.swift Tests/ActomatonPluginContractTests/ManifestFuzzCheck.swift \
            -- ActomatonPluginContract ActomatonPluginABI
        ;;
    esac
}

# run HARNESS: fuzzes for $seconds; a crash lands in Tests/Fuzz/Corpus/HARNESS/ as crash-<sha1>.
run() {
    local name=$1 seeds=Tests/Fuzz/Corpus/$1 corpus=$out/corpus/$1 log=$out/logs/$1.log
    local dictionary=() status=0
    mkdir -p "$corpus"
    [[ -f Tests/Fuzz/$name.dict ]] && dictionary=(-dict="Tests/Fuzz/$name.dict")
    echo "== fuzzing '$name' for ${seconds}s (log: $log)"
    # The Swift runtime's own crash handler is off: libFuzzer reports the crash and saves the input.
    SWIFT_BACKTRACE=enable=no "$out/bin/$name" -max_total_time="$seconds" -timeout=10 -print_final_stats=1 \
        -artifact_prefix="$seeds/" "${dictionary[@]}" "$corpus" "$seeds" > "$log" 2>&1 || status=$?
    local runs per_second
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
    per_second=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
    if [[ $status -eq 0 ]]; then
        echo "   $name: no crash; ${runs:-?} inputs in ${seconds}s, ${per_second:-?} per second"
    else
        grep -E 'Fatal error|ERROR: |SUMMARY: |Test unit written' "$log" | sed 's/^/   /' >&2 || true
        echo "   $name: CRASHED (exit $status) after ${runs:-?} inputs; the input is in $seeds/, the log in $log" >&2
    fi
    return $status
}

for name in "${selected[@]}"; do build "$name"; done
$build_only && exit 0
failed=()
for name in "${selected[@]}"; do run "$name" || failed+=("$name"); done
if [[ ${#failed[@]} -gt 0 ]]; then
    echo "fuzz: crashed: ${failed[*]}. Replay with: swift test --filter FuzzReplay" >&2
    exit 1
fi
