#!/usr/bin/env python3
"""libtessera.so exports the public API and nothing else.

  shared_library_check.py LIBTESSERA_SO INCLUDE_DIR

Checks, with readelf and `nm -D --defined-only`:
- the soname is libtessera.so.MAJOR.MINOR, the file libtessera.so.MAJOR.MINOR.PATCH;
- every function of the C API (INCLUDE_DIR/tessera_c.h, marked TESSERA_API) is exported,
  and every exported C name is one of them;
- every exported C++ symbol (functions, vtables, type information) belongs to a class or
  function that a public header (INCLUDE_DIR, recursively) marks TESSERA_API: nothing of
  the devices' kernels, the converters or the importers' internals, and no instantiation
  of a standard template;
- the entry points a user program needs (Model::load, LanguageModel::load, the Device
  interface a device author implements) are among them.
"""
import pathlib
import re
import subprocess
import sys

lib = pathlib.Path(sys.argv[1])
include = pathlib.Path(sys.argv[2])
errors = []

# The soname.
dyn = subprocess.run(["readelf", "-d", str(lib)], capture_output=True, text=True, check=True).stdout
m = re.search(r"\(SONAME\).*\[(.*)\]", dyn)
soname = m.group(1) if m else None
real = lib.resolve().name
if not soname or not re.fullmatch(r"libtessera\.so\.\d+\.\d+", soname):
    errors.append(f"soname {soname!r} is not libtessera.so.MAJOR.MINOR")
elif not re.fullmatch(re.escape(soname) + r"\.\d+", real):
    errors.append(f"the library file {real} is not {soname}.PATCH")

# The public headers' TESSERA_API names.
c_api = set()
cpp_api = set()
namespaces = {"tessera"}
for h in sorted(include.rglob("*.h")):
    text = h.read_text()
    namespaces.update(re.findall(r"^namespace ([\w:]+) \{", text, re.M))
    if h.name == "tessera_c.h":
        c_api.update(re.findall(r"^TESSERA_API [^(]*?\b(tessera_\w+)\(", text, re.M))
        continue
    cpp_api.update(re.findall(r"\b(?:class|struct)(?: \[\[nodiscard\]\])? TESSERA_API (\w+)", text))
    for decl in re.findall(r"^(?:\[\[noreturn\]\] )?TESSERA_API ([^;{]*?)\(", text, re.M):
        cpp_api.add(re.findall(r"(\w+)\s*$", decl)[0])
namespaces = {part for n in namespaces for part in n.split("::")}
if len(c_api) < 30 or len(cpp_api) < 60:
    errors.append(f"only {len(c_api)} C and {len(cpp_api)} C++ names marked TESSERA_API in {include}")

# The exported symbols.
nm = subprocess.run(["nm", "-D", "--defined-only", "-C", str(lib)], capture_output=True, text=True, check=True).stdout
exported = []
for line in nm.splitlines():
    parts = line.split(" ", 2)
    if len(parts) == 3:
        exported.append(parts[2].replace("[abi:cxx11]", ""))
PREFIXES = ("typeinfo name for ", "typeinfo for ", "vtable for ", "VTT for ", "non-virtual thunk to ",
            "virtual thunk to ", "guard variable for ")


def owner(sym):
    """The first name inside Tessera's namespaces: the class or function the symbol belongs to."""
    for p in PREFIXES:
        if sym.startswith(p):
            sym = sym[len(p):]
    if not sym.startswith("tessera::"):
        return None
    names = re.split(r"::", re.split(r"[(<]", sym, 1)[0])
    for i, n in enumerate(names):
        if n not in namespaces or i == len(names) - 1:  # (a function may share a namespace's name)
            return n
    return None


c_seen = set()
outside = []
for sym in exported:
    if re.fullmatch(r"tessera_\w+", sym):
        c_seen.add(sym)
        if sym not in c_api:
            outside.append(sym)
        continue
    o = owner(sym)
    if o is None or o not in cpp_api:
        outside.append(sym)
if outside:
    errors.append(f"{len(outside)} exported symbols outside the public API, e.g.:\n  " + "\n  ".join(outside[:20]))
missing_c = sorted(c_api - c_seen)
if missing_c:
    errors.append("C API functions not exported: " + ", ".join(missing_c))
for need in ("tessera::Model::load(", "tessera::ModelSession::create(", "tessera::LanguageModel::load(",
             "tessera::list_devices()", "tessera::Status::to_string() const", "vtable for tessera::Device",
             "typeinfo for tessera::Device", "tessera::register_device(", "tessera::Graph::"):
    if not any(s.startswith(need) for s in exported):
        errors.append(f"not exported: {need}")
# And a sample of what must stay inside: the cpu device's kernels and the converters' helpers.
for inside in ("tessera::cpu::", "tessera::convert::unpack_tiles", "tessera::tflite::"):
    if any(s.startswith(inside) for s in exported):
        errors.append(f"exported: {inside}...")

if errors:
    print("shared_library: FAILED\n" + "\n".join(errors))
    sys.exit(1)
print(f"shared_library: {lib.name} (soname {soname}) exports {len(exported)} symbols: {len(c_seen)} C functions, "
      f"the rest of {len(cpp_api)} C++ classes and functions of the public headers")
