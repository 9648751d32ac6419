/* check_internal.h: state shared by the checker's files (check.c names and types,
 * check_vec.c vectors and matrices, inline.c helper inlining, lower.c statements and
 * kernels). Not a contract: nothing outside compiler/check*.c, inline.c and lower.c includes it. */
#ifndef DVM_CHECK_INTERNAL_H
#define DVM_CHECK_INTERNAL_H
#include <stdint.h>
#include "compiler/ast.h"
#include "compiler/compile.h"

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

enum { BI_F1, BI_F2, BI_ABS, BI_MINMAX, BI_CLAMP, BI_SELECT, BI_F32, BI_I32, BI_ATOMIC, BI_LOOP, BI_CTOR, BI_VEC };
typedef struct builtin {
    const char *name;
    int kind, op, nargs; /* nargs -1: 2 or more */
} builtin;

#define IRX_VEC 200
typedef struct vexpr {
    ir_expr h; /* kind IRX_VEC, type the vector, matrix or tuple type, nidx the number of parts */
    ir_expr *p[16];
} vexpr;

static inline int is_vt(int t) { return t >= DVM_T_VEC2 && t <= DVM_T_MAT4; }
static inline int is_vec(int t) { return t >= DVM_T_VEC2 && t <= DVM_T_VEC4; }
static inline int is_mat(int t) { return t >= DVM_T_MAT2 && t <= DVM_T_MAT4; }
static inline int vdim(int t) { return is_vec(t) ? t - DVM_T_VEC2 + 2 : is_mat(t) ? t - DVM_T_MAT2 + 2 : 1; }
static inline int ncomp(int t) { return is_mat(t) ? vdim(t) * vdim(t) : vdim(t); }
static inline int is_num(int t) { return t == DVM_T_F32 || t == DVM_T_I32; }
static inline int is_vval(const ir_expr *e) { return e && e->kind == IRX_VEC; }
static inline ir_expr **parts(ir_expr *e) { return ((vexpr *)e)->p; }
/* The flag that an escape (break, continue, return) sets in the current frame. */
static inline int escape_flag(ctx *c) { return c->fr->h ? c->fr->D : c->cflag; }

/* check.c */
ir_expr *chk_arith(ctx *c, int tk, ir_expr *a, ir_expr *b, int line, int col);
int chk_array_of(ctx *c, const ast_expr *e);
binding *chk_bind(ctx *c, int name, int kind, int line, int col);
ir_expr *chk_clone_leaf(ctx *c, const ir_expr *e, int line, int col);
ir_expr *chk_convert(ctx *c, ir_expr *e, int want);
#if defined(__GNUC__)
__attribute__((format(printf, 4, 5)))
#endif
void chk_err(ctx *c, int line, int col, const char *fmt, ...);
const builtin *chk_find_builtin(const char *s);
int chk_is_leaf(const ir_expr *e);
int chk_is_place_form(ctx *c, const ast_expr *e);
int chk_is_reserved(const char *s);
binding *chk_lookup(ctx *c, int name);
ir_expr *chk_lower_cond(ctx *c, const ast_expr *e, ir_block *pre, const char *what);
ir_expr *chk_lower_expr(ctx *c, const ast_expr *e, ir_block *pre);
int chk_lower_indices(ctx *c, const ast_expr *ix, int param, ir_expr **idx, ir_block *pre);
ir_expr *chk_lower_typed(ctx *c, const ast_expr *e, ir_block *pre, int want, const char *what);
ir_expr *chk_mk(ctx *c, int kind, int type, int line, int col);
ir_stmt *chk_mk_assign(ctx *c, int var, ir_expr *e, int line, int col);
ir_expr *chk_mk_bin(ctx *c, int op, int type, ir_expr *a, ir_expr *b, int line, int col);
ir_expr *chk_mk_const_f(ctx *c, float v, int line, int col);
ir_expr *chk_mk_const_i(ctx *c, int type, int32_t v, int line, int col);
ir_expr *chk_mk_not(ctx *c, ir_expr *a);
ir_stmt *chk_mk_stmt(ctx *c, int kind, int line, int col);
ir_expr *chk_mk_un(ctx *c, int op, int type, ir_expr *a);
ir_expr *chk_mk_var(ctx *c, int var, int line, int col);
int chk_new_var(ctx *c, const char *name, int type, int line, int col);
const char *chk_op_text(int tk);
void chk_place_store(ctx *c, const ast_expr *t, const ast_expr *ve, ir_expr *v, int op, ir_block *out, int line, int col);
void chk_push(ctx *c, ir_block *b, ir_stmt *s);
int chk_scope_mark(ctx *c);
void chk_scope_pop(ctx *c, int mark);
const char *chk_tname(int t);
ir_expr *chk_to_f32(ctx *c, ir_expr *e);

/* check_vec.c */
ir_expr *chk_arith2(ctx *c, int tk, ir_expr *a, ir_expr *b, ir_block *pre, int line, int col);
void chk_flatten(ir_expr *e, ir_expr **out, int *n);
ir_expr *chk_mk_vec(ctx *c, int type, int n, int line, int col);
int chk_new_vvar(ctx *c, const char *name, int type, const uint8_t *rets, int nrets, int line, int col);
int chk_no_tuple(ctx *c, const ir_expr *e, int line, int col);
ir_expr *chk_settle(ctx *c, ir_expr *e, ir_block *pre);
ir_expr *chk_settle_f(ctx *c, ir_expr *e, ir_block *pre, int force);
ir_expr *chk_use(ctx *c, ir_expr *x);
void chk_vassign(ctx *c, int var0, ir_expr *v, ir_block *out, int line, int col);
ir_expr *chk_vbuiltin(ctx *c, const char *name, int which, ir_expr **args, int nargs, ir_block *pre, int line, int col);
ir_expr *chk_vconstruct(ctx *c, const char *name, int t, ir_expr **args, int nargs, const ast_expr *e, ir_block *pre);
ir_expr *chk_vconvert(ctx *c, ir_expr *e, int want);
ir_expr *chk_vdone(ir_expr *v);
ir_expr *chk_velementwise(ctx *c, const char *name, int kind, int op, ir_expr **args, int nargs, ir_block *pre, int line, int col);
ir_expr *chk_vneg(ctx *c, ir_expr *a, int line, int col);
ir_expr *chk_vpart(ctx *c, ir_expr *v, int k, int line, int col);
ir_expr *chk_vvar_val(ctx *c, int var0, int type, const uint8_t *rets, int nrets, int line, int col);

/* inline.c */
void chk_analyze_helper(ctx *c, helper_info *h);
void chk_check_unused_helper(ctx *c, helper_info *h);
ir_expr *chk_lower_helper_call(ctx *c, helper_info *h, const ast_expr *e, ir_block *pre);
ir_expr *chk_lower_return(ctx *c, const ast_func *f, const ast_expr *ve, ir_block *pre);
const ast_stmt *chk_next_elif(const ast_stmt *s);
int chk_unroll_static(ctx *c, const ast_stmt *s, int32_t from, int32_t to, ir_block *out);

/* lower.c */
void chk_begin_kernel(ctx *c, ir_kernel *k, frame *kf, int in_parallel);
int chk_lower_stmts(ctx *c, ast_stmt **s, int n, ir_block *out);
int chk_param_types(ctx *c, const ast_func *f);
int chk_writable(ctx *c, binding *b, const ast_expr *target);

#endif
