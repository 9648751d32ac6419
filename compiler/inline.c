/* inline.c: helper inlining (one-time checks of a helper, calls, returns), the checking of
 * helpers that no kernel calls, and the unrolling of static loops. */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "compiler/check_internal.h"

/* ---- helpers ---- */

/* The elif that continues s's chain, else NULL. The walks below follow chains in a loop: a
 * chain may be as long as the file (parse.c builds it without recursion). */
const ast_stmt *chk_next_elif(const ast_stmt *s) {
    return s->kind == AS_IF && s->orelse.n == 1 && s->orelse.s[0]->kind == AS_IF && s->orelse.s[0]->is_elif ? s->orelse.s[0] : NULL;
}
static int count_returns(const ast_block *b) {
    int n = 0;
    for (int i = 0; i < b->n; i++) {
        const ast_stmt *s = b->s[i];
        if (s->kind == AS_RETURN) n++;
        for (; s; s = chk_next_elif(s)) {
            n += count_returns(&s->body);
            if (!chk_next_elif(s)) n += count_returns(&s->orelse);
        }
    }
    return n;
}
static int always_returns(const ast_block *b) {
    if (b->n == 0) return 0;
    const ast_stmt *s = b->s[b->n - 1];
    if (s->kind == AS_RETURN) return 1;
    if (s->kind != AS_IF) return 0;
    for (; chk_next_elif(s); s = chk_next_elif(s))
        if (!always_returns(&s->body)) return 0;
    return always_returns(&s->body) && always_returns(&s->orelse);
}
static void mark_assigned(const ast_block *b, const ast_func *f, unsigned char *assigned) {
    for (int i = 0; i < b->n; i++) {
        const ast_stmt *s = b->s[i];
        if ((s->kind == AS_ASSIGN || s->kind == AS_AUG) && s->target->kind == AE_NAME)
            for (int p = 0; p < f->nparams; p++)
                if (f->params[p].name == s->target->name) assigned[p] = 1;
        for (; s; s = chk_next_elif(s)) {
            mark_assigned(&s->body, f, assigned);
            if (!chk_next_elif(s)) mark_assigned(&s->orelse, f, assigned);
        }
    }
}

/* One-time checks of a helper's declaration. */
void chk_analyze_helper(ctx *c, helper_info *h) {
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
                chk_err(c, f->params[i].line, f->params[i].col, "parameter '%s' of helper '%s' is declared twice", f->params[i].str, f->str);
                h->ok = 0;
            }
        if (chk_is_reserved(f->params[i].str)) {
            chk_err(c, f->params[i].line, f->params[i].col, "'%s' is reserved and cannot name a parameter", f->params[i].str);
            h->ok = 0;
        }
    }
    if (!always_returns(&f->body)) {
        chk_err(c, f->line, f->col, "helper '%s' can reach the end of its body without returning a value", f->str);
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
    chk_err(c, e->line, e->col, "helper calls are nested too deeply (more than %d levels; every call is inlined): %s", MAX_CALL_DEPTH, chain);
    c->oom = 2;
}

/* The value a helper returns (several: a tuple), converted to the declared type. */
ir_expr *chk_lower_return(ctx *c, const ast_func *f, const ast_expr *ve, ir_block *pre) {
    char decl[160];
    if (f->ret == DVM_T_TUPLE) {
        size_t at = (size_t)snprintf(decl, sizeof decl, "(");
        for (int i = 0; i < f->nrets && at < sizeof decl - 16; i++) at += (size_t)snprintf(decl + at, sizeof decl - at, "%s%s", i ? ", " : "", chk_tname(f->rets[i]));
        snprintf(decl + at, sizeof decl - at, ")");
    } else snprintf(decl, sizeof decl, "%s", chk_tname(f->ret));
    if (ve->kind == AE_TUPLE) {
        if (f->ret != DVM_T_TUPLE || f->nrets != ve->nargs) {
            chk_err(c, ve->line, ve->col, "helper '%s' returns %d values but is declared '-> %s'", f->str, ve->nargs, decl);
            return NULL;
        }
        ir_expr *r = chk_mk_vec(c, DVM_T_TUPLE, ve->nargs, ve->line, ve->col);
        if (!r) return NULL;
        for (int i = 0; i < ve->nargs; i++) {
            ir_expr *v = chk_lower_expr(c, ve->args[i], pre);
            ir_expr *cv = chk_vconvert(c, v, f->rets[i]);
            if (v && !cv) chk_err(c, ve->args[i]->line, ve->args[i]->col, "value %d that helper '%s' returns is %s but is declared '-> %s'", i + 1, f->str,
                              chk_tname(v->type), decl);
            parts(r)[i] = cv;
        }
        return chk_vdone(r);
    }
    ir_expr *v = chk_lower_expr(c, ve, pre);
    if (!v) return NULL;
    ir_expr *cv = f->ret == DVM_T_TUPLE ? NULL : chk_vconvert(c, v, f->ret);
    if (!cv) chk_err(c, ve->line, ve->col, "helper '%s' returns %s but is declared '-> %s'%s", f->str, chk_tname(v->type), decl,
                 f->ret == DVM_T_TUPLE ? " (return several values: return a, b)" : "");
    return cv;
}

ir_expr *chk_lower_helper_call(ctx *c, helper_info *h, const ast_expr *e, ir_block *pre) {
    ast_func *f = h->f;
    if (!h->ok) return NULL;
    if (h->active) {
        if (c->fr->h == h) chk_err(c, e->line, e->col, "helper '%s' calls itself (recursion is not supported)", f->str);
        else chk_err(c, e->line, e->col, "helper '%s' calls itself through '%s' (recursion is not supported)", f->str, c->fr->h ? c->fr->h->f->str : "?");
        return NULL;
    }
    if (e->nargs != f->nparams) {
        chk_err(c, e->line, e->col, "helper '%s' takes %d argument%s but %d %s given", f->str, f->nparams, f->nparams == 1 ? "" : "s",
            e->nargs, e->nargs == 1 ? "was" : "were");
        return NULL;
    }
    if (c->fr->calls >= MAX_CALL_DEPTH) {
        call_chain_error(c, e, f);
        return NULL;
    }
    h->used = 1;
    if (++c->ninline > MAX_INLINE) {
        chk_err(c, e->line, e->col, "too many helper calls to inline in one kernel (more than %d)", MAX_INLINE);
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
            binding *b = arg->kind == AE_NAME ? chk_lookup(c, arg->name) : NULL;
            if (!b || b->kind != BK_ARRAY) {
                if (!b || b->kind != BK_POISON)
                    chk_err(c, arg->line, arg->col, "argument %d of '%s' must be an array (parameter '%s: %s[...]')", i + 1, f->str, p->str, chk_tname(p->type));
                ok = 0;
                continue;
            }
            const ir_param *kp = &c->k->params[b->param];
            int kvt = c->param_vt[b->param], krank = kp->rank - (is_mat(kvt) ? 2 : is_vec(kvt) ? 1 : 0);
            if ((kvt ? kvt : kp->type) != p->type || krank != p->rank) {
                chk_err(c, arg->line, arg->col, "argument %d of '%s' must be an array of %s of rank %d, got '%s' (%s)", i + 1, f->str,
                    chk_tname(p->type), p->rank, kp->name, c->param_decl[b->param]);
                ok = 0;
                continue;
            }
            for (int r = 0; r < p->rank; r++)
                if (!p->dim[r].is_sym && kp->dim[r] >= 0 && kp->dim[r] != p->dim[r].value) {
                    chk_err(c, arg->line, arg->col, "argument %d of '%s': axis %d of '%s' has extent %d but the helper declares %lld", i + 1, f->str, r,
                        kp->name, (int)kp->dim[r], (long long)p->dim[r].value);
                    ok = 0;
                }
            akind[i] = A_ARRAY;
            aref[i] = b->param;
            continue;
        }
        ir_expr *v = chk_lower_expr(c, arg, pre);
        if (!v) {
            ok = 0;
            continue;
        }
        ir_expr *cv = chk_vconvert(c, v, p->type);
        if (!cv) {
            chk_err(c, arg->line, arg->col, "argument %d of '%s' ('%s') must be %s, got %s", i + 1, f->str, p->str, chk_tname(p->type), chk_tname(v->type));
            ok = 0;
            continue;
        }
        if (!h->assigned[i] && chk_is_leaf(cv)) { /* read-only parameter: use the value directly */
            akind[i] = A_EXPR;
            aval[i] = cv;
        } else {
            int t = chk_new_vvar(c, dvm_arena_printf(c->a, "%s.%s", f->str, p->str), p->type, NULL, 0, arg->line, arg->col);
            if (t < 0) return NULL;
            chk_vassign(c, t, cv, pre, arg->line, arg->col);
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
    int mark = chk_scope_mark(c);
    for (int i = 0; i < f->nparams; i++) {
        const ast_param *p = &f->params[i];
        binding *b;
        if (akind[i] == A_ARRAY) {
            b = chk_bind(c, p->name, BK_ARRAY, p->line, p->col);
            if (b) b->param = aref[i];
            const ir_param *kp = &c->k->params[aref[i]];
            for (int r = 0; r < p->rank; r++) { /* the helper's shape symbols name the argument's extents */
                if (!p->dim[r].is_sym || chk_lookup(c, p->dim[r].name)) continue;
                binding *s = chk_bind(c, p->dim[r].name, BK_EXPR, p->dim[r].line, p->dim[r].col);
                if (!s) continue;
                s->what = "shape symbol";
                s->expr = kp->dim[r] >= 0 ? chk_mk_const_i(c, DVM_T_I32, kp->dim[r], p->line, p->col)
                                          : chk_mk_var(c, c->k->syms[-kp->dim[r] - 1].var, p->line, p->col);
            }
        } else if (akind[i] == A_EXPR) {
            b = chk_bind(c, p->name, BK_EXPR, p->line, p->col);
            if (b) {
                b->expr = aval[i];
                b->what = "parameter";
            }
        } else {
            b = chk_bind(c, p->name, BK_VAR, p->line, p->col);
            if (b) {
                b->var = aref[i];
                b->vtype = is_vt(p->type) ? p->type : 0;
            }
        }
    }
    ir_expr *result = NULL;
    int nerr = c->d->nerrors;
    if (h->simple) {
        chk_lower_stmts(c, f->body.s, f->body.n - 1, pre);
        const ast_stmt *r = f->body.s[f->body.n - 1];
        result = chk_lower_return(c, f, r->value, pre);
    } else {
        nf.R = chk_new_vvar(c, dvm_arena_printf(c->a, "%s.return", f->str), f->ret, f->rets, f->nrets, f->line, f->col);
        nf.D = chk_new_var(c, dvm_arena_printf(c->a, "%s.done", f->str), DVM_T_BOOL, f->line, f->col);
        if (nf.R >= 0 && nf.D >= 0) {
            chk_push(c, pre, chk_mk_assign(c, nf.D, chk_mk_const_i(c, DVM_T_BOOL, 0, f->line, f->col), f->line, f->col));
            chk_lower_stmts(c, f->body.s, f->body.n, pre);
            result = chk_vvar_val(c, nf.R, f->ret, f->rets, f->nrets, e->line, e->col);
        }
    }
    chk_scope_pop(c, mark);
    h->active = 0;
    c->fr = saved;
    if (c->d->nerrors != nerr) return NULL;
    if (result) result->line = e->line, result->col = e->col;
    return result;
}


/* A helper no kernel calls is still checked: inlined once into a scratch kernel whose
 * parameters are the helper's own. */
void chk_check_unused_helper(ctx *c, helper_info *h) {
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
    if (!k || !call || !args || !names || !c->slot_of_param || !k->params || !k->syms || chk_param_types(c, f)) {
        c->oom = 1;
        return;
    }
    k->name = f->str;
    k->nparams = f->nparams;
    frame kf;
    chk_begin_kernel(c, k, &kf, 1);
    int mark = chk_scope_mark(c);
    for (int i = 0; i < f->nparams; i++) {
        const ast_param *ap = &f->params[i];
        ir_param *p = &k->params[i];
        p->name = ap->str;
        p->is_array = ap->is_array;
        p->type = c->param_vt[i] ? DVM_T_F32 : ap->type;
        p->rank = ap->rank + (c->param_vt[i] ? (is_mat(ap->type) ? 2 : 1) : 0);
        if (p->rank > DVM_MAX_RANK) {
            chk_err(c, ap->line, ap->col, "'%s: %s' has %d axes with the %s's own; arrays have at most %d", ap->str, c->param_decl[i], p->rank, chk_tname(ap->type),
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
            binding *b = chk_bind(c, ap->name, BK_ARRAY, ap->line, ap->col);
            if (b) b->param = i;
        } else {
            int v = chk_new_vvar(c, ap->str, ap->type, NULL, 0, ap->line, ap->col);
            binding *b = v >= 0 ? chk_bind(c, ap->name, BK_VAR, ap->line, ap->col) : NULL;
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
    chk_lower_helper_call(c, h, call, &scratch);
    chk_scope_pop(c, mark);
    if (c->oom == 2) c->oom = 0;
}

/* ---- static loops ---- */
/* `for t in static(range(from, to))`: the body once per iteration, t a constant. After an escape
 * (break, continue, return) the later iterations run under `if not flag`. */
int chk_unroll_static(ctx *c, const ast_stmt *s, int32_t from, int32_t to, ir_block *out) {
    frame *fr = c->fr;
    int saved_kind = fr->loopkind;
    fr->loopkind = LK_STATIC;
    int res = 0;
    ir_block *dst = out;
    const ast_expr *t = s->targets[0];
    for (int32_t k = from; k < to && !c->oom; k++) {
        int mark = chk_scope_mark(c);
        binding *b = chk_bind(c, t->name, BK_EXPR, t->line, t->col);
        if (b) {
            b->expr = chk_mk_const_i(c, DVM_T_I32, k, t->line, t->col);
            b->what = "static loop variable";
        }
        int nerr = c->d->nerrors;
        int r = chk_lower_stmts(c, s->body.s, s->body.n, dst);
        chk_scope_pop(c, mark);
        if (c->d->nerrors != nerr) break; /* the same errors would repeat each iteration */
        if (r & ESC) {
            res |= ESC;
            int flag = escape_flag(c);
            if (flag >= 0 && !(fr->h && fr->loopdepth > 0) && k + 1 < to) {
                ir_stmt *g = chk_mk_stmt(c, IR_IF, s->line, s->col);
                if (!g) break;
                g->e = chk_mk_not(c, chk_mk_var(c, flag, s->line, s->col));
                chk_push(c, dst, g);
                dst = &g->body;
            }
        }
    }
    fr->loopkind = saved_kind;
    return res;
}
