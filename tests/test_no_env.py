#!/usr/bin/env python3
"""The library reads no behaviour switch from the environment (docs/c-api.md, "Context
options"): every getenv in its sources (bytecode/, compiler/, heap/, vm/, include/, the
GPU interpreters among them) must name one of the user-facing paths below, as a string
literal. A switch belongs in dvm_context_opts.

usage: test_no_env.py REPO_ROOT      (python3 standard library only)"""
import os
import re
import sys

ALLOWED = {'DVM_CACHE_DIR', 'XDG_CACHE_HOME', 'HOME'}
DIRS = ['bytecode', 'compiler', 'heap', 'vm', 'include']
EXTS = ('.c', '.h', '.cu', '.cpp', '.hip', '.comp', '.glsl', '.def')
CALL = re.compile(r'\b(?:secure_)?getenv\s*\(')
LITERAL = re.compile(r'\s*"([^"\\]*)"\s*\)')


def strip_comments(text):
    """C comments and string contents other than getenv's argument would give false hits:
    comments are blanked (line breaks kept, so line numbers stay right)."""
    def blank(m):
        return re.sub(r'[^\n]', ' ', m.group(0))
    return re.sub(r'/\*.*?\*/|//[^\n]*', blank, text, flags=re.S)


def main():
    root = sys.argv[1]
    bad, seen = [], 0
    for d in DIRS:
        for dirpath, _, files in os.walk(os.path.join(root, d)):
            for fn in sorted(files):
                if not fn.endswith(EXTS):
                    continue
                path = os.path.join(dirpath, fn)
                text = strip_comments(open(path, encoding='utf-8', errors='replace').read())
                for m in CALL.finditer(text):
                    seen += 1
                    line = text.count('\n', 0, m.start()) + 1
                    where = '%s:%d' % (os.path.relpath(path, root), line)
                    lit = LITERAL.match(text, m.end())
                    if not lit:
                        bad.append('%s: getenv of a computed name (only string literals can be checked)' % where)
                    elif lit.group(1) not in ALLOWED:
                        bad.append('%s: getenv("%s"): a behaviour switch belongs in dvm_context_opts '
                                   '(only %s are read)' % (where, lit.group(1), ', '.join(sorted(ALLOWED))))
    for b in bad:
        print('FAIL', b)
    if bad:
        print('test_no_env: %d getenv call(s) outside the allowed paths' % len(bad))
        return 1
    print('test_no_env: %d getenv call(s), all for the cache directory' % seen)
    return 0


if __name__ == '__main__':
    sys.exit(main())
