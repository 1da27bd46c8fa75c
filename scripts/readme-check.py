#!/usr/bin/env python3
"""Checks that every ```swift block of README.md appears, line for line, in a test file.

Indentation and blank lines are ignored; lines ending in `// not compiled` exempt a block
(for snippets such as Package.swift lines). Exits non-zero naming each block not found.
"""
import pathlib
import re
import sys

root = pathlib.Path(__file__).resolve().parent.parent
readme = (root / "README.md").read_text()
blocks = re.findall(r"```swift\n(.*?)```", readme, re.S)
tests = "\n".join(p.read_text() for p in (root / "Tests").rglob("*.swift"))
normalized_tests = "\n".join(line.strip() for line in tests.splitlines() if line.strip())

missing = []
for number, block in enumerate(blocks, 1):
    if "// not compiled" in block:
        continue
    lines = [line.strip() for line in block.splitlines() if line.strip()]
    if "\n".join(lines) not in normalized_tests:
        missing.append((number, lines[0] if lines else ""))

for number, first in missing:
    print(f"README.md: swift block {number} (starting `{first}`) is not in any test under Tests/")
if missing:
    sys.exit(1)
print(f"README.md: all {len(blocks)} swift blocks are tested")
