/* check.c: resolves names, types every expression and lowers the syntax tree to the IR of
 * ir.h (forward variant): helpers inlined, static loops unrolled, top-level loops turned into
 * parallel tops. Also dvm_front, the front end's entry point. */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "ast.h"
#include "compile.h"

#define MAX_INLINE 20000   /* helper bodies inlined per kernel */
#define MAX_UNROLL 4096    /* iterations of one static loop */
#define MAX_STMTS 200000   /* IR statements per kernel, after unrolling and inlining */
/* Nesting after inlining: every later pass walks the IR recursively, and the compiler must
 * fit a 256 KiB thread stack (tests/test_compile_stack.c). */
#define MAX_BLOCK_DEPTH 200 /* IR blocks inside one another (loops, ifs, elif chunks, inlined bodies) */
#define MAX_EXPR_DEPTH 600  /* IR expressions inside one another (the parser allows 500 per source expression) */
#define MAX_CALL_DEPTH 64   /* helper calls inside one another (each is inlined) */
#define ELIF_CHUNK 8        /* a longer elif chain is lowered as a sequence of chains this long */

enum { BK_VAR, BK_ARRAY, BK_EXPR, BK_POISON };
enum { LK_NONE, LK_SERIAL, LK_NDRANGE, LK_STATIC, LK_PARALLEL };
enum { ESC = 1, TERM = 2 }; /* lower_stmt results: may set the frame's escape flag; never falls through */

typedef struct binding {
    int kind;
    int name, frame;
    int var;          /* BK_VAR */
    int param;        /* BK_ARRAY: the kernel's array parameter */
    int loopvar;      /* BK_VAR: a serial loop's variable (read-only in its loop) */
    int vtype;        /* BK_VAR: a vector or matrix local (var: its first component), else 0 */
    ir_expr *expr;    /* BK_EXPR: a leaf substituted at each use */
    const char *what; /* BK_EXPR: what it is, for messages */
    int line, col;
    struct binding *prev;
} binding;

typedef struct helper_info {
    ast_func *f;
    int simple;              /* one return, the last statement: inline as an expression */
    int ok;                  /* passed the one-time checks */
    unsigned char *assigned; /* per parameter: assigned in the body */
    int active;              /* being inlined now (recursion check) */
    int used;                /* inlined at least once */
} helper_info;

typedef struct frame {
    int id;
    helper_info *h; /* NULL: the kernel body */
    int R, D;       /* flag mode: result variable, done flag */
    int loopdepth;  /* real loops open in this frame */
    int loopkind;   /* innermost loop kind */
    int calls;      /* helper calls open around this frame's body (0: the kernel body) */
    struct frame *up; /* the caller's frame */
} frame;

typedef struct ctx {
    dvm_arena *a;
    dvm_diags *d;
    const char *src;
    const dvm_lexed *lx;
    ast_module *am;
    ir_kernel *k;
    int *slot_of_param;
    uint8_t *param_vt;       /* per parameter: the vector or matrix element type of an array, else 0 */
    const char **param_decl; /* per parameter: its declared type, for messages ("vec3[n]") */
    binding **head;    /* per name id: innermost binding */
    binding **expired; /* per name id: the last binding that went out of scope */
    binding **stack;   /* bindings in order, for popping scopes */
    int nstack, capstack;
    frame *fr;
    int nframes;
    int in_parallel;
    int cflag;         /* the parallel body's continue flag, or -1 */
    int ninline;
    int *func_of_name; /* name id -> index in am->funcs, or -1 */
    helper_info *helpers;
    int reported[64][2];
    int nreported;
    int oom;           /* 1: out of memory; 2: the kernel grew too large (both stop lowering) */
    int nstmts;
    int depth, edepth; /* IR blocks and expressions open now (MAX_BLOCK_DEPTH, MAX_EXPR_DEPTH) */
} ctx;

/* ---- errors: one per source location (a helper inlined twice reports once) ---- */
#if defined(__GNUC__)
__attribute__((format(printf, 4, 5)))
#endif
static void err(ctx *c, int line, int col, const char *fmt, ...) {
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

static const char *tname(int t) {
    static const char *const vt[] = {"vec2", "vec3", "vec4", "?", "mat2", "mat3", "mat4", "?", "a tuple"};
    if (t >= DVM_T_VEC2 && t <= DVM_T_TUPLE) return vt[t - DVM_T_VEC2];
    return t == DVM_T_F32 ? "f32" : t == DVM_T_I32 ? "i32" : t == DVM_T_BOOL ? "bool" : "no value";
}

/* ---- IR construction ---- */
static ir_expr *mk(ctx *c, int kind, int type, int line, int col) {
    ir_expr *e = ir_expr_new(c->a, kind, type, line, col);
    if (!e) c->oom = 1;
    return e;
}
static ir_expr *mk_const_i(ctx *c, int type, int32_t v, int line, int col) {
    ir_expr *e = mk(c, IR_CONST, type, line, col);
    if (e) e->k.i = v;
    return e;
}
static ir_expr *mk_const_f(ctx *c, float v, int line, int col) {
    ir_expr *e = mk(c, IR_CONST, DVM_T_F32, line, col);
    if (e) e->k.f = v;
    return e;
}
static ir_expr *mk_var(ctx *c, int var, int line, int col) {
    ir_expr *e = mk(c, IR_VAR, c->k->vars[var].type, line, col);
    if (e) e->var = var;
    return e;
}
static ir_expr *mk_un(ctx *c, int op, int type, ir_expr *a) {
    if (!a) return NULL;
    ir_expr *e = mk(c, IR_UN, type, a->line, a->col);
    if (e) {
        e->op = (uint16_t)op;
        e->a = a;
    }
    return e;
}
static ir_expr *mk_bin(ctx *c, int op, int type, ir_expr *a, ir_expr *b, int line, int col) {
    if (!a || !b) return NULL;
    ir_expr *e = mk(c, IR_BIN, type, line, col);
    if (e) {
        e->op = (uint16_t)op;
        e->a = a;
        e->b = b;
    }
    return e;
}
static void err(ctx *c, int line, int col, const char *fmt, ...);
static ir_stmt *mk_stmt(ctx *c, int kind, int line, int col) {
    if (c->oom) return NULL;
    if (++c->nstmts > MAX_STMTS) {
        err(c, line, col, "kernel '%s' is too large after unrolling static loops and inlining helpers (more than %d statements)", c->k->name,
            MAX_STMTS);
        c->oom = 2;
        return NULL;
    }
    ir_stmt *s = ir_stmt_new(c->a, kind, line, col);
    if (!s) c->oom = 1;
    return s;
}
static void push(ctx *c, ir_block *b, ir_stmt *s) {
    if (s) ir_block_push(c->a, b, s);
}
static ir_stmt *mk_assign(ctx *c, int var, ir_expr *e, int line, int col) {
    ir_stmt *s = mk_stmt(c, IR_ASSIGN, line, col);
    if (s) {
        s->var = var;
        s->e = e;
    }
    return s;
}
static ir_expr *mk_not(ctx *c, ir_expr *a) { return mk_un(c, DVM_OP_NOT, DVM_T_BOOL, a); }

static int new_var(ctx *c, const char *name, int type, int line, int col) {
    int v = ir_var_new(c->a, c->k, name, type, c->in_parallel ? IR_LOCAL : IR_GLOBAL, line, col);
    if (v < 0) c->oom = 1;
    return v;
}

/* i32 -> f32 where needed (constants folded); NULL with no message when it cannot convert. */
static ir_expr *to_f32(ctx *c, ir_expr *e) {
    if (!e || e->type == DVM_T_F32) return e;
    if (e->type != DVM_T_I32) return NULL;
    if (e->kind == IR_CONST) return mk_const_f(c, (float)e->k.i, e->line, e->col);
    return mk_un(c, DVM_OP_I2F, DVM_T_F32, e);
}

/* Converts e to type `want` the way an assignment does; NULL when it cannot. */
static ir_expr *convert(ctx *c, ir_expr *e, int want) {
    if (!e) return NULL;
    if (e->type == want) return e;
    if (want == DVM_T_F32 && e->type == DVM_T_I32) return to_f32(c, e);
    return NULL;
}

static int is_leaf(const ir_expr *e) { return e && (e->kind == IR_CONST || e->kind == IR_VAR); }

static ir_expr *clone_leaf(ctx *c, const ir_expr *e, int line, int col) {
    ir_expr *x = mk(c, e->kind, e->type, line, col);
    if (x) {
        x->k = e->k;
        x->var = e->var;
        x->slot = e->slot;
        x->axis = e->axis;
    }
    return x;
}

/* ---- scopes ---- */
static int scope_mark(ctx *c) { return c->nstack; }

static binding *bind(ctx *c, int name, int kind, int line, int col) {
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

static void scope_pop(ctx *c, int mark) {
    while (c->nstack > mark) {
        binding *b = c->stack[--c->nstack];
        c->head[b->name] = b->prev;
        if (b->frame == c->fr->id && b->kind == BK_VAR) c->expired[b->name] = b;
    }
}

static binding *lookup(ctx *c, int name) {
    binding *b = c->head[name];
    return b && b->frame == c->fr->id ? b : NULL;
}


static int is_reserved(const char *s) {
    return !strcmp(s, "range") || !strcmp(s, "ndrange") || !strcmp(s, "static") || !strcmp(s, "f32") ||
           !strcmp(s, "i32") || !strcmp(s, "bool");
}

/* ---- builtins ---- */
enum { BI_F1, BI_F2, BI_ABS, BI_MINMAX, BI_CLAMP, BI_SELECT, BI_F32, BI_I32, BI_ATOMIC, BI_LOOP, BI_CTOR, BI_VEC };
typedef struct builtin {
    const char *name;
    int kind, op, nargs; /* nargs -1: 2 or more */
} builtin;
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
static const builtin *find_builtin(const char *s) {
    for (size_t i = 0; i < sizeof builtins / sizeof *builtins; i++)
        if (!strcmp(builtins[i].name, s)) return &builtins[i];
    return NULL;
}

static ir_expr *lower_expr(ctx *c, const ast_expr *e, ir_block *pre);
static int lower_stmts(ctx *c, ast_stmt **s, int n, ir_block *out);

static ir_expr *lower_typed(ctx *c, const ast_expr *e, ir_block *pre, int want, const char *what) {
    ir_expr *x = lower_expr(c, e, pre);
    if (!x) return NULL;
    ir_expr *y = convert(c, x, want);
    if (!y) err(c, e->line, e->col, "%s must be %s, got %s", what, tname(want), tname(x->type));
    return y;
}

static ir_expr *lower_cond(ctx *c, const ast_expr *e, ir_block *pre, const char *what) {
    ir_expr *x = lower_expr(c, e, pre);
    if (!x) return NULL;
    if (x->type != DVM_T_BOOL) {
        err(c, e->line, e->col, "%s must be bool, got %s (compare explicitly, e.g. 'x != 0')", what, tname(x->type));
        return NULL;
    }
    return x;
}

/* ---- arithmetic and comparisons ---- */
static const char *op_text(int tk) { return dvm_tok_spelling(tk); }

static ir_expr *arith(ctx *c, int tk, ir_expr *a, ir_expr *b, int line, int col) {
    if (!a || !b) return NULL;
    if ((a->type != DVM_T_F32 && a->type != DVM_T_I32) || (b->type != DVM_T_F32 && b->type != DVM_T_I32)) {
        err(c, line, col, "operator '%s' needs f32 or i32 operands, got %s and %s", op_text(tk), tname(a->type), tname(b->type));
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
            return mk_const_i(c, DVM_T_I32, (int32_t)r, line, col);
        }
        /* (k + 1) % 3 of a static loop variable stays a constant (an index of a vector) */
        if (a->kind == IR_CONST && b->kind == IR_CONST && (op == DVM_OP_DIVI || op == DVM_OP_MODI) && b->k.i != 0 &&
            !(a->k.i == INT32_MIN && b->k.i == -1)) {
            int32_t x = a->k.i, y = b->k.i, q = x / y;
            if (x % y != 0 && ((x < 0) != (y < 0))) q--; /* floor, as Python */
            return mk_const_i(c, DVM_T_I32, op == DVM_OP_DIVI ? q : x - q * y, line, col);
        }
        return mk_bin(c, op, DVM_T_I32, a, b, line, col);
    }
    int op = tk == TK_PLUS ? DVM_OP_ADDF : tk == TK_MINUS ? DVM_OP_SUBF : tk == TK_STAR ? DVM_OP_MULF
           : tk == TK_SLASH ? DVM_OP_DIVF : tk == TK_DSLASH ? DVM_OP_FFLOORDIV : tk == TK_PERCENT ? DVM_OP_FMODF : DVM_OP_POWF;
    return mk_bin(c, op, DVM_T_F32, to_f32(c, a), to_f32(c, b), line, col);
}

static ir_expr *compare(ctx *c, int tk, ir_expr *a, ir_expr *b, int line, int col) {
    if (!a || !b) return NULL;
    int ab = a->type == DVM_T_BOOL, bb = b->type == DVM_T_BOOL;
    if (ab || bb) {
        if (!(ab && bb)) {
            err(c, line, col, "cannot compare %s with %s using '%s'", tname(a->type), tname(b->type), op_text(tk));
            return NULL;
        }
        if (tk != TK_EQ && tk != TK_NE) {
            err(c, line, col, "bool values cannot be ordered with '%s' (only == and != compare bools)", op_text(tk));
            return NULL;
        }
        return mk_bin(c, tk == TK_EQ ? DVM_OP_EQI : DVM_OP_NEI, DVM_T_BOOL, a, b, line, col);
    }
    if ((a->type != DVM_T_F32 && a->type != DVM_T_I32) || (b->type != DVM_T_F32 && b->type != DVM_T_I32)) {
        err(c, line, col, "cannot compare %s with %s", tname(a->type), tname(b->type));
        return NULL;
    }
    int f = a->type == DVM_T_F32 || b->type == DVM_T_F32;
    if (f) {
        a = to_f32(c, a);
        b = to_f32(c, b);
    }
    int lt = f ? DVM_OP_LTF : DVM_OP_LTI, le = f ? DVM_OP_LEF : DVM_OP_LEI;
    int eq = f ? DVM_OP_EQF : DVM_OP_EQI, ne = f ? DVM_OP_NEF : DVM_OP_NEI;
    switch (tk) {
    case TK_LT: return mk_bin(c, lt, DVM_T_BOOL, a, b, line, col);
    case TK_LE: return mk_bin(c, le, DVM_T_BOOL, a, b, line, col);
    case TK_GT: return mk_bin(c, lt, DVM_T_BOOL, b, a, line, col);
    case TK_GE: return mk_bin(c, le, DVM_T_BOOL, b, a, line, col);
    case TK_EQ: return mk_bin(c, eq, DVM_T_BOOL, a, b, line, col);
    default: return mk_bin(c, ne, DVM_T_BOOL, a, b, line, col);
    }
}

/* `a and b` / `a or b` where b was lowered into `sub`: an IR_AND/IR_OR when b needs no
 * statements, else a bool temporary set in an if, so b's statements run only when needed. */
static ir_expr *logic(ctx *c, int is_and, ir_expr *a, ir_expr *b, ir_block *sub, ir_block *pre, int line, int col) {
    if (!a || !b) return NULL;
    if (sub->n == 0) {
        ir_expr *e = mk(c, is_and ? IR_AND : IR_OR, DVM_T_BOOL, line, col);
        if (e) {
            e->a = a;
            e->b = b;
        }
        return e;
    }
    int t = new_var(c, is_and ? "and" : "or", DVM_T_BOOL, line, col);
    if (t < 0) return NULL;
    push(c, pre, mk_assign(c, t, a, line, col));
    ir_stmt *s = mk_stmt(c, IR_IF, line, col);
    if (!s) return NULL;
    s->e = is_and ? mk_var(c, t, line, col) : mk_not(c, mk_var(c, t, line, col));
    s->body = *sub;
    push(c, &s->body, mk_assign(c, t, b, line, col));
    push(c, pre, s);
    return mk_var(c, t, line, col);
}

static ir_expr *lower_chain(ctx *c, const ast_expr *e, int i, ir_expr *left, ir_block *pre) {
    ir_expr *right = lower_expr(c, e->args[i + 1], pre);
    if (!left || !right) return NULL;
    int last = i + 2 >= e->nargs;
    if (!last && !is_leaf(right)) { /* used twice: evaluate once */
        int t = new_var(c, "cmp", right->type, right->line, right->col);
        if (t < 0) return NULL;
        push(c, pre, mk_assign(c, t, right, right->line, right->col));
        right = mk_var(c, t, right->line, right->col);
    }
    const ast_expr *opnd = e->args[i + 1];
    ir_expr *cmp = compare(c, e->ops[i], left, right, i == 0 ? e->line : opnd->line, i == 0 ? e->col : opnd->col);
    if (last || !cmp) return cmp;
    ir_block sub = {0};
    ir_expr *rest = lower_chain(c, e, i + 1, clone_leaf(c, right, right->line, right->col), &sub);
    return logic(c, 1, cmp, rest, &sub, pre, e->line, e->col);
}

/* ---- vectors, matrices and tuples ----
 * A vector or matrix value is an IRX_VEC node that holds its f32 components (row-major); a
 * tuple (the values a helper returns) one that holds its values. Both live only while an
 * expression is lowered here: every consumer takes the parts apart, so the IR, autodiff, the
 * optimizer and every backend see scalars only. A local of type vec3 is three f32 variables. */
#define IRX_VEC 200
typedef struct vexpr {
    ir_expr h; /* kind IRX_VEC, type the vector, matrix or tuple type, nidx the number of parts */
    ir_expr *p[16];
} vexpr;

static int is_vt(int t) { return t >= DVM_T_VEC2 && t <= DVM_T_MAT4; }
static int is_vec(int t) { return t >= DVM_T_VEC2 && t <= DVM_T_VEC4; }
static int is_mat(int t) { return t >= DVM_T_MAT2 && t <= DVM_T_MAT4; }
static int vdim(int t) { return is_vec(t) ? t - DVM_T_VEC2 + 2 : is_mat(t) ? t - DVM_T_MAT2 + 2 : 1; }
static int ncomp(int t) { return is_mat(t) ? vdim(t) * vdim(t) : vdim(t); }
static int is_num(int t) { return t == DVM_T_F32 || t == DVM_T_I32; }
static int is_vval(const ir_expr *e) { return e && e->kind == IRX_VEC; }
static ir_expr **parts(ir_expr *e) { return ((vexpr *)e)->p; }

static ir_expr *mk_vec(ctx *c, int type, int n, int line, int col) {
    vexpr *v = dvm_arena_alloc(c->a, sizeof *v);
    if (!v) {
        c->oom = 1;
        return NULL;
    }
    v->h.kind = IRX_VEC;
    v->h.type = (uint8_t)type;
    v->h.nidx = n;
    v->h.line = line;
    v->h.col = col;
    v->h.var = v->h.slot = -1;
    return &v->h;
}
/* NULL when a part is missing (out of memory or an error inside) */
static ir_expr *vdone(ir_expr *v) {
    if (!v) return NULL;
    for (int i = 0; i < v->nidx; i++)
        if (!parts(v)[i]) return NULL;
    return v;
}
/* A part for one more use: a leaf is copied (no node appears twice in the IR). */
static ir_expr *use(ctx *c, ir_expr *x) { return x && is_leaf(x) ? clone_leaf(c, x, x->line, x->col) : x; }

/* Every part that is not a leaf (force: not a constant) goes into a temporary, so that it can
 * be used several times and is computed once. */
static ir_expr *settle_f(ctx *c, ir_expr *e, ir_block *pre, int force) {
    if (!e) return NULL;
    if (is_vval(e)) {
        ir_expr *r = mk_vec(c, e->type, e->nidx, e->line, e->col);
        if (!r) return NULL;
        for (int i = 0; i < e->nidx; i++) parts(r)[i] = settle_f(c, parts(e)[i], pre, force);
        return vdone(r);
    }
    if (e->kind == IR_CONST || (!force && is_leaf(e))) return e;
    int t = new_var(c, "tmp", e->type, e->line, e->col);
    if (t < 0) return NULL;
    push(c, pre, mk_assign(c, t, e, e->line, e->col));
    return mk_var(c, t, e->line, e->col);
}
static ir_expr *settle(ctx *c, ir_expr *e, ir_block *pre) { return settle_f(c, e, pre, 0); }

static const char *comp_name(ctx *c, const char *name, int type, int i) {
    int n = vdim(type);
    const char *s = is_vec(type) ? dvm_arena_printf(c->a, "%s.%c", name, "xyzw"[i]) : dvm_arena_printf(c->a, "%s[%d,%d]", name, i / n, i % n);
    return s ? s : name;
}

/* Variables for a value of `type` (consecutive: one per component; a tuple's values in
 * order); the first one's id, or -1. */
static int new_vvar(ctx *c, const char *name, int type, const uint8_t *rets, int nrets, int line, int col) {
    if (type == DVM_T_TUPLE) {
        int first = -1;
        for (int i = 0; i < nrets; i++) {
            int v = new_vvar(c, dvm_arena_printf(c->a, "%s.%d", name, i), rets[i], NULL, 0, line, col);
            if (v < 0) return -1;
            if (i == 0) first = v;
        }
        return first;
    }
    if (!is_vt(type)) return new_var(c, name, type, line, col);
    int first = -1;
    for (int i = 0; i < ncomp(type); i++) {
        int v = new_var(c, comp_name(c, name, type, i), DVM_T_F32, line, col);
        if (v < 0) return -1;
        if (i == 0) first = v;
    }
    return first;
}
static ir_expr *vvar_val(ctx *c, int var0, int type, const uint8_t *rets, int nrets, int line, int col) {
    if (type == DVM_T_TUPLE) {
        ir_expr *r = mk_vec(c, DVM_T_TUPLE, nrets, line, col);
        if (!r) return NULL;
        for (int i = 0; i < nrets; i++) {
            parts(r)[i] = vvar_val(c, var0, rets[i], NULL, 0, line, col);
            var0 += ncomp(rets[i]);
        }
        return vdone(r);
    }
    if (!is_vt(type)) return mk_var(c, var0, line, col);
    ir_expr *r = mk_vec(c, type, ncomp(type), line, col);
    if (!r) return NULL;
    for (int i = 0; i < ncomp(type); i++) parts(r)[i] = mk_var(c, var0 + i, line, col);
    return vdone(r);
}

static void flatten(ir_expr *e, ir_expr **out, int *n) {
    if (!is_vval(e)) {
        out[(*n)++] = e;
        return;
    }
    for (int i = 0; i < e->nidx; i++) flatten(parts(e)[i], out, n);
}
static int refs_range(const ir_expr *e, int lo, int hi) {
    if (!e) return 0;
    if (e->kind == IR_VAR) return e->var >= lo && e->var < hi;
    if (e->kind == IR_LOAD)
        for (int i = 0; i < e->nidx; i++)
            if (refs_range(e->idx[i], lo, hi)) return 1;
    return refs_range(e->a, lo, hi) || refs_range(e->b, lo, hi) || refs_range(e->c, lo, hi);
}
/* var0.. = v, component by component; a component that reads a variable assigned before it
 * (v = vec2(v.y, v.x)) makes every component go through a temporary first. */
static void vassign(ctx *c, int var0, ir_expr *v, ir_block *out, int line, int col) {
    if (!v) return;
    if (!is_vval(v)) {
        push(c, out, mk_assign(c, var0, v, line, col));
        return;
    }
    ir_expr *fl[DVM_MAX_TUPLE * 16];
    int n = 0;
    flatten(v, fl, &n);
    for (int i = 1; i < n; i++)
        if (refs_range(fl[i], var0, var0 + i)) {
            for (int j = 0; j < n; j++) fl[j] = settle_f(c, fl[j], out, 1);
            break;
        }
    for (int i = 0; i < n; i++)
        if (fl[i]) push(c, out, mk_assign(c, var0 + i, use(c, fl[i]), line, col));
}

/* An assignment's conversion, for every type: vectors and matrices only to their own type. */
static ir_expr *vconvert(ctx *c, ir_expr *e, int want) {
    if (!e) return NULL;
    if (is_vval(e) || is_vt(want) || want == DVM_T_TUPLE) return e->type == want && e->type != DVM_T_TUPLE ? e : NULL;
    return convert(c, e, want);
}

static const char *verb(int tk) {
    return tk == TK_PLUS ? "add" : tk == TK_MINUS ? "subtract" : tk == TK_STAR ? "multiply" : "divide";
}

static int no_tuple(ctx *c, const ir_expr *e, int line, int col) {
    if (!e || e->type != DVM_T_TUPLE) return 0;
    err(c, line, col, "this helper returns %d values: unpack them first (a, b = f(...))", e->nidx);
    return 1;
}

static ir_expr *sum_products(ctx *c, ir_expr **x, ir_expr **y, int n, int line, int col) {
    ir_expr *r = NULL;
    for (int k = 0; k < n; k++) {
        ir_expr *p = mk_bin(c, DVM_OP_MULF, DVM_T_F32, use(c, x[k]), use(c, y[k]), line, col);
        r = r ? mk_bin(c, DVM_OP_ADDF, DVM_T_F32, r, p, line, col) : p;
    }
    return r;
}

static ir_expr *matmul(ctx *c, ir_expr *a, ir_expr *b, ir_block *pre, int line, int col) {
    if (!is_vt(a->type) || !is_vt(b->type)) {
        err(c, line, col, "'@' multiplies matrices and vectors, got %s and %s (use * with a scalar)", tname(a->type), tname(b->type));
        return NULL;
    }
    if (is_vec(a->type) && is_vec(b->type)) {
        err(c, line, col, "'@' of two vectors (%s and %s) is not defined: use dot(a, b) or outer(a, b)", tname(a->type), tname(b->type));
        return NULL;
    }
    int n = vdim(a->type);
    if (vdim(b->type) != n) {
        err(c, line, col, "cannot multiply %s by %s with '@': their sizes differ", tname(a->type), tname(b->type));
        return NULL;
    }
    a = settle(c, a, pre);
    b = settle(c, b, pre);
    if (!a || !b) return NULL;
    ir_expr **A = parts(a), **B = parts(b);
    ir_expr *x[4], *y[4];
    if (is_mat(a->type) && is_mat(b->type)) {
        ir_expr *r = mk_vec(c, a->type, n * n, line, col);
        if (!r) return NULL;
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++) {
                for (int k = 0; k < n; k++) x[k] = A[i * n + k], y[k] = B[k * n + j];
                parts(r)[i * n + j] = sum_products(c, x, y, n, line, col);
            }
        return vdone(r);
    }
    ir_expr *r = mk_vec(c, DVM_T_VEC2 + n - 2, n, line, col);
    if (!r) return NULL;
    for (int i = 0; i < n; i++) {
        for (int k = 0; k < n; k++) {
            if (is_mat(a->type)) x[k] = A[i * n + k], y[k] = B[k]; /* (m @ v)[i] = sum_k m[i, k] v[k] */
            else x[k] = A[k], y[k] = B[k * n + i];                  /* (v @ m)[i] = sum_k v[k] m[k, i] */
        }
        parts(r)[i] = sum_products(c, x, y, n, line, col);
    }
    return vdone(r);
}

static ir_expr *arith(ctx *c, int tk, ir_expr *a, ir_expr *b, int line, int col);

/* a op b where a or b is a vector or matrix (or op is @). */
static ir_expr *varith(ctx *c, int tk, ir_expr *a, ir_expr *b, ir_block *pre, int line, int col) {
    if (!a || !b) return NULL;
    if (no_tuple(c, a, line, col) || no_tuple(c, b, line, col)) return NULL;
    if (tk == TK_AT) return matmul(c, a, b, pre, line, col);
    if (tk != TK_PLUS && tk != TK_MINUS && tk != TK_STAR && tk != TK_SLASH) {
        err(c, line, col, "operator '%s' is not defined on %s and %s (vectors and matrices take + - * / componentwise and @)", op_text(tk),
            tname(a->type), tname(b->type));
        return NULL;
    }
    int va = is_vt(a->type), vb = is_vt(b->type);
    if (va && vb && a->type != b->type) {
        err(c, line, col, "cannot %s %s and %s%s", verb(tk), tname(a->type), tname(b->type),
            tk == TK_STAR && (is_mat(a->type) || is_mat(b->type)) ? " (use @ for the matrix product)" : "");
        return NULL;
    }
    if ((!va && !is_num(a->type)) || (!vb && !is_num(b->type))) {
        err(c, line, col, "cannot %s %s and %s", verb(tk), tname(a->type), tname(b->type));
        return NULL;
    }
    int t = va ? a->type : b->type;
    if (!va) a = settle(c, to_f32(c, a), pre);
    if (!vb) b = settle(c, to_f32(c, b), pre);
    if (!a || !b) return NULL;
    ir_expr *r = mk_vec(c, t, ncomp(t), line, col);
    if (!r) return NULL;
    for (int i = 0; i < ncomp(t); i++)
        parts(r)[i] = arith(c, tk, va ? use(c, parts(a)[i]) : use(c, a), vb ? use(c, parts(b)[i]) : use(c, b), line, col);
    return vdone(r);
}

/* Arithmetic of any types: the scalar rules, or componentwise. */
static ir_expr *arith2(ctx *c, int tk, ir_expr *a, ir_expr *b, ir_block *pre, int line, int col) {
    if (!a || !b) return NULL;
    if (is_vval(a) || is_vval(b) || tk == TK_AT) return varith(c, tk, a, b, pre, line, col);
    return arith(c, tk, a, b, line, col);
}

static ir_expr *vneg(ctx *c, ir_expr *a, int line, int col) {
    ir_expr *r = mk_vec(c, a->type, a->nidx, line, col);
    if (!r) return NULL;
    for (int i = 0; i < a->nidx; i++) parts(r)[i] = mk_un(c, DVM_OP_NEGF, DVM_T_F32, parts(a)[i]);
    return vdone(r);
}

/* Part k of a vector (a component) or of a matrix (a row). */
static ir_expr *vpart(ctx *c, ir_expr *v, int k, int line, int col) {
    if (is_vec(v->type)) return use(c, parts(v)[k]);
    int n = vdim(v->type);
    ir_expr *r = mk_vec(c, DVM_T_VEC2 + n - 2, n, line, col);
    if (!r) return NULL;
    for (int j = 0; j < n; j++) parts(r)[j] = use(c, parts(v)[k * n + j]);
    return vdone(r);
}

/* determinant of the k x k submatrix rows[] x cols[] of the n x n matrix m (leaves) */
static ir_expr *det_rec(ctx *c, ir_expr **m, int n, const int *rows, const int *cols, int k, int line, int col) {
    if (k == 1) return use(c, m[rows[0] * n + cols[0]]);
    if (k == 2)
        return mk_bin(c, DVM_OP_SUBF, DVM_T_F32,
                      mk_bin(c, DVM_OP_MULF, DVM_T_F32, use(c, m[rows[0] * n + cols[0]]), use(c, m[rows[1] * n + cols[1]]), line, col),
                      mk_bin(c, DVM_OP_MULF, DVM_T_F32, use(c, m[rows[0] * n + cols[1]]), use(c, m[rows[1] * n + cols[0]]), line, col), line, col);
    ir_expr *r = NULL;
    for (int j = 0; j < k; j++) {
        int sub[4], ns = 0;
        for (int q = 0; q < k; q++)
            if (q != j) sub[ns++] = cols[q];
        ir_expr *t = mk_bin(c, DVM_OP_MULF, DVM_T_F32, use(c, m[rows[0] * n + cols[j]]), det_rec(c, m, n, rows + 1, sub, k - 1, line, col), line, col);
        r = !r ? t : mk_bin(c, j % 2 ? DVM_OP_SUBF : DVM_OP_ADDF, DVM_T_F32, r, t, line, col);
    }
    return r;
}

enum { VB_DOT, VB_CROSS, VB_LENGTH, VB_NORMALIZE, VB_OUTER, VB_TRANSPOSE, VB_DET, VB_INVERSE, VB_TRACE };

/* dot cross length normalize outer transpose determinant inverse trace */
static ir_expr *vbuiltin(ctx *c, const char *name, int which, ir_expr **args, int nargs, ir_block *pre, int line, int col) {
    static const int want_args[] = {2, 2, 1, 1, 2, 1, 1, 1, 1};
    if (nargs != want_args[which]) {
        err(c, line, col, "%s takes %d argument%s but %d %s given", name, want_args[which], want_args[which] == 1 ? "" : "s", nargs,
            nargs == 1 ? "was" : "were");
        return NULL;
    }
    for (int i = 0; i < nargs; i++)
        if (no_tuple(c, args[i], line, col)) return NULL;
    int t = args[0]->type;
    int on_vec = which <= VB_OUTER;
    int ok = on_vec ? is_vec(t) : is_mat(t);
    if (ok && nargs == 2 && args[1]->type != t) ok = 0;
    if (ok && which == VB_CROSS && t != DVM_T_VEC3) ok = 0;
    if (!ok) {
        const char *need = which == VB_CROSS ? "two vec3" : nargs == 2 ? "two vectors of the same size" : on_vec ? "a vector" : "a matrix";
        if (nargs == 2) err(c, line, col, "%s takes %s, got %s and %s", name, need, tname(t), tname(args[1]->type));
        else err(c, line, col, "%s takes %s, got %s", name, need, tname(t));
        return NULL;
    }
    int n = vdim(t);
    ir_expr *a = settle(c, args[0], pre), *b = nargs == 2 ? settle(c, args[1], pre) : NULL;
    if (!a || (nargs == 2 && !b)) return NULL;
    ir_expr **A = parts(a), **B = b ? parts(b) : NULL;
    ir_expr *r = NULL;
    switch (which) {
    case VB_DOT: return sum_products(c, A, B, n, line, col);
    case VB_LENGTH: return mk_un(c, DVM_OP_SQRT, DVM_T_F32, sum_products(c, A, A, n, line, col));
    case VB_NORMALIZE: {
        ir_expr *len = settle(c, mk_un(c, DVM_OP_SQRT, DVM_T_F32, sum_products(c, A, A, n, line, col)), pre);
        if (!len) return NULL;
        r = mk_vec(c, t, n, line, col);
        if (!r) return NULL;
        for (int i = 0; i < n; i++) parts(r)[i] = mk_bin(c, DVM_OP_DIVF, DVM_T_F32, use(c, A[i]), use(c, len), line, col);
        return vdone(r);
    }
    case VB_CROSS: {
        r = mk_vec(c, t, 3, line, col);
        if (!r) return NULL;
        for (int i = 0; i < 3; i++) {
            int j = (i + 1) % 3, k = (i + 2) % 3; /* (a x b)_i = a_j b_k - a_k b_j */
            parts(r)[i] = mk_bin(c, DVM_OP_SUBF, DVM_T_F32, mk_bin(c, DVM_OP_MULF, DVM_T_F32, use(c, A[j]), use(c, B[k]), line, col),
                                 mk_bin(c, DVM_OP_MULF, DVM_T_F32, use(c, A[k]), use(c, B[j]), line, col), line, col);
        }
        return vdone(r);
    }
    case VB_OUTER:
        r = mk_vec(c, DVM_T_MAT2 + n - 2, n * n, line, col);
        if (!r) return NULL;
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++) parts(r)[i * n + j] = mk_bin(c, DVM_OP_MULF, DVM_T_F32, use(c, A[i]), use(c, B[j]), line, col);
        return vdone(r);
    case VB_TRANSPOSE:
        r = mk_vec(c, t, n * n, line, col);
        if (!r) return NULL;
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++) parts(r)[i * n + j] = use(c, A[j * n + i]);
        return vdone(r);
    case VB_TRACE:
        for (int i = 0; i < n; i++) r = r ? mk_bin(c, DVM_OP_ADDF, DVM_T_F32, r, use(c, A[i * n + i]), line, col) : use(c, A[0]);
        return r;
    case VB_DET: {
        static const int idx[4] = {0, 1, 2, 3};
        return det_rec(c, A, n, idx, idx, n, line, col);
    }
    case VB_INVERSE: { /* the adjugate over the determinant: inv[i, j] = cofactor(j, i) / det */
        static const int idx[4] = {0, 1, 2, 3};
        ir_expr *det = settle(c, det_rec(c, A, n, idx, idx, n, line, col), pre);
        ir_expr *inv = settle(c, mk_bin(c, DVM_OP_DIVF, DVM_T_F32, mk_const_f(c, 1.0f, line, col), det, line, col), pre);
        if (!inv) return NULL;
        r = mk_vec(c, t, n * n, line, col);
        if (!r) return NULL;
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++) {
                int rows[3], cols[3], nr = 0, nc = 0;
                for (int q = 0; q < n; q++) {
                    if (q != j) rows[nr++] = q;
                    if (q != i) cols[nc++] = q;
                }
                ir_expr *m = det_rec(c, A, n, rows, cols, n - 1, line, col);
                if ((i + j) % 2) m = mk_un(c, DVM_OP_NEGF, DVM_T_F32, m);
                parts(r)[i * n + j] = mk_bin(c, DVM_OP_MULF, DVM_T_F32, m, use(c, inv), line, col);
            }
        return vdone(r);
    }
    }
    return NULL;
}

/* vec3(a, b, c), vec3(s), mat3(row0, row1, row2), mat2(a, b, c, d): the arguments' components
 * in order (a vector counts as its components). */
static ir_expr *vconstruct(ctx *c, const char *name, int t, ir_expr **args, int nargs, const ast_expr *e, ir_block *pre) {
    int need = ncomp(t);
    ir_expr *fl[DVM_MAX_TUPLE * 16];
    int n = 0;
    for (int i = 0; i < nargs; i++) {
        ir_expr *x = args[i];
        if (no_tuple(c, x, e->args[i]->line, e->args[i]->col)) return NULL;
        if (!is_vt(x->type) && !is_num(x->type)) {
            err(c, e->args[i]->line, e->args[i]->col, "argument %d of %s must be f32, i32 or a vector, got %s", i + 1, name, tname(x->type));
            return NULL;
        }
        if (n + ncomp(x->type) > need) {
            n = need + 1;
            break;
        }
        if (is_vval(x)) for (int j = 0; j < x->nidx; j++) fl[n++] = parts(x)[j];
        else fl[n++] = to_f32(c, x);
    }
    if (n == 1 && nargs == 1 && is_vec(t)) { /* vec3(s): every component s */
        ir_expr *s = settle(c, fl[0], pre);
        for (int i = 1; i < need; i++) fl[i] = s;
        fl[0] = s;
        n = need;
    }
    if (n != need) {
        int d = vdim(t);
        if (is_vec(t)) err(c, e->line, e->col, "%s(...) takes %d components (or one value for all of them), got %s", name, need, n > need ? "more" : "fewer");
        else err(c, e->line, e->col, "%s(...) takes %d rows (vec%d) or %d values, row by row; got %s", name, d, d, need, n > need ? "more" : "fewer");
        return NULL;
    }
    ir_expr *r = mk_vec(c, t, need, e->line, e->col);
    if (!r) return NULL;
    for (int i = 0; i < need; i++) parts(r)[i] = use(c, fl[i]);
    return vdone(r);
}

/* abs min max clamp select with a vector or matrix among the arguments: componentwise, a
 * scalar broadcast. */
static ir_expr *velementwise(ctx *c, const char *name, int kind, int op, ir_expr **args, int nargs, ir_block *pre, int line, int col) {
    int t = 0;
    for (int i = 0; i < nargs; i++) {
        if (no_tuple(c, args[i], line, col)) return NULL;
        int at = args[i]->type;
        if (kind == BI_SELECT && i == 0) {
            if (at != DVM_T_BOOL) {
                err(c, line, col, "the condition of select must be bool, got %s (select is componentwise only in its values)", tname(at));
                return NULL;
            }
            continue;
        }
        if (is_vt(at)) {
            if (t && t != at) {
                err(c, line, col, "%s of %s and %s: the vector and matrix arguments must have the same type", name, tname(t), tname(at));
                return NULL;
            }
            t = at;
        } else if (!is_num(at)) {
            err(c, line, col, "argument %d of %s must be f32, i32 or a vector, got %s", i + 1, name, tname(at));
            return NULL;
        }
    }
    if (kind != BI_ABS && kind != BI_MINMAX && kind != BI_CLAMP && kind != BI_SELECT) {
        err(c, line, col, "%s takes f32 or i32, got %s (only abs, min, max, clamp and select work componentwise)", name, tname(t));
        return NULL;
    }
    ir_expr *s[16];
    for (int i = 0; i < nargs && i < 16; i++)
        s[i] = is_vt(args[i]->type) ? args[i] : settle(c, (kind == BI_SELECT && i == 0) ? args[i] : to_f32(c, args[i]), pre);
    ir_expr *r = mk_vec(c, t, ncomp(t), line, col);
    if (!r) return NULL;
    for (int k = 0; k < ncomp(t); k++) {
        ir_expr *x[16];
        for (int i = 0; i < nargs && i < 16; i++) x[i] = is_vval(s[i]) ? use(c, parts(s[i])[k]) : use(c, s[i]);
        ir_expr *v = NULL;
        if (kind == BI_ABS) v = mk_un(c, DVM_OP_ABSF, DVM_T_F32, x[0]);
        else if (kind == BI_CLAMP) v = mk_bin(c, DVM_OP_MINF, DVM_T_F32, mk_bin(c, DVM_OP_MAXF, DVM_T_F32, x[0], x[1], line, col), x[2], line, col);
        else if (kind == BI_MINMAX) {
            v = x[0];
            for (int i = 1; i < nargs && i < 16; i++) v = mk_bin(c, op ? DVM_OP_MAXF : DVM_OP_MINF, DVM_T_F32, v, x[i], line, col);
        } else {
            v = mk(c, IR_SELECT, DVM_T_F32, line, col);
            if (v) v->a = x[0], v->b = x[1], v->c = x[2];
        }
        parts(r)[k] = v;
    }
    return vdone(r);
}

/* ---- arrays ---- */
/* The array a name refers to: the kernel parameter index, or -1 with an error. */
static int array_of(ctx *c, const ast_expr *e) {
    if (e->kind != AE_NAME) {
        err(c, e->line, e->col, "only arrays can be indexed");
        return -1;
    }
    binding *b = lookup(c, e->name);
    if (!b) {
        err(c, e->line, e->col, "unknown array '%s'", e->str);
        return -1;
    }
    if (b->kind == BK_POISON) return -1;
    if (b->kind != BK_ARRAY) {
        err(c, e->line, e->col, "'%s' is not an array; only arrays can be indexed", e->str);
        return -1;
    }
    return b->param;
}

/* Lowers the indices of x[...] into idx; returns the rank or -1. */
static int lower_indices(ctx *c, const ast_expr *ix, int param, ir_expr **idx, ir_block *pre) {
    const ir_param *p = &c->k->params[param];
    if (ix->nargs != p->rank && c->param_vt[param]) {
        err(c, ix->line, ix->col, "'%s' is %s: an element of one f32 takes %d indices here (%s[%s]), got %d", p->name, c->param_decl[param], p->rank,
            p->name, p->rank == 2 ? "i, k" : p->rank == 3 ? "i, j, k" : "i, j, k, l", ix->nargs);
        return -1;
    }
    if (ix->nargs != p->rank) {
        err(c, ix->line, ix->col, "array '%s' has rank %d but %d %s given", p->name, p->rank, ix->nargs,
            ix->nargs == 1 ? "index was" : "indices were");
        return -1;
    }
    int ok = 1;
    for (int i = 0; i < ix->nargs; i++) {
        ir_expr *x = lower_expr(c, ix->args[i], pre);
        if (!x) {
            ok = 0;
            continue;
        }
        if (x->type != DVM_T_I32) {
            err(c, ix->args[i]->line, ix->args[i]->col, "the index for axis %d of '%s' must be i32, got %s%s", i, p->name,
                tname(x->type), x->type == DVM_T_F32 ? " (convert with i32(...))" : "");
            ok = 0;
            continue;
        }
        idx[i] = x;
    }
    return ok ? p->rank : -1;
}

static ir_expr *lower_shape(ctx *c, const ast_expr *ix, ir_block *pre) {
    const ast_expr *attr = ix->a;
    int param = array_of(c, attr->a);
    if (param < 0) return NULL;
    const ir_param *p = &c->k->params[param];
    if (ix->nargs != 1) {
        err(c, ix->line, ix->col, "'%s.shape' takes one axis, got %d", p->name, ix->nargs);
        return NULL;
    }
    ir_expr *k = lower_expr(c, ix->args[0], pre);
    if (!k) return NULL;
    if (k->kind != IR_CONST || k->type != DVM_T_I32) {
        err(c, ix->args[0]->line, ix->args[0]->col, "the axis in '%s.shape[k]' must be an integer literal", p->name);
        return NULL;
    }
    if (k->k.i < 0 || k->k.i >= p->rank) {
        err(c, ix->args[0]->line, ix->args[0]->col, "axis %d is out of range for '%s' of rank %d", (int)k->k.i, p->name, p->rank);
        return NULL;
    }
    int32_t dm = p->dim[k->k.i];
    if (dm >= 0) return mk_const_i(c, DVM_T_I32, dm, ix->line, ix->col);
    return mk_var(c, c->k->syms[-dm - 1].var, ix->line, ix->col);
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
    if (is_mat(t)) err(c, e->line, e->col, "%s has no component '.%s': index it, m[i, j] (a row: m[i])", tname(t), s);
    else if (n > 1 && sw == n) err(c, e->line, e->col, "swizzles such as '.%s' are not supported; build the vector from components (vec2(v.x, v.y))", s);
    else err(c, e->line, e->col, "%s has no component '.%s' (it has %.*s)", tname(t), s, 2 * vdim(t) - 1, "x y z w");
}

/* Does e name a place (something rooted at an array of vectors or a vector local)? */
static int is_place_form(ctx *c, const ast_expr *e) {
    while (e->kind == AE_ATTR || e->kind == AE_INDEX) {
        if (e->kind == AE_ATTR && !strcmp(e->str, "shape")) return 0;
        if (e->kind == AE_INDEX && e->a->kind == AE_NAME) {
            binding *b = lookup(c, e->a->name);
            if (b && b->kind == BK_ARRAY) return 1;
        }
        e = e->a;
    }
    if (e->kind != AE_NAME) return 0;
    binding *b = lookup(c, e->name);
    return b && ((b->kind == BK_VAR && b->vtype) || (b->kind == BK_ARRAY && c->param_vt[b->param]));
}

static int lit_index(ctx *c, const ast_expr *ae, ir_expr *x, int n, const char *of) {
    if (!x) return -1;
    if (x->kind != IR_CONST || x->type != DVM_T_I32) {
        err(c, ae->line, ae->col, "the index of a %s must be an integer literal or a static(range(...)) loop variable, got %s%s", of,
            x->type == DVM_T_I32 ? "a computed " : "", tname(x->type));
        return -1;
    }
    if (x->k.i < 0 || x->k.i >= n) {
        err(c, ae->line, ae->col, "index %d is out of range for a %s (0..%d)", (int)x->k.i, of, n - 1);
        return -1;
    }
    return x->k.i;
}

/* Selects component k (a vector's) or row k (a matrix's) of the place. */
static void place_step(place *pl, int k, ir_expr *dyn, ctx *c, int line, int col) {
    int n = vdim(pl->type);
    if (pl->param >= 0) pl->idx[pl->nidx++] = dyn ? dyn : mk_const_i(c, DVM_T_I32, k, line, col);
    else pl->var0 += is_mat(pl->type) ? k * n : k;
    pl->type = is_mat(pl->type) ? DVM_T_VEC2 + n - 2 : DVM_T_F32;
}

/* Resolves a place; 0 on success, -1 after an error. */
static int resolve_place(ctx *c, const ast_expr *e, place *pl, ir_block *pre) {
    if (e->kind == AE_NAME) {
        binding *b = lookup(c, e->name);
        if (b && b->kind == BK_ARRAY) {
            const ir_param *p = &c->k->params[b->param];
            int vt = c->param_vt[b->param];
            err(c, e->line, e->col, "'%s' is %s: index it once (%s[%s]) to get a %s", e->str, c->param_decl[b->param], e->str,
                p->rank - ncomp(vt) > 1 ? "i, j" : "i", tname(vt));
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
        binding *b = lookup(c, e->a->name);
        if (b && b->kind == BK_ARRAY) {
            const ir_param *p = &c->k->params[b->param];
            int vt = c->param_vt[b->param];
            if (!vt) { /* an array of scalars: x[i].y and the like */
                memset(pl, 0, sizeof *pl);
                pl->param = b->param;
                pl->type = p->type;
                pl->nidx = lower_indices(c, e, b->param, pl->idx, pre);
                return pl->nidx < 0 ? -1 : 0;
            }
            int base = p->rank - (is_mat(vt) ? 2 : 1);
            if (e->nargs < base || e->nargs > p->rank) {
                err(c, e->line, e->col, "'%s' is %s: %s[%s] is a %s%s; got %d ind%s", p->name, c->param_decl[b->param], p->name,
                    base > 1 ? "i, j" : "i", tname(vt), is_mat(vt) ? ", with a row index a vec and with two an f32" : ", with one more index an f32",
                    e->nargs, e->nargs == 1 ? "ex" : "ices");
                return -1;
            }
            memset(pl, 0, sizeof *pl);
            pl->param = b->param;
            pl->type = vt;
            int ok = 1;
            for (int i = 0; i < e->nargs; i++) {
                ir_expr *x = lower_expr(c, e->args[i], pre);
                if (!x) {
                    ok = 0;
                    continue;
                }
                if (x->type != DVM_T_I32) {
                    err(c, e->args[i]->line, e->args[i]->col, "the index for axis %d of '%s' must be i32, got %s", i, p->name, tname(x->type));
                    ok = 0;
                    continue;
                }
                x = settle(c, x, pre); /* used by every component's load or store */
                if (i < base) pl->idx[pl->nidx++] = x;
                else if (x->kind == IR_CONST && (x->k.i < 0 || x->k.i >= vdim(vt))) {
                    err(c, e->args[i]->line, e->args[i]->col, "index %d is out of range for axis %d of '%s' (%s)", (int)x->k.i, i, p->name,
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
        err(c, e->line, e->col, "%s has no components%s", tname(pl->type), e->kind == AE_ATTR ? "" : " to index");
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
        err(c, e->line, e->col, "a %s takes %s index, got %d", tname(pl->type), is_mat(pl->type) ? "one (a row) or two (an element)" : "one", e->nargs);
        return -1;
    }
    for (int i = 0; i < e->nargs; i++) {
        ir_expr *x = lower_expr(c, e->args[i], pre);
        if (pl->param >= 0 && x && x->type == DVM_T_I32 && x->kind != IR_CONST) { /* array elements may take a computed index */
            place_step(pl, 0, settle(c, x, pre), c, e->line, e->col);
            continue;
        }
        int k = lit_index(c, e->args[i], x, vdim(pl->type), tname(pl->type));
        if (k < 0) return -1;
        place_step(pl, k, NULL, c, e->line, e->col);
    }
    return 0;
}

/* The value of a place: loads or variables. */
static ir_expr *place_value(ctx *c, const place *pl, int line, int col) {
    if (pl->param < 0) return vvar_val(c, pl->var0, pl->type, NULL, 0, line, col);
    int n = ncomp(pl->type), d = vdim(pl->type);
    ir_expr *r = is_vt(pl->type) ? mk_vec(c, pl->type, n, line, col) : NULL;
    for (int k = 0; k < n; k++) {
        ir_expr *x = mk(c, IR_LOAD, DVM_T_F32, line, col);
        if (!x) return NULL;
        x->slot = c->slot_of_param[pl->param];
        x->nidx = pl->nidx;
        for (int i = 0; i < pl->nidx; i++) x->idx[i] = use(c, pl->idx[i]);
        if (is_vec(pl->type)) x->idx[x->nidx++] = mk_const_i(c, DVM_T_I32, k, line, col);
        if (is_mat(pl->type)) {
            x->idx[x->nidx++] = mk_const_i(c, DVM_T_I32, k / d, line, col);
            x->idx[x->nidx++] = mk_const_i(c, DVM_T_I32, k % d, line, col);
        }
        if (!r) return x;
        parts(r)[k] = x;
    }
    return vdone(r);
}

static int writable(ctx *c, binding *b, const ast_expr *target);

/* place = v, or place op= v (arrays: += and -= are atomic adds, per component). */
static void place_store(ctx *c, const ast_expr *t, const ast_expr *ve, ir_expr *v, int op, ir_block *out, int line, int col) {
    place pl;
    if (resolve_place(c, t, &pl, out) || !v) return;
    if (no_tuple(c, v, ve->line, ve->col)) return;
    if (pl.param < 0) {
        if (!writable(c, pl.b, t)) return;
        if (op) v = arith2(c, op, place_value(c, &pl, line, col), v, out, line, col);
        ir_expr *cv = vconvert(c, v, pl.type);
        if (!cv) {
            if (v) err(c, ve->line, ve->col, "cannot assign %s to a %s (here a part of '%s')", tname(v->type), tname(pl.type), pl.b ? c->k->vars[pl.b->var].name : "?");
            return;
        }
        vassign(c, pl.var0, cv, out, line, col);
        return;
    }
    const ir_param *p = &c->k->params[pl.param];
    if (c->fr->h) {
        err(c, t->line, t->col, "helper '%s' cannot write array '%s' (helpers only read arrays)", c->fr->h->f->str, p->name);
        return;
    }
    if (op && op != TK_PLUS && op != TK_MINUS) {
        err(c, line, col, "'%s[...] %s= e' is not supported: only += and -= on array elements (they are atomic adds)", p->name, op_text(op));
        return;
    }
    ir_expr *cv = vconvert(c, v, pl.type);
    if (!cv) {
        err(c, ve->line, ve->col, "cannot store %s into an element of '%s' that is a %s ('%s' is %s)", tname(v->type), p->name, tname(pl.type), p->name, c->param_decl[pl.param]);
        return;
    }
    ir_expr *fl[16];
    int n = 0;
    flatten(cv, fl, &n);
    int d = vdim(pl.type);
    for (int k = 0; k < n; k++) {
        ir_expr *x = fl[k];
        int f = p->type == DVM_T_F32;
        if (op == TK_MINUS && x->kind == IR_CONST) x = f ? mk_const_f(c, -x->k.f, x->line, x->col) : mk_const_i(c, DVM_T_I32, (int32_t)(0u - (uint32_t)x->k.i), x->line, x->col);
        else if (op == TK_MINUS) x = mk_un(c, f ? DVM_OP_NEGF : DVM_OP_NEGI, p->type, use(c, x));
        else x = use(c, x);
        ir_stmt *st = mk_stmt(c, op ? IR_ATOMIC : IR_STORE, line, col);
        if (!st) return;
        if (op) st->op = f ? DVM_OP_ATOMADDF : DVM_OP_ATOMADDI;
        st->slot = c->slot_of_param[pl.param];
        st->nidx = pl.nidx;
        for (int i = 0; i < pl.nidx; i++) st->idx[i] = use(c, pl.idx[i]);
        if (is_vec(pl.type)) st->idx[st->nidx++] = mk_const_i(c, DVM_T_I32, k, line, col);
        if (is_mat(pl.type)) {
            st->idx[st->nidx++] = mk_const_i(c, DVM_T_I32, k / d, line, col);
            st->idx[st->nidx++] = mk_const_i(c, DVM_T_I32, k % d, line, col);
        }
        st->e = x;
        push(c, out, st);
    }
}

/* Component or row k of any value (not a place): (a + b).x, f(v)[1]. */
static ir_expr *lower_select(ctx *c, const ast_expr *e, ir_block *pre) {
    ir_expr *v = lower_expr(c, e->a, pre);
    if (!v) return NULL;
    if (no_tuple(c, v, e->line, e->col)) return NULL;
    if (!is_vt(v->type)) {
        if (e->kind == AE_ATTR) err(c, e->line, e->col, "%s has no attribute '%s'", tname(v->type), e->str);
        else err(c, e->line, e->col, "%s values cannot be indexed", tname(v->type));
        return NULL;
    }
    if (e->kind == AE_ATTR) {
        const char *s = e->str;
        int k = s[0] && !s[1] ? (s[0] == 'x' ? 0 : s[0] == 'y' ? 1 : s[0] == 'z' ? 2 : s[0] == 'w' ? 3 : -1) : -1;
        if (is_mat(v->type) || k < 0 || k >= vdim(v->type)) {
            bad_component(c, e, v->type);
            return NULL;
        }
        return vpart(c, v, k, e->line, e->col);
    }
    if (e->nargs > (is_mat(v->type) ? 2 : 1)) {
        err(c, e->line, e->col, "a %s takes %s index, got %d", tname(v->type), is_mat(v->type) ? "one (a row) or two (an element)" : "one", e->nargs);
        return NULL;
    }
    for (int i = 0; i < e->nargs; i++) {
        int k = lit_index(c, e->args[i], lower_expr(c, e->args[i], pre), vdim(v->type), tname(v->type));
        if (k < 0) return NULL;
        v = vpart(c, v, k, e->line, e->col);
        if (!v) return NULL;
    }
    return v;
}

/* ---- calls ---- */
static ir_expr *lower_helper_call(ctx *c, helper_info *h, const ast_expr *e, ir_block *pre);

static ir_expr *lower_call(ctx *c, const ast_expr *e, ir_block *pre) {
    int fi = c->func_of_name[e->name];
    if (fi >= 0) {
        ast_func *f = c->am->funcs[fi];
        if (f->is_kernel) {
            err(c, e->line, e->col, "'%s' is a kernel; only helpers (def) can be called", e->str);
            return NULL;
        }
        return lower_helper_call(c, &c->helpers[fi], e, pre);
    }
    const builtin *bi = find_builtin(e->str);
    if (!bi) {
        err(c, e->line, e->col, "unknown function '%s'", e->str);
        return NULL;
    }
    if (bi->kind == BI_ATOMIC) {
        err(c, e->line, e->col, "%s(...) is a statement and has no value", bi->name);
        return NULL;
    }
    if (bi->kind == BI_LOOP) {
        err(c, e->line, e->col, "%s(...) may only follow 'in' in a for loop", bi->name);
        return NULL;
    }
    if (bi->kind == BI_CTOR || bi->kind == BI_VEC) {
        if (e->nargs < 1 || e->nargs > 16) {
            err(c, e->line, e->col, "%s takes %s arguments, got %d", bi->name, e->nargs < 1 ? "some" : "at most 16", e->nargs);
            return NULL;
        }
        ir_expr *va[16];
        int vok = 1;
        for (int i = 0; i < e->nargs; i++)
            if (!(va[i] = lower_expr(c, e->args[i], pre))) vok = 0;
        if (!vok) return NULL;
        if (bi->kind == BI_CTOR) return vconstruct(c, bi->name, bi->op, va, e->nargs, e, pre);
        return vbuiltin(c, bi->name, bi->op, va, e->nargs, pre, e->line, e->col);
    }
    if (bi->nargs >= 0 && e->nargs != bi->nargs) {
        err(c, e->line, e->col, "%s takes %d argument%s but %d %s given", bi->name, bi->nargs, bi->nargs == 1 ? "" : "s",
            e->nargs, e->nargs == 1 ? "was" : "were");
        return NULL;
    }
    if (bi->nargs < 0 && e->nargs < 2) {
        err(c, e->line, e->col, "%s takes at least 2 arguments but %d %s given", bi->name, e->nargs, e->nargs == 1 ? "was" : "were");
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
        args[i] = lower_expr(c, e->args[i], pre);
        if (!args[i]) ok = 0;
    }
    if (!ok) return NULL;
    int line = e->line, col = e->col;
    for (int i = 0; i < e->nargs; i++)
        if (is_vval(args[i])) {
            if (e->nargs > 16) {
                err(c, line, col, "%s of vectors takes at most 16 arguments", bi->name);
                return NULL;
            }
            return velementwise(c, bi->name, bi->kind, bi->op, args, e->nargs, pre, line, col);
        }
    for (int i = 0; i < e->nargs; i++) {
        int t = args[i]->type;
        int want_bool = bi->kind == BI_SELECT && i == 0;
        if (want_bool && t != DVM_T_BOOL) {
            err(c, e->args[i]->line, e->args[i]->col, "the condition of select must be bool, got %s", tname(t));
            return NULL;
        }
        if (!want_bool && bi->kind != BI_SELECT && bi->kind != BI_F32 && bi->kind != BI_I32 && t != DVM_T_F32 && t != DVM_T_I32) {
            err(c, e->args[i]->line, e->args[i]->col, "argument %d of %s must be f32 or i32, got %s", i + 1, bi->name, tname(t));
            return NULL;
        }
    }
    switch (bi->kind) {
    case BI_F1: return mk_un(c, bi->op, DVM_T_F32, to_f32(c, args[0]));
    case BI_F2: return mk_bin(c, bi->op, DVM_T_F32, to_f32(c, args[0]), to_f32(c, args[1]), line, col);
    case BI_ABS:
        return args[0]->type == DVM_T_I32 ? mk_un(c, DVM_OP_ABSI, DVM_T_I32, args[0]) : mk_un(c, DVM_OP_ABSF, DVM_T_F32, args[0]);
    case BI_MINMAX:
    case BI_CLAMP: {
        int f = 0;
        for (int i = 0; i < e->nargs; i++) f |= args[i]->type == DVM_T_F32;
        if (f)
            for (int i = 0; i < e->nargs; i++) args[i] = to_f32(c, args[i]);
        int t = f ? DVM_T_F32 : DVM_T_I32;
        int mn = f ? DVM_OP_MINF : DVM_OP_MINI, mx = f ? DVM_OP_MAXF : DVM_OP_MAXI;
        if (bi->kind == BI_CLAMP) /* clamp(v, lo, hi) = min(max(v, lo), hi) */
            return mk_bin(c, mn, t, mk_bin(c, mx, t, args[0], args[1], line, col), args[2], line, col);
        ir_expr *r = args[0];
        for (int i = 1; i < e->nargs; i++) r = mk_bin(c, bi->op ? mx : mn, t, r, args[i], line, col);
        return r;
    }
    case BI_SELECT: {
        ir_expr *a = args[1], *b = args[2];
        int t = a->type;
        if (a->type != b->type) {
            if ((a->type == DVM_T_F32 || a->type == DVM_T_I32) && (b->type == DVM_T_F32 || b->type == DVM_T_I32)) {
                a = to_f32(c, a);
                b = to_f32(c, b);
                t = DVM_T_F32;
            } else {
                err(c, line, col, "select's values must have the same type, got %s and %s", tname(a->type), tname(b->type));
                return NULL;
            }
        }
        ir_expr *x = mk(c, IR_SELECT, t, line, col);
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
            ir_expr *x = mk(c, IR_SELECT, want, line, col);
            if (x) {
                x->a = a;
                x->b = want == DVM_T_F32 ? mk_const_f(c, 1.0f, line, col) : mk_const_i(c, DVM_T_I32, 1, line, col);
                x->c = want == DVM_T_F32 ? mk_const_f(c, 0.0f, line, col) : mk_const_i(c, DVM_T_I32, 0, line, col);
            }
            return x;
        }
        if (want == DVM_T_F32) return to_f32(c, a);
        return mk_un(c, DVM_OP_F2I, DVM_T_I32, a);
    }
    default: return NULL;
    }
}

/* ---- expressions ---- */
static ir_expr *lower_name(ctx *c, const ast_expr *e) {
    binding *b = lookup(c, e->name);
    if (!b) {
        binding *x = c->expired[e->name];
        int fi = c->func_of_name[e->name];
        if (x && x->frame == c->fr->id)
            err(c, e->line, e->col, "'%s' is not defined here: its first assignment (%d:%d) is inside a block that has ended; assign it before that block",
                e->str, x->line, x->col);
        else if (fi >= 0)
            err(c, e->line, e->col, "'%s' is a %s, not a value; call it as %s(...)", e->str, c->am->funcs[fi]->is_kernel ? "kernel" : "helper", e->str);
        else if (c->fr->h && c->head[e->name])
            err(c, e->line, e->col, "unknown name '%s' (helpers see only their own parameters and locals)", e->str);
        else
            err(c, e->line, e->col, "unknown name '%s'", e->str);
        return NULL;
    }
    switch (b->kind) {
    case BK_VAR: return b->vtype ? vvar_val(c, b->var, b->vtype, NULL, 0, e->line, e->col) : mk_var(c, b->var, e->line, e->col);
    case BK_EXPR: return clone_leaf(c, b->expr, e->line, e->col);
    case BK_ARRAY:
        if (c->param_vt[b->param]) {
            place pl;
            resolve_place(c, e, &pl, NULL); /* reports how to index it */
            return NULL;
        }
        err(c, e->line, e->col, "'%s' is an array; read an element with %s[i]", e->str, e->str);
        return NULL;
    default: return NULL;
    }
}

static ir_expr *lower_expr_node(ctx *c, const ast_expr *e, ir_block *pre) {
    switch (e->kind) {
    case AE_INT: return mk_const_i(c, DVM_T_I32, (int32_t)e->ival, e->line, e->col);
    case AE_FLOAT: return mk_const_f(c, e->fval, e->line, e->col);
    case AE_BOOL: return mk_const_i(c, DVM_T_BOOL, (int32_t)e->ival, e->line, e->col);
    case AE_STRING: err(c, e->line, e->col, "strings are only allowed as assert messages"); return NULL;
    case AE_NAME: return lower_name(c, e);
    case AE_UNARY: {
        ir_expr *a = lower_expr(c, e->a, pre);
        if (!a) return NULL;
        if (e->op == TK_NOT) {
            if (a->type != DVM_T_BOOL) {
                err(c, e->line, e->col, "'not' needs a bool operand, got %s", tname(a->type));
                return NULL;
            }
            ir_expr *x = mk_not(c, a);
            if (x) x->line = e->line, x->col = e->col;
            return x;
        }
        if (is_vt(a->type) && is_vval(a)) return e->op == TK_PLUS ? a : vneg(c, a, e->line, e->col);
        if (a->type != DVM_T_F32 && a->type != DVM_T_I32) {
            err(c, e->line, e->col, "unary '%s' needs an f32 or i32 operand, got %s", op_text(e->op), tname(a->type));
            return NULL;
        }
        if (e->op == TK_PLUS) return a;
        if (a->kind == IR_CONST) {
            if (a->type == DVM_T_F32) return mk_const_f(c, -a->k.f, e->line, e->col);
            return mk_const_i(c, DVM_T_I32, (int32_t)(0u - (uint32_t)a->k.i), e->line, e->col);
        }
        ir_expr *x = mk_un(c, a->type == DVM_T_F32 ? DVM_OP_NEGF : DVM_OP_NEGI, a->type, a);
        if (x) x->line = e->line, x->col = e->col;
        return x;
    }
    case AE_BINARY: {
        ir_expr *a = lower_expr(c, e->a, pre);
        ir_expr *b = lower_expr(c, e->b, pre);
        return arith2(c, e->op, a, b, pre, e->line, e->col);
    }
    case AE_COMPARE: return lower_chain(c, e, 0, lower_expr(c, e->args[0], pre), pre);
    case AE_AND:
    case AE_OR: {
        ir_expr *a = lower_expr(c, e->a, pre);
        ir_block sub = {0};
        ir_expr *b = lower_expr(c, e->b, &sub);
        const char *kw = e->kind == AE_AND ? "and" : "or";
        if (a && a->type != DVM_T_BOOL) {
            err(c, e->a->line, e->a->col, "the operands of '%s' must be bool, got %s", kw, tname(a->type));
            return NULL;
        }
        if (b && b->type != DVM_T_BOOL) {
            err(c, e->b->line, e->b->col, "the operands of '%s' must be bool, got %s", kw, tname(b->type));
            return NULL;
        }
        return logic(c, e->kind == AE_AND, a, b, &sub, pre, e->line, e->col);
    }
    case AE_COND: {
        ir_expr *cond = lower_cond(c, e->b, pre, "the condition of 'a if c else b'");
        ir_block sa = {0}, sb = {0};
        ir_expr *a = lower_expr(c, e->a, &sa);
        ir_expr *b = lower_expr(c, e->c, &sb);
        if (!cond || !a || !b) return NULL;
        int t = a->type;
        if (no_tuple(c, a, e->line, e->col) || no_tuple(c, b, e->line, e->col)) return NULL;
        if (a->type != b->type) {
            if ((a->type == DVM_T_F32 || a->type == DVM_T_I32) && (b->type == DVM_T_F32 || b->type == DVM_T_I32)) {
                a = to_f32(c, a);
                b = to_f32(c, b);
                t = DVM_T_F32;
            } else {
                err(c, e->line, e->col, "both sides of 'a if c else b' must have the same type, got %s and %s", tname(a->type), tname(b->type));
                return NULL;
            }
        }
        if (is_vt(t)) { /* componentwise: one variable per component, set in the branch taken */
            int v = new_vvar(c, "cond", t, NULL, 0, e->line, e->col);
            ir_stmt *s = v < 0 ? NULL : mk_stmt(c, IR_IF, e->line, e->col);
            if (!s) return NULL;
            s->e = cond;
            s->body = sa;
            s->orelse = sb;
            vassign(c, v, a, &s->body, e->line, e->col);
            vassign(c, v, b, &s->orelse, e->line, e->col);
            push(c, pre, s);
            return vvar_val(c, v, t, NULL, 0, e->line, e->col);
        }
        if (sa.n == 0 && sb.n == 0) {
            ir_expr *x = mk(c, IR_COND, t, e->line, e->col);
            if (x) {
                x->a = cond;
                x->b = a;
                x->c = b;
            }
            return x;
        }
        int v = new_var(c, "cond", t, e->line, e->col);
        if (v < 0) return NULL;
        ir_stmt *s = mk_stmt(c, IR_IF, e->line, e->col);
        if (!s) return NULL;
        s->e = cond;
        s->body = sa;
        s->orelse = sb;
        push(c, &s->body, mk_assign(c, v, a, e->line, e->col));
        push(c, &s->orelse, mk_assign(c, v, b, e->line, e->col));
        push(c, pre, s);
        return mk_var(c, v, e->line, e->col);
    }
    case AE_CALL: return lower_call(c, e, pre);
    case AE_TUPLE: err(c, e->line, e->col, "several values are only allowed after return, in a helper declared '-> (T, ...)'"); return NULL;
    case AE_INDEX: {
        if (e->a->kind == AE_ATTR && !strcmp(e->a->str, "shape")) return lower_shape(c, e, pre);
        binding *ab = e->a->kind == AE_NAME ? lookup(c, e->a->name) : NULL;
        int scalar_array = ab && ab->kind == BK_ARRAY && !c->param_vt[ab->param];
        if (!scalar_array && is_place_form(c, e)) {
            place pl;
            if (resolve_place(c, e, &pl, pre)) return NULL;
            return place_value(c, &pl, e->line, e->col);
        }
        if (!scalar_array && (e->a->kind != AE_NAME || (ab && ab->kind == BK_VAR))) return lower_select(c, e, pre);
        int param = array_of(c, e->a);
        if (param < 0) return NULL;
        ir_expr *idx[DVM_MAX_RANK] = {0};
        int rank = lower_indices(c, e, param, idx, pre);
        if (rank < 0) return NULL;
        ir_expr *x = mk(c, IR_LOAD, c->k->params[param].type, e->line, e->col);
        if (!x) return NULL;
        x->slot = c->slot_of_param[param];
        x->nidx = rank;
        memcpy(x->idx, idx, sizeof idx);
        return x;
    }
    case AE_ATTR:
        if (strcmp(e->str, "shape") && is_place_form(c, e)) {
            place pl;
            if (resolve_place(c, e, &pl, pre)) return NULL;
            return place_value(c, &pl, e->line, e->col);
        }
        if (strcmp(e->str, "shape") && (e->a->kind != AE_NAME || !lookup(c, e->a->name) || lookup(c, e->a->name)->kind != BK_ARRAY))
            return lower_select(c, e, pre);
        if (!strcmp(e->str, "shape"))
            err(c, e->line, e->col, "'%s.shape' must be indexed with an axis: %s.shape[0]", e->a->kind == AE_NAME ? e->a->str : "x",
                e->a->kind == AE_NAME ? e->a->str : "x");
        else
            err(c, e->line, e->col, "unknown attribute '%s' (arrays have .shape)", e->str);
        return NULL;
    }
    return NULL;
}

/* ---- helpers ---- */
/* Counts the nesting that inlining adds to the parser's (both bound the recursion here and in
 * every later pass). */
static ir_expr *lower_expr(ctx *c, const ast_expr *e, ir_block *pre) {
    if (c->oom) return NULL;
    if (c->edepth >= MAX_EXPR_DEPTH) {
        err(c, e->line, e->col, "expression is nested too deeply after inlining helpers (more than %d levels)", MAX_EXPR_DEPTH);
        c->oom = 2;
        return NULL;
    }
    c->edepth++;
    ir_expr *r = lower_expr_node(c, e, pre);
    c->edepth--;
    return r;
}

/* The elif that continues s's chain, else NULL. The walks below follow chains in a loop: a
 * chain may be as long as the file (parse.c builds it without recursion). */
static const ast_stmt *next_elif(const ast_stmt *s) {
    return s->kind == AS_IF && s->orelse.n == 1 && s->orelse.s[0]->kind == AS_IF && s->orelse.s[0]->is_elif ? s->orelse.s[0] : NULL;
}
static int count_returns(const ast_block *b) {
    int n = 0;
    for (int i = 0; i < b->n; i++) {
        const ast_stmt *s = b->s[i];
        if (s->kind == AS_RETURN) n++;
        for (; s; s = next_elif(s)) {
            n += count_returns(&s->body);
            if (!next_elif(s)) n += count_returns(&s->orelse);
        }
    }
    return n;
}
static int always_returns(const ast_block *b) {
    if (b->n == 0) return 0;
    const ast_stmt *s = b->s[b->n - 1];
    if (s->kind == AS_RETURN) return 1;
    if (s->kind != AS_IF) return 0;
    for (; next_elif(s); s = next_elif(s))
        if (!always_returns(&s->body)) return 0;
    return always_returns(&s->body) && always_returns(&s->orelse);
}
static void mark_assigned(const ast_block *b, const ast_func *f, unsigned char *assigned) {
    for (int i = 0; i < b->n; i++) {
        const ast_stmt *s = b->s[i];
        if ((s->kind == AS_ASSIGN || s->kind == AS_AUG) && s->target->kind == AE_NAME)
            for (int p = 0; p < f->nparams; p++)
                if (f->params[p].name == s->target->name) assigned[p] = 1;
        for (; s; s = next_elif(s)) {
            mark_assigned(&s->body, f, assigned);
            if (!next_elif(s)) mark_assigned(&s->orelse, f, assigned);
        }
    }
}

/* One-time checks of a helper's declaration. */
static void analyze_helper(ctx *c, helper_info *h) {
    ast_func *f = h->f;
    h->ok = 1;
    h->assigned = dvm_arena_alloc(c->a, (size_t)f->nparams + 1);
    if (!h->assigned) {
        c->oom = 1;
        h->ok = 0;
        return;
    }
    for (int i = 0; i < f->nparams; i++) {
        for (int j = 0; j < i; j++)
            if (f->params[j].name == f->params[i].name) {
                err(c, f->params[i].line, f->params[i].col, "parameter '%s' of helper '%s' is declared twice", f->params[i].str, f->str);
                h->ok = 0;
            }
        if (is_reserved(f->params[i].str)) {
            err(c, f->params[i].line, f->params[i].col, "'%s' is reserved and cannot name a parameter", f->params[i].str);
            h->ok = 0;
        }
    }
    if (!always_returns(&f->body)) {
        err(c, f->line, f->col, "helper '%s' can reach the end of its body without returning a value", f->str);
        h->ok = 0;
    }
    int nret = count_returns(&f->body);
    h->simple = nret == 1 && f->body.n > 0 && f->body.s[f->body.n - 1]->kind == AS_RETURN;
    mark_assigned(&f->body, f, h->assigned);
}

/* Names the chain of calls, outermost first: "k -> h1 -> h2 -> ... -> h63 -> h64". */
static void call_chain_error(ctx *c, const ast_expr *e, const ast_func *callee) {
    const char *names[MAX_CALL_DEPTH + 2];
    int n = 0;
    names[n++] = callee->str;
    for (const frame *f = c->fr; f && n < MAX_CALL_DEPTH + 2; f = f->up) names[n++] = f->h ? f->h->f->str : c->k->name;
    char chain[512];
    size_t at = 0;
    for (int i = n - 1; i >= 0 && at < sizeof chain - 64; i--) {
        if (i < n - 4 && i > 2) { /* the middle of the chain */
            at += (size_t)snprintf(chain + at, sizeof chain - at, " -> ...");
            i = 3;
        }
        at += (size_t)snprintf(chain + at, sizeof chain - at, "%s%s", i == n - 1 ? "" : " -> ", names[i]);
    }
    err(c, e->line, e->col, "helper calls are nested too deeply (more than %d levels; every call is inlined): %s", MAX_CALL_DEPTH, chain);
    c->oom = 2;
}

/* The value a helper returns (several: a tuple), converted to the declared type. */
static ir_expr *lower_return(ctx *c, const ast_func *f, const ast_expr *ve, ir_block *pre) {
    char decl[160];
    if (f->ret == DVM_T_TUPLE) {
        size_t at = (size_t)snprintf(decl, sizeof decl, "(");
        for (int i = 0; i < f->nrets && at < sizeof decl - 16; i++) at += (size_t)snprintf(decl + at, sizeof decl - at, "%s%s", i ? ", " : "", tname(f->rets[i]));
        snprintf(decl + at, sizeof decl - at, ")");
    } else snprintf(decl, sizeof decl, "%s", tname(f->ret));
    if (ve->kind == AE_TUPLE) {
        if (f->ret != DVM_T_TUPLE || f->nrets != ve->nargs) {
            err(c, ve->line, ve->col, "helper '%s' returns %d values but is declared '-> %s'", f->str, ve->nargs, decl);
            return NULL;
        }
        ir_expr *r = mk_vec(c, DVM_T_TUPLE, ve->nargs, ve->line, ve->col);
        if (!r) return NULL;
        for (int i = 0; i < ve->nargs; i++) {
            ir_expr *v = lower_expr(c, ve->args[i], pre);
            ir_expr *cv = vconvert(c, v, f->rets[i]);
            if (v && !cv) err(c, ve->args[i]->line, ve->args[i]->col, "value %d that helper '%s' returns is %s but is declared '-> %s'", i + 1, f->str,
                              tname(v->type), decl);
            parts(r)[i] = cv;
        }
        return vdone(r);
    }
    ir_expr *v = lower_expr(c, ve, pre);
    if (!v) return NULL;
    ir_expr *cv = f->ret == DVM_T_TUPLE ? NULL : vconvert(c, v, f->ret);
    if (!cv) err(c, ve->line, ve->col, "helper '%s' returns %s but is declared '-> %s'%s", f->str, tname(v->type), decl,
                 f->ret == DVM_T_TUPLE ? " (return several values: return a, b)" : "");
    return cv;
}

static ir_expr *lower_helper_call(ctx *c, helper_info *h, const ast_expr *e, ir_block *pre) {
    ast_func *f = h->f;
    if (!h->ok) return NULL;
    if (h->active) {
        if (c->fr->h == h) err(c, e->line, e->col, "helper '%s' calls itself (recursion is not supported)", f->str);
        else err(c, e->line, e->col, "helper '%s' calls itself through '%s' (recursion is not supported)", f->str, c->fr->h ? c->fr->h->f->str : "?");
        return NULL;
    }
    if (e->nargs != f->nparams) {
        err(c, e->line, e->col, "helper '%s' takes %d argument%s but %d %s given", f->str, f->nparams, f->nparams == 1 ? "" : "s",
            e->nargs, e->nargs == 1 ? "was" : "were");
        return NULL;
    }
    if (c->fr->calls >= MAX_CALL_DEPTH) {
        call_chain_error(c, e, f);
        return NULL;
    }
    h->used = 1;
    if (++c->ninline > MAX_INLINE) {
        err(c, e->line, e->col, "too many helper calls to inline in one kernel (more than %d)", MAX_INLINE);
        return NULL;
    }
    /* arguments, evaluated once in the caller */
    enum { A_EXPR, A_VAR, A_ARRAY };
    int *akind = dvm_arena_alloc(c->a, sizeof(int) * (size_t)(f->nparams + 1) * 2);
    ir_expr **aval = dvm_arena_alloc(c->a, sizeof(ir_expr *) * (size_t)(f->nparams + 1));
    if (!akind || !aval) {
        c->oom = 1;
        return NULL;
    }
    int *aref = akind + f->nparams + 1;
    int ok = 1;
    for (int i = 0; i < f->nparams; i++) {
        const ast_param *p = &f->params[i];
        const ast_expr *arg = e->args[i];
        if (p->is_array) {
            binding *b = arg->kind == AE_NAME ? lookup(c, arg->name) : NULL;
            if (!b || b->kind != BK_ARRAY) {
                if (!b || b->kind != BK_POISON)
                    err(c, arg->line, arg->col, "argument %d of '%s' must be an array (parameter '%s: %s[...]')", i + 1, f->str, p->str, tname(p->type));
                ok = 0;
                continue;
            }
            const ir_param *kp = &c->k->params[b->param];
            int kvt = c->param_vt[b->param], krank = kp->rank - (is_mat(kvt) ? 2 : is_vec(kvt) ? 1 : 0);
            if ((kvt ? kvt : kp->type) != p->type || krank != p->rank) {
                err(c, arg->line, arg->col, "argument %d of '%s' must be an array of %s of rank %d, got '%s' (%s)", i + 1, f->str,
                    tname(p->type), p->rank, kp->name, c->param_decl[b->param]);
                ok = 0;
                continue;
            }
            for (int r = 0; r < p->rank; r++)
                if (!p->dim[r].is_sym && kp->dim[r] >= 0 && kp->dim[r] != p->dim[r].value) {
                    err(c, arg->line, arg->col, "argument %d of '%s': axis %d of '%s' has extent %d but the helper declares %lld", i + 1, f->str, r,
                        kp->name, (int)kp->dim[r], (long long)p->dim[r].value);
                    ok = 0;
                }
            akind[i] = A_ARRAY;
            aref[i] = b->param;
            continue;
        }
        ir_expr *v = lower_expr(c, arg, pre);
        if (!v) {
            ok = 0;
            continue;
        }
        ir_expr *cv = vconvert(c, v, p->type);
        if (!cv) {
            err(c, arg->line, arg->col, "argument %d of '%s' ('%s') must be %s, got %s", i + 1, f->str, p->str, tname(p->type), tname(v->type));
            ok = 0;
            continue;
        }
        if (!h->assigned[i] && is_leaf(cv)) { /* read-only parameter: use the value directly */
            akind[i] = A_EXPR;
            aval[i] = cv;
        } else {
            int t = new_vvar(c, dvm_arena_printf(c->a, "%s.%s", f->str, p->str), p->type, NULL, 0, arg->line, arg->col);
            if (t < 0) return NULL;
            vassign(c, t, cv, pre, arg->line, arg->col);
            akind[i] = A_VAR;
            aref[i] = t;
        }
    }
    if (!ok) return NULL;

    frame nf = {0}, *saved = c->fr;
    nf.id = ++c->nframes;
    nf.h = h;
    nf.R = nf.D = -1;
    nf.loopkind = LK_NONE;
    nf.calls = saved->calls + 1;
    nf.up = saved;
    c->fr = &nf;
    h->active = 1;
    int mark = scope_mark(c);
    for (int i = 0; i < f->nparams; i++) {
        const ast_param *p = &f->params[i];
        binding *b;
        if (akind[i] == A_ARRAY) {
            b = bind(c, p->name, BK_ARRAY, p->line, p->col);
            if (b) b->param = aref[i];
            const ir_param *kp = &c->k->params[aref[i]];
            for (int r = 0; r < p->rank; r++) { /* the helper's shape symbols name the argument's extents */
                if (!p->dim[r].is_sym || lookup(c, p->dim[r].name)) continue;
                binding *s = bind(c, p->dim[r].name, BK_EXPR, p->dim[r].line, p->dim[r].col);
                if (!s) continue;
                s->what = "shape symbol";
                s->expr = kp->dim[r] >= 0 ? mk_const_i(c, DVM_T_I32, kp->dim[r], p->line, p->col)
                                          : mk_var(c, c->k->syms[-kp->dim[r] - 1].var, p->line, p->col);
            }
        } else if (akind[i] == A_EXPR) {
            b = bind(c, p->name, BK_EXPR, p->line, p->col);
            if (b) {
                b->expr = aval[i];
                b->what = "parameter";
            }
        } else {
            b = bind(c, p->name, BK_VAR, p->line, p->col);
            if (b) {
                b->var = aref[i];
                b->vtype = is_vt(p->type) ? p->type : 0;
            }
        }
    }
    ir_expr *result = NULL;
    int nerr = c->d->nerrors;
    if (h->simple) {
        lower_stmts(c, f->body.s, f->body.n - 1, pre);
        const ast_stmt *r = f->body.s[f->body.n - 1];
        result = lower_return(c, f, r->value, pre);
    } else {
        nf.R = new_vvar(c, dvm_arena_printf(c->a, "%s.return", f->str), f->ret, f->rets, f->nrets, f->line, f->col);
        nf.D = new_var(c, dvm_arena_printf(c->a, "%s.done", f->str), DVM_T_BOOL, f->line, f->col);
        if (nf.R >= 0 && nf.D >= 0) {
            push(c, pre, mk_assign(c, nf.D, mk_const_i(c, DVM_T_BOOL, 0, f->line, f->col), f->line, f->col));
            lower_stmts(c, f->body.s, f->body.n, pre);
            result = vvar_val(c, nf.R, f->ret, f->rets, f->nrets, e->line, e->col);
        }
    }
    scope_pop(c, mark);
    h->active = 0;
    c->fr = saved;
    if (c->d->nerrors != nerr) return NULL;
    if (result) result->line = e->line, result->col = e->col;
    return result;
}

/* ---- statements ---- */
static int escape_flag(ctx *c) { return c->fr->h ? c->fr->D : c->cflag; }

static int is_static_iter(const ast_expr *it) { return it->kind == AE_CALL && !strcmp(it->str, "static"); }

static int is_real_loop(const ast_stmt *s) {
    return s->kind == AS_WHILE || (s->kind == AS_FOR && !is_static_iter(s->value));
}

static ir_stmt *mk_if_flag_break(ctx *c, int flag, int line, int col) {
    ir_stmt *s = mk_stmt(c, IR_IF, line, col);
    if (!s) return NULL;
    s->e = mk_var(c, flag, line, col);
    push(c, &s->body, mk_stmt(c, IR_BREAK, line, col));
    return s;
}

static int lower_block(ctx *c, const ast_block *b, ir_block *out) {
    int mark = scope_mark(c);
    int r = lower_stmts(c, b->s, b->n, out);
    scope_pop(c, mark);
    return r;
}

static int lower_stmt(ctx *c, const ast_stmt *s, ir_block *out);

static int lower_stmts_in(ctx *c, ast_stmt **s, int n, ir_block *out);
/* Statements of one IR block (counted against MAX_BLOCK_DEPTH). */
static int lower_stmts(ctx *c, ast_stmt **s, int n, ir_block *out) {
    if (n == 0 || c->oom) return 0;
    if (c->depth >= MAX_BLOCK_DEPTH) {
        err(c, s[0]->line, s[0]->col,
            "blocks are nested too deeply (more than %d levels, counting the blocks of inlined helpers and of long elif chains)",
            MAX_BLOCK_DEPTH);
        c->oom = 2;
        return 0;
    }
    c->depth++;
    int r = lower_stmts_in(c, s, n, out);
    c->depth--;
    return r;
}

static int lower_stmts_in(ctx *c, ast_stmt **s, int n, ir_block *out) {
    int res = 0;
    for (int i = 0; i < n; i++) {
        if (c->oom) return res;
        int r = lower_stmt(c, s[i], out);
        if (r & TERM) {
            if (r & ESC) res |= ESC;
            res |= TERM;
            if (i + 1 < n) { /* unreachable, but still checked */
                ir_block dead = {0};
                lower_stmts(c, s + i + 1, n - i - 1, &dead);
            }
            return res;
        }
        if (!(r & ESC)) continue;
        res |= ESC;
        int flag = escape_flag(c);
        if (flag < 0) continue;
        if (c->fr->h && c->fr->loopdepth > 0) { /* a return inside a loop breaks out of it */
            if (is_real_loop(s[i])) push(c, out, mk_if_flag_break(c, flag, s[i]->line, s[i]->col));
            continue;
        }
        if (i + 1 < n) { /* the rest runs only when no return / continue happened */
            ir_stmt *g = mk_stmt(c, IR_IF, s[i + 1]->line, s[i + 1]->col);
            if (!g) return res;
            g->e = mk_not(c, mk_var(c, flag, s[i + 1]->line, s[i + 1]->col));
            push(c, out, g);
            lower_stmts(c, s + i + 1, n - i - 1, &g->body);
        }
        return res;
    }
    return res;
}

static int writable(ctx *c, binding *b, const ast_expr *target);
static void assign_name(ctx *c, const ast_expr *target, ir_expr *v, ir_block *out, int line, int col) {
    binding *b = lookup(c, target->name);
    if (!b) {
        if (is_reserved(target->str)) {
            err(c, target->line, target->col, "'%s' is reserved and cannot name a variable", target->str);
            return;
        }
        if (!v) { /* keep later uses of the name from reporting again */
            bind(c, target->name, BK_POISON, target->line, target->col);
            return;
        }
        if (v->type == DVM_T_VOID) return;
        if (no_tuple(c, v, target->line, target->col)) return;
        int var = new_vvar(c, target->str, v->type, NULL, 0, target->line, target->col);
        if (var < 0) return;
        binding *nb = bind(c, target->name, BK_VAR, target->line, target->col);
        if (nb) {
            nb->var = var;
            nb->vtype = is_vt(v->type) ? v->type : 0;
        }
        vassign(c, var, v, out, line, col);
        return;
    }
    switch (b->kind) {
    case BK_POISON: return;
    case BK_ARRAY:
        err(c, target->line, target->col, "cannot assign to array '%s'; store into an element: %s[i] = ...", target->str, target->str);
        return;
    case BK_EXPR:
        err(c, target->line, target->col, "cannot assign to the %s '%s' (read-only)", b->what ? b->what : "constant", target->str);
        return;
    default: break;
    }
    if (!writable(c, b, target) || !v) return;
    const ir_var *iv = &c->k->vars[b->var];
    if (no_tuple(c, v, target->line, target->col)) return;
    int want = b->vtype ? b->vtype : iv->type;
    ir_expr *cv = vconvert(c, v, want);
    if (!cv) {
        err(c, target->line, target->col, "'%s' is %s here but was declared %s at %d:%d", target->str, tname(v->type), tname(want),
            iv->line, iv->col);
        return;
    }
    vassign(c, b->var, cv, out, line, col);
}

/* 1 when the local of binding b may be assigned here, else 0 with an error. */
static int writable(ctx *c, binding *b, const ast_expr *target) {
    const char *name = target->kind == AE_NAME ? target->str : c->k->vars[b->var].name;
    const ir_var *iv = &c->k->vars[b->var];
    switch (iv->storage) {
    case IR_PARAM:
        err(c, target->line, target->col, "cannot assign to parameter '%s' (parameters are read-only); copy it into a local first: %s_ = %s",
            name, name, name);
        return 0;
    case IR_SHAPESYM:
        err(c, target->line, target->col, "cannot assign to the shape symbol '%s' (read-only)", name);
        return 0;
    case IR_PINDEX:
        err(c, target->line, target->col, "cannot assign to the parallel loop index '%s' (read-only)", name);
        return 0;
    case IR_GLOBAL:
        if (c->in_parallel) {
            err(c, target->line, target->col,
                "cannot assign to '%s' inside a parallel loop: it was declared at %d:%d outside the loop, and the loop's iterations would race; "
                "use a new local inside the loop, or accumulate into an array element with +=",
                name, iv->line, iv->col);
            return 0;
        }
        break;
    default: break;
    }
    if (b->loopvar) {
        err(c, target->line, target->col, "cannot assign to the loop variable '%s' inside its loop", name);
        return 0;
    }
    return 1;
}

/* x[i] = e, x[i] += e, x[i] -= e, atomic_max(x[i], e): the array parameter or -1. */
static int lower_array_target(ctx *c, const ast_expr *t, ir_expr **idx, int *rank, ir_block *pre, const char *what) {
    int param = array_of(c, t->a);
    if (param < 0) return -1;
    if (c->fr->h) {
        err(c, t->line, t->col, "helper '%s' cannot %s array '%s' (helpers only read arrays)", c->fr->h->f->str, what, t->a->str);
        return -1;
    }
    *rank = lower_indices(c, t, param, idx, pre);
    return *rank < 0 ? -1 : param;
}

static ir_expr *value_for_array(ctx *c, const ast_expr *ve, ir_expr *v, int param) {
    if (!v) return NULL;
    const ir_param *p = &c->k->params[param];
    ir_expr *cv = convert(c, v, p->type);
    if (!cv) err(c, ve->line, ve->col, "cannot store %s into '%s', an %s array%s", tname(v->type), p->name, tname(p->type),
                 v->type == DVM_T_F32 ? " (convert with i32(...))" : "");
    return cv;
}

static int lower_store(ctx *c, const ast_stmt *s, ir_block *out) {
    const ast_expr *t = s->target;
    ir_expr *v = lower_expr(c, s->value, out);
    ir_expr *idx[DVM_MAX_RANK] = {0};
    int rank = 0;
    int param = lower_array_target(c, t, idx, &rank, out, "write");
    if (param < 0 || !v) return 0;
    ir_expr *cv = value_for_array(c, s->value, v, param);
    if (!cv) return 0;
    const ir_param *p = &c->k->params[param];
    ir_stmt *st;
    if (s->kind == AS_ASSIGN) {
        st = mk_stmt(c, IR_STORE, s->line, s->col);
    } else {
        if (s->op != TK_PLUS && s->op != TK_MINUS) {
            err(c, s->line, s->col, "'%s[...] %s= e' is not supported: only += and -= on array elements (they are atomic adds); write %s[i] = %s[i] %s e",
                p->name, op_text(s->op), p->name, p->name, op_text(s->op));
            return 0;
        }
        if (s->op == TK_MINUS) {
            if (cv->kind == IR_CONST) cv = p->type == DVM_T_F32 ? mk_const_f(c, -cv->k.f, cv->line, cv->col)
                                                                : mk_const_i(c, DVM_T_I32, (int32_t)(0u - (uint32_t)cv->k.i), cv->line, cv->col);
            else cv = mk_un(c, p->type == DVM_T_F32 ? DVM_OP_NEGF : DVM_OP_NEGI, p->type, cv);
        }
        st = mk_stmt(c, IR_ATOMIC, s->line, s->col);
        if (st) st->op = p->type == DVM_T_F32 ? DVM_OP_ATOMADDF : DVM_OP_ATOMADDI;
    }
    if (!st) return 0;
    st->slot = c->slot_of_param[param];
    st->nidx = rank;
    memcpy(st->idx, idx, sizeof idx);
    st->e = cv;
    push(c, out, st);
    return 0;
}

/* a, b = f(...): the values of a helper that returns several */
static int lower_unpack(ctx *c, const ast_stmt *s, ir_block *out) {
    ir_expr *v = lower_expr(c, s->value, out);
    int ok = v != NULL;
    if (v && v->type != DVM_T_TUPLE) {
        err(c, s->value->line, s->value->col, "only a call of a helper that returns several values can be unpacked into %d targets; this is %s",
            s->ntargets, tname(v->type));
        ok = 0;
    } else if (v && v->nidx != s->ntargets) {
        err(c, s->value->line, s->value->col, "this call returns %d values but %d targets are given", v->nidx, s->ntargets);
        ok = 0;
    }
    if (ok) v = settle_f(c, v, out, 1); /* every value first, then the targets: a, b = f(b, a) */
    for (int i = 0; i < s->ntargets; i++) {
        const ast_expr *t = s->targets[i];
        ir_expr *part = ok && v ? parts(v)[i] : NULL;
        if (t->kind == AE_NAME) assign_name(c, t, part, out, s->line, s->col);
        else if ((t->kind == AE_INDEX || t->kind == AE_ATTR) && is_place_form(c, t)) {
            if (part) place_store(c, t, t, part, 0, out, s->line, s->col);
        } else err(c, t->line, t->col, "cannot unpack into this expression; expected a name or an array element");
    }
    return 0;
}

static int lower_expr_stmt(ctx *c, const ast_stmt *s, ir_block *out) {
    const ast_expr *e = s->value;
    if (e->kind != AE_CALL) {
        err(c, s->line, s->col, "this expression does nothing; expected an assignment, a store, atomic_max/atomic_min or a helper call");
        return 0;
    }
    if (c->func_of_name[e->name] < 0) {
        const builtin *bi = find_builtin(e->str);
        if (bi && bi->kind == BI_ATOMIC) {
            if (e->nargs != 2) {
                err(c, e->line, e->col, "%s takes 2 arguments (an array element and a value) but %d %s given", bi->name, e->nargs,
                    e->nargs == 1 ? "was" : "were");
                return 0;
            }
            const ast_expr *t = e->args[0];
            if (t->kind != AE_INDEX) {
                err(c, t->line, t->col, "the first argument of %s must be an array element such as x[i]", bi->name);
                return 0;
            }
            ir_expr *v = lower_expr(c, e->args[1], out);
            ir_expr *idx[DVM_MAX_RANK] = {0};
            int rank = 0;
            int param = lower_array_target(c, t, idx, &rank, out, "write");
            if (param < 0 || !v) return 0;
            ir_expr *cv = value_for_array(c, e->args[1], v, param);
            if (!cv) return 0;
            int f = c->k->params[param].type == DVM_T_F32;
            ir_stmt *st = mk_stmt(c, IR_ATOMIC, s->line, s->col);
            if (!st) return 0;
            st->op = bi->op ? (f ? DVM_OP_ATOMMAXF : DVM_OP_ATOMMAXI) : (f ? DVM_OP_ATOMMINF : DVM_OP_ATOMMINI);
            st->slot = c->slot_of_param[param];
            st->nidx = rank;
            memcpy(st->idx, idx, sizeof idx);
            st->e = cv;
            push(c, out, st);
            return 0;
        }
        if (bi && bi->kind != BI_LOOP) {
            err(c, e->line, e->col, "the value of %s(...) is not used", e->str);
            return 0;
        }
    }
    lower_expr(c, e, out); /* a helper call: its statements stay, its value is dropped */
    return 0;
}

typedef struct loop_iter {
    int kind; /* 0 range, 1 ndrange, 2 static */
    int n;    /* bounds / extents */
    ir_expr *start, *stop[DVM_MAX_PAR_DIMS];
    int32_t sfrom, sto;
} loop_iter;

/* Checks `for VARS in ITER` and lowers the bounds; 0 on success. */
static int lower_iter(ctx *c, const ast_stmt *s, loop_iter *it, ir_block *pre) {
    const ast_expr *e = s->value;
    memset(it, 0, sizeof *it);
    if (e->kind == AE_CALL && !strcmp(e->str, "serial")) {
        err(c, e->line, e->col, "serial(range(...)) is a loop of top-level statements: it may only be a statement of the kernel's body");
        return -1;
    }
    if (e->kind != AE_CALL || (strcmp(e->str, "range") && strcmp(e->str, "ndrange") && strcmp(e->str, "static"))) {
        err(c, e->line, e->col, "expected range(...), ndrange(...) or static(range(N)) after 'in'");
        return -1;
    }
    if (!strcmp(e->str, "static")) {
        const ast_expr *r = e->nargs == 1 ? e->args[0] : NULL;
        if (!r || r->kind != AE_CALL || strcmp(r->str, "range") || r->nargs < 1 || r->nargs > 2) {
            err(c, e->line, e->col, "static(...) takes one range(N) or range(start, stop) with integer literal bounds");
            return -1;
        }
        if (s->ntargets != 1) {
            err(c, s->targets[1]->line, s->targets[1]->col, "static(range(...)) has one loop variable but %d were given", s->ntargets);
            return -1;
        }
        int32_t b[2] = {0, 0};
        for (int i = 0; i < r->nargs; i++) {
            ir_expr *x = lower_expr(c, r->args[i], pre);
            if (!x) return -1;
            if (x->kind != IR_CONST || x->type != DVM_T_I32) {
                err(c, r->args[i]->line, r->args[i]->col, "the bounds of static(range(...)) must be integer literals");
                return -1;
            }
            b[i] = x->k.i;
        }
        it->kind = 2;
        it->sfrom = r->nargs == 2 ? b[0] : 0;
        it->sto = r->nargs == 2 ? b[1] : b[0];
        if ((int64_t)it->sto - it->sfrom > MAX_UNROLL) {
            err(c, e->line, e->col, "static loop of %lld iterations is too long to unroll (at most %d)", (long long)it->sto - it->sfrom, MAX_UNROLL);
            return -1;
        }
        return 0;
    }
    int nd = !strcmp(e->str, "ndrange");
    it->kind = nd;
    if (!nd && (e->nargs < 1 || e->nargs > 2)) {
        err(c, e->line, e->col, "range takes 1 or 2 arguments (stop, or start and stop; a step is not supported) but %d %s given", e->nargs,
            e->nargs == 1 ? "was" : "were");
        return -1;
    }
    if (nd && (e->nargs < 1 || e->nargs > DVM_MAX_PAR_DIMS)) {
        err(c, e->line, e->col, "ndrange takes 1 to %d extents but %d %s given", DVM_MAX_PAR_DIMS, e->nargs, e->nargs == 1 ? "was" : "were");
        return -1;
    }
    int nvars = nd ? e->nargs : 1;
    if (s->ntargets != nvars) {
        if (nd)
            err(c, s->targets[0]->line, s->targets[0]->col, "ndrange has %d extent%s but %d loop variable%s given", e->nargs,
                e->nargs == 1 ? "" : "s", s->ntargets, s->ntargets == 1 ? " was" : "s were");
        else
            err(c, s->targets[0]->line, s->targets[0]->col, "range has one loop variable but %d were given (use ndrange for several)", s->ntargets);
        return -1;
    }
    int ok = 1;
    for (int i = 0; i < e->nargs; i++) {
        ir_expr *x = lower_typed(c, e->args[i], pre, DVM_T_I32, nd ? "an ndrange extent" : "a range bound");
        if (!x || x->type != DVM_T_I32) {
            if (x) err(c, e->args[i]->line, e->args[i]->col, "range bounds must be i32, got %s", tname(x->type));
            ok = 0;
            continue;
        }
        if (nd) it->stop[i] = x;
        else if (e->nargs == 2 && i == 0) it->start = x;
        else it->stop[0] = x;
    }
    it->n = nvars;
    return ok ? 0 : -1;
}

/* A loop variable must be a new name (no Python-style reuse of an outer variable). */
static int check_loop_var(ctx *c, const ast_expr *t) {
    if (is_reserved(t->str)) {
        err(c, t->line, t->col, "'%s' is reserved and cannot name a variable", t->str);
        return -1;
    }
    binding *b = lookup(c, t->name);
    if (b && strcmp(t->str, "_")) {
        err(c, t->line, t->col, "loop variable '%s' is already defined at %d:%d; use a new name", t->str, b->line, b->col);
        return -1;
    }
    return 0;
}

static int lower_for(ctx *c, const ast_stmt *s, ir_block *out) {
    loop_iter it;
    if (lower_iter(c, s, &it, out)) return 0;
    for (int i = 0; i < s->ntargets; i++)
        if (check_loop_var(c, s->targets[i])) return 0;
    frame *fr = c->fr;
    int saved_kind = fr->loopkind;
    if (it.kind == 2) { /* static: unrolled, the variable a constant */
        fr->loopkind = LK_STATIC;
        int res = 0;
        ir_block *dst = out;
        const ast_expr *t = s->targets[0];
        for (int32_t k = it.sfrom; k < it.sto && !c->oom; k++) {
            int mark = scope_mark(c);
            binding *b = bind(c, t->name, BK_EXPR, t->line, t->col);
            if (b) {
                b->expr = mk_const_i(c, DVM_T_I32, k, t->line, t->col);
                b->what = "static loop variable";
            }
            int nerr = c->d->nerrors;
            int r = lower_stmts(c, s->body.s, s->body.n, dst);
            scope_pop(c, mark);
            if (c->d->nerrors != nerr) break; /* the same errors would repeat each iteration */
            if (r & ESC) {
                res |= ESC;
                int flag = escape_flag(c);
                if (flag >= 0 && !(fr->h && fr->loopdepth > 0) && k + 1 < it.sto) {
                    ir_stmt *g = mk_stmt(c, IR_IF, s->line, s->col);
                    if (!g) break;
                    g->e = mk_not(c, mk_var(c, flag, s->line, s->col));
                    push(c, dst, g);
                    dst = &g->body;
                }
            }
        }
        fr->loopkind = saved_kind;
        return res;
    }
    /* serial range / ndrange: nested IR_FOR loops, last dimension innermost */
    ir_stmt *loops[DVM_MAX_PAR_DIMS] = {0};
    int mark = scope_mark(c);
    for (int d = 0; d < it.n; d++) {
        const ast_expr *t = s->targets[d];
        ir_stmt *f = mk_stmt(c, IR_FOR, s->line, s->col);
        if (!f) return 0;
        f->var = new_var(c, t->str, DVM_T_I32, t->line, t->col);
        if (f->var < 0) return 0;
        f->e = it.kind == 0 && it.start ? it.start : mk_const_i(c, DVM_T_I32, 0, s->line, s->col);
        f->e2 = it.stop[d];
        binding *b = bind(c, t->name, BK_VAR, t->line, t->col);
        if (b) {
            b->var = f->var;
            b->loopvar = 1;
        }
        loops[d] = f;
        if (d) push(c, &loops[d - 1]->body, f);
    }
    fr->loopkind = it.n > 1 ? LK_NDRANGE : LK_SERIAL;
    fr->loopdepth++;
    int r = lower_block(c, &s->body, &loops[it.n - 1]->body);
    fr->loopdepth--;
    fr->loopkind = saved_kind;
    scope_pop(c, mark);
    if ((r & ESC) && fr->h)
        for (int d = it.n - 2; d >= 0; d--) push(c, &loops[d]->body, mk_if_flag_break(c, fr->D, s->line, s->col));
    push(c, out, loops[0]);
    return r & ESC;
}

static int lower_while(ctx *c, const ast_stmt *s, ir_block *out) {
    ir_block pre = {0};
    ir_expr *cond = lower_cond(c, s->value, &pre, "the while condition");
    ir_stmt *w = mk_stmt(c, IR_WHILE, s->line, s->col);
    if (!w) return 0;
    if (pre.n == 0) {
        w->e = cond;
    } else { /* the condition needs statements: while True: pre; if not cond: break; body */
        w->e = mk_const_i(c, DVM_T_BOOL, 1, s->line, s->col);
        w->body = pre;
        ir_stmt *g = mk_stmt(c, IR_IF, s->value->line, s->value->col);
        if (g) {
            g->e = mk_not(c, cond);
            push(c, &g->body, mk_stmt(c, IR_BREAK, s->line, s->col));
            push(c, &w->body, g);
        }
    }
    frame *fr = c->fr;
    int saved_kind = fr->loopkind;
    fr->loopkind = LK_SERIAL;
    fr->loopdepth++;
    int r = lower_block(c, &s->body, &w->body);
    fr->loopdepth--;
    fr->loopkind = saved_kind;
    if (cond) push(c, out, w);
    return r & ESC;
}

/* if / elif / else. Nested as written, one IR block per elif, a chain would nest as deep as
 * it is long; a chain longer than ELIF_CHUNK (or than the blocks left) is lowered as a
 * sequence of shorter chains instead, each after the first guarded by a hidden flag that
 * says no branch was taken yet:
 *     rest = False
 *     if c1: B1  elif c2: B2 ... elif c8: B8  else: rest = True
 *     if rest:
 *         rest = False
 *         if c9: B9 ... else: rest = True
 *     if rest: ...
 * The conditions still run in order and only until one holds. */
static int lower_if(ctx *c, const ast_stmt *s, ir_block *out) {
    int len = 1;
    for (const ast_stmt *q = next_elif(s); q; q = next_elif(q)) len++;
    int chunk = ELIF_CHUNK, room = MAX_BLOCK_DEPTH - c->depth - 2;
    if (len > chunk && room < chunk) chunk = room > 1 ? room : 1;
    int rest = -1;
    if (len > chunk) {
        rest = new_var(c, "elif chain", DVM_T_BOOL, s->line, s->col);
        if (rest < 0) return 0;
        push(c, out, mk_assign(c, rest, mk_const_i(c, DVM_T_BOOL, 0, s->line, s->col), s->line, s->col));
    }
    const int depth0 = c->depth;
    ir_block *dst = out;
    int r = 0, term = 1;
    for (int k = 1; s && !c->oom; k++) {
        ir_expr *cond = lower_cond(c, s->value, dst, s->is_elif ? "the elif condition" : "the if condition");
        ir_stmt *st = mk_stmt(c, IR_IF, s->line, s->col);
        if (!st) break;
        st->e = cond;
        int r1 = lower_block(c, &s->body, &st->body);
        r |= r1 & ESC;
        if (!(r1 & TERM)) term = 0;
        if (cond) push(c, dst, st);
        const ast_stmt *nx = next_elif(s);
        if (!nx) {
            int r2 = lower_block(c, &s->orelse, &st->orelse);
            r |= r2 & ESC;
            if (!(r2 & TERM)) term = 0;
        } else if (k % chunk == 0) { /* this chain ends; the next one runs under `if rest:` */
            push(c, &st->orelse, mk_assign(c, rest, mk_const_i(c, DVM_T_BOOL, 1, s->line, s->col), s->line, s->col));
            ir_stmt *g = mk_stmt(c, IR_IF, nx->line, nx->col);
            if (!g) break;
            g->e = mk_var(c, rest, nx->line, nx->col);
            push(c, out, g);
            push(c, &g->body, mk_assign(c, rest, mk_const_i(c, DVM_T_BOOL, 0, nx->line, nx->col), nx->line, nx->col));
            dst = &g->body;
            c->depth = depth0 + 1;
        } else { /* the next elif nests in this one's else */
            dst = &st->orelse;
            c->depth++;
        }
        s = nx;
    }
    c->depth = depth0;
    return term ? r | TERM : r;
}

static int lower_stmt(ctx *c, const ast_stmt *s, ir_block *out) {
    frame *fr = c->fr;
    switch (s->kind) {
    case AS_PASS: return 0;
    case AS_ASSIGN:
    case AS_AUG: {
        if (s->kind == AS_ASSIGN && s->ntargets > 0) return lower_unpack(c, s, out);
        const ast_expr *t = s->target;
        if (t->kind == AE_INDEX || t->kind == AE_ATTR) {
            binding *ab = t->kind == AE_INDEX && t->a->kind == AE_NAME ? lookup(c, t->a->name) : NULL;
            int scalar_array = ab && ab->kind == BK_ARRAY && !c->param_vt[ab->param];
            if (!scalar_array && is_place_form(c, t)) {
                ir_expr *v = lower_expr(c, s->value, out);
                place_store(c, t, s->value, v, s->kind == AS_AUG ? s->op : 0, out, s->line, s->col);
                return 0;
            }
        }
        if (t->kind == AE_INDEX) {
            if (t->a->kind == AE_ATTR) {
                err(c, t->line, t->col, "cannot assign to a shape (read-only)");
                return 0;
            }
            return lower_store(c, s, out);
        }
        if (t->kind != AE_NAME) {
            err(c, t->line, t->col, "cannot assign to this expression; expected a name or an array element");
            return 0;
        }
        ir_expr *v;
        if (s->kind == AS_AUG) {
            binding *b = lookup(c, t->name);
            if (!b) {
                err(c, t->line, t->col, "unknown name '%s' ('%s %s= e' needs '%s' assigned first)", t->str, t->str, op_text(s->op), t->str);
                return 0;
            }
            if (b->kind == BK_POISON) return 0;
            if (b->kind != BK_VAR) {
                assign_name(c, t, NULL, out, s->line, s->col); /* reports why it is read-only */
                return 0;
            }
            ir_expr *cur = b->vtype ? vvar_val(c, b->var, b->vtype, NULL, 0, t->line, t->col) : mk_var(c, b->var, t->line, t->col);
            ir_expr *rhs = lower_expr(c, s->value, out);
            v = rhs ? arith2(c, s->op, cur, rhs, out, s->line, s->col) : NULL;
            if (!v) return 0;
        } else {
            v = lower_expr(c, s->value, out);
        }
        assign_name(c, t, v, out, s->line, s->col);
        return 0;
    }
    case AS_EXPR: return lower_expr_stmt(c, s, out);
    case AS_IF: return lower_if(c, s, out);
    case AS_WHILE: return lower_while(c, s, out);
    case AS_FOR: return lower_for(c, s, out);
    case AS_BREAK:
    case AS_CONTINUE: {
        const char *kw = s->kind == AS_BREAK ? "break" : "continue";
        switch (fr->loopkind) {
        case LK_NONE:
            err(c, s->line, s->col, "'%s' outside a loop", kw);
            return 0;
        case LK_STATIC:
            err(c, s->line, s->col, "'%s' inside static(range(...)) is not supported (the loop is unrolled at compile time)", kw);
            return 0;
        case LK_PARALLEL:
            if (s->kind == AS_BREAK) {
                err(c, s->line, s->col, "'break' cannot leave a parallel loop (its iterations run concurrently); use an if around the rest of the body");
                return 0;
            }
            if (c->cflag < 0) {
                int saved = c->in_parallel;
                c->in_parallel = 1;
                c->cflag = new_var(c, "continue", DVM_T_BOOL, s->line, s->col);
                c->in_parallel = saved;
                if (c->cflag < 0) return 0;
            }
            push(c, out, mk_assign(c, c->cflag, mk_const_i(c, DVM_T_BOOL, 1, s->line, s->col), s->line, s->col));
            return ESC | TERM;
        case LK_NDRANGE:
            if (s->kind == AS_BREAK) {
                err(c, s->line, s->col, "'break' inside a nested ndrange loop is not supported; use nested range loops");
                return 0;
            }
            break;
        default: break;
        }
        push(c, out, mk_stmt(c, s->kind == AS_BREAK ? IR_BREAK : IR_CONTINUE, s->line, s->col));
        return TERM;
    }
    case AS_ASSERT: {
        ir_expr *cond = lower_cond(c, s->value, out, "the assert condition");
        if (!cond) return 0;
        ir_stmt *st = mk_stmt(c, IR_ASSERT, s->line, s->col);
        if (!st) return 0;
        st->e = cond;
        st->msg = s->msg ? s->msg : s->text;
        push(c, out, st);
        return 0;
    }
    case AS_RETURN: {
        if (!fr->h) {
            err(c, s->line, s->col, "'return' outside a helper: a kernel writes its results into arrays");
            return 0;
        }
        ir_expr *cv = lower_return(c, fr->h->f, s->value, out);
        if (!cv) return TERM;
        if (fr->R < 0) return TERM; /* simple mode never gets here */
        vassign(c, fr->R, cv, out, s->line, s->col);
        push(c, out, mk_assign(c, fr->D, mk_const_i(c, DVM_T_BOOL, 1, s->line, s->col), s->line, s->col));
        if (fr->loopdepth > 0) push(c, out, mk_stmt(c, IR_BREAK, s->line, s->col));
        return ESC | TERM;
    }
    }
    return 0;
}

/* ---- kernels ---- */
typedef struct top_list {
    ir_top *v;
    int n, cap;
} top_list;

static ir_top *new_top(ctx *c, top_list *l) {
    if (l->n == l->cap) {
        int nc = l->cap ? l->cap * 2 : 8;
        ir_top *v = dvm_arena_grow(c->a, l->v, (size_t)l->cap * sizeof *v, (size_t)nc * sizeof *v);
        if (!v) {
            c->oom = 1;
            return NULL;
        }
        l->v = v;
        l->cap = nc;
    }
    ir_top *t = &l->v[l->n++];
    memset(t, 0, sizeof *t);
    return t;
}

static void serial_tops(ctx *c, top_list *tops, ir_block *b) {
    for (int i = 0; i < b->n; i++) {
        ir_top *t = new_top(c, tops);
        if (!t) return;
        t->stmt = b->s[i];
        t->line = b->s[i]->line;
        t->col = b->s[i]->col;
    }
}

static void lower_parallel(ctx *c, const ast_stmt *s, top_list *tops) {
    loop_iter it;
    ir_block pre = {0};
    int bad = lower_iter(c, s, &it, &pre);
    serial_tops(c, tops, &pre);
    if (bad) return;
    for (int i = 0; i < s->ntargets; i++)
        if (check_loop_var(c, s->targets[i])) return;
    int idx[DVM_MAX_PAR_DIMS];
    for (int d = 0; d < it.n; d++) {
        const ast_expr *t = s->targets[d];
        idx[d] = ir_var_new(c->a, c->k, t->str, DVM_T_I32, IR_PINDEX, t->line, t->col);
        if (idx[d] < 0) {
            c->oom = 1;
            return;
        }
    }
    ir_top *top = new_top(c, tops);
    if (!top) return;
    int ti = (int)(top - tops->v);
    top->parallel = 1;
    top->ndim = it.n;
    top->start[0] = it.start;
    top->line = s->line;
    top->col = s->col;
    for (int d = 0; d < it.n; d++) {
        top->idx_var[d] = idx[d];
        top->stop[d] = it.stop[d];
    }
    int mark = scope_mark(c);
    for (int d = 0; d < it.n; d++) {
        binding *b = bind(c, s->targets[d]->name, BK_VAR, s->targets[d]->line, s->targets[d]->col);
        if (b) b->var = idx[d];
    }
    c->in_parallel = 1;
    c->cflag = -1;
    c->fr->loopkind = LK_PARALLEL;
    ir_block body = {0};
    lower_block(c, &s->body, &body);
    c->fr->loopkind = LK_NONE;
    c->in_parallel = 0;
    scope_pop(c, mark);
    if (c->cflag >= 0) { /* the continue flag starts each iteration cleared */
        ir_block b2 = {0};
        push(c, &b2, mk_assign(c, c->cflag, mk_const_i(c, DVM_T_BOOL, 0, s->line, s->col), s->line, s->col));
        for (int i = 0; i < body.n; i++) push(c, &b2, body.s[i]);
        body = b2;
    }
    c->cflag = -1;
    tops->v[ti].body = body; /* tops->v may have moved while the body was lowered */
}

static int is_serial_loop(const ast_stmt *s) {
    return s->kind == AS_FOR && s->value->kind == AE_CALL && !strcmp(s->value->str, "serial");
}

typedef struct loop_list {
    ir_loop *v;
    int n, cap;
} loop_list;

static void lower_top(ctx *c, const ast_stmt *s, top_list *tops, loop_list *loops, int *stop);

/* `for t in serial(range(...)):` at top level: its statements become tops of the loop */
static void lower_serial_loop(ctx *c, const ast_stmt *s, top_list *tops, loop_list *loops) {
    const ast_expr *e = s->value;
    const ast_expr *r = e->nargs == 1 ? e->args[0] : NULL;
    if (!r || r->kind != AE_CALL || strcmp(r->str, "range") || r->nargs < 1 || r->nargs > 2) {
        err(c, e->line, e->col, "serial(...) takes one range(stop) or range(start, stop)");
        return;
    }
    if (s->ntargets != 1) {
        err(c, s->targets[1]->line, s->targets[1]->col, "serial(range(...)) has one loop variable but %d were given", s->ntargets);
        return;
    }
    if (check_loop_var(c, s->targets[0])) return;
    ir_block pre = {0};
    ir_expr *b[2] = {NULL, NULL};
    for (int i = 0; i < r->nargs; i++) {
        b[i] = lower_typed(c, r->args[i], &pre, DVM_T_I32, "a range bound");
        if (b[i] && b[i]->type != DVM_T_I32) {
            err(c, r->args[i]->line, r->args[i]->col, "range bounds must be i32, got %s", tname(b[i]->type));
            b[i] = NULL;
        }
        if (!b[i]) return;
    }
    serial_tops(c, tops, &pre);
    if (loops->n == loops->cap) {
        int nc = loops->cap ? 2 * loops->cap : 4;
        ir_loop *v = dvm_arena_grow(c->a, loops->v, (size_t)loops->cap * sizeof *v, (size_t)nc * sizeof *v);
        if (!v) {
            c->oom = 1;
            return;
        }
        loops->v = v;
        loops->cap = nc;
    }
    const ast_expr *t = s->targets[0];
    ir_loop *L = &loops->v[loops->n];
    memset(L, 0, sizeof *L);
    L->var = new_var(c, t->str, DVM_T_I32, t->line, t->col);
    if (L->var < 0) return;
    L->start = r->nargs == 2 ? b[0] : NULL;
    L->stop = r->nargs == 2 ? b[1] : b[0];
    L->line = s->line;
    L->col = s->col;
    const int id = ++loops->n;
    int mark = scope_mark(c);
    binding *bd = bind(c, t->name, BK_VAR, t->line, t->col);
    if (bd) {
        bd->var = L->var;
        bd->loopvar = 1;
    }
    const int first = tops->n;
    int stop = 0;
    for (int i = 0; i < s->body.n && !c->oom && !stop; i++) {
        const ast_stmt *q = s->body.s[i];
        if (is_serial_loop(q)) {
            err(c, q->line, q->col, "serial loops of top-level statements do not nest; use range(...) inside a parallel loop");
            continue;
        }
        lower_top(c, q, tops, loops, &stop);
    }
    scope_pop(c, mark);
    for (int i = first; i < tops->n; i++) tops->v[i].loop = id;
}

static int is_parallel_for(const ast_stmt *s) {
    return s->kind == AS_FOR && s->value->kind == AE_CALL && (!strcmp(s->value->str, "range") || !strcmp(s->value->str, "ndrange"));
}

/* Starts lowering kernel k: its outermost frame kf (the caller's), no inlining under way. */
/* One statement of a kernel's body (or of a serial loop's): a parallel loop, or serial code. */
static void lower_top(ctx *c, const ast_stmt *s, top_list *tops, loop_list *loops, int *stop) {
    (void)loops;
    if (is_parallel_for(s)) {
        lower_parallel(c, s, tops);
        return;
    }
    ir_block b = {0};
    int r = lower_stmt(c, s, &b);
    serial_tops(c, tops, &b);
    if (r & TERM) *stop = 1;
}

static void begin_kernel(ctx *c, ir_kernel *k, frame *kf, int in_parallel) {
    memset(kf, 0, sizeof *kf);
    kf->id = ++c->nframes;
    kf->R = kf->D = -1;
    c->k = k;
    c->fr = kf;
    c->in_parallel = in_parallel;
    c->cflag = -1;
    c->ninline = 0;
    c->nstmts = 0;
    c->depth = c->edepth = 0;
}

/* The element types and declarations of f's parameters (c->param_vt, c->param_decl); -1 when out of memory. */
static int param_types(ctx *c, const ast_func *f) {
    c->param_vt = dvm_arena_alloc(c->a, (size_t)f->nparams + 1);
    c->param_decl = dvm_arena_alloc(c->a, sizeof(char *) * (size_t)(f->nparams + 1));
    if (!c->param_vt || !c->param_decl) return -1;
    for (int i = 0; i < f->nparams; i++) {
        const ast_param *ap = &f->params[i];
        c->param_vt[i] = ap->is_array && is_vt(ap->type) ? ap->type : 0;
        char buf[256];
        size_t at = (size_t)snprintf(buf, sizeof buf, "%s", tname(ap->type));
        for (int r = 0; r < ap->rank && at < sizeof buf - 24; r++) {
            if (ap->dim[r].is_sym) at += (size_t)snprintf(buf + at, sizeof buf - at, "%s%.*s", r ? ", " : "[", 64, ap->dim[r].str);
            else at += (size_t)snprintf(buf + at, sizeof buf - at, "%s%lld", r ? ", " : "[", (long long)ap->dim[r].value);
        }
        if (ap->rank) snprintf(buf + at, sizeof buf - at, "]");
        c->param_decl[i] = dvm_arena_strndup(c->a, buf, strlen(buf));
        if (!c->param_decl[i]) return -1;
    }
    return 0;
}

static ir_kernel *lower_kernel(ctx *c, ast_func *f) {
    ir_kernel *k = dvm_arena_alloc(c->a, sizeof *k);
    if (!k) {
        c->oom = 1;
        return NULL;
    }
    k->name = f->str;
    k->line = f->line;
    k->col = f->col;
    k->nparams = f->nparams;
    k->params = dvm_arena_alloc(c->a, sizeof(ir_param) * (size_t)(f->nparams + 1));
    k->syms = dvm_arena_alloc(c->a, sizeof(ir_sym) * (size_t)(f->nparams * DVM_MAX_RANK + 1));
    c->slot_of_param = dvm_arena_alloc(c->a, sizeof(int) * (size_t)(f->nparams + 1));
    ir_slot *slots = dvm_arena_alloc(c->a, sizeof(ir_slot) * (size_t)(f->nparams + 1));
    if (!k->params || !k->syms || !c->slot_of_param || !slots || param_types(c, f)) {
        c->oom = 1;
        return NULL;
    }
    frame kf;
    begin_kernel(c, k, &kf, 0);
    int mark = scope_mark(c);
    int nslots = 0;
    /* parameters: scalars become IR_PARAM variables, arrays slots; shape symbols in order of first appearance */
    for (int i = 0; i < f->nparams; i++) {
        const ast_param *ap = &f->params[i];
        ir_param *p = &k->params[i];
        p->name = ap->str;
        p->is_array = ap->is_array;
        p->type = c->param_vt[i] ? DVM_T_F32 : ap->type;
        p->rank = ap->rank + (is_mat(ap->type) ? 2 : is_vec(ap->type) ? 1 : 0);
        p->var = -1;
        if (p->rank > DVM_MAX_RANK) {
            err(c, ap->line, ap->col, "'%s: %s' has %d axes with the %s's own; arrays have at most %d", ap->str, c->param_decl[i], p->rank, tname(ap->type),
                DVM_MAX_RANK);
            p->rank = DVM_MAX_RANK;
        }
        p->line = ap->line;
        p->col = ap->col;
        c->slot_of_param[i] = -1;
        binding *prev = lookup(c, ap->name);
        if (prev) {
            err(c, ap->line, ap->col, "'%s' is declared twice in kernel '%s' (first at %d:%d)", ap->str, f->str, prev->line, prev->col);
            continue;
        }
        if (is_reserved(ap->str)) {
            err(c, ap->line, ap->col, "'%s' is reserved and cannot name a parameter", ap->str);
            continue;
        }
        if (ap->is_array) {
            c->slot_of_param[i] = nslots;
            slots[nslots].param = i;
            slots[nslots].role = DVM_ROLE_PRIMAL;
            nslots++;
            binding *b = bind(c, ap->name, BK_ARRAY, ap->line, ap->col);
            if (b) b->param = i;
        } else {
            p->var = ir_var_new(c->a, k, ap->str, ap->type, IR_PARAM, ap->line, ap->col);
            if (p->var < 0) {
                c->oom = 1;
                return NULL;
            }
            k->vars[p->var].param = i;
            binding *b = bind(c, ap->name, BK_VAR, ap->line, ap->col);
            if (b) b->var = p->var;
        }
    }
    for (int i = 0; i < f->nparams; i++) {
        const ast_param *ap = &f->params[i];
        ir_param *p = &k->params[i];
        for (int r = ap->rank; r < p->rank; r++) p->dim[r] = vdim(ap->type); /* a vector's or matrix's axes */
        for (int r = 0; r < ap->rank; r++) {
            const ast_dim *d = &ap->dim[r];
            if (!d->is_sym) {
                p->dim[r] = (int32_t)d->value;
                continue;
            }
            binding *b = lookup(c, d->name);
            if (b && b->kind == BK_VAR && c->k->vars[b->var].storage == IR_SHAPESYM) {
                p->dim[r] = -(c->k->vars[b->var].param + 1);
                continue;
            }
            if (b) {
                err(c, d->line, d->col, "'%s' names both a shape symbol and a parameter of kernel '%s'", d->str, f->str);
                continue;
            }
            if (is_reserved(d->str)) {
                err(c, d->line, d->col, "'%s' is reserved and cannot name a shape symbol", d->str);
                continue;
            }
            int s = k->nsyms++;
            int var = ir_var_new(c->a, k, d->str, DVM_T_I32, IR_SHAPESYM, d->line, d->col);
            if (var < 0) {
                c->oom = 1;
                return NULL;
            }
            k->vars[var].param = s;
            k->syms[s].name = d->str;
            k->syms[s].var = var;
            p->dim[r] = -(s + 1);
            binding *nb = bind(c, d->name, BK_VAR, d->line, d->col);
            if (nb) nb->var = var;
        }
    }
    top_list tops = {0};
    loop_list loops = {0};
    int stop = 0;
    for (int i = 0; i < f->body.n && !c->oom && !stop; i++) {
        const ast_stmt *s = f->body.s[i];
        if (is_serial_loop(s)) lower_serial_loop(c, s, &tops, &loops);
        else lower_top(c, s, &tops, &loops, &stop);
    }
    scope_pop(c, mark);
    ir_variant *v = &k->v[DVM_V_FORWARD];
    v->present = 1;
    v->tops = tops.v;
    v->ntops = tops.n;
    v->loops = loops.v;
    v->nloops = loops.n;
    v->slots = slots;
    v->nslots = nslots;
    return k;
}

/* A helper no kernel calls is still checked: inlined once into a scratch kernel whose
 * parameters are the helper's own. */
static void check_unused_helper(ctx *c, helper_info *h) {
    ast_func *f = h->f;
    ir_kernel *k = dvm_arena_alloc(c->a, sizeof *k);
    ast_expr *call = dvm_arena_alloc(c->a, sizeof *call);
    ast_expr **args = dvm_arena_alloc(c->a, sizeof(ast_expr *) * (size_t)(f->nparams + 1));
    ast_expr *names = dvm_arena_alloc(c->a, sizeof(ast_expr) * (size_t)(f->nparams + 1));
    c->slot_of_param = dvm_arena_alloc(c->a, sizeof(int) * (size_t)(f->nparams + 1));
    if (k) {
        k->params = dvm_arena_alloc(c->a, sizeof(ir_param) * (size_t)(f->nparams + 1));
        k->syms = dvm_arena_alloc(c->a, sizeof(ir_sym) * (size_t)(f->nparams * DVM_MAX_RANK + 1));
    }
    if (!k || !call || !args || !names || !c->slot_of_param || !k->params || !k->syms || param_types(c, f)) {
        c->oom = 1;
        return;
    }
    k->name = f->str;
    k->nparams = f->nparams;
    frame kf;
    begin_kernel(c, k, &kf, 1);
    int mark = scope_mark(c);
    for (int i = 0; i < f->nparams; i++) {
        const ast_param *ap = &f->params[i];
        ir_param *p = &k->params[i];
        p->name = ap->str;
        p->is_array = ap->is_array;
        p->type = c->param_vt[i] ? DVM_T_F32 : ap->type;
        p->rank = ap->rank + (c->param_vt[i] ? (is_mat(ap->type) ? 2 : 1) : 0);
        if (p->rank > DVM_MAX_RANK) {
            err(c, ap->line, ap->col, "'%s: %s' has %d axes with the %s's own; arrays have at most %d", ap->str, c->param_decl[i], p->rank, tname(ap->type),
                DVM_MAX_RANK);
            p->rank = DVM_MAX_RANK;
        }
        for (int r = ap->rank; r < p->rank; r++) p->dim[r] = vdim(ap->type);
        c->slot_of_param[i] = i;
        if (ap->is_array) {
            for (int r = 0; r < ap->rank; r++) {
                if (!ap->dim[r].is_sym) {
                    p->dim[r] = (int32_t)ap->dim[r].value;
                    continue;
                }
                int sv = ir_var_new(c->a, k, ap->dim[r].str, DVM_T_I32, IR_SHAPESYM, ap->line, ap->col);
                if (sv < 0) {
                    c->oom = 1;
                    return;
                }
                k->syms[k->nsyms].name = ap->dim[r].str;
                k->syms[k->nsyms].var = sv;
                p->dim[r] = -(++k->nsyms);
            }
            binding *b = bind(c, ap->name, BK_ARRAY, ap->line, ap->col);
            if (b) b->param = i;
        } else {
            int v = new_vvar(c, ap->str, ap->type, NULL, 0, ap->line, ap->col);
            binding *b = v >= 0 ? bind(c, ap->name, BK_VAR, ap->line, ap->col) : NULL;
            if (b) {
                b->var = v;
                b->vtype = is_vt(ap->type) ? ap->type : 0;
            }
        }
        names[i].kind = AE_NAME;
        names[i].line = ap->line;
        names[i].col = ap->col;
        names[i].name = ap->name;
        names[i].str = ap->str;
        args[i] = &names[i];
    }
    call->kind = AE_CALL;
    call->line = f->line;
    call->col = f->col;
    call->name = f->name;
    call->str = f->str;
    call->args = args;
    call->nargs = f->nparams;
    ir_block scratch = {0};
    lower_helper_call(c, h, call, &scratch);
    scope_pop(c, mark);
    if (c->oom == 2) c->oom = 0;
}

ir_module *dvm_front(dvm_arena *a, const char *src, size_t len, const char *filename, dvm_diags *d) {
    if (!a || !d) return NULL;
    if (!src) len = 0;
    if (len > 0x7fffffff) {
        dvm_diag(d, 0, 0, "source file is too large");
        return NULL;
    }
    dvm_lexed lx;
    if (dvm_lex(a, src ? src : "", len, d, &lx) || !lx.toks || lx.ntoks == 0) return NULL;
    ast_module *am = dvm_parse(a, src ? src : "", &lx, d);
    if (!am || d->nerrors) return NULL;

    ctx C, *c = &C;
    memset(c, 0, sizeof *c);
    c->a = a;
    c->d = d;
    c->src = src;
    c->lx = &lx;
    c->am = am;
    size_t nn = (size_t)lx.nnames + 1;
    c->head = dvm_arena_alloc(a, nn * sizeof *c->head);
    c->expired = dvm_arena_alloc(a, nn * sizeof *c->expired);
    c->func_of_name = dvm_arena_alloc(a, nn * sizeof(int));
    c->helpers = dvm_arena_alloc(a, sizeof(helper_info) * (size_t)(am->nfuncs + 1));
    ir_module *m = dvm_arena_alloc(a, sizeof *m);
    if (!c->head || !c->expired || !c->func_of_name || !c->helpers || !m) {
        dvm_diag(d, 0, 0, "out of memory");
        return NULL;
    }
    for (size_t i = 0; i < nn; i++) c->func_of_name[i] = -1;
    int nkernels = 0;
    for (int i = 0; i < am->nfuncs; i++) {
        ast_func *f = am->funcs[i];
        int prev = c->func_of_name[f->name];
        if (prev >= 0) {
            ast_func *g = am->funcs[prev];
            if (g->is_kernel == f->is_kernel)
                err(c, f->line, f->col, "%s '%s' is defined twice (first at %d:%d)", f->is_kernel ? "kernel" : "helper", f->str, g->line, g->col);
            else
                err(c, f->line, f->col, "'%s' is defined both as a kernel and as a helper (first at %d:%d)", f->str, g->line, g->col);
            continue;
        }
        if (find_builtin(f->str) || is_reserved(f->str)) {
            err(c, f->line, f->col, "'%s' is the name of a builtin; choose another name", f->str);
            continue;
        }
        c->func_of_name[f->name] = i;
        c->helpers[i].f = f;
        if (f->is_kernel) nkernels++;
    }
    for (int i = 0; i < am->nfuncs; i++)
        if (!am->funcs[i]->is_kernel && c->helpers[i].f) analyze_helper(c, &c->helpers[i]);
    m->source_name = filename ? dvm_arena_strndup(a, filename, strlen(filename)) : "<source>";
    m->arena = a;
    m->kernels = dvm_arena_alloc(a, sizeof(ir_kernel *) * (size_t)(nkernels + 1));
    if (!m->kernels) {
        dvm_diag(d, 0, 0, "out of memory");
        return NULL;
    }
    for (int i = 0; i < am->nfuncs && !c->oom; i++) {
        ast_func *f = am->funcs[i];
        if (!f->is_kernel || c->helpers[i].f != f) continue;
        ir_kernel *k = lower_kernel(c, f);
        if (k) m->kernels[m->nkernels++] = k;
        if (c->oom == 2) c->oom = 0; /* too large: reported; the next kernel is checked on its own */
    }
    for (int i = 0; i < am->nfuncs && !c->oom; i++)
        if (!am->funcs[i]->is_kernel && c->helpers[i].f == am->funcs[i] && c->helpers[i].ok && !c->helpers[i].used)
            check_unused_helper(c, &c->helpers[i]);
    if (c->oom == 1) dvm_diag(d, 0, 0, "out of memory");
    if (d->nerrors) return NULL;
    if (m->nkernels == 0) {
        dvm_diag(d, 0, 0, "no kernel found: declare one with 'kernel NAME(...):'");
        return NULL;
    }
    return m;
}
