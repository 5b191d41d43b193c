#!/usr/bin/env python3
"""Prints the names a public header declares with LTR_API (functions and
variables), one per line, sorted: the public API a library must export.
Usage: public-api.py HEADER...  (tests/build/check-exports.sh)"""
import re
import sys

names = set()
for path in sys.argv[1:]:
    text = open(path).read()
    text = re.sub(r'/\*.*?\*/', ' ', text, flags=re.S)
    text = re.sub(r'//[^\n]*', ' ', text)
    text = re.sub(r'^\s*#.*?(?<!\\)$', ' ', text, flags=re.M | re.S)  # directives (with continuations)
    for m in re.finditer(r'\bLTR_API\b([^;{]*)[;{]', text):
        decl = m.group(1)
        head = decl.split('(')[0] if '(' in decl else decl.split('[')[0]
        ident = re.findall(r'[A-Za-z_][A-Za-z_0-9]*', head)
        if not ident:
            sys.exit(f"{path}: cannot read the name of: LTR_API{decl}")
        names.add(ident[-1])
print('\n'.join(sorted(names)))
