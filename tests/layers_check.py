#!/usr/bin/env python3
"""The layer test: every #include "..." in src/, include/, tools/ and python/src/ goes down the
layers of cmake/layers.txt (or stays in its own layer), never up, never into a sibling device,
never from an importer into a device. Prints each violation as FILE:LINE: message and exits 1.

usage: layers_check.py ROOT [--layers FILE] [--inject FILE TEXT]...
  --inject FILE TEXT   check as if TEXT were one more line at the end of FILE (the tests that
                       the check can fail: tests/CMakeLists.txt, layers_fail_*)
"""
import argparse
import os
import re
import sys

SCANNED = ("src", "include", "tools", "python/src")
SOURCE_SUFFIXES = (".h", ".hpp", ".cpp", ".cc", ".c", ".inc", ".def")
INCLUDE_RE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')
# Where the build looks for "..." includes after the including file's own folder.
INCLUDE_DIRS = ("include", "src")


class Layers:
    def __init__(self, path):
        self.order = []        # layer names, lowest first
        self.siblings = set()  # layers whose paths are separate units
        self.forbid = {}       # layer -> layers it may not include
        self.unit_layer = {}   # path (folder or file) -> layer
        self.patterns = {}     # folder F of a line "F/*" -> layer: each subfolder of F is a unit
        self.generated = {}    # include text -> path it belongs to
        self.allowed = set()   # (file, include)
        self.path = path
        with open(path) as f:
            for n, raw in enumerate(f, 1):
                line = raw.split("#", 1)[0].strip()
                if not line:
                    continue
                words = line.split()
                if words[0].startswith("["):
                    m = re.fullmatch(r"\[([\w-]+)\]", words[0])
                    if not m:
                        self.fail(n, f"bad layer heading '{words[0]}'")
                    name = m.group(1)
                    self.order.append(name)
                    rest = words[1:]
                    while rest:
                        if rest[0] == "siblings":
                            self.siblings.add(name)
                            rest = rest[1:]
                        elif rest[0] == "not" and len(rest) > 1:
                            self.forbid.setdefault(name, set()).add(rest[1])
                            rest = rest[2:]
                        else:
                            self.fail(n, f"unknown layer option '{rest[0]}'")
                elif not self.order:
                    self.fail(n, "a path before the first [layer]")
                elif words[0] == "generated" and len(words) == 3:
                    self.generated[words[1]] = words[2]
                elif words[0] == "allow" and len(words) == 3:
                    self.allowed.add((words[1], words[2]))
                elif len(words) == 1 and words[0].endswith("/*"):
                    self.patterns[words[0][:-2]] = self.order[-1]
                elif len(words) == 1:
                    self.unit_layer[words[0].rstrip("/")] = self.order[-1]
                else:
                    self.fail(n, f"cannot read '{line}'")
        for layer, others in self.forbid.items():
            for o in others:
                if o not in self.order:
                    sys.exit(f"{path}: layer {layer} forbids an unknown layer '{o}'")

    def fail(self, n, msg):
        sys.exit(f"{self.path}:{n}: {msg}")

    def unit_of(self, rel):
        """The longest listed path containing `rel` (a repository-relative path), or None. A
        line "F/*" lists every folder F/NAME (a device folder found, not named)."""
        best = None
        for folder, layer in self.patterns.items():
            parts = rel[len(folder) + 1:].split("/") if rel.startswith(folder + "/") else []
            if len(parts) > 1:
                unit = folder + "/" + parts[0]
                self.unit_layer.setdefault(unit, layer)  # a path listed by name keeps its layer
        for unit in self.unit_layer:
            if rel == unit or rel.startswith(unit + "/"):
                if best is None or len(unit) > len(best):
                    best = unit
        return best

    def rank(self, layer):
        return self.order.index(layer)


def resolve(root, rel_file, inc, layers):
    """The repository-relative path an #include "inc" of rel_file names, or None."""
    candidates = [os.path.join(os.path.dirname(rel_file), inc)] + [os.path.join(d, inc) for d in INCLUDE_DIRS]
    for c in candidates:
        c = os.path.normpath(c)
        if os.path.isfile(os.path.join(root, c)):
            return c
    return layers.generated.get(inc)


def check_include(layers, rel_file, inc, target):
    """A message when rel_file may not include target (repository-relative), else None."""
    if (rel_file, inc) in layers.allowed:
        return None
    src_unit, dst_unit = layers.unit_of(rel_file), layers.unit_of(target)
    if dst_unit is None:
        return f'#include "{inc}": {target} belongs to no layer of cmake/layers.txt'
    src_layer, dst_layer = layers.unit_layer[src_unit], layers.unit_layer[dst_unit]
    if layers.rank(dst_layer) > layers.rank(src_layer):
        return (f'#include "{inc}": layer {src_layer} ({src_unit}) includes layer {dst_layer} ({dst_unit}), '
                f"which is above it")
    if src_layer == dst_layer and src_layer in layers.siblings and src_unit != dst_unit:
        return f'#include "{inc}": {src_unit} includes its sibling {dst_unit} (layer {src_layer})'
    if dst_layer in layers.forbid.get(src_layer, ()):
        return f'#include "{inc}": layer {src_layer} ({src_unit}) includes layer {dst_layer} ({dst_unit})'
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("root")
    ap.add_argument("--layers", default=None)
    ap.add_argument("--inject", nargs=2, action="append", default=[], metavar=("FILE", "TEXT"))
    args = ap.parse_args()
    root = os.path.abspath(args.root)
    layers = Layers(args.layers or os.path.join(root, "cmake", "layers.txt"))

    problems = []
    files = 0
    for top in SCANNED:
        for dirpath, dirnames, filenames in os.walk(os.path.join(root, top)):
            dirnames.sort()
            for name in sorted(filenames):
                if not name.endswith(SOURCE_SUFFIXES):
                    continue
                rel = os.path.relpath(os.path.join(dirpath, name), root)
                files += 1
                if layers.unit_of(rel) is None:
                    problems.append(f"{rel}:1: belongs to no layer of cmake/layers.txt")
                    continue
                with open(os.path.join(dirpath, name), errors="replace") as f:
                    lines = f.read().splitlines()
                lines += [text for where, text in args.inject if where == rel]
                for n, line in enumerate(lines, 1):
                    m = INCLUDE_RE.match(line)
                    if not m:
                        continue
                    inc = m.group(1)
                    target = resolve(root, rel, inc, layers)
                    if target is None:
                        problems.append(f'{rel}:{n}: #include "{inc}": no such file (and not listed as generated)')
                        continue
                    msg = check_include(layers, rel, inc, target)
                    if msg:
                        problems.append(f"{rel}:{n}: {msg}")
    for p in problems:
        print(p)
    if problems:
        print(f"layers: {len(problems)} include(s) break cmake/layers.txt ({files} files scanned)")
        return 1
    print(f"layers: {files} files follow cmake/layers.txt")
    return 0


if __name__ == "__main__":
    sys.exit(main())
