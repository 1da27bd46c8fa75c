#!/usr/bin/env bash
# Builds the web page: `make web` runs this after `make wasm-build`.
#
#   .build/web/             the static site: index.html (the state diagrams inlined as SVG, and
#                           the platformer's state and output names as JSON), style.css, app.js,
#                           favicon.svg, wasm/{tictactoe,csv,platformer}.wasm and diagrams/*.dot
#                           (each diagram's Graphviz source)
#   .build/web-gen/         the generator (wasm/web/generate, compiled with swiftc, no SwiftPM),
#                           its DOT files, platformer.json, and native.json: the native machines'
#                           answers to the inputs `make web-test` types and clicks into the page
#
# The generator is rebuilt only when a Swift source it is made from is newer than it.
set -euo pipefail
cd "$(dirname "$0")/../.."

gen=.build/web-gen
site=.build/web
for module in csv tictactoe platformer; do
    [ -f ".build/wasm/$module.wasm" ] || { echo "error: .build/wasm/$module.wasm is missing: run make wasm-build" >&2; exit 1; }
done
command -v dot >/dev/null || { echo "error: dot (Graphviz) is missing: run make web, which installs it" >&2; exit 1; }

# --- The generator: the core and the three example machines, natively, at -Onone (fast to build).
core_sources=$(find Sources/ActomatonCore -name '*.swift' | sort)
sources="$core_sources $(ls Plugins/CSVExample/*.swift Plugins/TicTacToeExample/*.swift Plugins/PlatformerExample/*.swift wasm/web/generate/*.swift)"
generator=$gen/web-generate
stale=no
if [ ! -x "$generator" ]; then
    stale=yes
else
    for source in $sources; do [ "$source" -nt "$generator" ] && stale=yes && break; done
fi
if [ $stale = yes ]; then
    echo "Compiling the diagram and fixture generator (swiftc, $(echo $sources | wc -w) files)"
    mkdir -p "$gen/modules" "$gen/objects"
    swiftc=(swiftc -Onone -wmo -parse-as-library -swift-version 6 -I "$gen/modules")
    compile() {
        local module=$1; shift
        "${swiftc[@]}" -module-name "$module" -emit-module -emit-module-path "$gen/modules/$module.swiftmodule" \
            -c "$@" -o "$gen/objects/$module.o"
    }
    compile ActomatonCore $core_sources
    compile CSVExample Plugins/CSVExample/*.swift
    compile TicTacToeExample Plugins/TicTacToeExample/*.swift
    compile PlatformerExample Plugins/PlatformerExample/*.swift
    "${swiftc[@]}" -module-name WebGenerate wasm/web/generate/*.swift \
        "$gen/objects/ActomatonCore.o" "$gen/objects/CSVExample.o" "$gen/objects/TicTacToeExample.o" \
        "$gen/objects/PlatformerExample.o" -o "$generator"
fi
"$generator" "$gen"

# --- The site.
rm -rf "$site"
mkdir -p "$site/wasm" "$site/diagrams"
for machine in tictactoe csv platformer; do
    cp "$gen/$machine.dot" "$site/diagrams/$machine.dot"
    # Styling only, on the command line: the graph itself is the core's export, unchanged.
    dot -Tsvg -Gbgcolor=transparent -Gfontname=sans-serif -Nfontname=sans-serif -Efontname=sans-serif \
        -Nfontsize=12 -Efontsize=10 -Gnodesep=0.3 -Granksep=0.45 "$gen/$machine.dot" -o "$gen/$machine.svg"
    cp ".build/wasm/$machine.wasm" "$site/wasm/$machine.wasm"
done
cp wasm/web/style.css wasm/web/app.js wasm/web/favicon.svg "$site/"
python3 wasm/web/inline-svg.py wasm/web/index.html "$gen" > "$site/index.html"

echo "Web page built in $site/:"
(cd "$site" && find . -type f | sort | while read -r file; do printf '  %-26s %7d bytes\n' "${file#./}" "$(stat -c %s "$file")"; done)
