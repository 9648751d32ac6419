/* ir.h: the typed kernel IR, the contract between the front end (the checker builds it), the
 * autodiff pass (autodiff.c derives adjoint and tangent variants from the forward one) and
 * the emitter (emit.c lowers every variant to bytecode).
 *
 * The IR is a tree: helpers are already inlined, static loops unrolled, names resolved to
 * variable ids, every expression typed, implicit i32 -> f32 conversions explicit (I2F),
 * comparisons normalised to LT/LE/EQ/NE (operands swapped for > and >=), `x -= e` on arrays
 * is an atomic add of -e, `v += e` on locals is `v = v + e`.
 * All memory lives in the module's arena: nothing in the IR is freed on its own. */
#ifndef DVM_IR_H
#define DVM_IR_H

#include <stddef.h>
#include <stdint.h>
#include "bytecode/bc.h"
#include "compiler/arena.h"

typedef struct ir_expr ir_expr;
typedef struct ir_stmt ir_stmt;

/* ---- expressions ---- */
enum ir_expr_kind {
    IR_CONST,  /* k */
    IR_VAR,    /* var */
    IR_UN,     /* op(a): op is a dvm opcode with format "-wr-" (NEGF, SIN, I2F, F2I, NOT, ...) */
    IR_BIN,    /* op(a, b): op is a dvm opcode with format "-wrr" (ADDF, LTI, DIVI, ...) */
    IR_SELECT, /* select(a, b, c): a is bool; b and c both evaluated (the language's select) */
    IR_COND,   /* b if a else c: only the chosen side is evaluated */
    IR_AND,    /* a and b, short-circuit, bool */
    IR_OR,     /* a or b, short-circuit, bool */
    IR_LOAD,   /* array slot `slot` at indices idx[0..rank-1] (each i32) */
    IR_SHAPE   /* extent of axis `axis` of array slot `slot` (i32) */
};

struct ir_expr {
    uint8_t kind;
    uint8_t type; /* dvm_vtype */
    uint16_t op;  /* IR_UN, IR_BIN: the opcode */
    int line, col;
    union { float f; int32_t i; } k; /* IR_CONST (bool: i = 0 or 1) */
    int var;                          /* IR_VAR */
    int slot, axis;                   /* IR_LOAD, IR_SHAPE */
    int nidx;                         /* IR_LOAD: the array's rank */
    ir_expr *idx[DVM_MAX_RANK];       /* IR_LOAD */
    ir_expr *a, *b, *c;
};

/* ---- statements ---- */
typedef struct ir_block {
    ir_stmt **s;
    int n, cap;
} ir_block;

enum ir_stmt_kind {
    IR_ASSIGN,      /* vars[var] = e (e has the variable's type) */
    IR_STORE,       /* slot[idx] = e */
    IR_ATOMIC,      /* slot[idx] op= e; op is ATOMADDF, ATOMADDI, ATOMMAXF, ATOMMINF, ATOMMAXI, ATOMMINI */
    IR_IF,          /* if e: body else: orelse */
    IR_WHILE,       /* while e: body (e evaluated before every iteration) */
    IR_FOR,         /* for var in range(e, e2): body; bounds evaluated once, var set each iteration */
    IR_BREAK,       /* leaves the innermost IR_WHILE / IR_FOR */
    IR_CONTINUE,
    IR_ASSERT,      /* assert e, msg (msg may be NULL) */
    IR_PUSH,        /* push e on stack `stack` (autodiff only) */
    IR_POP,         /* vars[var] = pop(stack) (autodiff only) */
    IR_UATOMIC_ADD  /* vars[var] += e atomically; var is IR_GLOBAL f32 (autodiff only) */
};

struct ir_stmt {
    uint8_t kind;
    uint16_t op;   /* IR_ATOMIC */
    int line, col;
    int var;       /* IR_ASSIGN, IR_FOR, IR_POP, IR_UATOMIC_ADD */
    int slot;      /* IR_STORE, IR_ATOMIC */
    int nidx;
    ir_expr *idx[DVM_MAX_RANK];
    ir_expr *e, *e2;
    int stack;     /* IR_PUSH, IR_POP */
    ir_block body, orelse;
    const char *msg; /* IR_ASSERT */
};

/* ---- variables ---- */
enum ir_storage {
    IR_LOCAL,    /* a register of the running thread (declared inside a parallel loop) */
    IR_GLOBAL,   /* a uniform word: a local of top-level serial code, shared by the launch;
                    parallel loops only read it (autodiff adds IR_UATOMIC_ADD on adjoints) */
    IR_PARAM,    /* a scalar parameter (uniform, read-only); `param` is its index */
    IR_SHAPESYM, /* a shape symbol (uniform, read-only, i32); `param` is the symbol index */
    IR_PINDEX    /* an index of a parallel loop (register, read-only) */
};

typedef struct ir_var {
    const char *name;
    uint8_t type;    /* dvm_vtype */
    uint8_t storage; /* ir_storage */
    int line, col;   /* first assignment */
    int param;       /* IR_PARAM: parameter index; IR_SHAPESYM: symbol index */
    int primal;      /* autodiff: the variable this one is the adjoint/tangent of, else -1 */
} ir_var;

/* ---- kernel ---- */
typedef struct ir_param {
    const char *name;
    int is_array;
    uint8_t type; /* DVM_T_F32 or DVM_T_I32 */
    int rank;
    int32_t dim[DVM_MAX_RANK]; /* >= 0 literal extent, < 0 symbol -(s+1) */
    int var;                   /* scalars: the IR_PARAM variable */
    int line, col;
} ir_param;

typedef struct ir_sym {
    const char *name;
    int var; /* the IR_SHAPESYM variable */
} ir_sym;

typedef struct ir_slot {
    int param;    /* an array parameter */
    uint8_t role; /* dvm_slot_role */
} ir_slot;

/* A top-level statement: serial (runs once, on one thread) or a parallel loop. */
typedef struct ir_top {
    int parallel;
    ir_stmt *stmt;        /* serial: the statement */
    int ndim;             /* parallel: 1..3 */
    int idx_var[DVM_MAX_PAR_DIMS]; /* parallel: IR_PINDEX variables */
    ir_expr *start[DVM_MAX_PAR_DIMS]; /* each dimension's start, else NULL (0): range(start, stop),
                                        and the boxes of a partitioned loop (partition.c) */
    ir_expr *stop[DVM_MAX_PAR_DIMS];
    ir_block body;
    int line, col;
    /* adjoint variants: the top-level statement of the forward this top belongs to, and its
       phase (0: that statement's forward, 1: its reverse sweep); dvm_task_desc.stage/phase */
    int stage, phase;
    int loop; /* the serial loop of top-level statements it is in (ir_variant.loops, + 1), or 0;
                 a loop's tops are consecutive */
} ir_top;

/* `for var in serial(range(start, stop)):` at top level: its tops (ir_top.loop) run in order
   once per trip, with var (an IR_GLOBAL i32 that nothing else assigns) set by the host; the
   bounds are evaluated once, on entry. */
typedef struct ir_loop {
    int var;
    ir_expr *start, *stop; /* start may be NULL (0) */
    int line, col;
} ir_loop;

/* Size expressions: how many entries an adstack needs per thread (ops.def SZ_*). */
enum ir_size_kind {
    IRS_CONST,   /* value */
    IRS_ADD, IRS_SUB /* clamped at 0 */, IRS_MUL, IRS_MAX, /* a, b */
    IRS_RANGE,   /* max over v in [a, b) of body; v is IRS_VAR at this range's depth */
    IRS_VAR,     /* depth: 0 = outermost enclosing IRS_RANGE */
    IRS_LOAD,    /* slot (a primal array slot) at flat index a */
    IRS_SHAPE,   /* slot, axis */
    IRS_PARAM,   /* var: an IR_PARAM (i32) or IR_SHAPESYM variable */
    IRS_DEFAULT  /* no formula: the stack gets the default capacity */
};
typedef struct ir_size {
    uint8_t kind;
    int64_t value;
    int slot, axis, var, depth;
    struct ir_size *a, *b, *body;
} ir_size;

typedef struct ir_stack {
    uint8_t type;    /* DVM_T_F32, DVM_T_I32, DVM_T_BOOL */
    int var;         /* the variable it saves, or -1 (hidden: trip counts, conditions) */
    const char *name; /* for messages: the variable name or a description ("trip count of loop") */
    int line;
    int serial;      /* pushed by top-level serial code (lives in the serial slot) */
    ir_size *size;   /* capacity per thread */
} ir_stack;

typedef struct ir_variant {
    int present;
    ir_top *tops;
    int ntops;
    ir_slot *slots;
    int nslots;
    ir_stack *stacks;
    int nstacks;
    ir_loop *loops; /* serial loops of top-level statements (shared by every variant) */
    int nloops;
} ir_variant;

typedef struct ir_kernel {
    const char *name;
    int line, col;
    ir_param *params;
    int nparams;
    ir_sym *syms;
    int nsyms;
    ir_var *vars;
    int nvars, capvars;
    ir_variant v[DVM_V_COUNT]; /* forward always present; autodiff fills the others */
    const char *no_adjoint;    /* autodiff: why there is no adjoint ("LINE:COL: message"), else NULL */
} ir_kernel;

typedef struct ir_module {
    const char *source_name;
    ir_kernel **kernels;
    int nkernels;
    dvm_arena *arena;
} ir_module;

/* ---- helpers (ir.c) ---- */
ir_expr *ir_expr_new(dvm_arena *a, int kind, int type, int line, int col);
ir_stmt *ir_stmt_new(dvm_arena *a, int kind, int line, int col);
void ir_block_push(dvm_arena *a, ir_block *b, ir_stmt *s);
int ir_var_new(dvm_arena *a, ir_kernel *k, const char *name, int type, int storage, int line, int col);
ir_size *ir_size_new(dvm_arena *a, int kind);
/* Prints the kernel (all present variants) in a readable form, for tests and debugging. */
void ir_dump(const ir_kernel *k, void (*out)(void *ctx, const char *text), void *ctx);

#endif
