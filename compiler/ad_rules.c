/* ad_rules.c: the derivative of every differentiable opcode (DVM_DOP rows of ops.def), once
 * for the reverse sweep (ad_rev_NAME: push the adjoint g of a node into its operands) and
 * once for forward mode (ad_tan_NAME: the tangent of a node, NULL meaning zero). The tables
 * at the end are generated from ops.def, so a DOP row without both rules does not build. */
#include "compiler/ad_internal.h"

#define A_ (e->a)
#define B_ (e->b)
#define F(x) ad_kf(c, (x))
#define MUL(x, y) ad_bin(c, DVM_OP_MULF, (x), (y))
#define ADD(x, y) ad_bin(c, DVM_OP_ADDF, (x), (y))
#define SUB(x, y) ad_bin(c, DVM_OP_SUBF, (x), (y))
#define DIV(x, y) ad_bin(c, DVM_OP_DIVF, (x), (y))
#define NEG(x) ad_un(c, DVM_OP_NEGF, (x))
#define UN(op, x) ad_un(c, DVM_OP_##op, (x))
#define LT(x, y) ad_bin(c, DVM_OP_LTF, (x), (y))
/* operands are re-evaluated from the restored state: the IR tree is shared, never mutated */
#define CP(x) ((ir_expr *)(x))

/* ---- helpers for tangents where NULL means zero ---- */
static ir_expr *tadd(ad_ctx *c, ir_expr *x, ir_expr *y) { return !x ? y : !y ? x : ADD(x, y); }
static ir_expr *tsub(ad_ctx *c, ir_expr *x, ir_expr *y) { return !y ? x : !x ? NEG(y) : SUB(x, y); }
static ir_expr *tmul(ad_ctx *c, ir_expr *t, ir_expr *f) { return t ? MUL(t, f) : NULL; }
static ir_expr *z(ad_ctx *c, ir_expr *t) { return t ? t : F(0.0f); }
/* sign(x) with sign(0) = 0: the derivative of |x| (0 at the kink) */
static ir_expr *sgn(ad_ctx *c, ir_expr *x) {
    return ad_sel(c, LT(x, F(0.0f)), F(-1.0f), ad_sel(c, LT(F(0.0f), x), F(1.0f), F(0.0f)));
}

/* ---- reverse rules ---- */
static void ad_rev_MOV(ad_ctx *c, ir_block *o, const ir_expr *e, ir_expr *g) { ad_prop(c, o, A_, g); }
static void ad_rev_ADDF(ad_ctx *c, ir_block *o, const ir_expr *e, ir_expr *g) {
    ad_prop(c, o, A_, g);
    ad_prop(c, o, B_, g);
}
static void ad_rev_SUBF(ad_ctx *c, ir_block *o, const ir_expr *e, ir_expr *g) {
    ad_prop(c, o, A_, g);
    if (ad_active(c, B_)) ad_prop(c, o, B_, NEG(g));
}
static void ad_rev_MULF(ad_ctx *c, ir_block *o, const ir_expr *e, ir_expr *g) {
    if (ad_active(c, A_)) ad_prop(c, o, A_, MUL(g, CP(B_)));
    if (ad_active(c, B_)) ad_prop(c, o, B_, MUL(g, CP(A_)));
}
static void ad_rev_DIVF(ad_ctx *c, ir_block *o, const ir_expr *e, ir_expr *g) {
    ir_expr *q = ad_hold(c, o, DIV(g, CP(B_))); /* g / b */
    ad_prop(c, o, A_, q);
    if (ad_active(c, B_)) ad_prop(c, o, B_, NEG(MUL(q, DIV(CP(A_), CP(B_)))));
}
/* min(a, b) = b < a ? b : a: the adjoint goes to the operand that was chosen */
static void minmax(ad_ctx *c, ir_block *o, const ir_expr *e, ir_expr *g, ir_expr *takes_b) {
    ir_stmt *s = ad_st(c, IR_IF, e->line, e->col);
    s->e = takes_b;
    ad_prop(c, &s->body, B_, g);
    ad_prop(c, &s->orelse, A_, g);
    if (s->body.n || s->orelse.n) ad_push_stmt(c, o, s);
}
static void ad_rev_MINF(ad_ctx *c, ir_block *o, const ir_expr *e, ir_expr *g) { minmax(c, o, e, g, LT(CP(B_), CP(A_))); }
static void ad_rev_MAXF(ad_ctx *c, ir_block *o, const ir_expr *e, ir_expr *g) { minmax(c, o, e, g, LT(CP(A_), CP(B_))); }
static void ad_rev_POWF(ad_ctx *c, ir_block *o, const ir_expr *e, ir_expr *g) {
    if (ad_active(c, A_)) /* b * a^(b-1) */
        ad_prop(c, o, A_, MUL(g, MUL(CP(B_), ad_bin(c, DVM_OP_POWF, CP(A_), SUB(CP(B_), F(1.0f))))));
    if (ad_active(c, B_)) /* a^b log a, taken as 0 where a <= 0 (log undefined) */
        ad_prop(c, o, B_, ad_sel(c, LT(F(0.0f), CP(A_)), MUL(g, MUL(CP(e), UN(LOG, CP(A_)))), F(0.0f)));
}
static void ad_rev_ATAN2F(ad_ctx *c, ir_block *o, const ir_expr *e, ir_expr *g) { /* atan2(y=a, x=b) */
    ir_expr *q = ad_hold(c, o, DIV(g, ADD(MUL(CP(A_), CP(A_)), MUL(CP(B_), CP(B_)))));
    if (ad_active(c, A_)) ad_prop(c, o, A_, MUL(q, CP(B_)));
    if (ad_active(c, B_)) ad_prop(c, o, B_, NEG(MUL(q, CP(A_))));
}
static void ad_rev_NEGF(ad_ctx *c, ir_block *o, const ir_expr *e, ir_expr *g) { ad_prop(c, o, A_, NEG(g)); }
static void ad_rev_ABSF(ad_ctx *c, ir_block *o, const ir_expr *e, ir_expr *g) { ad_prop(c, o, A_, MUL(g, sgn(c, CP(A_)))); }
static void ad_rev_SIN(ad_ctx *c, ir_block *o, const ir_expr *e, ir_expr *g) { ad_prop(c, o, A_, MUL(g, UN(COS, CP(A_)))); }
static void ad_rev_COS(ad_ctx *c, ir_block *o, const ir_expr *e, ir_expr *g) { ad_prop(c, o, A_, NEG(MUL(g, UN(SIN, CP(A_))))); }
static void ad_rev_TAN(ad_ctx *c, ir_block *o, const ir_expr *e, ir_expr *g) {
    ad_prop(c, o, A_, MUL(g, ADD(F(1.0f), MUL(CP(e), CP(e)))));
}
static void ad_rev_ASIN(ad_ctx *c, ir_block *o, const ir_expr *e, ir_expr *g) {
    ad_prop(c, o, A_, MUL(g, UN(RSQRT, SUB(F(1.0f), MUL(CP(A_), CP(A_))))));
}
static void ad_rev_ACOS(ad_ctx *c, ir_block *o, const ir_expr *e, ir_expr *g) {
    ad_prop(c, o, A_, NEG(MUL(g, UN(RSQRT, SUB(F(1.0f), MUL(CP(A_), CP(A_)))))));
}
static void ad_rev_ATAN(ad_ctx *c, ir_block *o, const ir_expr *e, ir_expr *g) {
    ad_prop(c, o, A_, DIV(g, ADD(F(1.0f), MUL(CP(A_), CP(A_)))));
}
static void ad_rev_EXP(ad_ctx *c, ir_block *o, const ir_expr *e, ir_expr *g) { ad_prop(c, o, A_, MUL(g, CP(e))); }
static void ad_rev_LOG(ad_ctx *c, ir_block *o, const ir_expr *e, ir_expr *g) { ad_prop(c, o, A_, DIV(g, CP(A_))); }
static void ad_rev_SQRT(ad_ctx *c, ir_block *o, const ir_expr *e, ir_expr *g) {
    ad_prop(c, o, A_, DIV(MUL(g, F(0.5f)), CP(e)));
}
static void ad_rev_RSQRT(ad_ctx *c, ir_block *o, const ir_expr *e, ir_expr *g) { /* -r / (2a) */
    ad_prop(c, o, A_, MUL(g, DIV(MUL(F(-0.5f), CP(e)), CP(A_))));
}
static void ad_rev_TANH(ad_ctx *c, ir_block *o, const ir_expr *e, ir_expr *g) {
    ad_prop(c, o, A_, MUL(g, SUB(F(1.0f), MUL(CP(e), CP(e)))));
}
/* floor, ceil: piecewise constant; I2F: i32 carries no gradient */
static void ad_rev_FLOOR(ad_ctx *c, ir_block *o, const ir_expr *e, ir_expr *g) { (void)c, (void)o, (void)e, (void)g; }
static void ad_rev_CEIL(ad_ctx *c, ir_block *o, const ir_expr *e, ir_expr *g) { (void)c, (void)o, (void)e, (void)g; }
static void ad_rev_I2F(ad_ctx *c, ir_block *o, const ir_expr *e, ir_expr *g) { (void)c, (void)o, (void)e, (void)g; }
/* IR_SELECT: both sides were evaluated, only the chosen one receives the adjoint */
static void ad_rev_SEL(ad_ctx *c, ir_block *o, const ir_expr *e, ir_expr *g) {
    ir_stmt *s = ad_st(c, IR_IF, e->line, e->col);
    s->e = CP(A_);
    ad_prop(c, &s->body, B_, g);
    ad_prop(c, &s->orelse, e->c, g);
    if (s->body.n || s->orelse.n) ad_push_stmt(c, o, s);
}

/* ---- tangent rules ---- */
#define TA ad_tan(c, A_)
#define TB ad_tan(c, B_)
static ir_expr *ad_tan_MOV(ad_ctx *c, const ir_expr *e) { return TA; }
static ir_expr *ad_tan_ADDF(ad_ctx *c, const ir_expr *e) { return tadd(c, TA, TB); }
static ir_expr *ad_tan_SUBF(ad_ctx *c, const ir_expr *e) { return tsub(c, TA, TB); }
static ir_expr *ad_tan_MULF(ad_ctx *c, const ir_expr *e) { return tadd(c, tmul(c, TA, CP(B_)), tmul(c, TB, CP(A_))); }
static ir_expr *ad_tan_DIVF(ad_ctx *c, const ir_expr *e) {
    ir_expr *t = tsub(c, TA, tmul(c, TB, CP(e)));
    return t ? DIV(t, CP(B_)) : NULL;
}
static ir_expr *ad_tan_MINF(ad_ctx *c, const ir_expr *e) {
    ir_expr *ta = TA, *tb = TB;
    return ta || tb ? ad_sel(c, LT(CP(B_), CP(A_)), z(c, tb), z(c, ta)) : NULL;
}
static ir_expr *ad_tan_MAXF(ad_ctx *c, const ir_expr *e) {
    ir_expr *ta = TA, *tb = TB;
    return ta || tb ? ad_sel(c, LT(CP(A_), CP(B_)), z(c, tb), z(c, ta)) : NULL;
}
static ir_expr *ad_tan_POWF(ad_ctx *c, const ir_expr *e) {
    ir_expr *ta = TA, *tb = TB;
    ir_expr *da = tmul(c, ta, MUL(CP(B_), ad_bin(c, DVM_OP_POWF, CP(A_), SUB(CP(B_), F(1.0f)))));
    ir_expr *db = tb ? ad_sel(c, LT(F(0.0f), CP(A_)), MUL(tb, MUL(CP(e), UN(LOG, CP(A_)))), F(0.0f)) : NULL;
    return tadd(c, da, db);
}
static ir_expr *ad_tan_ATAN2F(ad_ctx *c, const ir_expr *e) {
    ir_expr *t = tsub(c, tmul(c, TA, CP(B_)), tmul(c, TB, CP(A_)));
    return t ? DIV(t, ADD(MUL(CP(A_), CP(A_)), MUL(CP(B_), CP(B_)))) : NULL;
}
static ir_expr *ad_tan_NEGF(ad_ctx *c, const ir_expr *e) {
    ir_expr *t = TA;
    return t ? NEG(t) : NULL;
}
static ir_expr *ad_tan_ABSF(ad_ctx *c, const ir_expr *e) { return tmul(c, TA, sgn(c, CP(A_))); }
static ir_expr *ad_tan_SIN(ad_ctx *c, const ir_expr *e) { return tmul(c, TA, UN(COS, CP(A_))); }
static ir_expr *ad_tan_COS(ad_ctx *c, const ir_expr *e) { return tmul(c, TA, NEG(UN(SIN, CP(A_)))); }
static ir_expr *ad_tan_TAN(ad_ctx *c, const ir_expr *e) { return tmul(c, TA, ADD(F(1.0f), MUL(CP(e), CP(e)))); }
static ir_expr *ad_tan_ASIN(ad_ctx *c, const ir_expr *e) {
    return tmul(c, TA, UN(RSQRT, SUB(F(1.0f), MUL(CP(A_), CP(A_)))));
}
static ir_expr *ad_tan_ACOS(ad_ctx *c, const ir_expr *e) {
    return tmul(c, TA, NEG(UN(RSQRT, SUB(F(1.0f), MUL(CP(A_), CP(A_))))));
}
static ir_expr *ad_tan_ATAN(ad_ctx *c, const ir_expr *e) {
    ir_expr *t = TA;
    return t ? DIV(t, ADD(F(1.0f), MUL(CP(A_), CP(A_)))) : NULL;
}
static ir_expr *ad_tan_EXP(ad_ctx *c, const ir_expr *e) { return tmul(c, TA, CP(e)); }
static ir_expr *ad_tan_LOG(ad_ctx *c, const ir_expr *e) {
    ir_expr *t = TA;
    return t ? DIV(t, CP(A_)) : NULL;
}
static ir_expr *ad_tan_SQRT(ad_ctx *c, const ir_expr *e) {
    ir_expr *t = TA;
    return t ? DIV(MUL(t, F(0.5f)), CP(e)) : NULL;
}
static ir_expr *ad_tan_RSQRT(ad_ctx *c, const ir_expr *e) { return tmul(c, TA, DIV(MUL(F(-0.5f), CP(e)), CP(A_))); }
static ir_expr *ad_tan_TANH(ad_ctx *c, const ir_expr *e) { return tmul(c, TA, SUB(F(1.0f), MUL(CP(e), CP(e)))); }
static ir_expr *ad_tan_FLOOR(ad_ctx *c, const ir_expr *e) { (void)c, (void)e; return NULL; }
static ir_expr *ad_tan_CEIL(ad_ctx *c, const ir_expr *e) { (void)c, (void)e; return NULL; }
static ir_expr *ad_tan_I2F(ad_ctx *c, const ir_expr *e) { (void)c, (void)e; return NULL; }
static ir_expr *ad_tan_SEL(ad_ctx *c, const ir_expr *e) {
    ir_expr *tb = TB, *tc = ad_tan(c, e->c);
    return tb || tc ? ad_sel(c, CP(A_), z(c, tb), z(c, tc)) : NULL;
}

/* ---- dispatch, generated from ops.def ---- */
#define DVM_OP(name, num, fmt, flags, props, doc)
#define DVM_DOP(name, num, fmt, flags, props, doc) [DVM_OP_##name] = ad_rev_##name,
const ad_rev_fn ad_rev_table[256] = {
#include "bytecode/ops.def"
};
#undef DVM_DOP
#define DVM_DOP(name, num, fmt, flags, props, doc) [DVM_OP_##name] = ad_tan_##name,
const ad_tan_fn ad_tan_table[256] = {
#include "bytecode/ops.def"
};
#undef DVM_DOP
#undef DVM_OP
