#!/usr/bin/env python3
"""Prints index.html with each `<!-- diagram: NAME -->` replaced by DIR/NAME.svg, inlined, and
each `<!-- data: NAME -->` by DIR/NAME.json in `<script type="application/json" id="NAME-data">`.

Used by wasm/web/build.sh. Inlined, the diagrams show without JavaScript, and the page can
mark the current state in them. The SVG's XML prolog, doctype and comments are dropped. The
data is what the generator knows and the page needs (the platformer's state and output names),
so that app.js does not keep a copy of it.
"""
import json
import pathlib
import re
import sys


def svg(directory: pathlib.Path, name: str) -> str:
    text = (directory / f"{name}.svg").read_text(encoding="utf-8")
    text = text[text.index("<svg"):]
    text = re.sub(r"<!--.*?-->\n?", "", text, flags=re.S)
    # The outer <title> is the graph's name: a screen reader gets the figure's caption instead.
    return text.replace("<svg ", '<svg role="img" aria-labelledby="%s-caption" ' % name, 1).strip()


def data(directory: pathlib.Path, name: str) -> str:
    text = json.dumps(json.loads((directory / f"{name}.json").read_text(encoding="utf-8")))
    text = text.replace("</", "<\\/")  # in a script element, "</" could end it early
    return f'<script type="application/json" id="{name}-data">{text}</script>'


def main() -> None:
    template, directory = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
    page = template.read_text(encoding="utf-8")
    page, count = re.subn(r"<!-- diagram: ([a-z]+) -->", lambda m: svg(directory, m.group(1)), page)
    if count == 0:
        sys.exit(f"{template}: no <!-- diagram: NAME --> placeholder")
    page = re.sub(r"<!-- data: ([a-z]+) -->", lambda m: data(directory, m.group(1)), page)
    sys.stdout.write(page)


if __name__ == "__main__":
    main()
