"""The user docs are self-contained: README.md and docs/*.md cite no file outside the
repository (no spec/ pages, nothing beside the checkout), and every repository path they
name exists. Usage: test_docs.py REPO_ROOT"""
import glob
import os
import re
import sys

root = sys.argv[1]
pages = [os.path.join(root, 'README.md')] + sorted(glob.glob(os.path.join(root, 'docs', '*.md')))
outside = re.compile(r'(\.\./shared|\bspec/\w+\.md|\bdesign\.md|\bstyle\.md|\bseeds/)')
# a repository path: a top-level folder of the checkout, not part of a longer path (lib/cmake/dvm)
path = re.compile(r'(?<![\w/.])((?:docs|examples|tests|bench|scripts|cmake|include|vm|compiler|bytecode|heap|python)'
                  r'/[A-Za-z0-9_./*-]*[A-Za-z0-9_*])')
fails = []
for page in pages:
    rel = os.path.relpath(page, root)
    for n, line in enumerate(open(page, encoding='utf-8').read().splitlines(), 1):
        m = outside.search(line)
        if m:
            fails.append('%s:%d: cites %r, which is not in the repository' % (rel, n, m.group(1)))
        for p in path.findall(line):
            if not glob.glob(os.path.join(root, p)):
                fails.append('%s:%d: names %s, which does not exist' % (rel, n, p))
for f in fails:
    print('FAIL', f)
print('test_docs: %d pages, %s' % (len(pages), 'FAILED' if fails else 'ok'))
sys.exit(1 if fails else 0)
