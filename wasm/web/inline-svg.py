#!/usr/bin/env python3
"""Prints index.html with each `<!-- diagram: NAME -->` replaced by DIR/NAME.svg, inlined.

Used by wasm/web/build.sh. Inlined, the diagrams show without JavaScript, and the page can
mark the current state in them. The SVG's XML prolog, doctype and comments are dropped.
"""
import pathlib
import re
import sys


def svg(directory: pathlib.Path, name: str) -> str:
    text = (directory / f"{name}.svg").read_text(encoding="utf-8")
    text = text[text.index("<svg"):]
    text = re.sub(r"<!--.*?-->\n?", "", text, flags=re.S)
    # The outer <title> is the graph's name: a screen reader gets the figure's caption instead.
    return text.replace("<svg ", '<svg role="img" aria-labelledby="%s-caption" ' % name, 1).strip()


def main() -> None:
    template, directory = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
    page = template.read_text(encoding="utf-8")
    page, count = re.subn(r"<!-- diagram: ([a-z]+) -->", lambda m: svg(directory, m.group(1)), page)
    if count == 0:
        sys.exit(f"{template}: no <!-- diagram: NAME --> placeholder")
    sys.stdout.write(page)


if __name__ == "__main__":
    main()
