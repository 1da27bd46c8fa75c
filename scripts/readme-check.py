#!/usr/bin/env python3
"""Checks that every ```swift block of README.md and of every DocC article
(Sources/*/*.docc/**/*.md) appears, line for line, in a test file under Tests/.

Indentation and blank lines are ignored; lines ending in `// not compiled` exempt a block
(for snippets such as Package.swift lines). Exits non-zero naming each block not found.
"""
import pathlib
import re
import sys

root = pathlib.Path(__file__).resolve().parent.parent
documents = [root / "README.md"] + sorted(root.glob("Sources/*/*.docc/**/*.md"))
tests = "\n".join(p.read_text() for p in (root / "Tests").rglob("*.swift"))
normalized_tests = "\n".join(line.strip() for line in tests.splitlines() if line.strip())

failed = False
total = 0
for document in documents:
    name = document.relative_to(root)
    blocks = re.findall(r"```swift\n(.*?)```", document.read_text(), re.S)
    total += len(blocks)
    for number, block in enumerate(blocks, 1):
        if "// not compiled" in block:
            continue
        lines = [line.strip() for line in block.splitlines() if line.strip()]
        if "\n".join(lines) not in normalized_tests:
            failed = True
            print(f"{name}: swift block {number} (starting `{lines[0] if lines else ''}`) is not in any test under Tests/")

if failed:
    sys.exit(1)
print(f"README.md and {len(documents) - 1} DocC pages: all {total} swift blocks are tested")
