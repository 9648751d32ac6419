/* check.c: name resolution, scopes and types; builds IR expressions (the scalar rules,
 * arrays, places, builtin calls). */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "compiler/check_internal.h"

/* ---- errors: one per source location (a helper inlined twice reports once) ---- */
#if defined(__GNUC__)
__attribute__((format(printf, 4, 5)))
#endif
void chk_err(ctx *c, int line, int col, const char *fmt, ...) {
    for (int i = 0; i < c->nreported && i < 64; i++)
        if (c->reported[i][0] == line && c->reported[i][1] == col) {
            c->d->nerrors++;
            c->d->max_errors++; /* counted, not shown again */
            return;
        }
    c->reported[c->nreported % 64][0] = line;
    c->reported[c->nreported % 64][1] = col;
    c->nreported++;
    char msg[640];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    dvm_diag(c->d, line, col, "%s", msg);
}

const char *chk_tname(int t) {
    static const char *const vt[] = {"vec2", "vec3", "vec4", "?", "mat2", "mat3", "mat4", "?", "a tuple"};
    if (t >= DVM_T_VEC2 && t <= DVM_T_TUPLE) return vt[t - DVM_T_VEC2];
    return t == DVM_T_F32 ? "f32" : t == DVM_T_I32 ? "i32" : t == DVM_T_BOOL ? "bool" : "no value";
}

/* ---- IR construction ---- */
ir_expr *chk_mk(ctx *c, int kind, int type, int line, int col) {
    ir_expr *e = ir_expr_new(c->a, kind, type, line, col);
    if (!e) c->oom = 1;
    return e;
}
ir_expr *chk_mk_const_i(ctx *c, int type, int32_t v, int line, int col) {
    ir_expr *e = chk_mk(c, IR_CONST, type, line, col);
    if (e) e->k.i = v;
    return e;
}
ir_expr *chk_mk_const_f(ctx *c, float v, int line, int col) {
    ir_expr *e = chk_mk(c, IR_CONST, DVM_T_F32, line, col);
    if (e) e->k.f = v;
    return e;
}
ir_expr *chk_mk_var(ctx *c, int var, int line, int col) {
    ir_expr *e = chk_mk(c, IR_VAR, c->k->vars[var].type, line, col);
    if (e) e->var = var;
    return e;
}
ir_expr *chk_mk_un(ctx *c, int op, int type, ir_expr *a) {
    if (!a) return NULL;
    ir_expr *e = chk_mk(c, IR_UN, type, a->line, a->col);
    if (e) {
        e->op = (uint16_t)op;
        e->a = a;
    }
    return e;
}
ir_expr *chk_mk_bin(ctx *c, int op, int type, ir_expr *a, ir_expr *b, int line, int col) {
    if (!a || !b) return NULL;
    ir_expr *e = chk_mk(c, IR_BIN, type, line, col);
    if (e) {
        e->op = (uint16_t)op;
        e->a = a;
        e->b = b;
    }
    return e;
}
ir_stmt *chk_mk_stmt(ctx *c, int kind, int line, int col) {
    if (c->oom) return NULL;
    if (++c->nstmts > MAX_STMTS) {
        chk_err(c, line, col, "kernel '%s' is too large after unrolling static loops and inlining helpers (more than %d statements)", c->k->name,
            MAX_STMTS);
        c->oom = 2;
        return NULL;
    }
    ir_stmt *s = ir_stmt_new(c->a, kind, line, col);
    if (!s) c->oom = 1;
    return s;
}
void chk_push(ctx *c, ir_block *b, ir_stmt *s) {
    if (s) ir_block_push(c->a, b, s);
}
ir_stmt *chk_mk_assign(ctx *c, int var, ir_expr *e, int line, int col) {
    ir_stmt *s = chk_mk_stmt(c, IR_ASSIGN, line, col);
    if (s) {
        s->var = var;
        s->e = e;
    }
    return s;
}
ir_expr *chk_mk_not(ctx *c, ir_expr *a) { return chk_mk_un(c, DVM_OP_NOT, DVM_T_BOOL, a); }

int chk_new_var(ctx *c, const char *name, int type, int line, int col) {
    int v = ir_var_new(c->a, c->k, name, type, c->in_parallel ? IR_LOCAL : IR_GLOBAL, line, col);
    if (v < 0) c->oom = 1;
    return v;
}

/* i32 -> f32 where needed (constants folded); NULL with no message when it cannot convert. */
ir_expr *chk_to_f32(ctx *c, ir_expr *e) {
    if (!e || e->type == DVM_T_F32) return e;
    if (e->type != DVM_T_I32) return NULL;
    if (e->kind == IR_CONST) return chk_mk_const_f(c, (float)e->k.i, e->line, e->col);
    return chk_mk_un(c, DVM_OP_I2F, DVM_T_F32, e);
}

/* Converts e to type `want` the way an assignment does; NULL when it cannot. */
ir_expr *chk_convert(ctx *c, ir_expr *e, int want) {
    if (!e) return NULL;
    if (e->type == want) return e;
    if (want == DVM_T_F32 && e->type == DVM_T_I32) return chk_to_f32(c, e);
    return NULL;
}

int chk_is_leaf(const ir_expr *e) { return e && (e->kind == IR_CONST || e->kind == IR_VAR); }

ir_expr *chk_clone_leaf(ctx *c, const ir_expr *e, int line, int col) {
    ir_expr *x = chk_mk(c, e->kind, e->type, line, col);
    if (x) {
        x->k = e->k;
        x->var = e->var;
        x->slot = e->slot;
        x->axis = e->axis;
    }
    return x;
}

/* ---- scopes ---- */
int chk_scope_mark(ctx *c) { return c->nstack; }

binding *chk_bind(ctx *c, int name, int kind, int line, int col) {
    binding *b = dvm_arena_alloc(c->a, sizeof *b);
    if (!b) {
        c->oom = 1;
        return NULL;
    }
    if (c->nstack == c->capstack) {
        int nc = c->capstack ? c->capstack * 2 : 64;
        binding **v = dvm_arena_grow(c->a, c->stack, (size_t)c->capstack * sizeof *v, (size_t)nc * sizeof *v);
        if (!v) {
            c->oom = 1;
            return NULL;
        }
        c->stack = v;
        c->capstack = nc;
    }
    b->kind = kind;
    b->name = name;
    b->frame = c->fr->id;
    b->line = line;
    b->col = col;
    b->var = -1;
    b->param = -1;
    b->prev = c->head[name];
    c->head[name] = b;
    c->stack[c->nstack++] = b;
    return b;
}

void chk_scope_pop(ctx *c, int mark) {
    while (c->nstack > mark) {
        binding *b = c->stack[--c->nstack];
        c->head[b->name] = b->prev;
        if (b->frame == c->fr->id && b->kind == BK_VAR) c->expired[b->name] = b;
    }
}

binding *chk_lookup(ctx *c, int name) {
    binding *b = c->head[name];
    return b && b->frame == c->fr->id ? b : NULL;
}


int chk_is_reserved(const char *s) {
    return !strcmp(s, "range") || !strcmp(s, "ndrange") || !strcmp(s, "static") || !strcmp(s, "f32") ||
           !strcmp(s, "i32") || !strcmp(s, "bool");
}

/* ---- builtins ---- */
static const builtin builtins[] = {
    {"sin", BI_F1, DVM_OP_SIN, 1},     {"cos", BI_F1, DVM_OP_COS, 1},     {"tan", BI_F1, DVM_OP_TAN, 1},
    {"asin", BI_F1, DVM_OP_ASIN, 1},   {"acos", BI_F1, DVM_OP_ACOS, 1},   {"atan", BI_F1, DVM_OP_ATAN, 1},
    {"exp", BI_F1, DVM_OP_EXP, 1},     {"log", BI_F1, DVM_OP_LOG, 1},     {"sqrt", BI_F1, DVM_OP_SQRT, 1},
    {"rsqrt", BI_F1, DVM_OP_RSQRT, 1}, {"tanh", BI_F1, DVM_OP_TANH, 1},   {"floor", BI_F1, DVM_OP_FLOOR, 1},
    {"ceil", BI_F1, DVM_OP_CEIL, 1},   {"atan2", BI_F2, DVM_OP_ATAN2F, 2}, {"pow", BI_F2, DVM_OP_POWF, 2},
    {"abs", BI_ABS, 0, 1},             {"min", BI_MINMAX, 0, -1},         {"max", BI_MINMAX, 1, -1},
    {"clamp", BI_CLAMP, 0, 3},         {"select", BI_SELECT, 0, 3},       {"f32", BI_F32, 0, 1},
    {"i32", BI_I32, 0, 1},             {"atomic_max", BI_ATOMIC, 1, 2},   {"atomic_min", BI_ATOMIC, 0, 2},
    {"range", BI_LOOP, 0, 0},          {"ndrange", BI_LOOP, 0, 0},        {"static", BI_LOOP, 0, 0},
    {"vec2", BI_CTOR, DVM_T_VEC2, 0},  {"vec3", BI_CTOR, DVM_T_VEC3, 0},  {"vec4", BI_CTOR, DVM_T_VEC4, 0},
    {"mat2", BI_CTOR, DVM_T_MAT2, 0},  {"mat3", BI_CTOR, DVM_T_MAT3, 0},  {"mat4", BI_CTOR, DVM_T_MAT4, 0},
    /* op: vbuiltin's VB_* */
    {"dot", BI_VEC, 0, 0},             {"cross", BI_VEC, 1, 0},           {"length", BI_VEC, 2, 0},
    {"normalize", BI_VEC, 3, 0},       {"outer", BI_VEC, 4, 0},           {"transpose", BI_VEC, 5, 0},
    {"determinant", BI_VEC, 6, 0},     {"inverse", BI_VEC, 7, 0},         {"trace", BI_VEC, 8, 0},
};
const builtin *chk_find_builtin(const char *s) {
    for (size_t i = 0; i < sizeof builtins / sizeof *builtins; i++)
        if (!strcmp(builtins[i].name, s)) return &builtins[i];
    return NULL;
}


ir_expr *chk_lower_typed(ctx *c, const ast_expr *e, ir_block *pre, int want, const char *what) {
    ir_expr *x = chk_lower_expr(c, e, pre);
    if (!x) return NULL;
    ir_expr *y = chk_convert(c, x, want);
    if (!y) chk_err(c, e->line, e->col, "%s must be %s, got %s", what, chk_tname(want), chk_tname(x->type));
    return y;
}

ir_expr *chk_lower_cond(ctx *c, const ast_expr *e, ir_block *pre, const char *what) {
    ir_expr *x = chk_lower_expr(c, e, pre);
    if (!x) return NULL;
    if (x->type != DVM_T_BOOL) {
        chk_err(c, e->line, e->col, "%s must be bool, got %s (compare explicitly, e.g. 'x != 0')", what, chk_tname(x->type));
        return NULL;
    }
    return x;
}

/* ---- arithmetic and comparisons ---- */
const char *chk_op_text(int tk) { return dvm_tok_spelling(tk); }

ir_expr *chk_arith(ctx *c, int tk, ir_expr *a, ir_expr *b, int line, int col) {
    if (!a || !b) return NULL;
    if ((a->type != DVM_T_F32 && a->type != DVM_T_I32) || (b->type != DVM_T_F32 && b->type != DVM_T_I32)) {
        chk_err(c, line, col, "operator '%s' needs f32 or i32 operands, got %s and %s", chk_op_text(tk), chk_tname(a->type), chk_tname(b->type));
        return NULL;
    }
    int ints = a->type == DVM_T_I32 && b->type == DVM_T_I32;
    if (tk == TK_SLASH) ints = 0;
    if (ints) {
        int op = tk == TK_PLUS ? DVM_OP_ADDI : tk == TK_MINUS ? DVM_OP_SUBI : tk == TK_STAR ? DVM_OP_MULI
               : tk == TK_DSLASH ? DVM_OP_DIVI : tk == TK_PERCENT ? DVM_OP_MODI : DVM_OP_POWI;
        if (a->kind == IR_CONST && b->kind == IR_CONST && (op == DVM_OP_ADDI || op == DVM_OP_SUBI || op == DVM_OP_MULI)) {
            uint32_t x = (uint32_t)a->k.i, y = (uint32_t)b->k.i;
            uint32_t r = op == DVM_OP_ADDI ? x + y : op == DVM_OP_SUBI ? x - y : x * y; /* wraps like the VM */
            return chk_mk_const_i(c, DVM_T_I32, (int32_t)r, line, col);
        }
        /* (k + 1) % 3 of a static loop variable stays a constant (an index of a vector) */
        if (a->kind == IR_CONST && b->kind == IR_CONST && (op == DVM_OP_DIVI || op == DVM_OP_MODI) && b->k.i != 0 &&
            !(a->k.i == INT32_MIN && b->k.i == -1)) {
            int32_t x = a->k.i, y = b->k.i, q = x / y;
            if (x % y != 0 && ((x < 0) != (y < 0))) q--; /* floor, as Python */
            return chk_mk_const_i(c, DVM_T_I32, op == DVM_OP_DIVI ? q : x - q * y, line, col);
        }
        return chk_mk_bin(c, op, DVM_T_I32, a, b, line, col);
    }
    int op = tk == TK_PLUS ? DVM_OP_ADDF : tk == TK_MINUS ? DVM_OP_SUBF : tk == TK_STAR ? DVM_OP_MULF
           : tk == TK_SLASH ? DVM_OP_DIVF : tk == TK_DSLASH ? DVM_OP_FFLOORDIV : tk == TK_PERCENT ? DVM_OP_FMODF : DVM_OP_POWF;
    return chk_mk_bin(c, op, DVM_T_F32, chk_to_f32(c, a), chk_to_f32(c, b), line, col);
}

static ir_expr *compare(ctx *c, int tk, ir_expr *a, ir_expr *b, int line, int col) {
    if (!a || !b) return NULL;
    int ab = a->type == DVM_T_BOOL, bb = b->type == DVM_T_BOOL;
    if (ab || bb) {
        if (!(ab && bb)) {
            chk_err(c, line, col, "cannot compare %s with %s using '%s'", chk_tname(a->type), chk_tname(b->type), chk_op_text(tk));
            return NULL;
        }
        if (tk != TK_EQ && tk != TK_NE) {
            chk_err(c, line, col, "bool values cannot be ordered with '%s' (only == and != compare bools)", chk_op_text(tk));
            return NULL;
        }
        return chk_mk_bin(c, tk == TK_EQ ? DVM_OP_EQI : DVM_OP_NEI, DVM_T_BOOL, a, b, line, col);
    }
    if ((a->type != DVM_T_F32 && a->type != DVM_T_I32) || (b->type != DVM_T_F32 && b->type != DVM_T_I32)) {
        chk_err(c, line, col, "cannot compare %s with %s", chk_tname(a->type), chk_tname(b->type));
        return NULL;
    }
    int f = a->type == DVM_T_F32 || b->type == DVM_T_F32;
    if (f) {
        a = chk_to_f32(c, a);
        b = chk_to_f32(c, b);
    }
    int lt = f ? DVM_OP_LTF : DVM_OP_LTI, le = f ? DVM_OP_LEF : DVM_OP_LEI;
    int eq = f ? DVM_OP_EQF : DVM_OP_EQI, ne = f ? DVM_OP_NEF : DVM_OP_NEI;
    switch (tk) {
    case TK_LT: return chk_mk_bin(c, lt, DVM_T_BOOL, a, b, line, col);
    case TK_LE: return chk_mk_bin(c, le, DVM_T_BOOL, a, b, line, col);
    case TK_GT: return chk_mk_bin(c, lt, DVM_T_BOOL, b, a, line, col);
    case TK_GE: return chk_mk_bin(c, le, DVM_T_BOOL, b, a, line, col);
    case TK_EQ: return chk_mk_bin(c, eq, DVM_T_BOOL, a, b, line, col);
    default: return chk_mk_bin(c, ne, DVM_T_BOOL, a, b, line, col);
    }
}

/* `a and b` / `a or b` where b was lowered into `sub`: an IR_AND/IR_OR when b needs no
 * statements, else a bool temporary set in an if, so b's statements run only when needed. */
static ir_expr *logic(ctx *c, int is_and, ir_expr *a, ir_expr *b, ir_block *sub, ir_block *pre, int line, int col) {
    if (!a || !b) return NULL;
    if (sub->n == 0) {
        ir_expr *e = chk_mk(c, is_and ? IR_AND : IR_OR, DVM_T_BOOL, line, col);
        if (e) {
            e->a = a;
            e->b = b;
        }
        return e;
    }
    int t = chk_new_var(c, is_and ? "and" : "or", DVM_T_BOOL, line, col);
    if (t < 0) return NULL;
    chk_push(c, pre, chk_mk_assign(c, t, a, line, col));
    ir_stmt *s = chk_mk_stmt(c, IR_IF, line, col);
    if (!s) return NULL;
    s->e = is_and ? chk_mk_var(c, t, line, col) : chk_mk_not(c, chk_mk_var(c, t, line, col));
    s->body = *sub;
    chk_push(c, &s->body, chk_mk_assign(c, t, b, line, col));
    chk_push(c, pre, s);
    return chk_mk_var(c, t, line, col);
}

static ir_expr *lower_chain(ctx *c, const ast_expr *e, int i, ir_expr *left, ir_block *pre) {
    ir_expr *right = chk_lower_expr(c, e->args[i + 1], pre);
    if (!left || !right) return NULL;
    int last = i + 2 >= e->nargs;
    if (!last && !chk_is_leaf(right)) { /* used twice: evaluate once */
        int t = chk_new_var(c, "cmp", right->type, right->line, right->col);
        if (t < 0) return NULL;
        chk_push(c, pre, chk_mk_assign(c, t, right, right->line, right->col));
        right = chk_mk_var(c, t, right->line, right->col);
    }
    const ast_expr *opnd = e->args[i + 1];
    ir_expr *cmp = compare(c, e->ops[i], left, right, i == 0 ? e->line : opnd->line, i == 0 ? e->col : opnd->col);
    if (last || !cmp) return cmp;
    ir_block sub = {0};
    ir_expr *rest = lower_chain(c, e, i + 1, chk_clone_leaf(c, right, right->line, right->col), &sub);
    return logic(c, 1, cmp, rest, &sub, pre, e->line, e->col);
}

/* ---- arrays ---- */
/* The array a name refers to: the kernel parameter index, or -1 with an error. */
int chk_array_of(ctx *c, const ast_expr *e) {
    if (e->kind != AE_NAME) {
        chk_err(c, e->line, e->col, "only arrays can be indexed");
        return -1;
    }
    binding *b = chk_lookup(c, e->name);
    if (!b) {
        chk_err(c, e->line, e->col, "unknown array '%s'", e->str);
        return -1;
    }
    if (b->kind == BK_POISON) return -1;
    if (b->kind != BK_ARRAY) {
        chk_err(c, e->line, e->col, "'%s' is not an array; only arrays can be indexed", e->str);
        return -1;
    }
    return b->param;
}

/* Lowers the indices of x[...] into idx; returns the rank or -1. */
int chk_lower_indices(ctx *c, const ast_expr *ix, int param, ir_expr **idx, ir_block *pre) {
    const ir_param *p = &c->k->params[param];
    if (ix->nargs != p->rank && c->param_vt[param]) {
        chk_err(c, ix->line, ix->col, "'%s' is %s: an element of one f32 takes %d indices here (%s[%s]), got %d", p->name, c->param_decl[param], p->rank,
            p->name, p->rank == 2 ? "i, k" : p->rank == 3 ? "i, j, k" : "i, j, k, l", ix->nargs);
        return -1;
    }
    if (ix->nargs != p->rank) {
        chk_err(c, ix->line, ix->col, "array '%s' has rank %d but %d %s given", p->name, p->rank, ix->nargs,
            ix->nargs == 1 ? "index was" : "indices were");
        return -1;
    }
    int ok = 1;
    for (int i = 0; i < ix->nargs; i++) {
        ir_expr *x = chk_lower_expr(c, ix->args[i], pre);
        if (!x) {
            ok = 0;
            continue;
        }
        if (x->type != DVM_T_I32) {
            chk_err(c, ix->args[i]->line, ix->args[i]->col, "the index for axis %d of '%s' must be i32, got %s%s", i, p->name,
                chk_tname(x->type), x->type == DVM_T_F32 ? " (convert with i32(...))" : "");
            ok = 0;
            continue;
        }
        idx[i] = x;
    }
    return ok ? p->rank : -1;
}

static ir_expr *lower_shape(ctx *c, const ast_expr *ix, ir_block *pre) {
    const ast_expr *attr = ix->a;
    int param = chk_array_of(c, attr->a);
    if (param < 0) return NULL;
    const ir_param *p = &c->k->params[param];
    if (ix->nargs != 1) {
        chk_err(c, ix->line, ix->col, "'%s.shape' takes one axis, got %d", p->name, ix->nargs);
        return NULL;
    }
    ir_expr *k = chk_lower_expr(c, ix->args[0], pre);
    if (!k) return NULL;
    if (k->kind != IR_CONST || k->type != DVM_T_I32) {
        chk_err(c, ix->args[0]->line, ix->args[0]->col, "the axis in '%s.shape[k]' must be an integer literal", p->name);
        return NULL;
    }
    if (k->k.i < 0 || k->k.i >= p->rank) {
        chk_err(c, ix->args[0]->line, ix->args[0]->col, "axis %d is out of range for '%s' of rank %d", (int)k->k.i, p->name, p->rank);
        return NULL;
    }
    int32_t dm = p->dim[k->k.i];
    if (dm >= 0) return chk_mk_const_i(c, DVM_T_I32, dm, ix->line, ix->col);
    return chk_mk_var(c, c->k->syms[-dm - 1].var, ix->line, ix->col);
}

/* ---- places: an array element, a local vector, and their parts ---- */
typedef struct place {
    int param;   /* the array parameter, or -1: a local */
    binding *b;  /* a local's binding */
    int var0;    /* a local: the first variable of the place */
    int type;    /* the place's type (f32, i32, a vector or a matrix) */
    int nidx;    /* an array: the indices so far */
    ir_expr *idx[DVM_MAX_RANK];
} place;

/* e.NAME is no component of a value of type t */
static void bad_component(ctx *c, const ast_expr *e, int t) {
    const char *s = e->str;
    size_t n = strlen(s), sw = strspn(s, "xyzw");
    if (is_mat(t)) chk_err(c, e->line, e->col, "%s has no component '.%s': index it, m[i, j] (a row: m[i])", chk_tname(t), s);
    else if (n > 1 && sw == n) chk_err(c, e->line, e->col, "swizzles such as '.%s' are not supported; build the vector from components (vec2(v.x, v.y))", s);
    else chk_err(c, e->line, e->col, "%s has no component '.%s' (it has %.*s)", chk_tname(t), s, 2 * vdim(t) - 1, "x y z w");
}

/* Does e name a place (something rooted at an array of vectors or a vector local)? */
int chk_is_place_form(ctx *c, const ast_expr *e) {
    while (e->kind == AE_ATTR || e->kind == AE_INDEX) {
        if (e->kind == AE_ATTR && !strcmp(e->str, "shape")) return 0;
        if (e->kind == AE_INDEX && e->a->kind == AE_NAME) {
            binding *b = chk_lookup(c, e->a->name);
            if (b && b->kind == BK_ARRAY) return 1;
        }
        e = e->a;
    }
    if (e->kind != AE_NAME) return 0;
    binding *b = chk_lookup(c, e->name);
    return b && ((b->kind == BK_VAR && b->vtype) || (b->kind == BK_ARRAY && c->param_vt[b->param]));
}

static int lit_index(ctx *c, const ast_expr *ae, ir_expr *x, int n, const char *of) {
    if (!x) return -1;
    if (x->kind != IR_CONST || x->type != DVM_T_I32) {
        chk_err(c, ae->line, ae->col, "the index of a %s must be an integer literal or a static(range(...)) loop variable, got %s%s", of,
            x->type == DVM_T_I32 ? "a computed " : "", chk_tname(x->type));
        return -1;
    }
    if (x->k.i < 0 || x->k.i >= n) {
        chk_err(c, ae->line, ae->col, "index %d is out of range for a %s (0..%d)", (int)x->k.i, of, n - 1);
        return -1;
    }
    return x->k.i;
}

/* Selects component k (a vector's) or row k (a matrix's) of the place. */
static void place_step(place *pl, int k, ir_expr *dyn, ctx *c, int line, int col) {
    int n = vdim(pl->type);
    if (pl->param >= 0) pl->idx[pl->nidx++] = dyn ? dyn : chk_mk_const_i(c, DVM_T_I32, k, line, col);
    else pl->var0 += is_mat(pl->type) ? k * n : k;
    pl->type = is_mat(pl->type) ? DVM_T_VEC2 + n - 2 : DVM_T_F32;
}

/* Resolves a place; 0 on success, -1 after an error. */
static int resolve_place(ctx *c, const ast_expr *e, place *pl, ir_block *pre) {
    if (e->kind == AE_NAME) {
        binding *b = chk_lookup(c, e->name);
        if (b && b->kind == BK_ARRAY) {
            const ir_param *p = &c->k->params[b->param];
            int vt = c->param_vt[b->param];
            chk_err(c, e->line, e->col, "'%s' is %s: index it once (%s[%s]) to get a %s", e->str, c->param_decl[b->param], e->str,
                p->rank - ncomp(vt) > 1 ? "i, j" : "i", chk_tname(vt));
            return -1;
        }
        memset(pl, 0, sizeof *pl);
        pl->param = -1;
        pl->b = b;
        pl->var0 = b->var;
        pl->type = b->vtype;
        return 0;
    }
    if (e->kind == AE_INDEX && e->a->kind == AE_NAME) {
        binding *b = chk_lookup(c, e->a->name);
        if (b && b->kind == BK_ARRAY) {
            const ir_param *p = &c->k->params[b->param];
            int vt = c->param_vt[b->param];
            if (!vt) { /* an array of scalars: x[i].y and the like */
                memset(pl, 0, sizeof *pl);
                pl->param = b->param;
                pl->type = p->type;
                pl->nidx = chk_lower_indices(c, e, b->param, pl->idx, pre);
                return pl->nidx < 0 ? -1 : 0;
            }
            int base = p->rank - (is_mat(vt) ? 2 : 1);
            if (e->nargs < base || e->nargs > p->rank) {
                chk_err(c, e->line, e->col, "'%s' is %s: %s[%s] is a %s%s; got %d ind%s", p->name, c->param_decl[b->param], p->name,
                    base > 1 ? "i, j" : "i", chk_tname(vt), is_mat(vt) ? ", with a row index a vec and with two an f32" : ", with one more index an f32",
                    e->nargs, e->nargs == 1 ? "ex" : "ices");
                return -1;
            }
            memset(pl, 0, sizeof *pl);
            pl->param = b->param;
            pl->type = vt;
            int ok = 1;
            for (int i = 0; i < e->nargs; i++) {
                ir_expr *x = chk_lower_expr(c, e->args[i], pre);
                if (!x) {
                    ok = 0;
                    continue;
                }
                if (x->type != DVM_T_I32) {
                    chk_err(c, e->args[i]->line, e->args[i]->col, "the index for axis %d of '%s' must be i32, got %s", i, p->name, chk_tname(x->type));
                    ok = 0;
                    continue;
                }
                x = chk_settle(c, x, pre); /* used by every component's load or store */
                if (i < base) pl->idx[pl->nidx++] = x;
                else if (x->kind == IR_CONST && (x->k.i < 0 || x->k.i >= vdim(vt))) {
                    chk_err(c, e->args[i]->line, e->args[i]->col, "index %d is out of range for axis %d of '%s' (%s)", (int)x->k.i, i, p->name,
                        c->param_decl[b->param]);
                    ok = 0;
                } else place_step(pl, 0, x, c, e->line, e->col);
            }
            return ok ? 0 : -1;
        }
    }
    place inner;
    if (resolve_place(c, e->a, &inner, pre)) return -1;
    *pl = inner;
    if (!is_vt(pl->type)) {
        chk_err(c, e->line, e->col, "%s has no components%s", chk_tname(pl->type), e->kind == AE_ATTR ? "" : " to index");
        return -1;
    }
    if (e->kind == AE_ATTR) {
        const char *s = e->str;
        int k = s[0] && !s[1] ? (s[0] == 'x' ? 0 : s[0] == 'y' ? 1 : s[0] == 'z' ? 2 : s[0] == 'w' ? 3 : -1) : -1;
        if (is_mat(pl->type) || k < 0 || k >= vdim(pl->type)) {
            bad_component(c, e, pl->type);
            return -1;
        }
        place_step(pl, k, NULL, c, e->line, e->col);
        return 0;
    }
    if (e->nargs > (is_mat(pl->type) ? 2 : 1)) {
        chk_err(c, e->line, e->col, "a %s takes %s index, got %d", chk_tname(pl->type), is_mat(pl->type) ? "one (a row) or two (an element)" : "one", e->nargs);
        return -1;
    }
    for (int i = 0; i < e->nargs; i++) {
        ir_expr *x = chk_lower_expr(c, e->args[i], pre);
        if (pl->param >= 0 && x && x->type == DVM_T_I32 && x->kind != IR_CONST) { /* array elements may take a computed index */
            place_step(pl, 0, chk_settle(c, x, pre), c, e->line, e->col);
            continue;
        }
        int k = lit_index(c, e->args[i], x, vdim(pl->type), chk_tname(pl->type));
        if (k < 0) return -1;
        place_step(pl, k, NULL, c, e->line, e->col);
    }
    return 0;
}

/* The value of a place: loads or variables. */
static ir_expr *place_value(ctx *c, const place *pl, int line, int col) {
    if (pl->param < 0) return chk_vvar_val(c, pl->var0, pl->type, NULL, 0, line, col);
    int n = ncomp(pl->type), d = vdim(pl->type);
    ir_expr *r = is_vt(pl->type) ? chk_mk_vec(c, pl->type, n, line, col) : NULL;
    for (int k = 0; k < n; k++) {
        ir_expr *x = chk_mk(c, IR_LOAD, DVM_T_F32, line, col);
        if (!x) return NULL;
        x->slot = c->slot_of_param[pl->param];
        x->nidx = pl->nidx;
        for (int i = 0; i < pl->nidx; i++) x->idx[i] = chk_use(c, pl->idx[i]);
        if (is_vec(pl->type)) x->idx[x->nidx++] = chk_mk_const_i(c, DVM_T_I32, k, line, col);
        if (is_mat(pl->type)) {
            x->idx[x->nidx++] = chk_mk_const_i(c, DVM_T_I32, k / d, line, col);
            x->idx[x->nidx++] = chk_mk_const_i(c, DVM_T_I32, k % d, line, col);
        }
        if (!r) return x;
        parts(r)[k] = x;
    }
    return chk_vdone(r);
}


/* place = v, or place op= v (arrays: += and -= are atomic adds, per component). */
void chk_place_store(ctx *c, const ast_expr *t, const ast_expr *ve, ir_expr *v, int op, ir_block *out, int line, int col) {
    place pl;
    if (resolve_place(c, t, &pl, out) || !v) return;
    if (chk_no_tuple(c, v, ve->line, ve->col)) return;
    if (pl.param < 0) {
        if (!chk_writable(c, pl.b, t)) return;
        if (op) v = chk_arith2(c, op, place_value(c, &pl, line, col), v, out, line, col);
        ir_expr *cv = chk_vconvert(c, v, pl.type);
        if (!cv) {
            if (v) chk_err(c, ve->line, ve->col, "cannot assign %s to a %s (here a part of '%s')", chk_tname(v->type), chk_tname(pl.type), pl.b ? c->k->vars[pl.b->var].name : "?");
            return;
        }
        chk_vassign(c, pl.var0, cv, out, line, col);
        return;
    }
    const ir_param *p = &c->k->params[pl.param];
    if (c->fr->h) {
        chk_err(c, t->line, t->col, "helper '%s' cannot write array '%s' (helpers only read arrays)", c->fr->h->f->str, p->name);
        return;
    }
    if (op && op != TK_PLUS && op != TK_MINUS) {
        chk_err(c, line, col, "'%s[...] %s= e' is not supported: only += and -= on array elements (they are atomic adds)", p->name, chk_op_text(op));
        return;
    }
    ir_expr *cv = chk_vconvert(c, v, pl.type);
    if (!cv) {
        chk_err(c, ve->line, ve->col, "cannot store %s into an element of '%s' that is a %s ('%s' is %s)", chk_tname(v->type), p->name, chk_tname(pl.type), p->name, c->param_decl[pl.param]);
        return;
    }
    ir_expr *fl[16];
    int n = 0;
    chk_flatten(cv, fl, &n);
    int d = vdim(pl.type);
    for (int k = 0; k < n; k++) {
        ir_expr *x = fl[k];
        int f = p->type == DVM_T_F32;
        if (op == TK_MINUS && x->kind == IR_CONST) x = f ? chk_mk_const_f(c, -x->k.f, x->line, x->col) : chk_mk_const_i(c, DVM_T_I32, (int32_t)(0u - (uint32_t)x->k.i), x->line, x->col);
        else if (op == TK_MINUS) x = chk_mk_un(c, f ? DVM_OP_NEGF : DVM_OP_NEGI, p->type, chk_use(c, x));
        else x = chk_use(c, x);
        ir_stmt *st = chk_mk_stmt(c, op ? IR_ATOMIC : IR_STORE, line, col);
        if (!st) return;
        if (op) st->op = f ? DVM_OP_ATOMADDF : DVM_OP_ATOMADDI;
        st->slot = c->slot_of_param[pl.param];
        st->nidx = pl.nidx;
        for (int i = 0; i < pl.nidx; i++) st->idx[i] = chk_use(c, pl.idx[i]);
        if (is_vec(pl.type)) st->idx[st->nidx++] = chk_mk_const_i(c, DVM_T_I32, k, line, col);
        if (is_mat(pl.type)) {
            st->idx[st->nidx++] = chk_mk_const_i(c, DVM_T_I32, k / d, line, col);
            st->idx[st->nidx++] = chk_mk_const_i(c, DVM_T_I32, k % d, line, col);
        }
        st->e = x;
        chk_push(c, out, st);
    }
}

/* Component or row k of any value (not a place): (a + b).x, f(v)[1]. */
static ir_expr *lower_select(ctx *c, const ast_expr *e, ir_block *pre) {
    ir_expr *v = chk_lower_expr(c, e->a, pre);
    if (!v) return NULL;
    if (chk_no_tuple(c, v, e->line, e->col)) return NULL;
    if (!is_vt(v->type)) {
        if (e->kind == AE_ATTR) chk_err(c, e->line, e->col, "%s has no attribute '%s'", chk_tname(v->type), e->str);
        else chk_err(c, e->line, e->col, "%s values cannot be indexed", chk_tname(v->type));
        return NULL;
    }
    if (e->kind == AE_ATTR) {
        const char *s = e->str;
        int k = s[0] && !s[1] ? (s[0] == 'x' ? 0 : s[0] == 'y' ? 1 : s[0] == 'z' ? 2 : s[0] == 'w' ? 3 : -1) : -1;
        if (is_mat(v->type) || k < 0 || k >= vdim(v->type)) {
            bad_component(c, e, v->type);
            return NULL;
        }
        return chk_vpart(c, v, k, e->line, e->col);
    }
    if (e->nargs > (is_mat(v->type) ? 2 : 1)) {
        chk_err(c, e->line, e->col, "a %s takes %s index, got %d", chk_tname(v->type), is_mat(v->type) ? "one (a row) or two (an element)" : "one", e->nargs);
        return NULL;
    }
    for (int i = 0; i < e->nargs; i++) {
        int k = lit_index(c, e->args[i], chk_lower_expr(c, e->args[i], pre), vdim(v->type), chk_tname(v->type));
        if (k < 0) return NULL;
        v = chk_vpart(c, v, k, e->line, e->col);
        if (!v) return NULL;
    }
    return v;
}

/* ---- calls ---- */

static ir_expr *lower_call(ctx *c, const ast_expr *e, ir_block *pre) {
    int fi = c->func_of_name[e->name];
    if (fi >= 0) {
        ast_func *f = c->am->funcs[fi];
        if (f->is_kernel) {
            chk_err(c, e->line, e->col, "'%s' is a kernel; only helpers (def) can be called", e->str);
            return NULL;
        }
        return chk_lower_helper_call(c, &c->helpers[fi], e, pre);
    }
    const builtin *bi = chk_find_builtin(e->str);
    if (!bi) {
        chk_err(c, e->line, e->col, "unknown function '%s'", e->str);
        return NULL;
    }
    if (bi->kind == BI_ATOMIC) {
        chk_err(c, e->line, e->col, "%s(...) is a statement and has no value", bi->name);
        return NULL;
    }
    if (bi->kind == BI_LOOP) {
        chk_err(c, e->line, e->col, "%s(...) may only follow 'in' in a for loop", bi->name);
        return NULL;
    }
    if (bi->kind == BI_CTOR || bi->kind == BI_VEC) {
        if (e->nargs < 1 || e->nargs > 16) {
            chk_err(c, e->line, e->col, "%s takes %s arguments, got %d", bi->name, e->nargs < 1 ? "some" : "at most 16", e->nargs);
            return NULL;
        }
        ir_expr *va[16];
        int vok = 1;
        for (int i = 0; i < e->nargs; i++)
            if (!(va[i] = chk_lower_expr(c, e->args[i], pre))) vok = 0;
        if (!vok) return NULL;
        if (bi->kind == BI_CTOR) return chk_vconstruct(c, bi->name, bi->op, va, e->nargs, e, pre);
        return chk_vbuiltin(c, bi->name, bi->op, va, e->nargs, pre, e->line, e->col);
    }
    if (bi->nargs >= 0 && e->nargs != bi->nargs) {
        chk_err(c, e->line, e->col, "%s takes %d argument%s but %d %s given", bi->name, bi->nargs, bi->nargs == 1 ? "" : "s",
            e->nargs, e->nargs == 1 ? "was" : "were");
        return NULL;
    }
    if (bi->nargs < 0 && e->nargs < 2) {
        chk_err(c, e->line, e->col, "%s takes at least 2 arguments but %d %s given", bi->name, e->nargs, e->nargs == 1 ? "was" : "were");
        return NULL;
    }
    ir_expr *arg[3] = {0};
    ir_expr **args = arg;
    if (e->nargs > 3) {
        args = dvm_arena_alloc(c->a, sizeof(ir_expr *) * (size_t)e->nargs);
        if (!args) return NULL;
    }
    int ok = 1;
    for (int i = 0; i < e->nargs; i++) {
        args[i] = chk_lower_expr(c, e->args[i], pre);
        if (!args[i]) ok = 0;
    }
    if (!ok) return NULL;
    int line = e->line, col = e->col;
    for (int i = 0; i < e->nargs; i++)
        if (is_vval(args[i])) {
            if (e->nargs > 16) {
                chk_err(c, line, col, "%s of vectors takes at most 16 arguments", bi->name);
                return NULL;
            }
            return chk_velementwise(c, bi->name, bi->kind, bi->op, args, e->nargs, pre, line, col);
        }
    for (int i = 0; i < e->nargs; i++) {
        int t = args[i]->type;
        int want_bool = bi->kind == BI_SELECT && i == 0;
        if (want_bool && t != DVM_T_BOOL) {
            chk_err(c, e->args[i]->line, e->args[i]->col, "the condition of select must be bool, got %s", chk_tname(t));
            return NULL;
        }
        if (!want_bool && bi->kind != BI_SELECT && bi->kind != BI_F32 && bi->kind != BI_I32 && t != DVM_T_F32 && t != DVM_T_I32) {
            chk_err(c, e->args[i]->line, e->args[i]->col, "argument %d of %s must be f32 or i32, got %s", i + 1, bi->name, chk_tname(t));
            return NULL;
        }
    }
    switch (bi->kind) {
    case BI_F1: return chk_mk_un(c, bi->op, DVM_T_F32, chk_to_f32(c, args[0]));
    case BI_F2: return chk_mk_bin(c, bi->op, DVM_T_F32, chk_to_f32(c, args[0]), chk_to_f32(c, args[1]), line, col);
    case BI_ABS:
        return args[0]->type == DVM_T_I32 ? chk_mk_un(c, DVM_OP_ABSI, DVM_T_I32, args[0]) : chk_mk_un(c, DVM_OP_ABSF, DVM_T_F32, args[0]);
    case BI_MINMAX:
    case BI_CLAMP: {
        int f = 0;
        for (int i = 0; i < e->nargs; i++) f |= args[i]->type == DVM_T_F32;
        if (f)
            for (int i = 0; i < e->nargs; i++) args[i] = chk_to_f32(c, args[i]);
        int t = f ? DVM_T_F32 : DVM_T_I32;
        int mn = f ? DVM_OP_MINF : DVM_OP_MINI, mx = f ? DVM_OP_MAXF : DVM_OP_MAXI;
        if (bi->kind == BI_CLAMP) /* clamp(v, lo, hi) = min(max(v, lo), hi) */
            return chk_mk_bin(c, mn, t, chk_mk_bin(c, mx, t, args[0], args[1], line, col), args[2], line, col);
        ir_expr *r = args[0];
        for (int i = 1; i < e->nargs; i++) r = chk_mk_bin(c, bi->op ? mx : mn, t, r, args[i], line, col);
        return r;
    }
    case BI_SELECT: {
        ir_expr *a = args[1], *b = args[2];
        int t = a->type;
        if (a->type != b->type) {
            if ((a->type == DVM_T_F32 || a->type == DVM_T_I32) && (b->type == DVM_T_F32 || b->type == DVM_T_I32)) {
                a = chk_to_f32(c, a);
                b = chk_to_f32(c, b);
                t = DVM_T_F32;
            } else {
                chk_err(c, line, col, "select's values must have the same type, got %s and %s", chk_tname(a->type), chk_tname(b->type));
                return NULL;
            }
        }
        ir_expr *x = chk_mk(c, IR_SELECT, t, line, col);
        if (x) {
            x->a = args[0];
            x->b = a;
            x->c = b;
        }
        return x;
    }
    case BI_F32:
    case BI_I32: {
        ir_expr *a = args[0];
        int want = bi->kind == BI_F32 ? DVM_T_F32 : DVM_T_I32;
        if (a->type == want) return a;
        if (a->type == DVM_T_BOOL) { /* True -> 1, False -> 0 */
            ir_expr *x = chk_mk(c, IR_SELECT, want, line, col);
            if (x) {
                x->a = a;
                x->b = want == DVM_T_F32 ? chk_mk_const_f(c, 1.0f, line, col) : chk_mk_const_i(c, DVM_T_I32, 1, line, col);
                x->c = want == DVM_T_F32 ? chk_mk_const_f(c, 0.0f, line, col) : chk_mk_const_i(c, DVM_T_I32, 0, line, col);
            }
            return x;
        }
        if (want == DVM_T_F32) return chk_to_f32(c, a);
        return chk_mk_un(c, DVM_OP_F2I, DVM_T_I32, a);
    }
    default: return NULL;
    }
}

/* ---- expressions ---- */
static ir_expr *lower_name(ctx *c, const ast_expr *e) {
    binding *b = chk_lookup(c, e->name);
    if (!b) {
        binding *x = c->expired[e->name];
        int fi = c->func_of_name[e->name];
        if (x && x->frame == c->fr->id)
            chk_err(c, e->line, e->col, "'%s' is not defined here: its first assignment (%d:%d) is inside a block that has ended; assign it before that block",
                e->str, x->line, x->col);
        else if (fi >= 0)
            chk_err(c, e->line, e->col, "'%s' is a %s, not a value; call it as %s(...)", e->str, c->am->funcs[fi]->is_kernel ? "kernel" : "helper", e->str);
        else if (c->fr->h && c->head[e->name])
            chk_err(c, e->line, e->col, "unknown name '%s' (helpers see only their own parameters and locals)", e->str);
        else
            chk_err(c, e->line, e->col, "unknown name '%s'", e->str);
        return NULL;
    }
    switch (b->kind) {
    case BK_VAR: return b->vtype ? chk_vvar_val(c, b->var, b->vtype, NULL, 0, e->line, e->col) : chk_mk_var(c, b->var, e->line, e->col);
    case BK_EXPR: return chk_clone_leaf(c, b->expr, e->line, e->col);
    case BK_ARRAY:
        if (c->param_vt[b->param]) {
            place pl;
            resolve_place(c, e, &pl, NULL); /* reports how to index it */
            return NULL;
        }
        chk_err(c, e->line, e->col, "'%s' is an array; read an element with %s[i]", e->str, e->str);
        return NULL;
    default: return NULL;
    }
}

static ir_expr *lower_expr_node(ctx *c, const ast_expr *e, ir_block *pre) {
    switch (e->kind) {
    case AE_INT: return chk_mk_const_i(c, DVM_T_I32, (int32_t)e->ival, e->line, e->col);
    case AE_FLOAT: return chk_mk_const_f(c, e->fval, e->line, e->col);
    case AE_BOOL: return chk_mk_const_i(c, DVM_T_BOOL, (int32_t)e->ival, e->line, e->col);
    case AE_STRING: chk_err(c, e->line, e->col, "strings are only allowed as assert messages"); return NULL;
    case AE_NAME: return lower_name(c, e);
    case AE_UNARY: {
        ir_expr *a = chk_lower_expr(c, e->a, pre);
        if (!a) return NULL;
        if (e->op == TK_NOT) {
            if (a->type != DVM_T_BOOL) {
                chk_err(c, e->line, e->col, "'not' needs a bool operand, got %s", chk_tname(a->type));
                return NULL;
            }
            ir_expr *x = chk_mk_not(c, a);
            if (x) x->line = e->line, x->col = e->col;
            return x;
        }
        if (is_vt(a->type) && is_vval(a)) return e->op == TK_PLUS ? a : chk_vneg(c, a, e->line, e->col);
        if (a->type != DVM_T_F32 && a->type != DVM_T_I32) {
            chk_err(c, e->line, e->col, "unary '%s' needs an f32 or i32 operand, got %s", chk_op_text(e->op), chk_tname(a->type));
            return NULL;
        }
        if (e->op == TK_PLUS) return a;
        if (a->kind == IR_CONST) {
            if (a->type == DVM_T_F32) return chk_mk_const_f(c, -a->k.f, e->line, e->col);
            return chk_mk_const_i(c, DVM_T_I32, (int32_t)(0u - (uint32_t)a->k.i), e->line, e->col);
        }
        ir_expr *x = chk_mk_un(c, a->type == DVM_T_F32 ? DVM_OP_NEGF : DVM_OP_NEGI, a->type, a);
        if (x) x->line = e->line, x->col = e->col;
        return x;
    }
    case AE_BINARY: {
        ir_expr *a = chk_lower_expr(c, e->a, pre);
        ir_expr *b = chk_lower_expr(c, e->b, pre);
        return chk_arith2(c, e->op, a, b, pre, e->line, e->col);
    }
    case AE_COMPARE: return lower_chain(c, e, 0, chk_lower_expr(c, e->args[0], pre), pre);
    case AE_AND:
    case AE_OR: {
        ir_expr *a = chk_lower_expr(c, e->a, pre);
        ir_block sub = {0};
        ir_expr *b = chk_lower_expr(c, e->b, &sub);
        const char *kw = e->kind == AE_AND ? "and" : "or";
        if (a && a->type != DVM_T_BOOL) {
            chk_err(c, e->a->line, e->a->col, "the operands of '%s' must be bool, got %s", kw, chk_tname(a->type));
            return NULL;
        }
        if (b && b->type != DVM_T_BOOL) {
            chk_err(c, e->b->line, e->b->col, "the operands of '%s' must be bool, got %s", kw, chk_tname(b->type));
            return NULL;
        }
        return logic(c, e->kind == AE_AND, a, b, &sub, pre, e->line, e->col);
    }
    case AE_COND: {
        ir_expr *cond = chk_lower_cond(c, e->b, pre, "the condition of 'a if c else b'");
        ir_block sa = {0}, sb = {0};
        ir_expr *a = chk_lower_expr(c, e->a, &sa);
        ir_expr *b = chk_lower_expr(c, e->c, &sb);
        if (!cond || !a || !b) return NULL;
        int t = a->type;
        if (chk_no_tuple(c, a, e->line, e->col) || chk_no_tuple(c, b, e->line, e->col)) return NULL;
        if (a->type != b->type) {
            if ((a->type == DVM_T_F32 || a->type == DVM_T_I32) && (b->type == DVM_T_F32 || b->type == DVM_T_I32)) {
                a = chk_to_f32(c, a);
                b = chk_to_f32(c, b);
                t = DVM_T_F32;
            } else {
                chk_err(c, e->line, e->col, "both sides of 'a if c else b' must have the same type, got %s and %s", chk_tname(a->type), chk_tname(b->type));
                return NULL;
            }
        }
        if (is_vt(t)) { /* componentwise: one variable per component, set in the branch taken */
            int v = chk_new_vvar(c, "cond", t, NULL, 0, e->line, e->col);
            ir_stmt *s = v < 0 ? NULL : chk_mk_stmt(c, IR_IF, e->line, e->col);
            if (!s) return NULL;
            s->e = cond;
            s->body = sa;
            s->orelse = sb;
            chk_vassign(c, v, a, &s->body, e->line, e->col);
            chk_vassign(c, v, b, &s->orelse, e->line, e->col);
            chk_push(c, pre, s);
            return chk_vvar_val(c, v, t, NULL, 0, e->line, e->col);
        }
        if (sa.n == 0 && sb.n == 0) {
            ir_expr *x = chk_mk(c, IR_COND, t, e->line, e->col);
            if (x) {
                x->a = cond;
                x->b = a;
                x->c = b;
            }
            return x;
        }
        int v = chk_new_var(c, "cond", t, e->line, e->col);
        if (v < 0) return NULL;
        ir_stmt *s = chk_mk_stmt(c, IR_IF, e->line, e->col);
        if (!s) return NULL;
        s->e = cond;
        s->body = sa;
        s->orelse = sb;
        chk_push(c, &s->body, chk_mk_assign(c, v, a, e->line, e->col));
        chk_push(c, &s->orelse, chk_mk_assign(c, v, b, e->line, e->col));
        chk_push(c, pre, s);
        return chk_mk_var(c, v, e->line, e->col);
    }
    case AE_CALL: return lower_call(c, e, pre);
    case AE_TUPLE: chk_err(c, e->line, e->col, "several values are only allowed after return, in a helper declared '-> (T, ...)'"); return NULL;
    case AE_INDEX: {
        if (e->a->kind == AE_ATTR && !strcmp(e->a->str, "shape")) return lower_shape(c, e, pre);
        binding *ab = e->a->kind == AE_NAME ? chk_lookup(c, e->a->name) : NULL;
        int scalar_array = ab && ab->kind == BK_ARRAY && !c->param_vt[ab->param];
        if (!scalar_array && chk_is_place_form(c, e)) {
            place pl;
            if (resolve_place(c, e, &pl, pre)) return NULL;
            return place_value(c, &pl, e->line, e->col);
        }
        if (!scalar_array && (e->a->kind != AE_NAME || (ab && ab->kind == BK_VAR))) return lower_select(c, e, pre);
        int param = chk_array_of(c, e->a);
        if (param < 0) return NULL;
        ir_expr *idx[DVM_MAX_RANK] = {0};
        int rank = chk_lower_indices(c, e, param, idx, pre);
        if (rank < 0) return NULL;
        ir_expr *x = chk_mk(c, IR_LOAD, c->k->params[param].type, e->line, e->col);
        if (!x) return NULL;
        x->slot = c->slot_of_param[param];
        x->nidx = rank;
        memcpy(x->idx, idx, sizeof idx);
        return x;
    }
    case AE_ATTR:
        if (strcmp(e->str, "shape") && chk_is_place_form(c, e)) {
            place pl;
            if (resolve_place(c, e, &pl, pre)) return NULL;
            return place_value(c, &pl, e->line, e->col);
        }
        if (strcmp(e->str, "shape") && (e->a->kind != AE_NAME || !chk_lookup(c, e->a->name) || chk_lookup(c, e->a->name)->kind != BK_ARRAY))
            return lower_select(c, e, pre);
        if (!strcmp(e->str, "shape"))
            chk_err(c, e->line, e->col, "'%s.shape' must be indexed with an axis: %s.shape[0]", e->a->kind == AE_NAME ? e->a->str : "x",
                e->a->kind == AE_NAME ? e->a->str : "x");
        else
            chk_err(c, e->line, e->col, "unknown attribute '%s' (arrays have .shape)", e->str);
        return NULL;
    }
    return NULL;
}


/* Counts the nesting that inlining adds to the parser's (both bound the recursion here and in
 * every later pass). */
ir_expr *chk_lower_expr(ctx *c, const ast_expr *e, ir_block *pre) {
    if (c->oom) return NULL;
    if (c->edepth >= MAX_EXPR_DEPTH) {
        chk_err(c, e->line, e->col, "expression is nested too deeply after inlining helpers (more than %d levels)", MAX_EXPR_DEPTH);
        c->oom = 2;
        return NULL;
    }
    c->edepth++;
    ir_expr *r = lower_expr_node(c, e, pre);
    c->edepth--;
    return r;
}
