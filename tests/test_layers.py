#!/usr/bin/env python3
"""test_layers.py: includes and calls point down the layers (docs/internals.md, "Layers").
- heap/ includes nothing of vm/;
- the backends (vm/cpu, vm/cuda_hip, vm/vulkan and their shared core vm/interp) include no header of the host runtime
  (runtime.h, launch.h, sizer.h) and call no function that vm/launch.c defines;
- vm/api.c calls no function that vm/launch.c defines, and runtime.h does not include launch.h;
- the project's own #include graph has no cycle, and no include climbs a folder ("../"):
  every project include is written from the repository root.
  test_layers.py SOURCE_DIR"""
import os
import re
import sys

root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
fails = []
INC = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
EXTS = (".c", ".h", ".cu", ".cpp")


def files(*dirs):
    for d in dirs:
        for name in sorted(os.listdir(os.path.join(root, d))):
            if name.endswith(EXTS):
                yield os.path.join(d, name)


def read(rel):
    with open(os.path.join(root, rel), encoding="utf-8") as f:
        return f.read()


def resolve(rel, inc):
    """The repository path an #include "inc" in file rel names, or None (a generated file)."""
    for base in (os.path.dirname(rel), ""):
        p = os.path.normpath(os.path.join(base, inc))
        if os.path.isfile(os.path.join(root, p)):
            return p
    return None


def includes(rel):
    return [p for p in (resolve(rel, i) for i in INC.findall(read(rel))) if p]


for f in files("heap"):
    for p in includes(f):
        if p.startswith("vm" + os.sep):
            fails.append(f"{f} includes {p}: heap/ must not depend on vm/")

RUNTIME = {os.path.join("vm", n) for n in ("runtime.h", "launch.h", "sizer.h")}
# the functions vm/launch.c gives others: defined at column 0, not static
launch_fns = set(re.findall(r"^(?!static)[A-Za-z_][\w \*]*?\b(dvm_\w+)\s*\([^;{]*\)\s*\{", read("vm/launch.c"), re.M))
launch_fns.discard("dvm_launch")  # the public entry point (include/dvm.h)
if not launch_fns:
    fails.append("found no function defined in vm/launch.c: the pattern is stale")

def calls(text, fns):
    return sorted(fn for fn in fns if re.search(r"\b" + fn + r"\s*\(", text))

for f in files("vm/cpu", "vm/cuda_hip", "vm/vulkan", "vm/interp"):
    for p in includes(f):
        if p in RUNTIME:
            fails.append(f"{f} includes {p}: a backend sees only vm/backend.h")
    for fn in calls(read(f), launch_fns):
        fails.append(f"{f} calls {fn} of vm/launch.c: the host passes values down")

for fn in calls(read("vm/api.c"), launch_fns):
    fails.append(f"vm/api.c calls {fn} of vm/launch.c: launch.c uses api.c, not the other way")
if os.path.join("vm", "launch.h") in includes("vm/runtime.h"):
    fails.append("vm/runtime.h includes launch.h: api.c would see launch.c's state")

# cycles in the include graph (depth-first search)
graph = {}
DIRS = ("bytecode", "compiler", "heap", "vm", "vm/cpu", "vm/cuda_hip", "vm/vulkan", "vm/interp", "cli", "tools", "include", "tests")
for d in DIRS:
    for f in files(d):
        graph[f] = includes(f)
        for inc in INC.findall(read(f)):
            if inc.startswith("../"):
                fails.append(f"{f} includes \"{inc}\": write project includes from the repository root")
state = {}


def visit(n, path):
    state[n] = 1
    for m in graph.get(n, []):
        if state.get(m) == 1:
            fails.append("include cycle: " + " -> ".join(path[path.index(m):] + [m]) if m in path else m)
        elif m not in state:
            visit(m, path + [m])
    state[n] = 2


for n in sorted(graph):
    if n not in state:
        visit(n, [n])

if fails:
    for f in fails:
        print("FAIL:", f)
    sys.exit(1)
print(f"test_layers: all passed ({len(graph)} files, {len(launch_fns)} functions of launch.c)")
