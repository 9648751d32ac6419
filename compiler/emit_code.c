/* emit_code.c: lowers the statements of one task to nodes.
 *
 * Registers: every variable the task touches gets one register, numbered in order of first
 * use (uniform variables are loaded into theirs by LDU at the task's start; a serial task
 * writes top-level variables through to their uniform at every assignment). Temporaries
 * sit above the variables and carry the TMP flag until the task is finished, when the
 * variable count is known. Each statement takes fresh ones, so that a value computed by one
 * statement is still in its register when a later one computes it again, and the optimizer's
 * CSE (opt.c) reuses it (an adjoint's reverse sweep recomputes its forward's sin(v)); the
 * register allocator packs them afterwards. Past FRESH_TMPS registers (variables and
 * temporaries) a statement gives its own back at its end, which bounds the registers of code
 * compiled without the optimizer.
 * Jumps name labels until the task is finished, when they become node offsets from the
 * task's code_begin (the uniform loads come first, so the body moves by their count).
 *
 * Invariant of emit_expr(c, e, dst): the code it emits writes only `dst` (when given) and
 * fresh temporaries, and writes `dst` only after every register that e reads has been
 * read, unless the case at hand checks that e does not read `dst`. */
#include "compiler/emit_internal.h"
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TMP 0x8000
#define FRESH_TMPS 512
#define NO_LABEL (-1)

typedef struct tnode {
    dvm_node n;
    int line, col;
} tnode;

typedef struct loop_labels {
    int brk, cont;
} loop_labels;

typedef struct tctx {
    emit_variant *ev;
    emit_prog *ep;
    const ir_kernel *k;
    int parallel;
    tnode *code;
    int n, cap;
    int *varreg; /* per kernel variable: its register, -1 if none */
    int nvreg;
    int ntmp, maxtmp;
    int *labels; /* per label: position in code, -1 while unplaced */
    int nlabels, caplabels;
    loop_labels *loops;
    int nloops, caploops;
    int failed;
    int line, col; /* location given to the nodes being emitted */
    int loop_depth;
    /* constants read inside loops live in registers loaded once at the task's start */
    uint32_t *kbits;
    int *kreg;
    int nk, capk;
} tctx;

static void terr(tctx *c, int line, int col, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
static void terr(tctx *c, int line, int col, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    static const char *vname[DVM_V_COUNT] = {"", " (adjoint)", " (tangent)"};
    dvm_diag(c->ep->d, line, col, "kernel '%s'%s: %s", c->k->name, vname[c->ev->vk], msg);
    c->failed = 1;
}

/* ---- nodes, registers, labels ---- */

static int out(tctx *c, int op, int x, int a, int b, int cc) {
    if (c->failed) return 0;
    if (c->n > DVM_MAX_TASK_NODES) return 0; /* reported by task_finish */
    if (c->n == c->cap) {
        int nc = c->cap ? c->cap * 2 : 64;
        tnode *p = realloc(c->code, sizeof *p * (size_t)nc);
        if (!p) {
            c->ep->oom = 1;
            c->failed = 1;
            return 0;
        }
        c->code = p;
        c->cap = nc;
    }
    tnode *t = &c->code[c->n];
    t->n.op = (uint8_t)op;
    t->n.x = (uint8_t)x;
    t->n.a = (uint16_t)a;
    t->n.b = (uint16_t)b;
    t->n.c = (uint16_t)cc;
    t->line = c->line;
    t->col = c->col;
    return c->n++;
}

static int tmp(tctx *c) {
    if (c->ntmp >= 0x7fff) {
        if (!c->failed) terr(c, c->line, c->col, "expression needs too many registers");
        return 0;
    }
    int r = TMP | c->ntmp++;
    if (c->ntmp > c->maxtmp) c->maxtmp = c->ntmp;
    return r;
}

static int dstreg(tctx *c, int dst) { return dst >= 0 ? dst : tmp(c); }

static void mov(tctx *c, int dst, int src) {
    if (dst >= 0 && dst != src) out(c, DVM_OP_MOV, 0, dst, src, 0);
}

static int var_ok(tctx *c, int var, int line, int col) {
    if (var >= 0 && var < c->k->nvars) return 1;
    if (!c->failed) terr(c, line, col, "internal error: variable %d does not exist", var);
    return 0;
}

static int vreg(tctx *c, int var) {
    if (c->varreg[var] < 0) {
        if (c->nvreg >= 0x7fff) {
            if (!c->failed) terr(c, c->line, c->col, "too many variables in one task");
            return 0;
        }
        c->varreg[var] = c->nvreg++;
    }
    return c->varreg[var];
}

/* The register of e when e is a variable (its value without any code), else -1. */
static int var_reg_of(tctx *c, const ir_expr *e) {
    if (!e || e->kind != IR_VAR || e->var < 0 || e->var >= c->k->nvars) return -1;
    return vreg(c, e->var);
}

static int new_label(tctx *c) {
    if (c->nlabels == c->caplabels) {
        int nc = c->caplabels ? c->caplabels * 2 : 16;
        int *p = realloc(c->labels, sizeof *p * (size_t)nc);
        if (!p) {
            c->ep->oom = 1;
            c->failed = 1;
            return 0;
        }
        c->labels = p;
        c->caplabels = nc;
    }
    if (c->nlabels > 0xFFFF) {
        if (!c->failed) terr(c, c->line, c->col, "task too large (more than %d jumps)", 0xFFFF);
        return 0;
    }
    c->labels[c->nlabels] = -1;
    return c->nlabels++;
}

static void place(tctx *c, int l) {
    if (!c->failed) c->labels[l] = c->n;
}

/* The 32-bit pattern of a constant. */
static uint32_t const_bits(const ir_expr *e) {
    uint32_t w;
    if (e->type == DVM_T_F32)
        memcpy(&w, &e->k.f, 4);
    else
        w = (uint32_t)e->k.i;
    return w;
}

/* An f32 constant usable as a fused operand: NaN is left out so that the order of the
 * operands (and so the NaN that comes out) never changes. */
static int is_fconst(const ir_expr *e, float *k) {
    if (!e || e->kind != IR_CONST || e->type != DVM_T_F32 || isnan(e->k.f)) return 0;
    if (k) *k = e->k.f;
    return 1;
}

static int kindex(tctx *c, float k) {
    uint32_t w;
    memcpy(&w, &k, 4);
    uint32_t i = emit_const(c->ep, w);
    return c->ep->oom || i > 0xFFFF ? -1 : (int)i;
}

/* The register that holds constant w for the whole task (loaded by the task's prologue),
 * so that loops do not rebuild it each iteration; -1 when out of memory. */
static int find_const_reg(tctx *c, uint32_t w) {
    for (int i = 0; i < c->nk; i++)
        if (c->kbits[i] == w) return c->kreg[i];
    return -1;
}

static int const_reg(tctx *c, uint32_t w) {
    int have = find_const_reg(c, w);
    if (have >= 0) return have;
    if (c->nk >= 256) return -1; /* keep registers for the code: rebuild the rest in place */
    if (c->nk == c->capk) {
        int nc = c->capk ? c->capk * 2 : 16;
        uint32_t *b = realloc(c->kbits, sizeof *b * (size_t)nc);
        if (b) c->kbits = b;
        int *r = b ? realloc(c->kreg, sizeof *r * (size_t)nc) : NULL;
        if (!b || !r) {
            c->ep->oom = 1;
            c->failed = 1;
            return -1;
        }
        c->kreg = r;
        c->capk = nc;
    }
    if (c->nvreg >= 0x7fff) return -1;
    c->kbits[c->nk] = w;
    c->kreg[c->nk] = c->nvreg++;
    return c->kreg[c->nk++];
}

/* ---- expressions ---- */

static int emit_expr(tctx *c, const ir_expr *e, int dst);
static void cond_jump(tctx *c, const ir_expr *e, int when, int label);

static int reads_reg(tctx *c, const ir_expr *e, int reg) {
    if (!e) return 0;
    if (e->kind == IR_VAR) return e->var >= 0 && e->var < c->k->nvars && c->varreg[e->var] == reg;
    if (e->kind == IR_LOAD)
        for (int i = 0; i < e->nidx && i < DVM_MAX_RANK; i++)
            if (reads_reg(c, e->idx[i], reg)) return 1;
    return reads_reg(c, e->a, reg) || reads_reg(c, e->b, reg) || reads_reg(c, e->c, reg);
}

static int slot_ok(tctx *c, int slot, int line, int col) {
    if (slot >= 0 && slot < c->ev->v->nslots) return 1;
    if (!c->failed) terr(c, line, col, "internal error: array slot %d does not exist", slot);
    return 0;
}

static const ir_param *slot_param(tctx *c, int slot) { return &c->k->params[c->ev->v->slots[slot].param]; }

/* The flat element index of slot[idx...] in a register, checked per axis for rank >= 2
 * (so that an error names the axis); rank 1 relies on the flat check of the access. */
static int emit_index(tctx *c, int slot, int nidx, ir_expr *const *idx, int line, int col) {
    if (!slot_ok(c, slot, line, col)) return 0;
    const ir_param *p = slot_param(c, slot);
    if (nidx != p->rank || nidx < 1 || nidx > DVM_MAX_RANK) {
        terr(c, line, col, "internal error: '%s' has rank %d, indexed with %d indices", p->name, p->rank, nidx);
        return 0;
    }
    for (int i = 0; i < nidx; i++)
        if (!idx[i]) {
            terr(c, line, col, "internal error: missing index");
            return 0;
        }
    if (nidx == 1) return emit_expr(c, idx[0], -1);
    int t = tmp(c);
    int r0 = emit_expr(c, idx[0], -1);
    out(c, DVM_OP_IDX, slot, t, r0, 0);
    for (int i = 1; i < nidx; i++) {
        int ri = emit_expr(c, idx[i], -1);
        out(c, DVM_OP_IDXM, slot, t, ri, i);
        (void)ri;
    }
    return t;
}

/* An index expression that cannot fail and has no effect (no load, integer division, modulo
 * or power): evaluating it earlier or later is not observable. */
static int idx_cannot_fail(const ir_expr *e) {
    if (!e) return 0;
    switch (e->kind) {
    case IR_CONST:
    case IR_VAR:
    case IR_SHAPE:
        return 1;
    case IR_UN:
        return idx_cannot_fail(e->a);
    case IR_BIN:
        if (!dvm_op_never_fails(e->op)) return 0; /* DIVI, MODI, POWI */
        return idx_cannot_fail(e->a) && idx_cannot_fail(e->b);
    default:
        return 0;
    }
}

/* A rank-2 access becomes one LD2/ST2 (both indices in registers, axis 0 checked before axis
 * 1, like IDX then IDXM) when neither index can fail: the IDX/IDXM chain reports an axis-0
 * error before evaluating the second index, and the order stays observable otherwise. */
static int use_2d(tctx *c, int slot, int nidx, ir_expr *const *idx) {
    if (nidx != 2 || slot < 0 || slot >= c->ev->v->nslots || slot_param(c, slot)->rank != 2) return 0;
    return idx_cannot_fail(idx[0]) && idx_cannot_fail(idx[1]);
}

/* r = x op K with K from the pool; -1 when K does not fit an operand. */
static int emit_fk(tctx *c, int op, const ir_expr *x, float k, int dst) {
    int ki = kindex(c, k);
    if (ki < 0) return -1;
    int rx = emit_expr(c, x, -1);
    int d = dstreg(c, dst);
    out(c, op, 0, d, rx, ki);
    return d;
}

/* A product that an add takes into one multiply-add: a MULF with at most one constant
 * factor (two are folded before; a NaN constant is left out, as in is_fconst). */
static int is_fma_product(const ir_expr *e) {
    if (!e || e->kind != IR_BIN || e->op != DVM_OP_MULF) return 0;
    int ka = e->a && e->a->kind == IR_CONST, kb = e->b && e->b->kind == IR_CONST;
    if (ka && kb) return 0;
    return (!ka || is_fconst(e->a, NULL)) && (!kb || is_fconst(e->b, NULL));
}

/* An f32 `x*y + z` or `z + x*y` is one multiply-add node whenever that needs no copy of a
 * variable, whatever the spelling of its operands (variables, parameters, literals,
 * expressions, either order), so that equivalent spellings get the same code (issue 26): a
 * constant factor is a register (a constant read in a loop is loaded once, at the task's
 * start), a constant addend is FMAFK's K, an addend in a register FMAFR's or FMAF's:
 *   z*... into z (`s = s + x*y`)            FMAF  s, x, y
 *   v*y + K into v (`v = v*rate + 0.01`)     FMAFK v, y, K
 *   v*y + z into v (`v = v*rate + c`)        FMAFR v, y, z
 *   an expression as the addend               FMAF  t, x, y  with t = the addend
 *   an expression as a factor                 FMAFK / FMAFR t, y, z  with t = the factor
 * So a loop whose body is `v = v * m + k` in any spelling is one self-update node (bc.h,
 * DVM_SELF_UPDATE), which the interpreters run fused. Where the node would need a copy of a
 * variable first (`w = v*v + 0.5`, `w = a*b + c` into another w), the product and the sum stay
 * two nodes (-1 here): as many, and a plain MULF/ADDF can be shared by the optimizer's CSE
 * where a multiply-add, which reads its destination, cannot. */
static int try_fma(tctx *c, const ir_expr *e, int dst) {
    const ir_expr *m, *ac;
    if (is_fma_product(e->a)) {
        m = e->a;
        ac = e->b;
    } else if (is_fma_product(e->b)) {
        m = e->b;
        ac = e->a;
    } else {
        return -1;
    }
    /* FMAF takes the factors in their order (x, y); FMAFK and FMAFR multiply the accumulator
       by a register, so there x, the factor in the accumulator, is the one in the
       destination, else an expression (evaluated straight into it), else a variable, and a
       constant factor is y (a register hoisted out of loops) */
    const ir_expr *x = m->a, *y = m->b;
    int dx = var_reg_of(c, x), dy = var_reg_of(c, y);
    const ir_expr *ax = x, *ay = y;
    int adx = dx;
    {
        int ex = dx < 0 && x->kind != IR_CONST, ey = dy < 0 && y->kind != IR_CONST;
        int swap = dst >= 0 && dx == dst ? 0
                   : dst >= 0 && dy == dst ? 1
                   : (ey && !ex) || (!ex && !ey && x->kind == IR_CONST);
        if (swap) {
            ax = y;
            ay = x;
            adx = dy;
        }
    }
    const int x_expr = adx < 0 && ax->kind != IR_CONST;
    float k;
    if (ac->kind == IR_CONST && !is_fconst(ac, NULL)) return -1; /* a NaN addend: MULF + ADDF */
    int ki = is_fconst(ac, &k) ? kindex(c, k) : -1;
    if (ki >= 0) {
        if (dst >= 0 && adx == dst) {
            int ry = emit_expr(c, ay, -1);
            out(c, DVM_OP_FMAFK, 0, dst, ry, ki);
            return dst;
        }
        if (!x_expr) return -1; /* a copy of a variable: MULF/MULFK + ADDFK */
        int ry = emit_expr(c, ay, -1);
        int acc = dst >= 0 && dst != ry ? dst : tmp(c);
        emit_expr(c, ax, acc);
        out(c, DVM_OP_FMAFK, 0, acc, ry, ki);
        mov(c, dst, acc);
        return dst >= 0 ? dst : acc;
    }
    int dc = var_reg_of(c, ac);
    if (dst >= 0 && dc == dst) {
        int rx = emit_expr(c, x, -1);
        int ry = emit_expr(c, y, -1);
        out(c, DVM_OP_FMAF, 0, dst, rx, ry);
        return dst;
    }
    if (dst >= 0 && adx == dst) {
        int ry = emit_expr(c, ay, -1);
        int rc = emit_expr(c, ac, -1);
        out(c, DVM_OP_FMAFR, 0, dst, ry, rc);
        return dst;
    }
    if (x_expr && !(dc < 0 && ac->kind != IR_CONST)) { /* the factor is the expression */
        int ry = emit_expr(c, ay, -1);
        int rc = emit_expr(c, ac, -1);
        int acc = dst >= 0 && dst != ry && dst != rc ? dst : tmp(c);
        emit_expr(c, ax, acc);
        out(c, DVM_OP_FMAFR, 0, acc, ry, rc);
        mov(c, dst, acc);
        return dst >= 0 ? dst : acc;
    }
    if (dc >= 0 || ac->kind == IR_CONST) return -1; /* a copy of the addend: MULF + ADDF */
    int rx = emit_expr(c, x, -1);
    int ry = emit_expr(c, y, -1);
    int acc = dst >= 0 && dst != rx && dst != ry ? dst : tmp(c);
    emit_expr(c, ac, acc);
    out(c, DVM_OP_FMAF, 0, acc, rx, ry);
    mov(c, dst, acc);
    return dst >= 0 ? dst : acc;
}

/* v + arr[i] -> LDADDF when v is the destination or an expression (into a fresh temp). */
static int try_ldadd(tctx *c, const ir_expr *e, int dst) {
    const ir_expr *ld, *o;
    if (e->b && e->b->kind == IR_LOAD && e->b->type == DVM_T_F32) {
        ld = e->b;
        o = e->a;
    } else if (e->a && e->a->kind == IR_LOAD && e->a->type == DVM_T_F32) {
        ld = e->a;
        o = e->b;
    } else {
        return -1;
    }
    if (!o || o->kind == IR_CONST) return -1;
    if (use_2d(c, ld->slot, ld->nidx, ld->idx)) return -1; /* LD2 + ADDF: 2 nodes, not 3 */
    int dov = var_reg_of(c, o);
    if (dov >= 0 && (dst < 0 || dov != dst)) return -1; /* would need a copy: LD + ADDF */
    int ri = emit_index(c, ld->slot, ld->nidx, ld->idx, ld->line, ld->col);
    if (dov >= 0) {
        out(c, DVM_OP_LDADDF, ld->slot, dst, ri, 0);
        return dst;
    }
    int acc = dst >= 0 && dst != ri ? dst : tmp(c);
    emit_expr(c, o, acc);
    out(c, DVM_OP_LDADDF, ld->slot, acc, ri, 0);
    mov(c, dst, acc);
    return dst >= 0 ? dst : acc;
}

static int fits_i16(int64_t v) { return v >= -32768 && v <= 32767; }

/* Superinstructions for a binary op; -1 when none applies (nothing was emitted). */
static int try_fused(tctx *c, const ir_expr *e, int dst) {
    float k;
    int r;
    switch (e->op) {
    case DVM_OP_ADDF:
        if ((r = try_fma(c, e, dst)) >= 0) return r;
        if ((r = try_ldadd(c, e, dst)) >= 0) return r;
        if (is_fconst(e->b, &k)) return emit_fk(c, DVM_OP_ADDFK, e->a, k, dst);
        if (is_fconst(e->a, &k)) return emit_fk(c, DVM_OP_ADDFK, e->b, k, dst);
        return -1;
    case DVM_OP_SUBF:
        /* IEEE 754 defines x - y as x + (-y), signed zeros included: exact. */
        if (is_fconst(e->b, &k)) return emit_fk(c, DVM_OP_ADDFK, e->a, -k, dst);
        if (is_fconst(e->a, &k)) return emit_fk(c, DVM_OP_KSUBF, e->b, k, dst);
        return -1;
    case DVM_OP_MULF:
        if (is_fconst(e->b, &k)) return emit_fk(c, DVM_OP_MULFK, e->a, k, dst);
        if (is_fconst(e->a, &k)) return emit_fk(c, DVM_OP_MULFK, e->b, k, dst);
        return -1;
    case DVM_OP_DIVF:
        if (is_fconst(e->a, &k)) return emit_fk(c, DVM_OP_KDIVF, e->b, k, dst);
        return -1;
    case DVM_OP_ADDI:
    case DVM_OP_SUBI: {
        const ir_expr *x = NULL;
        int64_t v = 0;
        if (e->b->kind == IR_CONST) {
            x = e->a;
            v = e->op == DVM_OP_ADDI ? (int64_t)e->b->k.i : -(int64_t)e->b->k.i;
        } else if (e->op == DVM_OP_ADDI && e->a->kind == IR_CONST) {
            x = e->b;
            v = e->a->k.i;
        }
        if (!x || !fits_i16(v)) return -1;
        int rx = emit_expr(c, x, -1);
        int d = dstreg(c, dst);
        out(c, DVM_OP_ADDIK, 0, d, rx, (uint16_t)(int16_t)v);
        return d;
    }
    default:
        return -1;
    }
}

static int fmt_is(int op, const char *fmt) {
    return op >= 0 && op < 256 && dvm_op_table[op].fmt && strcmp(dvm_op_table[op].fmt, fmt) == 0;
}

static int emit_expr(tctx *c, const ir_expr *e, int dst) {
    if (c->failed) return dst >= 0 ? dst : 0;
    if (!e) {
        terr(c, c->line, c->col, "internal error: missing expression");
        return 0;
    }
    int sl = c->line, sc = c->col;
    if (e->line > 0) {
        c->line = e->line;
        c->col = e->col;
    }
    int r = 0;
    switch (e->kind) {
    case IR_CONST: {
        uint32_t w = const_bits(e);
        if (dst < 0) { /* in a loop: hoist; elsewhere: reuse a hoisted one if any */
            r = c->loop_depth > 0 ? const_reg(c, w) : find_const_reg(c, w);
            if (r >= 0) break;
        }
        r = dstreg(c, dst);
        out(c, DVM_OP_CONST, 0, r, w & 0xFFFF, w >> 16);
        break;
    }
    case IR_VAR:
        if (!var_ok(c, e->var, e->line, e->col)) break;
        r = vreg(c, e->var);
        if (dst >= 0) {
            mov(c, dst, r);
            r = dst;
        }
        break;
    case IR_UN: {
        if (!fmt_is(e->op, "-wr-") || !e->a) {
            terr(c, e->line, e->col, "internal error: opcode %d is not a unary operation", e->op);
            break;
        }
        int ra = emit_expr(c, e->a, -1);
        r = dstreg(c, dst);
        out(c, e->op, 0, r, ra, 0);
        break;
    }
    case IR_BIN: {
        if (!fmt_is(e->op, "-wrr") || !e->a || !e->b) {
            terr(c, e->line, e->col, "internal error: opcode %d is not a binary operation", e->op);
            break;
        }
        if ((r = try_fused(c, e, dst)) >= 0) break;
        int ra = emit_expr(c, e->a, -1);
        int rb = emit_expr(c, e->b, -1);
        r = dstreg(c, dst);
        out(c, e->op, 0, r, ra, rb);
        break;
    }
    case IR_SELECT: {
        int rb = emit_expr(c, e->b, -1);
        int rc = emit_expr(c, e->c, -1);
        int acc = dst >= 0 && dst != rb && dst != rc ? dst : tmp(c);
        emit_expr(c, e->a, acc);
        out(c, DVM_OP_SEL, 0, acc, rb, rc);
        mov(c, dst, acc);
        r = dst >= 0 ? dst : acc;
        break;
    }
    case IR_COND: {
        int lelse = new_label(c), lend = new_label(c);
        r = dstreg(c, dst);
        cond_jump(c, e->a, 0, lelse);
        emit_expr(c, e->b, r);
        out(c, DVM_OP_JMP, 0, lend, 0, 0);
        place(c, lelse);
        emit_expr(c, e->c, r);
        place(c, lend);
        break;
    }
    case IR_AND:
    case IR_OR: {
        /* value form: acc = a; if (acc is decisive) skip; acc = b */
        int acc = dst >= 0 && !reads_reg(c, e->b, dst) ? dst : tmp(c);
        int lend = new_label(c);
        emit_expr(c, e->a, acc);
        out(c, e->kind == IR_AND ? DVM_OP_JZ : DVM_OP_JNZ, 0, acc, lend, 0);
        emit_expr(c, e->b, acc);
        place(c, lend);
        mov(c, dst, acc);
        r = dst >= 0 ? dst : acc;
        break;
    }
    case IR_LOAD: {
        if (use_2d(c, e->slot, e->nidx, e->idx)) {
            int ri = emit_expr(c, e->idx[0], -1);
            int rj = emit_expr(c, e->idx[1], -1);
            r = dstreg(c, dst);
            out(c, DVM_OP_LD2, e->slot, r, ri, rj);
            break;
        }
        int ri = emit_index(c, e->slot, e->nidx, e->idx, e->line, e->col);
        r = dstreg(c, dst);
        out(c, DVM_OP_LD, e->slot, r, ri, 0);
        break;
    }
    case IR_SHAPE: {
        if (!slot_ok(c, e->slot, e->line, e->col)) break;
        if (e->axis < 0 || e->axis >= slot_param(c, e->slot)->rank) {
            terr(c, e->line, e->col, "internal error: axis %d of '%s'", e->axis, slot_param(c, e->slot)->name);
            break;
        }
        r = dstreg(c, dst);
        out(c, DVM_OP_SHAPE, e->slot, r, e->axis, 0);
        break;
    }
    default:
        terr(c, e->line, e->col, "internal error: expression kind %d", e->kind);
        break;
    }
    c->line = sl;
    c->col = sc;
    return r;
}

/* Jumps to `label` when e (bool) equals `when`; falls through otherwise. */
static void cond_jump(tctx *c, const ir_expr *e, int when, int label) {
    if (c->failed) return;
    if (!e) {
        terr(c, c->line, c->col, "internal error: missing condition");
        return;
    }
    int sl = c->line, sc = c->col;
    if (e->line > 0) {
        c->line = e->line;
        c->col = e->col;
    }
    if (e->kind == IR_CONST) {
        if ((e->k.i != 0) == (when != 0)) out(c, DVM_OP_JMP, 0, label, 0, 0);
    } else if (e->kind == IR_UN && e->op == DVM_OP_NOT && e->a) {
        cond_jump(c, e->a, !when, label);
    } else if (e->kind == IR_AND || e->kind == IR_OR) {
        /* and: jump-if-false distributes; or: jump-if-true distributes */
        int dist = e->kind == IR_AND ? 0 : 1;
        if (when == dist) {
            cond_jump(c, e->a, when, label);
            cond_jump(c, e->b, when, label);
        } else {
            int skip = new_label(c);
            cond_jump(c, e->a, dist, skip);
            cond_jump(c, e->b, when, label);
            place(c, skip);
        }
    } else if (e->kind == IR_BIN && e->a && e->b &&
               ((e->op == DVM_OP_LTI && !when) || (e->op == DVM_OP_LEI && when))) {
        /* !(a < b) is a >= b; (a <= b) is b >= a: one compare-and-branch */
        int ra = emit_expr(c, e->a, -1);
        int rb = emit_expr(c, e->b, -1);
        if (e->op == DVM_OP_LTI)
            out(c, DVM_OP_JGEI, 0, ra, rb, label);
        else
            out(c, DVM_OP_JGEI, 0, rb, ra, label);
    } else {
        int r = emit_expr(c, e, -1);
        out(c, when ? DVM_OP_JNZ : DVM_OP_JZ, 0, r, label, 0);
    }
    c->line = sl;
    c->col = sc;
}

/* ---- statements ---- */

static void emit_block(tctx *c, const ir_block *b);

/* The register that an assignment to var writes, or -1 (reported) when var is read-only
 * here. `writeback` says whether a STU must follow (top-level variables in serial code). */
static int target_reg(tctx *c, int var, int line, int col, int *writeback) {
    *writeback = 0;
    if (!var_ok(c, var, line, col)) return -1;
    const ir_var *v = &c->k->vars[var];
    if (v->storage == IR_LOCAL) return vreg(c, var);
    if (v->storage == IR_GLOBAL && !c->parallel) {
        *writeback = 1;
        return vreg(c, var);
    }
    terr(c, line, col, "internal error: '%s' cannot be assigned here", v->name ? v->name : "?");
    return -1;
}

static void write_back(tctx *c, int var, int reg) {
    int u = emit_var_uslot(c->ev, var);
    if (u < 0) {
        c->failed = 1;
        return;
    }
    out(c, DVM_OP_STU, 0, u, reg, 0);
}

static void mark_write(tctx *c, int slot) {
    c->ep->slots[c->ev->slot_begin + (uint32_t)slot].writes = 1;
}

/* an atomic update of one flat element (ops.def: DVM_E_ATOMIC, not a fused form) */
static int is_atomic_op(int op) {
    return op >= 0 && dvm_op_atomic((uint32_t)op) && !(dvm_op_table[op].flags & DVM_F_FUSED);
}

/* Read-only for the whole task: a loop bound held in such a register needs no copy. */
static int never_written(tctx *c, const ir_expr *e) {
    if (!e || e->kind != IR_VAR || e->var < 0 || e->var >= c->k->nvars) return 0;
    int st = c->k->vars[e->var].storage;
    return st == IR_PARAM || st == IR_SHAPESYM || st == IR_PINDEX || (st == IR_GLOBAL && c->parallel);
}

/* Whether some statement of b may assign var (a nested loop over var included). */
static int block_writes(const ir_block *b, int var) {
    for (int i = 0; i < b->n; i++) {
        const ir_stmt *s = b->s[i];
        if (!s) continue;
        if ((s->kind == IR_ASSIGN || s->kind == IR_POP || s->kind == IR_FOR || s->kind == IR_UATOMIC_ADD) &&
            s->var == var)
            return 1;
        if (block_writes(&s->body, var) || block_writes(&s->orelse, var)) return 1;
    }
    return 0;
}

/* Whether a statement of b (not of loops nested in it, whose own the jumps are) is a `kind`
 * (IR_CONTINUE or IR_BREAK). */
static int block_jumps(const ir_block *b, int kind) {
    for (int i = 0; i < b->n; i++) {
        const ir_stmt *s = b->s[i];
        if (!s) continue;
        if (s->kind == kind) return 1;
        if (s->kind == IR_IF && (block_jumps(&s->body, kind) || block_jumps(&s->orelse, kind))) return 1;
    }
    return 0;
}

/* Whether statement s, or one nested in it, stores to an array slot whose elements have type
 * `type` (atomics included). */
static int stmt_stores(tctx *c, const ir_stmt *s, int type);
static int block_stores(tctx *c, const ir_block *b, int type) {
    for (int i = 0; i < b->n; i++)
        if (stmt_stores(c, b->s[i], type)) return 1;
    return 0;
}
static int stmt_stores(tctx *c, const ir_stmt *s, int type) {
    if (!s) return 0;
    if ((s->kind == IR_STORE || s->kind == IR_ATOMIC) &&
        (s->slot < 0 || s->slot >= c->ev->v->nslots || slot_param(c, s->slot)->type == type))
        return 1;
    return block_stores(c, &s->body, type) || block_stores(c, &s->orelse, type);
}

/* Whether some statement of the variant being emitted stores to an array of element type
 * `type`: a launch may bind one array to several parameters (of one type), so a store to any
 * of them may change the elements that a load of another reads. */
static int variant_stores(tctx *c, int type) {
    const ir_variant *v = c->ev->v;
    for (int t = 0; t < v->ntops; t++) {
        const ir_top *top = &v->tops[t];
        if (top->parallel ? block_stores(c, &top->body, type) : stmt_stores(c, top->stmt, type)) return 1;
    }
    return 0;
}

/* Whether e has the same value every time a loop whose body is `body` evaluates it: it reads
 * no variable that the body assigns and no element of an array of a type that the variant
 * writes (every operation is deterministic; one that fails fails at its first evaluation). */
static int loop_invariant(tctx *c, const ir_expr *e, const ir_block *body) {
    if (!e) return 0;
    switch (e->kind) {
    case IR_CONST:
    case IR_SHAPE:
        return 1;
    case IR_VAR:
        return e->var >= 0 && e->var < c->k->nvars && (never_written(c, e) || !block_writes(body, e->var));
    case IR_UN:
        return loop_invariant(c, e->a, body);
    case IR_BIN:
        return loop_invariant(c, e->a, body) && loop_invariant(c, e->b, body);
    case IR_LOAD:
        if (e->slot < 0 || e->slot >= c->ev->v->nslots || variant_stores(c, slot_param(c, e->slot)->type)) return 0;
        for (int i = 0; i < e->nidx && i < DVM_MAX_RANK; i++)
            if (!loop_invariant(c, e->idx[i], body)) return 0;
        return 1;
    default:
        return 0;
    }
}

/* Whether expression e reads variable var. */
static int expr_reads_var(const ir_expr *e, int var) {
    if (!e) return 0;
    if (e->kind == IR_VAR) return e->var == var;
    if (e->kind == IR_LOAD)
        for (int i = 0; i < e->nidx && i < DVM_MAX_RANK; i++)
            if (expr_reads_var(e->idx[i], var)) return 1;
    return expr_reads_var(e->a, var) || expr_reads_var(e->b, var) || expr_reads_var(e->c, var);
}

/* Whether statement s, or one nested in it, reads variable var. */
static int stmt_reads_var(const ir_stmt *s, int var);
static int block_reads_var(const ir_block *b, int var) {
    for (int i = 0; i < b->n; i++)
        if (stmt_reads_var(b->s[i], var)) return 1;
    return 0;
}
static int stmt_reads_var(const ir_stmt *s, int var) {
    if (!s) return 0;
    if (expr_reads_var(s->e, var) || expr_reads_var(s->e2, var)) return 1;
    for (int i = 0; i < s->nidx && i < DVM_MAX_RANK; i++)
        if (expr_reads_var(s->idx[i], var)) return 1;
    return block_reads_var(&s->body, var) || block_reads_var(&s->orelse, var);
}

/* Whether s is `j = j + 1` (either order). */
static int is_increment(const ir_stmt *s, int j) {
    if (!s || s->kind != IR_ASSIGN || s->var != j || !s->e || s->e->kind != IR_BIN || s->e->op != DVM_OP_ADDI) return 0;
    const ir_expr *p = s->e->a, *q = s->e->b;
    if (p && p->kind == IR_CONST) {
        const ir_expr *t = p; p = q; q = t;
    }
    return p && p->kind == IR_VAR && p->var == j && q && q->kind == IR_CONST && q->k.i == 1;
}

/* A while loop that is a counted loop (issue 26: `for` and `while` get the same code):
 *     while j < hi:          (j an i32 local, hi loop-invariant: loop_invariant)
 *         body               (no assignment to j, no continue)
 *         j += 1
 *         tail               (assignments that do not read j: the adjoint's trip count)
 * is `JGEI j, hi; B: body; tail; INCLT j, hi, ->B`, the code of `for j in range(j, hi)` with j
 * itself as the counter, exactly: the test comes before every trip, j < hi <= INT32_MAX so
 * j + 1 never wraps, hi is evaluated once instead of before every trip (the same value; an
 * evaluation that fails, fails the first time, at the same place), nothing after the
 * increment reads j or leaves the loop, break leaves j as the while does, and a normal exit
 * leaves j = hi (or j, when the loop does not run), as `j += 1` does. Returns the index of
 * the increment in the body and sets *rj and *hi_e, or returns -1. */
static int counted_while(tctx *c, const ir_stmt *s, int *rj, const ir_expr **hi_e) {
    const ir_expr *e = s->e;
    if (!e || e->kind != IR_BIN || e->op != DVM_OP_LTI || !e->a || e->a->kind != IR_VAR) return -1;
    int j = e->a->var;
    if (j < 0 || j >= c->k->nvars || c->k->vars[j].storage != IR_LOCAL || c->k->vars[j].type != DVM_T_I32) return -1;
    const ir_block *b = &s->body;
    int p = b->n - 1;
    while (p >= 0 && !is_increment(b->s[p], j)) {
        const ir_stmt *t = b->s[p];
        if (!t || t->kind != IR_ASSIGN || t->var == j || expr_reads_var(t->e, j)) return -1;
        p--;
    }
    if (p < 0) return -1;
    ir_block head = {b->s, p, p};
    if (block_writes(&head, j) || block_jumps(&head, IR_CONTINUE)) return -1;
    if (!loop_invariant(c, e->b, b)) return -1;
    *rj = vreg(c, j);
    *hi_e = e->b;
    return p;
}

/* Whether the statement at index i > pinc of a counted while's body (counted_while) is an
 * increment `w += 1` of an i32 local that nothing else in the loop reads or writes (the
 * adjoint's trip count), in a body without break: every trip increments w once, so w gains
 * the trip count, which is known before the loop (hi - j when j < hi, else 0, wrapping as the
 * increments would), and the loop need not count it: the reverse sweep's recomputation of a
 * loop whose body it does not need is then an empty loop, which the optimizer deletes. */
static int hoisted_count(tctx *c, const ir_stmt *s, int pinc, int i) {
    const ir_block *b = &s->body;
    const ir_stmt *t = b->s[i];
    if (i <= pinc || !t || t->kind != IR_ASSIGN || !is_increment(t, t->var)) return 0;
    int w = t->var;
    if (w < 0 || w >= c->k->nvars || c->k->vars[w].storage != IR_LOCAL || c->k->vars[w].type != DVM_T_I32) return 0;
    if (block_jumps(b, IR_BREAK) || expr_reads_var(s->e, w)) return 0;
    for (int q = 0; q < b->n; q++)
        if (q != i && b->s[q] && (stmt_reads_var(b->s[q], w) || block_writes(&(const ir_block){(ir_stmt **)&b->s[q], 1, 1}, w)))
            return 0;
    return 1;
}

static void push_loop(tctx *c, int brk, int cont) {
    if (c->nloops == c->caploops) {
        int nc = c->caploops ? c->caploops * 2 : 8;
        loop_labels *p = realloc(c->loops, sizeof *p * (size_t)nc);
        if (!p) {
            c->ep->oom = 1;
            c->failed = 1;
            return;
        }
        c->loops = p;
        c->caploops = nc;
    }
    c->loops[c->nloops].brk = brk;
    c->loops[c->nloops].cont = cont;
    c->nloops++;
}

static void emit_stmt(tctx *c, const ir_stmt *s) {
    if (c->failed) return;
    if (!s) {
        terr(c, c->line, c->col, "internal error: missing statement");
        return;
    }
    int save_tmp = c->ntmp;
    c->line = s->line;
    c->col = s->col;
    int wb;
    switch (s->kind) {
    case IR_ASSIGN: {
        int r = target_reg(c, s->var, s->line, s->col, &wb);
        if (r < 0) break;
        emit_expr(c, s->e, r);
        if (wb) write_back(c, s->var, r);
        break;
    }
    case IR_STORE: {
        if (!slot_ok(c, s->slot, s->line, s->col)) break;
        int rv = emit_expr(c, s->e, -1); /* Python evaluates the value before the target */
        if (use_2d(c, s->slot, s->nidx, s->idx)) {
            int ri = emit_expr(c, s->idx[0], -1);
            int rj = emit_expr(c, s->idx[1], -1);
            out(c, DVM_OP_ST2, s->slot, ri, rj, rv);
            mark_write(c, s->slot);
            break;
        }
        int ri = emit_index(c, s->slot, s->nidx, s->idx, s->line, s->col);
        out(c, DVM_OP_ST, s->slot, ri, rv, 0);
        mark_write(c, s->slot);
        break;
    }
    case IR_ATOMIC: {
        if (!slot_ok(c, s->slot, s->line, s->col)) break;
        if (!is_atomic_op(s->op)) {
            terr(c, s->line, s->col, "internal error: opcode %d is not an atomic update", s->op);
            break;
        }
        /* x[i, j] += v: ATOMADDF2 when neither index nor the value can fail (the chain
           checks the indices before it evaluates the value; the fused node after) */
        if (s->op == DVM_OP_ATOMADDF && use_2d(c, s->slot, s->nidx, s->idx) && idx_cannot_fail(s->e)) {
            int ri = emit_expr(c, s->idx[0], -1);
            int rj = emit_expr(c, s->idx[1], -1);
            int rv = emit_expr(c, s->e, -1);
            out(c, DVM_OP_ATOMADDF2, s->slot, ri, rj, rv);
            mark_write(c, s->slot);
            break;
        }
        int ri = emit_index(c, s->slot, s->nidx, s->idx, s->line, s->col);
        int rv = emit_expr(c, s->e, -1);
        out(c, s->op, s->slot, ri, rv, 0);
        mark_write(c, s->slot);
        break;
    }
    case IR_IF: {
        int lelse = new_label(c);
        cond_jump(c, s->e, 0, lelse);
        emit_block(c, &s->body);
        if (s->orelse.n > 0) {
            int lend = new_label(c);
            c->line = s->line;
            c->col = s->col;
            out(c, DVM_OP_JMP, 0, lend, 0, 0);
            place(c, lelse);
            emit_block(c, &s->orelse);
            place(c, lend);
        } else {
            place(c, lelse);
        }
        break;
    }
    case IR_WHILE: {
        const ir_expr *hi_e = NULL;
        int rj = -1, pinc = counted_while(c, s, &rj, &hi_e);
        if (pinc >= 0) {
            c->line = s->line;
            c->col = s->col;
            int hi = never_written(c, hi_e) ? emit_expr(c, hi_e, -1) : emit_expr(c, hi_e, tmp(c));
            int lbody = new_label(c), lnext = new_label(c), lend = new_label(c);
            c->line = s->line;
            c->col = s->col;
            int trips = -1; /* (j < hi) * (hi - j), for hoisted_count's increments */
            for (int i = pinc + 1; i < s->body.n; i++) {
                if (!hoisted_count(c, s, pinc, i)) continue;
                if (trips < 0) {
                    int lt = tmp(c);
                    trips = tmp(c);
                    out(c, DVM_OP_LTI, 0, lt, rj, hi);
                    out(c, DVM_OP_SUBI, 0, trips, hi, rj);
                    out(c, DVM_OP_MULI, 0, trips, trips, lt);
                }
                int rw = vreg(c, s->body.s[i]->var);
                out(c, DVM_OP_ADDI, 0, rw, rw, trips);
            }
            out(c, DVM_OP_JGEI, 0, rj, hi, lend);
            place(c, lbody);
            push_loop(c, lend, lnext);
            c->loop_depth++;
            for (int i = 0; i < s->body.n; i++)
                if (i != pinc && s->body.s[i] && !hoisted_count(c, s, pinc, i)) emit_stmt(c, s->body.s[i]);
            c->loop_depth--;
            c->nloops--;
            place(c, lnext);
            const ir_stmt *inc = s->body.s[pinc];
            c->line = inc->line;
            c->col = inc->col;
            out(c, DVM_OP_INCLT, 0, rj, hi, lbody);
            place(c, lend);
            break;
        }
        /* rotated: the test sits at the bottom, so an iteration costs one branch */
        int ltest = new_label(c), lbody = new_label(c), lend = new_label(c);
        out(c, DVM_OP_JMP, 0, ltest, 0, 0);
        place(c, lbody);
        push_loop(c, lend, ltest);
        c->loop_depth++;
        emit_block(c, &s->body);
        c->nloops--;
        place(c, ltest);
        c->line = s->line;
        c->col = s->col;
        cond_jump(c, s->e, 1, lbody);
        c->loop_depth--;
        place(c, lend);
        break;
    }
    case IR_FOR: {
        int r = target_reg(c, s->var, s->line, s->col, &wb);
        if (r < 0) break;
        int cnt = tmp(c);
        emit_expr(c, s->e, cnt);
        int hi = never_written(c, s->e2) ? emit_expr(c, s->e2, -1) : emit_expr(c, s->e2, tmp(c));
        int lbody = new_label(c), lnext = new_label(c), lend = new_label(c);
        c->line = s->line;
        c->col = s->col;
        out(c, DVM_OP_JGEI, 0, cnt, hi, lend);
        /* A local that the body never writes is its own counter (no copy per iteration);
         * on normal exit it steps back to the last value, as in Python. Otherwise a hidden
         * counter keeps the iteration independent of the body's writes to var. */
        int own = !wb && !block_writes(&s->body, s->var);
        if (own) mov(c, r, cnt);
        place(c, lbody);
        if (!own) {
            mov(c, r, cnt);
            if (wb) write_back(c, s->var, r);
        }
        push_loop(c, lend, lnext);
        c->loop_depth++;
        emit_block(c, &s->body);
        c->loop_depth--;
        c->nloops--;
        place(c, lnext);
        c->line = s->line;
        c->col = s->col;
        out(c, DVM_OP_INCLT, 0, own ? r : cnt, hi, lbody);
        if (own) out(c, DVM_OP_ADDIK, 0, r, r, 0xFFFF);
        place(c, lend);
        break;
    }
    case IR_BREAK:
    case IR_CONTINUE:
        if (!c->nloops) {
            terr(c, s->line, s->col, "internal error: %s outside a loop", s->kind == IR_BREAK ? "break" : "continue");
            break;
        }
        out(c, DVM_OP_JMP, 0, s->kind == IR_BREAK ? c->loops[c->nloops - 1].brk : c->loops[c->nloops - 1].cont, 0, 0);
        break;
    case IR_ASSERT: {
        uint32_t msg = emit_string(c->ep, s->msg);
        if (msg > 0xFFFF) {
            terr(c, s->line, s->col, "too many strings: assertion message at offset %u does not fit", msg);
            break;
        }
        int r = emit_expr(c, s->e, -1);
        out(c, DVM_OP_ASSERT, 0, r, msg, 0);
        break;
    }
    case IR_PUSH: {
        if (s->stack < 0 || s->stack >= c->ev->v->nstacks) {
            terr(c, s->line, s->col, "internal error: adstack %d does not exist", s->stack);
            break;
        }
        int r = emit_expr(c, s->e, -1);
        out(c, DVM_OP_PUSH, 0, s->stack, r, 0);
        break;
    }
    case IR_POP: {
        if (s->stack < 0 || s->stack >= c->ev->v->nstacks) {
            terr(c, s->line, s->col, "internal error: adstack %d does not exist", s->stack);
            break;
        }
        int r = target_reg(c, s->var, s->line, s->col, &wb);
        if (r < 0) break;
        out(c, DVM_OP_POP, 0, r, s->stack, 0);
        if (wb) write_back(c, s->var, r);
        break;
    }
    case IR_UATOMIC_ADD: {
        if (!var_ok(c, s->var, s->line, s->col)) break;
        const ir_var *v = &c->k->vars[s->var];
        if (v->storage != IR_GLOBAL || v->type != DVM_T_F32) {
            terr(c, s->line, s->col, "internal error: atomic add to '%s', not an f32 top-level variable",
                 v->name ? v->name : "?");
            break;
        }
        int u = emit_var_uslot(c->ev, s->var);
        if (u < 0) {
            c->failed = 1;
            break;
        }
        int r = emit_expr(c, s->e, -1);
        out(c, DVM_OP_ATOMADDU, 0, u, r, 0);
        /* serial code may read the variable afterwards: refresh its register */
        if (!c->parallel) out(c, DVM_OP_LDU, 0, vreg(c, s->var), u, 0);
        break;
    }
    default:
        terr(c, s->line, s->col, "internal error: statement kind %d", s->kind);
        break;
    }
    if (c->nvreg + c->ntmp > FRESH_TMPS) c->ntmp = save_tmp;
}

static void emit_block(tctx *c, const ir_block *b) {
    for (int i = 0; i < b->n && !c->failed; i++) emit_stmt(c, b->s[i]);
}

/* ---- tasks ---- */

static int task_begin(tctx *c, emit_variant *ev, int parallel) {
    memset(c, 0, sizeof *c);
    c->ev = ev;
    c->ep = ev->ep;
    c->k = ev->k;
    c->parallel = parallel;
    c->varreg = malloc(sizeof(int) * (size_t)(ev->k->nvars > 0 ? ev->k->nvars : 1));
    if (!c->varreg) {
        ev->ep->oom = 1;
        return 1;
    }
    for (int i = 0; i < ev->k->nvars; i++) c->varreg[i] = -1;
    return 0;
}

static void task_free(tctx *c) {
    free(c->code);
    free(c->varreg);
    free(c->labels);
    free(c->loops);
    free(c->kbits);
    free(c->kreg);
}

static int is_uniform_storage(int st) { return st == IR_PARAM || st == IR_SHAPESYM || st == IR_GLOBAL; }

/* Prepends the uniform loads, resolves temporaries and labels, appends the task. A register
 * that some path reads before any node writes it (a value on a path the program never takes, as
 * a helper's result after an early return, or the old value of a variable pushed on its first
 * trip) is set to 0 at the start: the verifier requires every read to follow a write on every
 * path (bytecode/verify.c, dvm_flow_regs), so that no result depends on what a backend's
 * registers held. */
static int task_finish(tctx *c, dvm_task_desc *td, int line) {
    emit_prog *ep = c->ep;
    if (c->failed || ep->oom) return 1;
    int npre = 0;
    for (int v = 0; v < c->k->nvars; v++)
        if (c->varreg[v] >= 0 && is_uniform_storage(c->k->vars[v].storage)) npre++;
    npre += c->nk;
    int64_t total = (int64_t)npre + c->n;
    int64_t nregs = (int64_t)c->nvreg + c->maxtmp;
    if (nregs > DVM_MAX_REGS) {
        terr(c, line, 0, "a task needs %lld registers, more than the limit of %d; split the loop body",
             (long long)nregs, DVM_MAX_REGS);
        return 1;
    }
    if (total > DVM_MAX_TASK_NODES) {
        terr(c, line, 0, "a task needs %lld nodes, more than the limit of %d; split the loop body",
             (long long)total, DVM_MAX_TASK_NODES);
        return 1;
    }
    /* the task's nodes, resolved, after room for the zeroed registers (at most nregs) */
    tnode *fin = malloc(sizeof *fin * (size_t)(total + nregs + 1));
    if (!fin) {
        ep->oom = 1;
        return 1;
    }
    tnode *body = fin + nregs;
    int k = 0;
    for (int v = 0; v < c->k->nvars; v++) {
        if (c->varreg[v] < 0 || !is_uniform_storage(c->k->vars[v].storage)) continue;
        int u = emit_var_uslot(c->ev, v);
        if (u < 0) {
            free(fin);
            return 1;
        }
        body[k++] = (tnode){{DVM_OP_LDU, 0, (uint16_t)c->varreg[v], (uint16_t)u, 0}, line, 0};
    }
    for (int i = 0; i < c->nk; i++)
        body[k++] = (tnode){{DVM_OP_CONST, 0, (uint16_t)c->kreg[i], (uint16_t)(c->kbits[i] & 0xFFFF),
                             (uint16_t)(c->kbits[i] >> 16)}, line, 0};
    for (int i = 0; i < c->n; i++) {
        tnode t = c->code[i];
        const char *fmt = dvm_op_table[t.n.op].fmt;
        uint16_t *opnd[3] = {&t.n.a, &t.n.b, &t.n.c};
        for (int j = 0; j < 3; j++) {
            char f = fmt[j + 1];
            if ((f == 'w' || f == 'r' || f == 'm') && (*opnd[j] & TMP))
                *opnd[j] = (uint16_t)(c->nvreg + (*opnd[j] & ~TMP));
            else if (f == 'J') {
                int l = *opnd[j];
                if (l >= c->nlabels || c->labels[l] < 0) {
                    terr(c, line, 0, "internal error: unplaced jump label");
                    free(fin);
                    return 1;
                }
                *opnd[j] = (uint16_t)(npre + c->labels[l]);
            }
        }
        body[k++] = t;
    }
    td->code_len = (uint32_t)total;
    td->nregs = (uint16_t)nregs;
    dvm_node *code = malloc(sizeof *code * (size_t)total);
    uint64_t need[DVM_REG_WORDS] = {0};
    dvm_flow_scratch fs;
    memset(&fs, 0, sizeof fs);
    int rc = code ? 0 : -1;
    for (int64_t i = 0; code && i < total; i++) code[i] = body[i].n;
    if (code) rc = dvm_flow_regs(code, td, &fs, NULL, need);
    free(code);
    dvm_flow_scratch_free(&fs);
    if (rc < 0) {
        ep->oom = 1;
        free(fin);
        return 1;
    }
    int nz = 0;
    for (int r = 0; r < nregs; r++)
        if ((need[r >> 6] >> (r & 63)) & 1u) nz++;
    if (nz && total + nz > DVM_MAX_TASK_NODES) {
        terr(c, line, 0, "a task needs %lld nodes, more than the limit of %d; split the loop body",
             (long long)(total + nz), DVM_MAX_TASK_NODES);
        free(fin);
        return 1;
    }
    tnode *first = body - nz;
    for (int r = 0, z = 0; r < nregs; r++)
        if ((need[r >> 6] >> (r & 63)) & 1u) first[z++] = (tnode){{DVM_OP_CONST, 0, (uint16_t)r, 0, 0}, line, 0};
    for (int64_t i = nz; nz && i < nz + total; i++) { /* jumps are relative to the task's start */
        const char *fmt = dvm_op_table[first[i].n.op].fmt;
        uint16_t *opnd[3] = {&first[i].n.a, &first[i].n.b, &first[i].n.c};
        for (int j = 0; j < 3; j++)
            if (fmt[j + 1] == 'J') *opnd[j] = (uint16_t)(*opnd[j] + nz);
    }
    total += nz;
    td->code_begin = ep->nnodes;
    td->code_len = (uint32_t)total;
    td->line = line > 0 ? (uint32_t)line : 0;
    td->stage = (uint16_t)c->ev->stage;
    td->phase = (uint8_t)c->ev->phase;
    for (int64_t i = 0; i < total; i++) emit_node(ep, first[i].n, first[i].line, first[i].col);
    free(fin);
    if (ep->oom) return 1;
    if (!GROW(ep, tasks, ctasks, ep->ntasks + 1)) return 1;
    ep->tasks[ep->ntasks++] = *td;
    return 0;
}

int emit_task_serial(emit_variant *ev, ir_stmt *const *stmts, int nstmts, ir_expr *const *hidden,
                     const int *hidden_u, int nhidden, int line) {
    tctx c;
    if (task_begin(&c, ev, 0)) return 1;
    for (int i = 0; i < nstmts && !c.failed; i++) emit_stmt(&c, stmts[i]);
    for (int i = 0; i < nhidden && !c.failed; i++) {
        int save = c.ntmp;
        c.line = hidden[i]->line;
        c.col = hidden[i]->col;
        int r = emit_expr(&c, hidden[i], -1);
        out(&c, DVM_OP_STU, 0, hidden_u[i], r, 0);
        c.ntmp = save;
    }
    out(&c, DVM_OP_END, 0, 0, 0, 0);
    dvm_task_desc td;
    memset(&td, 0, sizeof td);
    td.kind = DVM_TASK_SERIAL;
    for (int d = 0; d < DVM_MAX_PAR_DIMS; d++) td.ext_u[d] = td.idx_reg[d] = td.start_u[d] = DVM_NO_SLOT;
    int rc = task_finish(&c, &td, line);
    if (c.failed) ev->failed = 1;
    task_free(&c);
    return rc;
}

int emit_task_parallel(emit_variant *ev, const ir_top *top, const uint16_t ext_u[DVM_MAX_PAR_DIMS],
                       const uint16_t start_u[DVM_MAX_PAR_DIMS]) {
    tctx c;
    if (task_begin(&c, ev, 1)) return 1;
    dvm_task_desc td;
    memset(&td, 0, sizeof td);
    td.kind = DVM_TASK_PARALLEL;
    td.ndim = (uint8_t)top->ndim;
    c.line = top->line;
    c.col = top->col;
    for (int d = 0; d < DVM_MAX_PAR_DIMS; d++) {
        td.ext_u[d] = d < top->ndim ? ext_u[d] : DVM_NO_SLOT;
        td.start_u[d] = d < top->ndim ? start_u[d] : DVM_NO_SLOT;
        td.idx_reg[d] = DVM_NO_SLOT;
    }
    for (int d = 0; d < top->ndim && !c.failed; d++) {
        int v = top->idx_var[d];
        if (!var_ok(&c, v, top->line, top->col)) break;
        if (c.k->vars[v].storage != IR_PINDEX) {
            terr(&c, top->line, top->col, "internal error: index '%s' of a parallel loop is not a loop index",
                 c.k->vars[v].name ? c.k->vars[v].name : "?");
            break;
        }
        td.idx_reg[d] = (uint16_t)vreg(&c, v); /* registers 0..ndim-1: never temporaries */
    }
    emit_block(&c, &top->body);
    c.line = top->line;
    c.col = top->col;
    out(&c, DVM_OP_END, 0, 0, 0, 0);
    int rc = task_finish(&c, &td, top->line);
    if (c.failed) ev->failed = 1;
    task_free(&c);
    return rc;
}
