"""@dvm.kernel: a function in a .py file whose body is .dvk, compiled by the C compiler.

The parameters' annotations are strings ("f32[n]", "i32", "vec3[n]", ...) or dvm.f32, dvm.i32,
dvm.vec3, ..., indexed for arrays (dvm.f32["n, m"], dvm.vec3["n"]): plain Python 3.9+, also under `from __future__ import
annotations`. The kernel's source is laid out so that its lines are the .py file's lines:
compile errors name the .py file and the line in it."""
import ast
import inspect
import re
import textwrap

from ._core import CompileError, compile as _compile


class _DType:
    """dvm.f32 / dvm.i32 as annotations: dvm.f32 is a scalar, dvm.f32["n"] an array."""

    def __init__(self, name):
        self.name = name

    def __getitem__(self, dims):
        if not isinstance(dims, tuple):
            dims = (dims,)
        return "%s[%s]" % (self.name, ", ".join(str(d) for d in dims))

    def __str__(self):
        return self.name

    def __repr__(self):
        return "dvm." + self.name


f32 = _DType("f32")
i32 = _DType("i32")
vec2, vec3, vec4 = _DType("vec2"), _DType("vec3"), _DType("vec4")
mat2, mat3, mat4 = _DType("mat2"), _DType("mat3"), _DType("mat4")
_TYPES = ("f32", "i32", "vec2", "vec3", "vec4", "mat2", "mat3", "mat4")


def _annotation(node, src, where):
    """The .dvk type of an annotation node: 'f32', 'i32[n, m]', ..."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        text = node.value.strip()
        try:  # under `from __future__ import annotations` a string annotation arrives quoted
            inner = ast.parse(text, mode="eval").body
            if not (isinstance(inner, ast.Constant) and isinstance(inner.value, str)):
                if isinstance(inner, (ast.Name, ast.Attribute, ast.Subscript)):
                    return _annotation(inner, text, where)
        except SyntaxError:
            pass
        return text
    if isinstance(node, ast.Name) and node.id in _TYPES:
        return node.id
    if isinstance(node, ast.Attribute) and node.attr in _TYPES:
        return node.attr
    if isinstance(node, ast.Subscript):
        base = _annotation(node.value, src, where)
        sl = node.slice
        if isinstance(sl, ast.Index):  # Python 3.8 AST
            sl = sl.value
        parts = sl.elts if isinstance(sl, ast.Tuple) else [sl]
        dims = []
        for p in parts:
            if isinstance(p, ast.Constant):
                dims.append(str(p.value))
            else:
                dims.append(ast.get_source_segment(src, p) or "?")
        return "%s[%s]" % (base, ", ".join(dims))
    raise CompileError("%s: error: an annotation must be a string such as \"f32[n]\" or dvm.f32[\"n\"], "
                       "not %s" % (where, ast.get_source_segment(src, node)))


def kernel_source(fn):
    """(source, filename, column shift) of a decorated function's kernel."""
    filename = inspect.getsourcefile(fn) or "<unknown>"
    lines, first = inspect.getsourcelines(fn)
    text = "".join(lines)
    indent = len(lines[0]) - len(lines[0].lstrip())
    for ln in lines:
        if ln.strip():
            indent = len(ln) - len(ln.lstrip())
            break
    src = textwrap.dedent(text)
    tree = ast.parse(src)
    fdef = next(n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)))
    a = fdef.args
    if a.vararg or a.kwarg or a.kwonlyargs or a.posonlyargs or a.defaults:
        raise CompileError("%s:%d:1: error: kernel '%s': parameters are plain names with annotations "
                           "(no defaults, *args, **kwargs or keyword-only ones)" % (filename, first + fdef.lineno - 1,
                                                                                    fdef.name))
    params = []
    for arg in a.args:
        where = "%s:%d:%d" % (filename, first + arg.lineno - 1, arg.col_offset + indent + 1)
        if arg.annotation is None:
            raise CompileError("%s: error: parameter '%s' needs an annotation such as \"f32[n]\" or \"i32\"" % (
                where, arg.arg))
        params.append("%s: %s" % (arg.arg, _annotation(arg.annotation, src, where)))
    body = fdef.body
    skip = set()
    if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant) \
            and isinstance(body[0].value.value, str):
        skip = set(range(body[0].lineno, body[0].end_lineno + 1))  # the docstring
    def_line = fdef.lineno                      # 1-based within src
    body_start = min(n.lineno for n in body)
    src_lines = src.splitlines()
    out = ["" for _ in range(first - 1 + def_line - 1)]
    out.append("kernel %s(%s):" % (fdef.name, ", ".join(params)))
    out.extend("" for _ in range(def_line + 1, body_start))
    for i in range(body_start, fdef.end_lineno + 1):
        out.append("" if i in skip else src_lines[i - 1])
    return "\n".join(out) + "\n", filename, indent


_LOC = None


def kernel(fn=None, *, device=None):
    """Decorator: the function's body is .dvk; returns a dvm.Kernel (its module is .module)."""
    def make(f):
        source, filename, shift = kernel_source(f)
        try:
            mod = _compile(source, filename=filename, device=device)
        except CompileError as e:
            if not shift:
                raise
            # the body was dedented by `shift` columns: point at the .py file's columns
            pat = re.compile(r"^(%s:\d+:)(\d+)(:)" % re.escape(filename), re.M)
            raise CompileError(pat.sub(lambda m: "%s%d%s" % (m.group(1), int(m.group(2)) + shift, m.group(3)),
                                       str(e))) from None
        k = mod[f.__name__]
        k.__doc__ = f.__doc__
        k.__wrapped__ = f
        return k
    if fn is None:
        return make
    return make(fn)
