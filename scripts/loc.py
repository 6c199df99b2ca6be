#!/usr/bin/env python3
"""Counts the lines of non-test library code at a git revision (the measure of #26).

Non-blank lines of the .rs files under each crate's src/ (device, host, cli, gpucheck,
python and the root crate), leaving out tests*.rs files, anything under tests/, and a
file's trailing `#[cfg(test)] mod tests { ... }` block. Usage: scripts/loc.py [REV] [--files]
"""
import re
import subprocess
import sys

CRATES = ("device", "host", "cli", "gpucheck", "python", "src")


def library_files(rev):
    names = subprocess.run(["git", "ls-tree", "-r", "--name-only", rev],
                           capture_output=True, text=True, check=True).stdout.split()
    for name in names:
        parts = name.split("/")
        if not name.endswith(".rs") or parts[0] not in CRATES:
            continue
        if parts[0] != "src" and parts[1] != "src":
            continue
        if parts[-1].startswith("tests") or parts[-1] == "testutil.rs" or "/tests/" in name:
            continue
        yield name


def count(rev, name):
    text = subprocess.run(["git", "show", f"{rev}:{name}"],
                          capture_output=True, text=True, check=True).stdout
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if (line.strip() == "#[cfg(test)]" and i + 1 < len(lines)
                and re.match(r"\s*mod tests", lines[i + 1])
                and not lines[i + 1].rstrip().endswith(";")):
            lines = lines[:i]
            break
    return sum(1 for line in lines if line.strip())


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    rev = args[0] if args else "HEAD"
    per_file = {name: count(rev, name) for name in library_files(rev)}
    if "--files" in sys.argv:
        for name, n in sorted(per_file.items(), key=lambda kv: -kv[1]):
            print(f"{n:6} {name}")
    per_crate = {}
    for name, n in per_file.items():
        per_crate[name.split("/")[0]] = per_crate.get(name.split("/")[0], 0) + n
    print(rev, sum(per_file.values()), dict(sorted(per_crate.items())))


if __name__ == "__main__":
    main()
