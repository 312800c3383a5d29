#!/usr/bin/env python3
"""Checks the size rules of ember's sources: no file over 600 lines, no function over 80.

Prints every offender (tests aside). Offenders listed in KNOWN below, each still to be split,
may stay as long as they do not grow; any other offender, a known one that grew, or a known
one now within the limits (so that the list stays true) fails the check (exit 1). Functions are found by layout: a definition starts at column 0 and its body ends at the
first "}" at column 0, which is how every function outside a class body is written here.

  scripts/check-sizes.py [ROOT]
"""
import os
import re
import sys

MAX_FILE_LINES = 600
MAX_FUNCTION_LINES = 80
SOURCE_DIRS = ["app", "bench", "common", "embedding", "fuzz", "local", "ps", "scheduler",
               "trainer", "python"]
SUFFIXES = (".cc", ".h", ".cu", ".cuh")

# What is over a limit today, with its size now: "path" for a file, "path:function" for a
# function. Split them; do not add to this list.
KNOWN = {
}

# A column-0 line that cannot start a function definition.
NOT_A_FUNCTION = re.compile(
    r"(namespace|class|struct|enum|union|extern|using|typedef|static_assert|#|//|/\*|\*|\}|"
    r"template\s*<.*>\s*(class|struct)\b)")
FUNCTION_NAME = re.compile(r"([A-Za-z_][\w:]*)\s*\(")


def functions(lines):
    """Yields (name, first line number, line count) of each function defined at column 0."""
    i = 0
    while i < len(lines):
        line = lines[i]
        if line and not line[0].isspace() and not NOT_A_FUNCTION.match(line):
            end = i
            while end < len(lines) and not lines[end].rstrip().endswith(("{", ";")):
                end += 1
            head = line.split("(")[0]
            if end < len(lines) and lines[end].rstrip().endswith("{") and "=" not in head:
                close = end + 1
                while close < len(lines) and not lines[close].startswith("}"):
                    close += 1
                name = FUNCTION_NAME.search(" ".join(lines[i:end + 1]))
                yield (name.group(1) if name else line.strip()), i + 1, close - i + 1
                i = close
        i += 1


def offenders(root):
    """Yields (key, lines, where) of every file and function over its limit."""
    for source_dir in SOURCE_DIRS:
        for dirpath, _, filenames in os.walk(os.path.join(root, source_dir)):
            for filename in sorted(filenames):
                if not filename.endswith(SUFFIXES):
                    continue
                path = os.path.join(dirpath, filename)
                relative = os.path.relpath(path, root)
                with open(path, encoding="utf-8", errors="replace") as source:
                    lines = source.read().split("\n")
                if lines and lines[-1] == "":
                    lines.pop()
                if len(lines) > MAX_FILE_LINES:
                    yield relative, len(lines), relative + " (the file)"
                for name, first, count in functions(lines):
                    if count > MAX_FUNCTION_LINES:
                        yield f"{relative}:{name}", count, f"{relative}:{first}"


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
    failed = False
    seen = set()
    for key, count, where in sorted(offenders(root), key=lambda o: -o[1]):
        seen.add(key)
        limit = MAX_FILE_LINES if ":" not in key else MAX_FUNCTION_LINES
        known = KNOWN.get(key)
        if known is None:
            verdict = "NEW: split it"
            failed = True
        elif count > known:
            verdict = f"GREW from {known}: split it"
            failed = True
        else:
            verdict = "known, to be split"
        name = key.split(":", 1)[1] if ":" in key else ""
        print(f"{count:5d} lines (limit {limit})  {where}  {name}  [{verdict}]")
    for key in sorted(set(KNOWN) - seen):
        print(f"within the limits now: take {key} off KNOWN in scripts/check-sizes.py")
        failed = True
    print(f"{len(seen)} over the limits, {len(seen - set(KNOWN))} of them new")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
