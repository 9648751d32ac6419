/* ad_internal.h: state shared by the autodiff files (autodiff.c: preprocessing, analysis,
 * reverse sweep, driver; ad_rules.c: per-opcode reverse and tangent rules; ad_size.c:
 * adstack size expressions; ad_tangent.c: forward mode). Not a contract with other stages. */
#ifndef DVM_AD_INTERNAL_H
#define DVM_AD_INTERNAL_H
#include "compiler/compile.h"

/* A loop of generated code and the source loop it stands for (for sizing): `isfor` loops
 * run their var over [start, stop); var is -1 when the var is not exactly the counter. */
typedef struct ad_loop {
    const ir_stmt *s;
    int isfor;
    int var;
    const ir_expr *start, *stop;
} ad_loop;

typedef struct ad_ctx {
    dvm_arena *A;
    ir_kernel *k;
    dvm_diags *d;
    int oom;
    int nv1;               /* variables after preprocessing; analysis arrays have this size */
    int *nsites;           /* assignment sites (ASSIGN, FOR) per variable */
    unsigned char *inloop; /* some site sits inside a serial loop */
    unsigned char *rread;  /* read by the reverse sweep */
    const ir_expr **def;   /* the one assignment's value (single site, not in a loop) */
    const ir_stmt **first; /* the textually first site, when it is outside loops: the value
                              it overwrites was never defined, so it needs no push */
    int *deriv;            /* primal var -> adjoint (or tangent) var, -1 */
    /* useful assignments: the value they give may reach a gradient (autodiff.c, find_useful);
       keys of an open-addressing set, and the live-in sets of loops, kept between visits */
    const ir_stmt **useful;
    size_t nuseful, capuseful;
    const ir_stmt **lkey;
    uint64_t **lset;
    size_t nloops, caploops;
    int nwords;            /* 64-bit words of a set of variables */
    int *stk;              /* var -> its adstack, -1 */
    ir_stack *stacks;
    int nstacks, capstacks;
    int *stack_top;        /* stack -> index of the top that pushes it, -1 serial */
    int nfslots;           /* forward slots */
    int *dslot;            /* forward slot -> GRAD/DUAL slot, -1 */
    ad_loop *conv;         /* preprocessing: whiles that came from for loops with break */
    int nconv, capconv;
    ad_loop *gloops;       /* loops of the generated forward sweeps */
    int ngloops, capgloops;
    int par;               /* generating code of a parallel body */
    int cur_top;           /* top being generated (-1 serial) */
    int replay;            /* the forward sweep also runs the stores, atomics and asserts: the
                              adjoint of serial top-level code is that code's only run */
    unsigned char *restore; /* per forward top and slot (top * nfslots + slot): the parallel
                              top reads back what it stores into the slot, so its reverse
                              replays those stores and restores them (autodiff.c, rchk) */
    int *tmps[2];          /* f32 temporaries: [0] serial (IR_GLOBAL), [1] parallel (IR_LOCAL) */
    int ntmps[2], captmps[2], tmptop;
    /* sizer */
    const ad_loop *senc[64];
    int nsenc;
    int subst_depth;
} ad_ctx;

void *ad_alloc(ad_ctx *c, size_t n);
int ad_newvar(ad_ctx *c, const char *name, int type, int storage, int line, int primal);
int ad_derived_slots(ad_ctx *c, ir_variant *v, const ir_variant *f, int role);
ir_expr *ad_ex(ad_ctx *c, int kind, int type, int line, int col);
ir_expr *ad_kf(ad_ctx *c, float f);
ir_expr *ad_ki(ad_ctx *c, int32_t i);
ir_expr *ad_kb(ad_ctx *c, int b);
ir_expr *ad_var(ad_ctx *c, int var);
ir_expr *ad_un(ad_ctx *c, int op, ir_expr *a);
ir_expr *ad_bin(ad_ctx *c, int op, ir_expr *a, ir_expr *b);
ir_expr *ad_sel(ad_ctx *c, ir_expr *cond, ir_expr *a, ir_expr *b);
ir_expr *ad_load_like(ad_ctx *c, const ir_expr *ld, int slot);
ir_stmt *ad_st(ad_ctx *c, int kind, int line, int col);
ir_stmt *ad_assign(ad_ctx *c, int var, ir_expr *e);
void ad_push_stmt(ad_ctx *c, ir_block *b, ir_stmt *s);
void ad_append(ad_ctx *c, ir_block *dst, const ir_block *src);
/* 1 when e (f32) depends on something that carries a gradient. */
int ad_active(const ad_ctx *c, const ir_expr *e);
/* reverse: adds g * d(e)/d(leaf) into every leaf's adjoint; code goes to out. */
void ad_prop(ad_ctx *c, ir_block *out, const ir_expr *e, ir_expr *g);
/* an f32 expression that holds g: g itself when it is a var or constant, else a temporary */
ir_expr *ad_hold(ad_ctx *c, ir_block *out, ir_expr *g);
/* tangent of e, NULL for zero */
ir_expr *ad_tan(ad_ctx *c, const ir_expr *e);
typedef void (*ad_rev_fn)(ad_ctx *c, ir_block *out, const ir_expr *e, ir_expr *g);
typedef ir_expr *(*ad_tan_fn)(ad_ctx *c, const ir_expr *e);
extern const ad_rev_fn ad_rev_table[256];
extern const ad_tan_fn ad_tan_table[256];

/* ad_size.c: capacity of stack s pushed by the forward code fwd (par: the parallel top or NULL) */
/* ad_size.c: every stack's capacity (c->stacks[s].size): the serial stacks' from the serial
 * sweeps sfwd, top t's from its sweep pfwd[t] over the loop pre[t]. 0, or -1 out of memory. */
int ad_stack_sizes(ad_ctx *c, const ir_block *sfwd, const ir_block *pfwd, const ir_top *pre, int ntops);
/* ad_tangent.c */
int ad_tangent(ad_ctx *c);
#endif
