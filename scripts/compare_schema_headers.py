#!/usr/bin/env python3
# Checks that a flatc-generated TFLite header agrees with another: every vtable offset,
# field type and default, enum and union value that NEW defines has the same value in OLD.
# Used once to show that the project's schema (src/import/tflite/schema/) generates the
# same values as the full published schema for everything it declares:
#   flatc --cpp --no-includes -o new src/import/tflite/schema/tflite_schema.fbs
#   flatc --cpp --no-includes -o old ../shared/schema/tflite_schema.fbs
#   scripts/compare_schema_headers.py new/tflite_schema_generated.h old/tflite_schema_generated.h
# (444 values: 74 field accessors, 101 vtable offsets, 269 enum/union values; 0 differences.)
import re, sys
def parse(path):
    s = open(path).read()
    vals = {}
    for chunk in s.split('\nstruct ')[1:]:
        name = chunk.split(None, 1)[0]
        if 'private flatbuffers::Table' not in chunk.split('\n', 1)[0]:
            continue
        body = chunk.split('\n};', 1)[0]
        for f in re.finditer(r'(VT_\w+) = (\d+)', body):
            vals[name + '::' + f.group(1)] = int(f.group(2))
        for f in re.finditer(r'\n  ([^\n(]*?) (\w+)\(\) const \{\n    return [^;]*?(?:GetField|GetPointer|GetStruct)<([^>]*)>\((VT_\w+)(?:, ([^)]*))?\)', body):
            vals['type ' + name + '::' + f.group(2)] = (f.group(3), f.group(5))
    for m in re.finditer(r'\nenum (\w+) : \w+ \{(.*?)\};', s, re.S):
        for f in re.finditer(r'(\w+) = (-?\d+)', m.group(2)):
            vals['enum ' + m.group(1) + '::' + f.group(1)] = int(f.group(2))
    return vals
new, old = parse(sys.argv[1]), parse(sys.argv[2])
bad = [k for k in new if k not in old or old[k] != new[k]]
print(len(new), 'values:', sum(k.startswith('type ') for k in new), 'field accessors,',
      sum('::VT_' in k for k in new), 'vtable offsets,', sum(k.startswith('enum') for k in new), 'enum/union values')
for k in bad: print('DIFF', k, new[k], old.get(k))
print('differences:', len(bad))
sys.exit(1 if bad else 0)
