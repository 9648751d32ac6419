/* ir.c: constructors for the IR and ir_dump, its readable printed form. */
#include "compiler/ir.h"
#include <stdio.h>
#include <string.h>

ir_expr *ir_expr_new(dvm_arena *a, int kind, int type, int line, int col) {
    ir_expr *e = dvm_arena_alloc(a, sizeof *e);
    if (!e) return NULL;
    e->kind = (uint8_t)kind;
    e->type = (uint8_t)type;
    e->line = line;
    e->col = col;
    e->var = -1;
    e->slot = -1;
    return e;
}

ir_stmt *ir_stmt_new(dvm_arena *a, int kind, int line, int col) {
    ir_stmt *s = dvm_arena_alloc(a, sizeof *s);
    if (!s) return NULL;
    s->kind = (uint8_t)kind;
    s->line = line;
    s->col = col;
    s->var = -1;
    s->slot = -1;
    s->stack = -1;
    return s;
}

void ir_block_push(dvm_arena *a, ir_block *b, ir_stmt *s) {
    if (!s) return;
    if (b->n == b->cap) {
        int nc = b->cap ? b->cap * 2 : 4;
        ir_stmt **v = dvm_arena_grow(a, b->s, (size_t)b->cap * sizeof *v, (size_t)nc * sizeof *v);
        if (!v) return;
        b->s = v;
        b->cap = nc;
    }
    b->s[b->n++] = s;
}

int ir_var_new(dvm_arena *a, ir_kernel *k, const char *name, int type, int storage, int line, int col) {
    if (k->nvars == k->capvars) {
        int nc = k->capvars ? k->capvars * 2 : 16;
        ir_var *v = dvm_arena_grow(a, k->vars, (size_t)k->capvars * sizeof *v, (size_t)nc * sizeof *v);
        if (!v) return -1;
        k->vars = v;
        k->capvars = nc;
    }
    ir_var *v = &k->vars[k->nvars];
    memset(v, 0, sizeof *v);
    v->name = name;
    v->type = (uint8_t)type;
    v->storage = (uint8_t)storage;
    v->line = line;
    v->col = col;
    v->param = -1;
    v->primal = -1;
    return k->nvars++;
}

ir_size *ir_size_new(dvm_arena *a, int kind) {
    ir_size *s = dvm_arena_alloc(a, sizeof *s);
    if (!s) return NULL;
    s->kind = (uint8_t)kind;
    s->slot = s->axis = s->var = -1;
    return s;
}

/* ---- dump ---- */
typedef struct dumper {
    const ir_kernel *k;
    const ir_variant *v;
    void (*out)(void *ctx, const char *text);
    void *ctx;
    char buf[512];
    int n;
} dumper;

static void flush(dumper *D) {
    if (D->n) {
        D->buf[D->n] = 0;
        D->out(D->ctx, D->buf);
        D->n = 0;
    }
}

static void put(dumper *D, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
#include <stdarg.h>
static void put(dumper *D, const char *fmt, ...) {
    char tmp[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if (n >= (int)sizeof tmp) n = (int)sizeof tmp - 1;
    if (D->n + n >= (int)sizeof D->buf - 1) flush(D);
    if (n >= (int)sizeof D->buf - 1) {
        D->out(D->ctx, tmp);
        return;
    }
    memcpy(D->buf + D->n, tmp, (size_t)n);
    D->n += n;
}

static const char *tname(int t) {
    switch (t) {
    case DVM_T_F32: return "f32";
    case DVM_T_I32: return "i32";
    case DVM_T_BOOL: return "bool";
    default: return "void";
    }
}

/* Names straight from ops.def, so that the dump needs no other part of the library. */
static const char *const op_names[256] = {
#define DVM_OP(name, num, fmt, flags, props, doc) [num] = #name,
#define DVM_DOP DVM_OP
#include "bytecode/ops.def"
#undef DVM_OP
#undef DVM_DOP
};

static const char *opname(int op) {
    const char *n = op >= 0 && op < 256 ? op_names[op] : NULL;
    return n ? n : "?";
}

static void var_ref(dumper *D, int v) {
    if (v >= 0 && v < D->k->nvars) put(D, "%s%%%d", D->k->vars[v].name ? D->k->vars[v].name : "", v);
    else put(D, "?%%%d", v);
}

static const char *slot_name(dumper *D, int slot) {
    static const char *const role[] = {"", ".grad", ".dual"};
    if (!D->v || slot < 0 || slot >= D->v->nslots) return "?slot";
    const ir_slot *s = &D->v->slots[slot];
    if (s->param < 0 || s->param >= D->k->nparams) return "?slot";
    (void)role;
    return D->k->params[s->param].name;
}
static const char *slot_role(dumper *D, int slot) {
    if (!D->v || slot < 0 || slot >= D->v->nslots) return "";
    int r = D->v->slots[slot].role;
    return r == DVM_ROLE_GRAD ? ".grad" : r == DVM_ROLE_DUAL ? ".dual" : "";
}

static void expr(dumper *D, const ir_expr *e);

static void indices(dumper *D, int slot, int n, ir_expr *const *idx) {
    put(D, "%s%s[", slot_name(D, slot), slot_role(D, slot));
    for (int i = 0; i < n; i++) {
        if (i) put(D, ", ");
        expr(D, idx[i]);
    }
    put(D, "]");
}

static void expr(dumper *D, const ir_expr *e) {
    if (!e) {
        put(D, "<null>");
        return;
    }
    switch (e->kind) {
    case IR_CONST:
        if (e->type == DVM_T_F32) put(D, "%.9gf", (double)e->k.f);
        else if (e->type == DVM_T_BOOL) put(D, "%s", e->k.i ? "True" : "False");
        else put(D, "%d", (int)e->k.i);
        break;
    case IR_VAR: var_ref(D, e->var); break;
    case IR_UN:
        put(D, "%s(", opname(e->op));
        expr(D, e->a);
        put(D, ")");
        break;
    case IR_BIN:
        put(D, "%s(", opname(e->op));
        expr(D, e->a);
        put(D, ", ");
        expr(D, e->b);
        put(D, ")");
        break;
    case IR_SELECT:
        put(D, "select(");
        expr(D, e->a);
        put(D, ", ");
        expr(D, e->b);
        put(D, ", ");
        expr(D, e->c);
        put(D, ")");
        break;
    case IR_COND:
        put(D, "(");
        expr(D, e->b);
        put(D, " if ");
        expr(D, e->a);
        put(D, " else ");
        expr(D, e->c);
        put(D, ")");
        break;
    case IR_AND:
    case IR_OR:
        put(D, "(");
        expr(D, e->a);
        put(D, e->kind == IR_AND ? " and " : " or ");
        expr(D, e->b);
        put(D, ")");
        break;
    case IR_LOAD: indices(D, e->slot, e->nidx, e->idx); break;
    case IR_SHAPE: put(D, "%s%s.shape[%d]", slot_name(D, e->slot), slot_role(D, e->slot), e->axis); break;
    default: put(D, "<expr kind %d>", e->kind);
    }
}

static void size_expr(dumper *D, const ir_size *s) {
    if (!s) {
        put(D, "<null>");
        return;
    }
    static const char *const nm[] = {"const", "add", "sub", "mul", "max", "range", "var", "load", "shape", "param", "default"};
    switch (s->kind) {
    case IRS_CONST: put(D, "%lld", (long long)s->value); break;
    case IRS_ADD: case IRS_SUB: case IRS_MUL: case IRS_MAX:
        put(D, "%s(", nm[s->kind]);
        size_expr(D, s->a);
        put(D, ", ");
        size_expr(D, s->b);
        put(D, ")");
        break;
    case IRS_RANGE:
        put(D, "max_over(v%d in [", s->depth);
        size_expr(D, s->a);
        put(D, ", ");
        size_expr(D, s->b);
        put(D, "): ");
        size_expr(D, s->body);
        put(D, ")");
        break;
    case IRS_VAR: put(D, "v%d", s->depth); break;
    case IRS_LOAD:
        put(D, "%s[", slot_name(D, s->slot));
        size_expr(D, s->a);
        put(D, "]");
        break;
    case IRS_SHAPE: put(D, "%s.shape[%d]", slot_name(D, s->slot), s->axis); break;
    case IRS_PARAM: var_ref(D, s->var); break;
    case IRS_DEFAULT: put(D, "default"); break;
    default: put(D, "<size kind %d>", s->kind);
    }
}

static void indent(dumper *D, int depth) {
    for (int i = 0; i < depth; i++) put(D, "  ");
}

static void block(dumper *D, const ir_block *b, int depth);

static void stmt(dumper *D, const ir_stmt *s, int depth) {
    indent(D, depth);
    switch (s->kind) {
    case IR_ASSIGN:
        var_ref(D, s->var);
        put(D, " = ");
        expr(D, s->e);
        break;
    case IR_STORE:
        indices(D, s->slot, s->nidx, s->idx);
        put(D, " = ");
        expr(D, s->e);
        break;
    case IR_ATOMIC:
        put(D, "%s ", opname(s->op));
        indices(D, s->slot, s->nidx, s->idx);
        put(D, ", ");
        expr(D, s->e);
        break;
    case IR_IF:
        put(D, "if ");
        expr(D, s->e);
        put(D, ":  @%d:%d\n", s->line, s->col);
        block(D, &s->body, depth + 1);
        if (s->orelse.n) {
            indent(D, depth);
            put(D, "else:\n");
            block(D, &s->orelse, depth + 1);
        }
        return;
    case IR_WHILE:
        put(D, "while ");
        expr(D, s->e);
        put(D, ":  @%d:%d\n", s->line, s->col);
        block(D, &s->body, depth + 1);
        return;
    case IR_FOR:
        put(D, "for ");
        var_ref(D, s->var);
        put(D, " in range(");
        expr(D, s->e);
        put(D, ", ");
        expr(D, s->e2);
        put(D, "):  @%d:%d\n", s->line, s->col);
        block(D, &s->body, depth + 1);
        return;
    case IR_BREAK: put(D, "break"); break;
    case IR_CONTINUE: put(D, "continue"); break;
    case IR_ASSERT:
        put(D, "assert ");
        expr(D, s->e);
        if (s->msg) put(D, ", \"%s\"", s->msg);
        break;
    case IR_PUSH:
        put(D, "push s%d, ", s->stack);
        expr(D, s->e);
        break;
    case IR_POP:
        var_ref(D, s->var);
        put(D, " = pop s%d", s->stack);
        break;
    case IR_UATOMIC_ADD:
        put(D, "uatomic_add ");
        var_ref(D, s->var);
        put(D, ", ");
        expr(D, s->e);
        break;
    default: put(D, "<stmt kind %d>", s->kind);
    }
    put(D, "  @%d:%d\n", s->line, s->col);
}

static void block(dumper *D, const ir_block *b, int depth) {
    if (b->n == 0) {
        indent(D, depth);
        put(D, "pass\n");
    }
    for (int i = 0; i < b->n; i++) stmt(D, b->s[i], depth);
}

void ir_dump(const ir_kernel *k, void (*out)(void *ctx, const char *text), void *ctx) {
    static const char *const storage[] = {"local", "global", "param", "shapesym", "pindex"};
    static const char *const vname[] = {"forward", "adjoint", "tangent"};
    static const char *const rname[] = {"primal", "grad", "dual"};
    dumper D0, *D = &D0;
    memset(D, 0, sizeof *D);
    D->k = k;
    D->out = out;
    D->ctx = ctx;
    put(D, "kernel %s(", k->name);
    for (int i = 0; i < k->nparams; i++) {
        const ir_param *p = &k->params[i];
        put(D, "%s%s: %s", i ? ", " : "", p->name, tname(p->type));
        if (p->is_array) {
            put(D, "[");
            for (int r = 0; r < p->rank; r++) {
                int32_t dm = p->dim[r];
                if (dm >= 0) put(D, "%s%d", r ? ", " : "", (int)dm);
                else if (-dm - 1 < k->nsyms) put(D, "%s%s", r ? ", " : "", k->syms[-dm - 1].name);
                else put(D, "%s?", r ? ", " : "");
            }
            put(D, "]");
        }
    }
    put(D, ")  @%d:%d\n", k->line, k->col);
    put(D, "vars:\n");
    for (int i = 0; i < k->nvars; i++) {
        const ir_var *v = &k->vars[i];
        put(D, "  %%%d %s: %s %s", i, v->name ? v->name : "", tname(v->type), v->storage < 5 ? storage[v->storage] : "?");
        if (v->storage == IR_PARAM || v->storage == IR_SHAPESYM) put(D, " #%d", v->param);
        if (v->primal >= 0) put(D, " of %%%d", v->primal);
        put(D, "  @%d:%d\n", v->line, v->col);
    }
    for (int vi = 0; vi < DVM_V_COUNT; vi++) {
        const ir_variant *v = &k->v[vi];
        if (!v->present) continue;
        D->v = v;
        put(D, "%s:\n  slots:", vname[vi]);
        for (int s = 0; s < v->nslots; s++) {
            int p = v->slots[s].param;
            put(D, " %d=%s.%s", s, p >= 0 && p < k->nparams ? k->params[p].name : "?", v->slots[s].role < 3 ? rname[v->slots[s].role] : "?");
        }
        put(D, "\n");
        for (int s = 0; s < v->nstacks; s++) {
            const ir_stack *st = &v->stacks[s];
            put(D, "  stack s%d %s '%s' var %d line %d%s size ", s, tname(st->type), st->name ? st->name : "", st->var, st->line, st->serial ? " serial" : "");
            size_expr(D, st->size);
            put(D, "\n");
        }
        for (int t = 0; t < v->ntops; t++) {
            const ir_top *top = &v->tops[t];
            if (!top->parallel) {
                put(D, "  serial  @%d:%d\n", top->line, top->col);
                if (top->stmt) stmt(D, top->stmt, 2);
                continue;
            }
            put(D, "  parallel ");
            for (int d = 0; d < top->ndim; d++) {
                if (d) put(D, ", ");
                var_ref(D, top->idx_var[d]);
            }
            put(D, " in %s(", top->ndim > 1 ? "ndrange" : "range");
            for (int d = 0; d < top->ndim; d++) {
                if (d) put(D, ", ");
                if (top->start[d]) {
                    if (top->ndim > 1) put(D, "(");
                    expr(D, top->start[d]);
                    put(D, top->ndim > 1 ? " .. " : ", ");
                }
                expr(D, top->stop[d]);
                if (top->start[d] && top->ndim > 1) put(D, ")");
            }
            put(D, "):  @%d:%d\n", top->line, top->col);
            block(D, &top->body, 2);
        }
    }
    flush(D);
}
