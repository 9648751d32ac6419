/* emit_size.c: the capacity of each adstack. The ir_size tree is folded first: a constant
 * becomes DVM_SZ_CONSTANT, anything under IRS_DEFAULT makes the whole stack DVM_SZ_DEFAULT,
 * and the rest becomes a size program (ops.def SZ_*): node k's value lands in slot k,
 * operands before their users, an SZ_RANGE node before its body (whose root is its last
 * node), the capacity in the last node. Constant subtrees become one SZ_CONST. */
#include "compiler/emit_internal.h"
#include <stdlib.h>
#include <string.h>

typedef struct sfold {
    int is_const, dflt, bad;
    int64_t v;
} sfold;

static int64_t sat(int64_t v) {
    if (v > DVM_SIZE_SAT) return DVM_SIZE_SAT;
    if (v < -DVM_SIZE_SAT) return -DVM_SIZE_SAT;
    return v;
}

static int64_t sat_mul(int64_t a, int64_t b) {
    if (a == 0 || b == 0) return 0;
    int64_t aa = a < 0 ? -a : a, ab = b < 0 ? -b : b;
    if (aa > DVM_SIZE_SAT / ab) return (a < 0) != (b < 0) ? -DVM_SIZE_SAT : DVM_SIZE_SAT;
    return sat(a * b);
}

typedef struct sctx {
    emit_variant *ev;
    const ir_stack *st;
    dvm_node *nodes;
    int n, cap;
    int fallback; /* a limit of the encoding was hit: the stack gets the default capacity */
} sctx;

static sfold bad_tree(sctx *c, const char *what) {
    dvm_diag(c->ev->ep->d, c->st->line, 0, "kernel '%s': internal error: size of adstack '%s': %s",
             c->ev->k->name, c->st->name ? c->st->name : "", what);
    sfold f = {0, 0, 1, 0};
    return f;
}

static int primal_slot_ok(sctx *c, int slot) {
    return slot >= 0 && slot < c->ev->v->nslots && c->ev->v->slots[slot].role == DVM_ROLE_PRIMAL;
}

static sfold fold(sctx *c, const ir_size *s, int depth) {
    sfold r = {0, 0, 0, 0};
    if (!s) return bad_tree(c, "missing node");
    switch (s->kind) {
    case IRS_CONST:
        r.is_const = 1;
        r.v = sat(s->value);
        return r;
    case IRS_ADD: case IRS_SUB: case IRS_MUL: case IRS_MAX: {
        sfold a = fold(c, s->a, depth), b = fold(c, s->b, depth);
        if (a.bad || b.bad) return a.bad ? a : b;
        if (a.dflt || b.dflt) {
            r.dflt = 1;
            return r;
        }
        if (!a.is_const || !b.is_const) return r;
        r.is_const = 1;
        switch (s->kind) {
        case IRS_ADD: r.v = sat(a.v + b.v); break;
        case IRS_SUB: r.v = a.v - b.v > 0 ? a.v - b.v : 0; break;
        case IRS_MUL: r.v = sat_mul(a.v, b.v); break;
        default: r.v = a.v > b.v ? a.v : b.v; break;
        }
        return r;
    }
    case IRS_RANGE: {
        sfold a = fold(c, s->a, depth), b = fold(c, s->b, depth), body = fold(c, s->body, depth + 1);
        if (a.bad || b.bad || body.bad) return a.bad ? a : b.bad ? b : body;
        if (a.dflt || b.dflt || body.dflt) {
            r.dflt = 1;
            return r;
        }
        if (a.is_const && b.is_const && (b.v <= a.v || body.is_const)) {
            r.is_const = 1;
            r.v = b.v <= a.v ? 0 : body.v;
        }
        return r;
    }
    case IRS_VAR:
        if (s->depth < 0 || s->depth >= depth) return bad_tree(c, "bound variable outside its range");
        return r;
    case IRS_LOAD: {
        if (!primal_slot_ok(c, s->slot) || c->ev->k->params[c->ev->v->slots[s->slot].param].type != DVM_T_I32)
            return bad_tree(c, "load from an array that is not a primal i32 array");
        sfold a = fold(c, s->a, depth);
        if (a.bad) return a;
        r.dflt = a.dflt;
        return r;
    }
    case IRS_SHAPE: {
        if (!primal_slot_ok(c, s->slot)) return bad_tree(c, "shape of an array slot that is not primal");
        const ir_param *p = &c->ev->k->params[c->ev->v->slots[s->slot].param];
        if (s->axis < 0 || s->axis >= p->rank) return bad_tree(c, "shape axis out of range");
        if (p->dim[s->axis] >= 0) {
            r.is_const = 1;
            r.v = p->dim[s->axis];
        }
        return r;
    }
    case IRS_PARAM: {
        if (s->var < 0 || s->var >= c->ev->k->nvars) return bad_tree(c, "unknown variable");
        const ir_var *v = &c->ev->k->vars[s->var];
        if (!(v->storage == IR_SHAPESYM || (v->storage == IR_PARAM && v->type == DVM_T_I32)))
            return bad_tree(c, "a size reads a variable that is not an i32 parameter or shape symbol");
        return r;
    }
    case IRS_DEFAULT:
        r.dflt = 1;
        return r;
    default:
        return bad_tree(c, "unknown node kind");
    }
}

static int put(sctx *c, int op, int x, int a, int b, int cc) {
    if (c->n >= DVM_MAX_TASK_NODES) {
        c->fallback = 1;
        return -1;
    }
    if (c->n == c->cap) {
        int nc = c->cap ? c->cap * 2 : 32;
        dvm_node *p = realloc(c->nodes, sizeof *p * (size_t)nc);
        if (!p) {
            c->ev->ep->oom = 1;
            c->fallback = 1;
            return -1;
        }
        c->nodes = p;
        c->cap = nc;
    }
    dvm_node n = {(uint8_t)op, (uint8_t)x, (uint16_t)a, (uint16_t)b, (uint16_t)cc};
    c->nodes[c->n] = n;
    return c->n++;
}

static int gen(sctx *c, const ir_size *s, int depth);

/* Like gen, but the value ends up in the last node (a range body's root and the
 * capacity must be last; a range's own value sits before its body: copy it). */
static int gen_last(sctx *c, const ir_size *s, int depth) {
    int r = gen(c, s, depth);
    if (r >= 0 && r != c->n - 1) r = put(c, DVM_OP_SZ_MAX, 0, r, r, 0);
    return r;
}

/* Appends the program of s; returns the slot of its value, -1 on fallback. */
static int gen(sctx *c, const ir_size *s, int depth) {
    if (c->fallback) return -1;
    sfold f = fold(c, s, depth);
    if (f.bad || f.dflt) {
        c->fallback = 1;
        return -1;
    }
    if (f.is_const) {
        if (f.v < 0 || f.v > 0xFFFFFFFFll) { /* SZ_CONST holds 0..2^32-1 */
            c->fallback = 1;
            return -1;
        }
        return put(c, DVM_OP_SZ_CONST, 0, (int)(f.v & 0xFFFF), (int)(f.v >> 16), 0);
    }
    switch (s->kind) {
    case IRS_ADD: case IRS_SUB: case IRS_MUL: case IRS_MAX: {
        static const int op[] = {[IRS_ADD] = DVM_OP_SZ_ADD, [IRS_SUB] = DVM_OP_SZ_SUB,
                                 [IRS_MUL] = DVM_OP_SZ_MUL, [IRS_MAX] = DVM_OP_SZ_MAX};
        int a = gen(c, s->a, depth);
        int b = gen(c, s->b, depth);
        if (a < 0 || b < 0) return -1;
        return put(c, op[s->kind], 0, a, b, 0);
    }
    case IRS_RANGE: {
        if (depth + 1 > DVM_MAX_SIZE_DEPTH) {
            c->fallback = 1;
            return -1;
        }
        int a = gen(c, s->a, depth);
        int b = gen(c, s->b, depth);
        if (a < 0 || b < 0) return -1;
        int k = put(c, DVM_OP_SZ_RANGE, 0, a, b, 0);
        if (k < 0 || gen_last(c, s->body, depth + 1) < 0) return -1;
        c->nodes[k].c = (uint16_t)c->n; /* end of the body; its root is node n-1 */
        return k;
    }
    case IRS_VAR:
        return put(c, DVM_OP_SZ_VAR, 0, s->depth, 0, 0);
    case IRS_LOAD: {
        int a = gen(c, s->a, depth);
        if (a < 0) return -1;
        return put(c, DVM_OP_SZ_LOAD, s->slot, a, 0, 0);
    }
    case IRS_SHAPE:
        return put(c, DVM_OP_SZ_SHAPE, s->slot, s->axis, 0, 0);
    case IRS_PARAM: {
        int u = emit_var_uslot(c->ev, s->var);
        if (u < 0) {
            c->fallback = 1;
            return -1;
        }
        return put(c, DVM_OP_SZ_PARAM, 0, u, 0, 0);
    }
    default:
        c->fallback = 1;
        return -1;
    }
}

int emit_stack_size(emit_variant *ev, const ir_stack *st, dvm_stack_desc *sd) {
    sctx c;
    memset(&c, 0, sizeof c);
    c.ev = ev;
    c.st = st;
    int nerr = ev->ep->d->nerrors;
    sfold f = fold(&c, st->size, 0);
    if (f.bad || ev->ep->d->nerrors != nerr) {
        ev->failed = 1;
        return 1;
    }
    if (f.dflt) {
        sd->sizing = DVM_SZ_DEFAULT;
        return 0;
    }
    if (f.is_const) {
        sd->sizing = DVM_SZ_CONSTANT;
        sd->const_cap = f.v <= 0 ? 0 : f.v > 0xFFFFFFFFll ? 0xFFFFFFFFu : (uint32_t)f.v;
        return 0;
    }
    gen_last(&c, st->size, 0);
    if (ev->ep->oom || ev->failed) {
        free(c.nodes);
        return 1;
    }
    if (c.fallback) {
        /* the formula does not fit the encoding: the default capacity, overflow-checked */
        sd->sizing = DVM_SZ_DEFAULT;
        free(c.nodes);
        return 0;
    }
    sd->sizing = DVM_SZ_PROGRAM;
    sd->size_begin = ev->ep->nnodes;
    sd->size_len = (uint32_t)c.n;
    for (int i = 0; i < c.n; i++)
        if (emit_node(ev->ep, c.nodes[i], st->line, 0) == UINT32_MAX) break;
    free(c.nodes);
    return ev->ep->oom;
}
