#!/usr/bin/env python3
"""Checks that the output a page of the docs shows is what the program prints today.

Usage: check_doc_output.py PROGRAM DOC [DOC ...]

Runs PROGRAM (no arguments, in a scratch folder) and reads every fenced block in each DOC that
directly follows a line starting with "<!-- checked:" (the blocks that show that program's output;
blocks with timings that vary from run to run are left unmarked). Every non-empty line of such a
block must be a line of the output, spaces aside; a line ending in "..." must begin one, and a line
that is only "..." stands for lines left out. Exit 0 when all match, 1 with the lines that do not (and where) or when PROGRAM
fails, 2 on bad usage, a marker without a block after it, or a DOC without a checked block (a marker
lost in an edit would otherwise pass silently).
"""
import os
import re
import subprocess
import sys
import tempfile


def normal(line):
    return re.sub(r"\s+", " ", line).strip()


def checked_blocks(text):
    """(line number, lines) of each fenced block that follows a "<!-- checked:" line."""
    lines = text.splitlines()
    blocks = []
    i = 0
    while i < len(lines):
        if lines[i].lstrip().startswith("<!-- checked:"):
            j = i + 1
            while j < len(lines) and not lines[j].strip():
                j += 1
            if j >= len(lines) or not lines[j].strip().startswith("```"):
                print(f"line {i + 1}: a '<!-- checked:' marker not followed by a fenced block")
                sys.exit(2)
            k = j + 1
            while k < len(lines) and not lines[k].strip().startswith("```"):
                k += 1
            blocks.append((j + 2, lines[j + 1:k]))
            i = k
        i += 1
    return blocks


def main():
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    program, docs = sys.argv[1], sys.argv[2:]
    # In a scratch folder: some programs write files (offload_chain.svg) where they run.
    with tempfile.TemporaryDirectory() as scratch:
        run = subprocess.run([os.path.abspath(program)], capture_output=True, text=True, timeout=600, cwd=scratch)
    if run.returncode != 0:
        print(f"{program} exited with {run.returncode}:\n{run.stdout}{run.stderr}")
        return 1
    printed = [normal(l) for l in run.stdout.splitlines()]
    missing = 0
    for doc in docs:
        with open(doc, encoding="utf-8") as f:
            blocks = checked_blocks(f.read())
        if not blocks:
            print(f"{doc}: no '<!-- checked:' block")
            return 2
        count = 0
        for first, block in blocks:
            for n, raw in enumerate(block, start=first):
                line = normal(raw)
                if not line or line == "...":
                    continue
                count += 1
                if line.endswith("..."):
                    head = line[:-3].rstrip()
                    ok = any(p.startswith(head) for p in printed)
                else:
                    ok = line in printed
                if not ok:
                    missing += 1
                    print(f"{doc}:{n}: not in the output of {program}:\n    {raw.strip()}")
        print(f"{doc}: {count} lines checked in {len(blocks)} blocks")
    if missing:
        print(f"{missing} lines differ; the program printed:\n{run.stdout}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
