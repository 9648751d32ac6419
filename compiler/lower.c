/* lower.c: lowers statements and kernels to the IR of ir.h (forward variant): top-level
 * loops become parallel tops; dvm_check is the checker's entry point. */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "compiler/check_internal.h"

/* ---- statements ---- */

static int is_static_iter(const ast_expr *it) { return it->kind == AE_CALL && !strcmp(it->str, "static"); }

static int is_real_loop(const ast_stmt *s) {
    return s->kind == AS_WHILE || (s->kind == AS_FOR && !is_static_iter(s->value));
}

static ir_stmt *mk_if_flag_break(ctx *c, int flag, int line, int col) {
    ir_stmt *s = chk_mk_stmt(c, IR_IF, line, col);
    if (!s) return NULL;
    s->e = chk_mk_var(c, flag, line, col);
    chk_push(c, &s->body, chk_mk_stmt(c, IR_BREAK, line, col));
    return s;
}

static int lower_block(ctx *c, const ast_block *b, ir_block *out) {
    int mark = chk_scope_mark(c);
    int r = chk_lower_stmts(c, b->s, b->n, out);
    chk_scope_pop(c, mark);
    return r;
}

static int lower_stmt(ctx *c, const ast_stmt *s, ir_block *out);

static int lower_stmts_in(ctx *c, ast_stmt **s, int n, ir_block *out);
/* Statements of one IR block (counted against MAX_BLOCK_DEPTH). */
int chk_lower_stmts(ctx *c, ast_stmt **s, int n, ir_block *out) {
    if (n == 0 || c->oom) return 0;
    if (c->depth >= MAX_BLOCK_DEPTH) {
        chk_err(c, s[0]->line, s[0]->col,
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
                chk_lower_stmts(c, s + i + 1, n - i - 1, &dead);
            }
            return res;
        }
        if (!(r & ESC)) continue;
        res |= ESC;
        int flag = escape_flag(c);
        if (flag < 0) continue;
        if (c->fr->h && c->fr->loopdepth > 0) { /* a return inside a loop breaks out of it */
            if (is_real_loop(s[i])) chk_push(c, out, mk_if_flag_break(c, flag, s[i]->line, s[i]->col));
            continue;
        }
        if (i + 1 < n) { /* the rest runs only when no return / continue happened */
            ir_stmt *g = chk_mk_stmt(c, IR_IF, s[i + 1]->line, s[i + 1]->col);
            if (!g) return res;
            g->e = chk_mk_not(c, chk_mk_var(c, flag, s[i + 1]->line, s[i + 1]->col));
            chk_push(c, out, g);
            chk_lower_stmts(c, s + i + 1, n - i - 1, &g->body);
        }
        return res;
    }
    return res;
}

static void assign_name(ctx *c, const ast_expr *target, ir_expr *v, ir_block *out, int line, int col) {
    binding *b = chk_lookup(c, target->name);
    if (!b) {
        if (chk_is_reserved(target->str)) {
            chk_err(c, target->line, target->col, "'%s' is reserved and cannot name a variable", target->str);
            return;
        }
        if (!v) { /* keep later uses of the name from reporting again */
            chk_bind(c, target->name, BK_POISON, target->line, target->col);
            return;
        }
        if (v->type == DVM_T_VOID) return;
        if (chk_no_tuple(c, v, target->line, target->col)) return;
        int var = chk_new_vvar(c, target->str, v->type, NULL, 0, target->line, target->col);
        if (var < 0) return;
        binding *nb = chk_bind(c, target->name, BK_VAR, target->line, target->col);
        if (nb) {
            nb->var = var;
            nb->vtype = is_vt(v->type) ? v->type : 0;
        }
        chk_vassign(c, var, v, out, line, col);
        return;
    }
    switch (b->kind) {
    case BK_POISON: return;
    case BK_ARRAY:
        chk_err(c, target->line, target->col, "cannot assign to array '%s'; store into an element: %s[i] = ...", target->str, target->str);
        return;
    case BK_EXPR:
        chk_err(c, target->line, target->col, "cannot assign to the %s '%s' (read-only)", b->what ? b->what : "constant", target->str);
        return;
    default: break;
    }
    if (!chk_writable(c, b, target) || !v) return;
    const ir_var *iv = &c->k->vars[b->var];
    if (chk_no_tuple(c, v, target->line, target->col)) return;
    int want = b->vtype ? b->vtype : iv->type;
    ir_expr *cv = chk_vconvert(c, v, want);
    if (!cv) {
        chk_err(c, target->line, target->col, "'%s' is %s here but was declared %s at %d:%d", target->str, chk_tname(v->type), chk_tname(want),
            iv->line, iv->col);
        return;
    }
    chk_vassign(c, b->var, cv, out, line, col);
}

/* 1 when the local of binding b may be assigned here, else 0 with an error. */
int chk_writable(ctx *c, binding *b, const ast_expr *target) {
    const char *name = target->kind == AE_NAME ? target->str : c->k->vars[b->var].name;
    const ir_var *iv = &c->k->vars[b->var];
    switch (iv->storage) {
    case IR_PARAM:
        chk_err(c, target->line, target->col, "cannot assign to parameter '%s' (parameters are read-only); copy it into a local first: %s_ = %s",
            name, name, name);
        return 0;
    case IR_SHAPESYM:
        chk_err(c, target->line, target->col, "cannot assign to the shape symbol '%s' (read-only)", name);
        return 0;
    case IR_PINDEX:
        chk_err(c, target->line, target->col, "cannot assign to the parallel loop index '%s' (read-only)", name);
        return 0;
    case IR_GLOBAL:
        if (c->in_parallel) {
            chk_err(c, target->line, target->col,
                "cannot assign to '%s' inside a parallel loop: it was declared at %d:%d outside the loop, and the loop's iterations would race; "
                "use a new local inside the loop, or accumulate into an array element with +=",
                name, iv->line, iv->col);
            return 0;
        }
        break;
    default: break;
    }
    if (b->loopvar) {
        chk_err(c, target->line, target->col, "cannot assign to the loop variable '%s' inside its loop", name);
        return 0;
    }
    return 1;
}

/* x[i] = e, x[i] += e, x[i] -= e, atomic_max(x[i], e): the array parameter or -1. */
static int lower_array_target(ctx *c, const ast_expr *t, ir_expr **idx, int *rank, ir_block *pre, const char *what) {
    int param = chk_array_of(c, t->a);
    if (param < 0) return -1;
    if (c->fr->h) {
        chk_err(c, t->line, t->col, "helper '%s' cannot %s array '%s' (helpers only read arrays)", c->fr->h->f->str, what, t->a->str);
        return -1;
    }
    *rank = chk_lower_indices(c, t, param, idx, pre);
    return *rank < 0 ? -1 : param;
}

static ir_expr *value_for_array(ctx *c, const ast_expr *ve, ir_expr *v, int param) {
    if (!v) return NULL;
    const ir_param *p = &c->k->params[param];
    ir_expr *cv = chk_convert(c, v, p->type);
    if (!cv) chk_err(c, ve->line, ve->col, "cannot store %s into '%s', an %s array%s", chk_tname(v->type), p->name, chk_tname(p->type),
                 v->type == DVM_T_F32 ? " (convert with i32(...))" : "");
    return cv;
}

static int lower_store(ctx *c, const ast_stmt *s, ir_block *out) {
    const ast_expr *t = s->target;
    ir_expr *v = chk_lower_expr(c, s->value, out);
    ir_expr *idx[DVM_MAX_RANK] = {0};
    int rank = 0;
    int param = lower_array_target(c, t, idx, &rank, out, "write");
    if (param < 0 || !v) return 0;
    ir_expr *cv = value_for_array(c, s->value, v, param);
    if (!cv) return 0;
    const ir_param *p = &c->k->params[param];
    ir_stmt *st;
    if (s->kind == AS_ASSIGN) {
        st = chk_mk_stmt(c, IR_STORE, s->line, s->col);
    } else {
        if (s->op != TK_PLUS && s->op != TK_MINUS) {
            chk_err(c, s->line, s->col, "'%s[...] %s= e' is not supported: only += and -= on array elements (they are atomic adds); write %s[i] = %s[i] %s e",
                p->name, chk_op_text(s->op), p->name, p->name, chk_op_text(s->op));
            return 0;
        }
        if (s->op == TK_MINUS) {
            if (cv->kind == IR_CONST) cv = p->type == DVM_T_F32 ? chk_mk_const_f(c, -cv->k.f, cv->line, cv->col)
                                                                : chk_mk_const_i(c, DVM_T_I32, (int32_t)(0u - (uint32_t)cv->k.i), cv->line, cv->col);
            else cv = chk_mk_un(c, p->type == DVM_T_F32 ? DVM_OP_NEGF : DVM_OP_NEGI, p->type, cv);
        }
        st = chk_mk_stmt(c, IR_ATOMIC, s->line, s->col);
        if (st) st->op = p->type == DVM_T_F32 ? DVM_OP_ATOMADDF : DVM_OP_ATOMADDI;
    }
    if (!st) return 0;
    st->slot = c->slot_of_param[param];
    st->nidx = rank;
    memcpy(st->idx, idx, sizeof idx);
    st->e = cv;
    chk_push(c, out, st);
    return 0;
}

/* a, b = f(...): the values of a helper that returns several */
static int lower_unpack(ctx *c, const ast_stmt *s, ir_block *out) {
    ir_expr *v = chk_lower_expr(c, s->value, out);
    int ok = v != NULL;
    if (v && v->type != DVM_T_TUPLE) {
        chk_err(c, s->value->line, s->value->col, "only a call of a helper that returns several values can be unpacked into %d targets; this is %s",
            s->ntargets, chk_tname(v->type));
        ok = 0;
    } else if (v && v->nidx != s->ntargets) {
        chk_err(c, s->value->line, s->value->col, "this call returns %d values but %d targets are given", v->nidx, s->ntargets);
        ok = 0;
    }
    if (ok) v = chk_settle_f(c, v, out, 1); /* every value first, then the targets: a, b = f(b, a) */
    for (int i = 0; i < s->ntargets; i++) {
        const ast_expr *t = s->targets[i];
        ir_expr *part = ok && v ? parts(v)[i] : NULL;
        if (t->kind == AE_NAME) assign_name(c, t, part, out, s->line, s->col);
        else if ((t->kind == AE_INDEX || t->kind == AE_ATTR) && chk_is_place_form(c, t)) {
            if (part) chk_place_store(c, t, t, part, 0, out, s->line, s->col);
        } else chk_err(c, t->line, t->col, "cannot unpack into this expression; expected a name or an array element");
    }
    return 0;
}

static int lower_expr_stmt(ctx *c, const ast_stmt *s, ir_block *out) {
    const ast_expr *e = s->value;
    if (e->kind != AE_CALL) {
        chk_err(c, s->line, s->col, "this expression does nothing; expected an assignment, a store, atomic_max/atomic_min or a helper call");
        return 0;
    }
    if (c->func_of_name[e->name] < 0) {
        const builtin *bi = chk_find_builtin(e->str);
        if (bi && bi->kind == BI_ATOMIC) {
            if (e->nargs != 2) {
                chk_err(c, e->line, e->col, "%s takes 2 arguments (an array element and a value) but %d %s given", bi->name, e->nargs,
                    e->nargs == 1 ? "was" : "were");
                return 0;
            }
            const ast_expr *t = e->args[0];
            if (t->kind != AE_INDEX) {
                chk_err(c, t->line, t->col, "the first argument of %s must be an array element such as x[i]", bi->name);
                return 0;
            }
            ir_expr *v = chk_lower_expr(c, e->args[1], out);
            ir_expr *idx[DVM_MAX_RANK] = {0};
            int rank = 0;
            int param = lower_array_target(c, t, idx, &rank, out, "write");
            if (param < 0 || !v) return 0;
            ir_expr *cv = value_for_array(c, e->args[1], v, param);
            if (!cv) return 0;
            int f = c->k->params[param].type == DVM_T_F32;
            ir_stmt *st = chk_mk_stmt(c, IR_ATOMIC, s->line, s->col);
            if (!st) return 0;
            st->op = bi->op ? (f ? DVM_OP_ATOMMAXF : DVM_OP_ATOMMAXI) : (f ? DVM_OP_ATOMMINF : DVM_OP_ATOMMINI);
            st->slot = c->slot_of_param[param];
            st->nidx = rank;
            memcpy(st->idx, idx, sizeof idx);
            st->e = cv;
            chk_push(c, out, st);
            return 0;
        }
        if (bi && bi->kind != BI_LOOP) {
            chk_err(c, e->line, e->col, "the value of %s(...) is not used", e->str);
            return 0;
        }
    }
    chk_lower_expr(c, e, out); /* a helper call: its statements stay, its value is dropped */
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
        chk_err(c, e->line, e->col, "serial(range(...)) is a loop of top-level statements: it may only be a statement of the kernel's body");
        return -1;
    }
    if (e->kind != AE_CALL || (strcmp(e->str, "range") && strcmp(e->str, "ndrange") && strcmp(e->str, "static"))) {
        chk_err(c, e->line, e->col, "expected range(...), ndrange(...) or static(range(N)) after 'in'");
        return -1;
    }
    if (!strcmp(e->str, "static")) {
        const ast_expr *r = e->nargs == 1 ? e->args[0] : NULL;
        if (!r || r->kind != AE_CALL || strcmp(r->str, "range") || r->nargs < 1 || r->nargs > 2) {
            chk_err(c, e->line, e->col, "static(...) takes one range(N) or range(start, stop) with integer literal bounds");
            return -1;
        }
        if (s->ntargets != 1) {
            chk_err(c, s->targets[1]->line, s->targets[1]->col, "static(range(...)) has one loop variable but %d were given", s->ntargets);
            return -1;
        }
        int32_t b[2] = {0, 0};
        for (int i = 0; i < r->nargs; i++) {
            ir_expr *x = chk_lower_expr(c, r->args[i], pre);
            if (!x) return -1;
            if (x->kind != IR_CONST || x->type != DVM_T_I32) {
                chk_err(c, r->args[i]->line, r->args[i]->col, "the bounds of static(range(...)) must be integer literals");
                return -1;
            }
            b[i] = x->k.i;
        }
        it->kind = 2;
        it->sfrom = r->nargs == 2 ? b[0] : 0;
        it->sto = r->nargs == 2 ? b[1] : b[0];
        if ((int64_t)it->sto - it->sfrom > MAX_UNROLL) {
            chk_err(c, e->line, e->col, "static loop of %lld iterations is too long to unroll (at most %d)", (long long)it->sto - it->sfrom, MAX_UNROLL);
            return -1;
        }
        return 0;
    }
    int nd = !strcmp(e->str, "ndrange");
    it->kind = nd;
    if (!nd && (e->nargs < 1 || e->nargs > 2)) {
        chk_err(c, e->line, e->col, "range takes 1 or 2 arguments (stop, or start and stop; a step is not supported) but %d %s given", e->nargs,
            e->nargs == 1 ? "was" : "were");
        return -1;
    }
    if (nd && (e->nargs < 1 || e->nargs > DVM_MAX_PAR_DIMS)) {
        chk_err(c, e->line, e->col, "ndrange takes 1 to %d extents but %d %s given", DVM_MAX_PAR_DIMS, e->nargs, e->nargs == 1 ? "was" : "were");
        return -1;
    }
    int nvars = nd ? e->nargs : 1;
    if (s->ntargets != nvars) {
        if (nd)
            chk_err(c, s->targets[0]->line, s->targets[0]->col, "ndrange has %d extent%s but %d loop variable%s given", e->nargs,
                e->nargs == 1 ? "" : "s", s->ntargets, s->ntargets == 1 ? " was" : "s were");
        else
            chk_err(c, s->targets[0]->line, s->targets[0]->col, "range has one loop variable but %d were given (use ndrange for several)", s->ntargets);
        return -1;
    }
    int ok = 1;
    for (int i = 0; i < e->nargs; i++) {
        ir_expr *x = chk_lower_typed(c, e->args[i], pre, DVM_T_I32, nd ? "an ndrange extent" : "a range bound");
        if (!x || x->type != DVM_T_I32) {
            if (x) chk_err(c, e->args[i]->line, e->args[i]->col, "range bounds must be i32, got %s", chk_tname(x->type));
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
    if (chk_is_reserved(t->str)) {
        chk_err(c, t->line, t->col, "'%s' is reserved and cannot name a variable", t->str);
        return -1;
    }
    binding *b = chk_lookup(c, t->name);
    if (b && strcmp(t->str, "_")) {
        chk_err(c, t->line, t->col, "loop variable '%s' is already defined at %d:%d; use a new name", t->str, b->line, b->col);
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
    if (it.kind == 2) return chk_unroll_static(c, s, it.sfrom, it.sto, out);
    /* serial range / ndrange: nested IR_FOR loops, last dimension innermost */
    ir_stmt *loops[DVM_MAX_PAR_DIMS] = {0};
    int mark = chk_scope_mark(c);
    for (int d = 0; d < it.n; d++) {
        const ast_expr *t = s->targets[d];
        ir_stmt *f = chk_mk_stmt(c, IR_FOR, s->line, s->col);
        if (!f) return 0;
        f->var = chk_new_var(c, t->str, DVM_T_I32, t->line, t->col);
        if (f->var < 0) return 0;
        f->e = it.kind == 0 && it.start ? it.start : chk_mk_const_i(c, DVM_T_I32, 0, s->line, s->col);
        f->e2 = it.stop[d];
        binding *b = chk_bind(c, t->name, BK_VAR, t->line, t->col);
        if (b) {
            b->var = f->var;
            b->loopvar = 1;
        }
        loops[d] = f;
        if (d) chk_push(c, &loops[d - 1]->body, f);
    }
    fr->loopkind = it.n > 1 ? LK_NDRANGE : LK_SERIAL;
    fr->loopdepth++;
    int r = lower_block(c, &s->body, &loops[it.n - 1]->body);
    fr->loopdepth--;
    fr->loopkind = saved_kind;
    chk_scope_pop(c, mark);
    if ((r & ESC) && fr->h)
        for (int d = it.n - 2; d >= 0; d--) chk_push(c, &loops[d]->body, mk_if_flag_break(c, fr->D, s->line, s->col));
    chk_push(c, out, loops[0]);
    return r & ESC;
}

static int lower_while(ctx *c, const ast_stmt *s, ir_block *out) {
    ir_block pre = {0};
    ir_expr *cond = chk_lower_cond(c, s->value, &pre, "the while condition");
    ir_stmt *w = chk_mk_stmt(c, IR_WHILE, s->line, s->col);
    if (!w) return 0;
    if (pre.n == 0) {
        w->e = cond;
    } else { /* the condition needs statements: while True: pre; if not cond: break; body */
        w->e = chk_mk_const_i(c, DVM_T_BOOL, 1, s->line, s->col);
        w->body = pre;
        ir_stmt *g = chk_mk_stmt(c, IR_IF, s->value->line, s->value->col);
        if (g) {
            g->e = chk_mk_not(c, cond);
            chk_push(c, &g->body, chk_mk_stmt(c, IR_BREAK, s->line, s->col));
            chk_push(c, &w->body, g);
        }
    }
    frame *fr = c->fr;
    int saved_kind = fr->loopkind;
    fr->loopkind = LK_SERIAL;
    fr->loopdepth++;
    int r = lower_block(c, &s->body, &w->body);
    fr->loopdepth--;
    fr->loopkind = saved_kind;
    if (cond) chk_push(c, out, w);
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
    for (const ast_stmt *q = chk_next_elif(s); q; q = chk_next_elif(q)) len++;
    int chunk = ELIF_CHUNK, room = MAX_BLOCK_DEPTH - c->depth - 2;
    if (len > chunk && room < chunk) chunk = room > 1 ? room : 1;
    int rest = -1;
    if (len > chunk) {
        rest = chk_new_var(c, "elif chain", DVM_T_BOOL, s->line, s->col);
        if (rest < 0) return 0;
        chk_push(c, out, chk_mk_assign(c, rest, chk_mk_const_i(c, DVM_T_BOOL, 0, s->line, s->col), s->line, s->col));
    }
    const int depth0 = c->depth;
    ir_block *dst = out;
    int r = 0, term = 1;
    for (int k = 1; s && !c->oom; k++) {
        ir_expr *cond = chk_lower_cond(c, s->value, dst, s->is_elif ? "the elif condition" : "the if condition");
        ir_stmt *st = chk_mk_stmt(c, IR_IF, s->line, s->col);
        if (!st) break;
        st->e = cond;
        int r1 = lower_block(c, &s->body, &st->body);
        r |= r1 & ESC;
        if (!(r1 & TERM)) term = 0;
        if (cond) chk_push(c, dst, st);
        const ast_stmt *nx = chk_next_elif(s);
        if (!nx) {
            int r2 = lower_block(c, &s->orelse, &st->orelse);
            r |= r2 & ESC;
            if (!(r2 & TERM)) term = 0;
        } else if (k % chunk == 0) { /* this chain ends; the next one runs under `if rest:` */
            chk_push(c, &st->orelse, chk_mk_assign(c, rest, chk_mk_const_i(c, DVM_T_BOOL, 1, s->line, s->col), s->line, s->col));
            ir_stmt *g = chk_mk_stmt(c, IR_IF, nx->line, nx->col);
            if (!g) break;
            g->e = chk_mk_var(c, rest, nx->line, nx->col);
            chk_push(c, out, g);
            chk_push(c, &g->body, chk_mk_assign(c, rest, chk_mk_const_i(c, DVM_T_BOOL, 0, nx->line, nx->col), nx->line, nx->col));
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
            binding *ab = t->kind == AE_INDEX && t->a->kind == AE_NAME ? chk_lookup(c, t->a->name) : NULL;
            int scalar_array = ab && ab->kind == BK_ARRAY && !c->param_vt[ab->param];
            if (!scalar_array && chk_is_place_form(c, t)) {
                ir_expr *v = chk_lower_expr(c, s->value, out);
                chk_place_store(c, t, s->value, v, s->kind == AS_AUG ? s->op : 0, out, s->line, s->col);
                return 0;
            }
        }
        if (t->kind == AE_INDEX) {
            if (t->a->kind == AE_ATTR) {
                chk_err(c, t->line, t->col, "cannot assign to a shape (read-only)");
                return 0;
            }
            return lower_store(c, s, out);
        }
        if (t->kind != AE_NAME) {
            chk_err(c, t->line, t->col, "cannot assign to this expression; expected a name or an array element");
            return 0;
        }
        ir_expr *v;
        if (s->kind == AS_AUG) {
            binding *b = chk_lookup(c, t->name);
            if (!b) {
                chk_err(c, t->line, t->col, "unknown name '%s' ('%s %s= e' needs '%s' assigned first)", t->str, t->str, chk_op_text(s->op), t->str);
                return 0;
            }
            if (b->kind == BK_POISON) return 0;
            if (b->kind != BK_VAR) {
                assign_name(c, t, NULL, out, s->line, s->col); /* reports why it is read-only */
                return 0;
            }
            ir_expr *cur = b->vtype ? chk_vvar_val(c, b->var, b->vtype, NULL, 0, t->line, t->col) : chk_mk_var(c, b->var, t->line, t->col);
            ir_expr *rhs = chk_lower_expr(c, s->value, out);
            v = rhs ? chk_arith2(c, s->op, cur, rhs, out, s->line, s->col) : NULL;
            if (!v) return 0;
        } else {
            v = chk_lower_expr(c, s->value, out);
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
            chk_err(c, s->line, s->col, "'%s' outside a loop", kw);
            return 0;
        case LK_STATIC:
            chk_err(c, s->line, s->col, "'%s' inside static(range(...)) is not supported (the loop is unrolled at compile time)", kw);
            return 0;
        case LK_PARALLEL:
            if (s->kind == AS_BREAK) {
                chk_err(c, s->line, s->col, "'break' cannot leave a parallel loop (its iterations run concurrently); use an if around the rest of the body");
                return 0;
            }
            if (c->cflag < 0) {
                int saved = c->in_parallel;
                c->in_parallel = 1;
                c->cflag = chk_new_var(c, "continue", DVM_T_BOOL, s->line, s->col);
                c->in_parallel = saved;
                if (c->cflag < 0) return 0;
            }
            chk_push(c, out, chk_mk_assign(c, c->cflag, chk_mk_const_i(c, DVM_T_BOOL, 1, s->line, s->col), s->line, s->col));
            return ESC | TERM;
        case LK_NDRANGE:
            if (s->kind == AS_BREAK) {
                chk_err(c, s->line, s->col, "'break' inside a nested ndrange loop is not supported; use nested range loops");
                return 0;
            }
            break;
        default: break;
        }
        chk_push(c, out, chk_mk_stmt(c, s->kind == AS_BREAK ? IR_BREAK : IR_CONTINUE, s->line, s->col));
        return TERM;
    }
    case AS_ASSERT: {
        ir_expr *cond = chk_lower_cond(c, s->value, out, "the assert condition");
        if (!cond) return 0;
        ir_stmt *st = chk_mk_stmt(c, IR_ASSERT, s->line, s->col);
        if (!st) return 0;
        st->e = cond;
        st->msg = s->msg ? s->msg : s->text;
        chk_push(c, out, st);
        return 0;
    }
    case AS_RETURN: {
        if (!fr->h) {
            chk_err(c, s->line, s->col, "'return' outside a helper: a kernel writes its results into arrays");
            return 0;
        }
        ir_expr *cv = chk_lower_return(c, fr->h->f, s->value, out);
        if (!cv) return TERM;
        if (fr->R < 0) return TERM; /* simple mode never gets here */
        chk_vassign(c, fr->R, cv, out, s->line, s->col);
        chk_push(c, out, chk_mk_assign(c, fr->D, chk_mk_const_i(c, DVM_T_BOOL, 1, s->line, s->col), s->line, s->col));
        if (fr->loopdepth > 0) chk_push(c, out, chk_mk_stmt(c, IR_BREAK, s->line, s->col));
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
    int mark = chk_scope_mark(c);
    for (int d = 0; d < it.n; d++) {
        binding *b = chk_bind(c, s->targets[d]->name, BK_VAR, s->targets[d]->line, s->targets[d]->col);
        if (b) b->var = idx[d];
    }
    c->in_parallel = 1;
    c->cflag = -1;
    c->fr->loopkind = LK_PARALLEL;
    ir_block body = {0};
    lower_block(c, &s->body, &body);
    c->fr->loopkind = LK_NONE;
    c->in_parallel = 0;
    chk_scope_pop(c, mark);
    if (c->cflag >= 0) { /* the continue flag starts each iteration cleared */
        ir_block b2 = {0};
        chk_push(c, &b2, chk_mk_assign(c, c->cflag, chk_mk_const_i(c, DVM_T_BOOL, 0, s->line, s->col), s->line, s->col));
        for (int i = 0; i < body.n; i++) chk_push(c, &b2, body.s[i]);
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
        chk_err(c, e->line, e->col, "serial(...) takes one range(stop) or range(start, stop)");
        return;
    }
    if (s->ntargets != 1) {
        chk_err(c, s->targets[1]->line, s->targets[1]->col, "serial(range(...)) has one loop variable but %d were given", s->ntargets);
        return;
    }
    if (check_loop_var(c, s->targets[0])) return;
    ir_block pre = {0};
    ir_expr *b[2] = {NULL, NULL};
    for (int i = 0; i < r->nargs; i++) {
        b[i] = chk_lower_typed(c, r->args[i], &pre, DVM_T_I32, "a range bound");
        if (b[i] && b[i]->type != DVM_T_I32) {
            chk_err(c, r->args[i]->line, r->args[i]->col, "range bounds must be i32, got %s", chk_tname(b[i]->type));
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
    L->var = chk_new_var(c, t->str, DVM_T_I32, t->line, t->col);
    if (L->var < 0) return;
    L->start = r->nargs == 2 ? b[0] : NULL;
    L->stop = r->nargs == 2 ? b[1] : b[0];
    L->line = s->line;
    L->col = s->col;
    const int id = ++loops->n;
    int mark = chk_scope_mark(c);
    binding *bd = chk_bind(c, t->name, BK_VAR, t->line, t->col);
    if (bd) {
        bd->var = L->var;
        bd->loopvar = 1;
    }
    const int first = tops->n;
    int stop = 0;
    for (int i = 0; i < s->body.n && !c->oom && !stop; i++) {
        const ast_stmt *q = s->body.s[i];
        if (is_serial_loop(q)) {
            chk_err(c, q->line, q->col, "serial loops of top-level statements do not nest; use range(...) inside a parallel loop");
            continue;
        }
        lower_top(c, q, tops, loops, &stop);
    }
    chk_scope_pop(c, mark);
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

void chk_begin_kernel(ctx *c, ir_kernel *k, frame *kf, int in_parallel) {
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
int chk_param_types(ctx *c, const ast_func *f) {
    c->param_vt = dvm_arena_alloc(c->a, (size_t)f->nparams + 1);
    c->param_decl = dvm_arena_alloc(c->a, sizeof(char *) * (size_t)(f->nparams + 1));
    if (!c->param_vt || !c->param_decl) return -1;
    for (int i = 0; i < f->nparams; i++) {
        const ast_param *ap = &f->params[i];
        c->param_vt[i] = ap->is_array && is_vt(ap->type) ? ap->type : 0;
        char buf[256];
        size_t at = (size_t)snprintf(buf, sizeof buf, "%s", chk_tname(ap->type));
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
    if (!k->params || !k->syms || !c->slot_of_param || !slots || chk_param_types(c, f)) {
        c->oom = 1;
        return NULL;
    }
    frame kf;
    chk_begin_kernel(c, k, &kf, 0);
    int mark = chk_scope_mark(c);
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
            chk_err(c, ap->line, ap->col, "'%s: %s' has %d axes with the %s's own; arrays have at most %d", ap->str, c->param_decl[i], p->rank, chk_tname(ap->type),
                DVM_MAX_RANK);
            p->rank = DVM_MAX_RANK;
        }
        p->line = ap->line;
        p->col = ap->col;
        c->slot_of_param[i] = -1;
        binding *prev = chk_lookup(c, ap->name);
        if (prev) {
            chk_err(c, ap->line, ap->col, "'%s' is declared twice in kernel '%s' (first at %d:%d)", ap->str, f->str, prev->line, prev->col);
            continue;
        }
        if (chk_is_reserved(ap->str)) {
            chk_err(c, ap->line, ap->col, "'%s' is reserved and cannot name a parameter", ap->str);
            continue;
        }
        if (ap->is_array) {
            c->slot_of_param[i] = nslots;
            slots[nslots].param = i;
            slots[nslots].role = DVM_ROLE_PRIMAL;
            nslots++;
            binding *b = chk_bind(c, ap->name, BK_ARRAY, ap->line, ap->col);
            if (b) b->param = i;
        } else {
            p->var = ir_var_new(c->a, k, ap->str, ap->type, IR_PARAM, ap->line, ap->col);
            if (p->var < 0) {
                c->oom = 1;
                return NULL;
            }
            k->vars[p->var].param = i;
            binding *b = chk_bind(c, ap->name, BK_VAR, ap->line, ap->col);
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
            binding *b = chk_lookup(c, d->name);
            if (b && b->kind == BK_VAR && c->k->vars[b->var].storage == IR_SHAPESYM) {
                p->dim[r] = -(c->k->vars[b->var].param + 1);
                continue;
            }
            if (b) {
                chk_err(c, d->line, d->col, "'%s' names both a shape symbol and a parameter of kernel '%s'", d->str, f->str);
                continue;
            }
            if (chk_is_reserved(d->str)) {
                chk_err(c, d->line, d->col, "'%s' is reserved and cannot name a shape symbol", d->str);
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
            binding *nb = chk_bind(c, d->name, BK_VAR, d->line, d->col);
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
    chk_scope_pop(c, mark);
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

ir_module *dvm_check(dvm_arena *a, const char *src, const dvm_lexed *lx, ast_module *am, const char *filename,
                      dvm_diags *d) {
    ctx C, *c = &C;
    memset(c, 0, sizeof *c);
    c->a = a;
    c->d = d;
    c->src = src;
    c->lx = lx;
    c->am = am;
    size_t nn = (size_t)lx->nnames + 1;
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
                chk_err(c, f->line, f->col, "%s '%s' is defined twice (first at %d:%d)", f->is_kernel ? "kernel" : "helper", f->str, g->line, g->col);
            else
                chk_err(c, f->line, f->col, "'%s' is defined both as a kernel and as a helper (first at %d:%d)", f->str, g->line, g->col);
            continue;
        }
        if (chk_find_builtin(f->str) || chk_is_reserved(f->str)) {
            chk_err(c, f->line, f->col, "'%s' is the name of a builtin; choose another name", f->str);
            continue;
        }
        c->func_of_name[f->name] = i;
        c->helpers[i].f = f;
        if (f->is_kernel) nkernels++;
    }
    for (int i = 0; i < am->nfuncs; i++)
        if (!am->funcs[i]->is_kernel && c->helpers[i].f) chk_analyze_helper(c, &c->helpers[i]);
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
            chk_check_unused_helper(c, &c->helpers[i]);
    if (c->oom == 1) dvm_diag(d, 0, 0, "out of memory");
    if (d->nerrors) return NULL;
    if (m->nkernels == 0) {
        dvm_diag(d, 0, 0, "no kernel found: declare one with 'kernel NAME(...):'");
        return NULL;
    }
    return m;
}
