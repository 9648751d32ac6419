/* bc.h: the bytecode's one definition: node, opcodes, limits, the in-memory program (what
 * a blob holds) and the runtime error record. Everything that reads or writes bytecode
 * includes this file; the interpreters (CPU, CUDA, HIP) include only the part guarded by
 * DVM_BC_DEVICE_ONLY. docs/bytecode.md describes the serialized form. */
#ifndef DVM_BC_H
#define DVM_BC_H

#include <stdint.h>

/* ---- opcodes ---- */
#define DVM_F_SIDE   1u
#define DVM_F_BRANCH 2u
#define DVM_F_SIZE   4u
#define DVM_F_FUSED  8u
#define DVM_F_DIFF   16u /* set for DVM_DOP rows */
#define DVM_F_MATH   32u

/* PROPS (ops.def): an effect class in bits 0-2 (exactly one, required), the element type, rank
 * and row-path operands of an array access, and a self-update form in bits 9-11. */
#define DVM_E_PURE   1u
#define DVM_E_FAILS  2u
#define DVM_E_LOAD   3u
#define DVM_E_STORE  4u
#define DVM_E_ATOMIC 5u
#define DVM_E_MASK   7u
#define DVM_P_F32    8u
#define DVM_P_I32    16u
#define DVM_P_RANK2  32u
#define DVM_P_ROW_A  64u  /* operand k (1..3: a, b, c) is a row-path index: DVM_P_ROW_A << (k - 1) */
#define DVM_P_ROW_B  128u
#define DVM_P_ROW_C  256u
#define DVM_SU_SHIFT 9 /* bits 9-11: the self-update form */
#define DVM_P_RES_I32  4096u
#define DVM_P_RES_BOOL 8192u
#define DVM_SU(form) ((uint32_t)DVM_SU_##form << DVM_SU_SHIFT)
/* Self-update forms: the node as r[a] * m + k (o: its other register, DVM_SELF_OTHER). */
enum dvm_su_form {
    DVM_SU_NONE = 0,
    DVM_SU_FMA_K = 1, /* r[a] * r[b] + K[c], b != a           m = r[b]  k = K */
    DVM_SU_MUL_R = 2, /* r[a] * r[o] (a, a, o or a, o, a)     m = r[o]  k = -0.0 */
    DVM_SU_MUL_K = 3, /* r[a] * K[c] (a, a, K)                m = K     k = -0.0 */
    DVM_SU_ADD_R = 4, /* r[a] + r[o] (a, a, o or a, o, a)     m = 1     k = r[o] */
    DVM_SU_ADD_K = 5, /* r[a] + K[c] (a, a, K)                m = 1     k = K */
    DVM_SU_SUB_R = 6, /* r[a] - r[o] (a, a, o)                m = 1     k = -r[o] */
    DVM_SU_FMA_R = 7  /* r[a] * r[b] + r[c], b != a, c != a   m = r[b]  k = r[c] */
};

enum dvm_op {
#define DVM_OP(name, num, fmt, flags, props, doc) DVM_OP_##name = num,
#define DVM_DOP DVM_OP
#include "bytecode/ops.def"
#undef DVM_OP
#undef DVM_DOP
    DVM_OP_LIMIT = 256
};

/* Functions of this header that the interpreters call: host and device alike. */
#ifndef DVM_BC_FN
#if defined(__CUDACC__) || defined(__HIPCC__)
#define DVM_BC_FN __host__ __device__ static __forceinline__
#elif defined(__GNUC__)
#define DVM_BC_FN static inline __attribute__((always_inline)) /* inlined, the rows fold */
#else
#define DVM_BC_FN static inline
#endif
#endif

/* Whether opcode op has self-update form `form` (DVM_SU in its ops.def row). Every row gives a
 * term `FORM_OF_ROW == form && op == NUM`: for a constant form, a constant 0 for all but that
 * form's rows, so a compiler folds it to the same compares a hand list of opcodes would be. */
DVM_BC_FN int dvm_op_su_is(uint32_t op, uint32_t form) {
    return 0
#define DVM_OP(name, num, fmt, flags, props, doc) || ((((uint32_t)(props) >> DVM_SU_SHIFT) & 7u) == form && op == (uint32_t)(num))
#define DVM_DOP DVM_OP
#include "bytecode/ops.def"
#undef DVM_OP
#undef DVM_DOP
        ;
}
#define DVM_SU_IS(op, form) dvm_op_su_is((op), DVM_SU_##form)

/* A self-update: a node whose new r[a] is exactly r[a] * m + k in one rounding, for m and k
 * that do not depend on r[a] (o: the node's other register, DVM_SELF_OTHER); the forms and
 * their m and k are enum dvm_su_form's, each opcode's in ops.def.
 * (x * m + -0.0 is x * m, and x * 1 + k is x + k: either way one of the two steps is exact, so
 * fused or not the result is the node's, the sign of every zero included.) A counted loop whose
 * whole body is one self-update runs its trips in one step of the interpreters (interp_core.h
 * and interp.comp, INCLT), so the compiler does not unroll it (compiler/unroll.c). */
#define DVM_SELF_UPDATE(op, a, b, c)                                                                  \
    (DVM_SU_IS(op, FMA_K)                              ? (b) != (a)                                   \
     : (DVM_SU_IS(op, MUL_R) || DVM_SU_IS(op, ADD_R)) ? (((b) == (a)) != ((c) == (a)))              \
     : (DVM_SU_IS(op, MUL_K) || DVM_SU_IS(op, ADD_K)) ? (b) == (a)                                  \
     : DVM_SU_IS(op, SUB_R)                            ? (b) == (a) && (c) != (a)                    \
     : DVM_SU_IS(op, FMA_R)                            ? (b) != (a) && (c) != (a)                    \
                                                       : 0)
/* a self-update's other register (a when it has none: MUL_K, ADD_K; FMA_R has two: this one,
 * m's, and c, k's) */
#define DVM_SELF_OTHER(op, a, b, c)                                                                   \
    ((DVM_SU_IS(op, FMA_K) || DVM_SU_IS(op, FMA_R)) ? (b)                                             \
     : (DVM_SU_IS(op, MUL_K) || DVM_SU_IS(op, ADD_K)) ? (a) : (b) == (a) ? (c) : (b))

/* A node: 8 bytes, little-endian, no padding. */
typedef struct dvm_node {
    uint8_t op;
    uint8_t x;
    uint16_t a, b, c;
} dvm_node;

/* ---- limits (checked by the compiler and the verifier) ---- */
#define DVM_MAX_RANK 4          /* array rank */
#define DVM_MAX_REGS 1024       /* registers per task */
#define DVM_MAX_TASK_NODES 65535 /* nodes in one task or one size program */
#define DVM_MAX_ARRAY_SLOTS 255 /* array slots per kernel variant (x is 8 bits) */
#define DVM_MAX_UNIFORMS 65535
#define DVM_MAX_STACKS 65535
#define DVM_MAX_SIZE_DEPTH 8    /* nesting of SZ_RANGE */
#define DVM_MAX_PAR_DIMS 3      /* ndrange dimensions */
#define DVM_SIZE_SAT ((int64_t)1 << 40) /* size arithmetic saturates here */
#define DVM_NO_SLOT 0xFFFFu

/* Word `word` of heap slot `slot` (heap/heap.h: each slot `stride` words, stack i at word
 * stack_off[i]) in a slot-contiguous heap: the CPU interpreter's addressing (the CUDA, HIP and
 * Vulkan ones interleave the slots: interp_cuda.cu, interp.comp's stack_base). gen_glsl_ops
 * writes it into the GLSL definitions as it stands here. */
#define DVM_HEAP_SLOT_WORD(slot, stride, word) ((slot) * (stride) + (word))

/* An 'o' operand (ops.def): a register in bits 0-9, a signed offset -32..31 in bits 10-15. */
#define DVM_OFS_REG(f) ((uint32_t)(f) & 0x3FFu)
#define DVM_OFS_OFF(f) ((int32_t)((((uint32_t)(f) >> 10) & 0x3Fu) ^ 0x20u) - 0x20)
#define DVM_OFS_MIN (-32)
#define DVM_OFS_MAX 31
#define DVM_OFS_MAKE(r, off) ((uint16_t)(((uint32_t)(r) & 0x3FFu) | (((uint32_t)(off) & 0x3Fu) << 10)))

/* ---- value types ---- */
enum dvm_vtype { DVM_T_VOID = 0, DVM_T_F32 = 1, DVM_T_I32 = 2, DVM_T_BOOL = 3 };

/* ---- runtime error record: written by an interpreter, first error wins ----
 * The codes as X(NAME, number): the enum below, and the GLSL interpreter's RT_NAME constants
 * (tools/gen_glsl_ops.c). */
#define DVM_RT_CODES(X)                                                                        \
    X(OK, 0)                                                                                   \
    X(OOB, 1)               /* p0 array slot, p1 axis (-1: flat), p2 index, p3 extent */       \
    X(ASSERT, 2)            /* p0 string index of the message (0xFFFFFFFF: none) */            \
    X(ADSTACK_OVERFLOW, 3)  /* p0 stack id, p1 capacity */                                     \
    X(DIVZERO, 4)                                                                              \
    X(ADSTACK_UNDERFLOW, 5) /* p0 stack id: an internal error */                               \
    X(SIZER_CAP, 6)         /* p0 stack id, p1 the cap that was passed */                      \
    X(BAD_OP, 7)            /* internal: p0 an opcode the interpreter does not know, or (p1 =  \
                               1) a conditional branch in a branch-free lane run */            \
    X(NEGPOW, 8)            /* i32 ** with a negative exponent */                              \
    X(CANCELLED, 9)         /* a poll found the launch's cancel word set (dvm_context_cancel,  \
                               a timeout): not an error of the kernel */
enum dvm_rt_code {
#define DVM_RT_ENUM_(name, num) DVM_RT_##name = num,
    DVM_RT_CODES(DVM_RT_ENUM_)
#undef DVM_RT_ENUM_
};
typedef struct dvm_rt_error {
    int32_t code;  /* dvm_rt_code; 0 = no error */
    uint32_t task; /* task index within the variant */
    uint32_t node; /* node index within the program's node array */
    uint32_t pad;
    int64_t p[4];
} dvm_rt_error;

#ifndef DVM_BC_DEVICE_ONLY

/* Operand format of each opcode (ops.def FORMAT) and its flags; indexed by opcode. */
typedef struct dvm_op_info {
    const char *name; /* NULL for numbers that are not opcodes */
    const char *fmt;  /* 4 letters: x a b c */
    uint32_t flags;
    uint32_t props;   /* PROPS: read through the accessors below */
    const char *doc;
} dvm_op_info;
extern const dvm_op_info dvm_op_table[256];
/* FNV-1a over every row (number, name, format, flags, props) of ops.def. */
uint64_t dvm_ops_hash(void);

/* ---- opcode properties (PROPS in ops.def); numbers that are not opcodes have none ---- */
static inline uint32_t dvm_op_props(uint32_t op) { return op < 256 ? dvm_op_table[op].props : 0u; }
/* DVM_E_PURE .. DVM_E_ATOMIC; 0 for numbers that are not opcodes */
static inline uint32_t dvm_op_effect(uint32_t op) { return dvm_op_props(op) & DVM_E_MASK; }
/* Whether a task node of opcode op never records a runtime error (size opcodes never run in a
 * task: counted as failing). */
static inline int dvm_op_never_fails(uint32_t op) {
    return dvm_op_effect(op) == DVM_E_PURE && !(dvm_op_table[op].flags & DVM_F_SIZE);
}
/* An atomic read-modify-write of an array element. */
static inline int dvm_op_atomic(uint32_t op) { return dvm_op_effect(op) == DVM_E_ATOMIC; }
/* The element type an array access needs (DVM_T_F32, DVM_T_I32; 0: any). */
static inline int dvm_op_elem_type(uint32_t op) {
    const uint32_t p = dvm_op_props(op);
    return p & DVM_P_F32 ? DVM_T_F32 : p & DVM_P_I32 ? DVM_T_I32 : 0;
}
/* The type of a value opcode's result r[a]: DVM_T_BOOL, DVM_T_I32, else DVM_T_F32. */
static inline int dvm_op_result_type(uint32_t op) {
    const uint32_t p = dvm_op_props(op);
    return p & DVM_P_RES_BOOL ? DVM_T_BOOL : p & DVM_P_RES_I32 ? DVM_T_I32 : DVM_T_F32;
}
/* The uniform slot (operand a) a node writes, by its format letter: 'V' a store (it sets the
 * slot), 'T' an atomic add; 0 for an opcode that writes none. */
static inline char dvm_op_uniform_write(uint32_t op) {
    const char *f = op < 256 && dvm_op_table[op].name ? dvm_op_table[op].fmt : "----";
    return f[1] == 'V' || f[1] == 'T' ? f[1] : 0;
}
/* Whether the array the opcode accesses must have rank 2. */
static inline int dvm_op_rank2(uint32_t op) { return (dvm_op_props(op) & DVM_P_RANK2) != 0; }

/* ---- the program: exactly what a blob holds ----
 * All cross references are indices into the arrays below; strings are offsets into
 * `strings` (NUL-terminated). Offset 0 is the empty string. */

enum dvm_variant_kind { DVM_V_FORWARD = 0, DVM_V_ADJOINT = 1, DVM_V_TANGENT = 2, DVM_V_COUNT = 3 };
enum dvm_slot_role { DVM_ROLE_PRIMAL = 0, DVM_ROLE_GRAD = 1, DVM_ROLE_DUAL = 2 };
/* DVM_TASK_REPEAT: the next `body` tasks of the variant run once per trip of a serial loop of
   top-level statements, the host setting uniform ext_u[1] to the trip's value, from
   U[start_u[0]] (0 when DVM_NO_SLOT) up to U[ext_u[0]] (down, in an adjoint's phase 1). Its own
   code is one END; backends never run it (vm/launch.c runs the trips). */
enum dvm_task_kind { DVM_TASK_SERIAL = 0, DVM_TASK_PARALLEL = 1, DVM_TASK_REPEAT = 2 };
enum dvm_stack_sizing { DVM_SZ_CONSTANT = 0, DVM_SZ_PROGRAM = 1, DVM_SZ_DEFAULT = 2 };

typedef struct dvm_param_desc {
    uint32_t name;
    uint8_t is_array;
    uint8_t type;  /* DVM_T_F32 or DVM_T_I32 */
    uint8_t rank;  /* arrays: 1..DVM_MAX_RANK */
    uint8_t pad;
    uint16_t uslot; /* scalars: uniform slot that receives the value */
    uint16_t pad2;
    int32_t dim[DVM_MAX_RANK]; /* arrays: >= 0 a literal extent, < 0 shape symbol -(s+1) */
} dvm_param_desc;

typedef struct dvm_sym_desc {
    uint32_t name;
    uint16_t uslot; /* uniform slot that receives the extent */
    uint16_t pad;
} dvm_sym_desc;

/* Maps an array slot of a variant to a parameter and a role. */
typedef struct dvm_slot_desc {
    uint16_t param;  /* index within the kernel's parameters (an array parameter) */
    uint8_t role;    /* dvm_slot_role */
    uint8_t writes;  /* 1 if some node of the variant may write this slot */
} dvm_slot_desc;

typedef struct dvm_task_desc {
    uint8_t kind;  /* dvm_task_kind */
    uint8_t ndim;  /* parallel: 1..3 */
    uint16_t nregs;
    uint32_t code_begin, code_len; /* node range; execution starts at code_begin */
    uint16_t ext_u[DVM_MAX_PAR_DIMS]; /* uniform slots holding each dimension's i32 stop */
    uint16_t start_u[DVM_MAX_PAR_DIMS]; /* uniform slots holding each dimension's i32 start, or
                                          DVM_NO_SLOT (0) */
    uint16_t idx_reg[DVM_MAX_PAR_DIMS]; /* registers that receive the indices */
    uint16_t body; /* parallel: where every iteration after a thread's first starts (node
                      offset); nodes [0, body) are the prologue, run once per thread (0: none) */
    uint32_t line;
    /* Ordered stages (docs/autodiff.md): every task belongs to stage `stage`, the top-level
       statement it came from, in phase 0 (the forward: stages in non-decreasing order) or
       phase 1 (an adjoint's reverse sweep: stages in non-increasing order, after every phase 0
       task). The host runs an adjoint's phase-1 tasks of stage s with each primal array bound
       to its contents before stage s ran, except that a phase-1 serial task that writes a
       primal array (it restores what its stage stored) gets a copy of what the stage's forward
       left (vm/launch.c). */
    uint16_t stage;
    uint8_t phase;
} dvm_task_desc;
/* Parallel iteration space: dimension d runs over [U[start_u[d]], U[ext_u[d]]) (start 0 where
 * start_u[d] is DVM_NO_SLOT; a stop at or below the start: empty). Linear index t maps to
 * indices row-major (last dimension fastest). */

typedef struct dvm_stack_desc {
    uint8_t type;   /* DVM_T_F32, DVM_T_I32 or DVM_T_BOOL */
    uint8_t sizing; /* dvm_stack_sizing */
    uint8_t serial; /* 1: used by serial tasks (lives in the serial slot) */
    uint8_t pad;
    uint32_t name;  /* the variable it saves ("" for hidden values) */
    uint32_t line;
    uint32_t size_begin, size_len; /* DVM_SZ_PROGRAM: node range of the size program */
    uint32_t const_cap;            /* DVM_SZ_CONSTANT: the capacity */
} dvm_stack_desc;

typedef struct dvm_variant_desc {
    uint32_t task_begin, ntasks;
    uint32_t stack_begin, nstacks;
    uint32_t slot_begin, nslots; /* array slots */
    uint32_t nuniforms;          /* uniform words this variant needs */
    uint32_t present;            /* 0: this variant is absent */
} dvm_variant_desc;

typedef struct dvm_kernel_desc {
    uint32_t name;
    uint32_t line;
    uint32_t param_begin, nparams;
    uint32_t sym_begin, nsyms;
    /* string: why the kernel has no adjoint ("LINE:COL: message", the construct gradients
       cannot go through), or 0 when it has one or none was asked for */
    uint32_t no_adjoint;
    dvm_variant_desc v[DVM_V_COUNT];
} dvm_kernel_desc;

typedef struct dvm_program {
    uint32_t source_name; /* string: the .dvk file it came from */
    uint32_t nkernels, nparams, nsyms, nslots, ntasks, nstacks, nnodes, nconsts, nstrings_bytes;
    dvm_kernel_desc *kernels;
    dvm_param_desc *params;
    dvm_sym_desc *syms;
    dvm_slot_desc *slots;
    dvm_task_desc *tasks;
    dvm_stack_desc *stacks;
    dvm_node *nodes;
    uint32_t *lines;  /* per node: source line (0: none) */
    uint16_t *cols;   /* per node: source column (0: none) */
    uint32_t *consts; /* constant pool: 32-bit words */
    char *strings;    /* string table, nstrings_bytes long, starts with "\0" */
    uint32_t options; /* the compiler switches that changed the code (DVM_OPTS_*; 0: the defaults) */
} dvm_program;

/* dvm_program.options, the blob header's word at offset 36 (docs/bytecode.md): which of the
 * compiler's documented switches (dvm_context_opts) the code was compiled with, where they
 * changed it. With NO_OPT set the other fields are 0 (they have no effect without the
 * optimizer). UNROLL: the copies of a small loop body per trip when not the default 4
 * (1: none, else 2..256); 0 when the default. */
#define DVM_OPTS_NO_OPT 1u
#define DVM_OPTS_NO_PARTITION 2u
#define DVM_OPTS_UNROLL_SHIFT 8u
#define DVM_OPTS_UNROLL_MASK (0x1FFu << DVM_OPTS_UNROLL_SHIFT)
#define DVM_OPTS_ALL (DVM_OPTS_NO_OPT | DVM_OPTS_NO_PARTITION | DVM_OPTS_UNROLL_MASK)

/* Frees every array of the program and the program itself. NULL is fine. */
void dvm_program_free(dvm_program *p);

/* A task's control flow, for a backend's choice of interpreter: its conditional branches
 * (JZ, JNZ, JGEI, INCLT) and its loops (INCLT, or any jump to the same or an earlier node);
 * fixed_idx: a parallel task whose index registers are registers 0..ndim-1 and that no node
 * writes (they hold the iteration's indices throughout: the GPU lanes' row path). */
typedef struct dvm_task_flow {
    uint32_t cond;
    uint32_t loops;
    uint32_t fixed_idx;
} dvm_task_flow;
/* Whether opcode op writes its array slot (DVM_E_STORE, DVM_E_ATOMIC): the slot's writes flag
 * must be set (verify.c), and the host snapshots and versions what it writes (vm/launch.c). */
static inline int dvm_slot_write_op(uint32_t op) {
    const uint32_t e = dvm_op_effect(op);
    return e == DVM_E_STORE || e == DVM_E_ATOMIC;
}
/* The array slot whose elements node n reads or writes (-1: none; the shape-only forms IDX,
 * IDXM and SHAPE touch no element), with whether it writes and whether it reads them. */
int dvm_node_array(const dvm_node *n, int *writes, int *reads);
/* Whether operand k (0..3: fields x a b c) of opcode op is an array index that the GPU lanes'
 * row path reads from the iteration's indices (engine_lanes.h, ROW1_ and ROW2_): the indices of
 * LD, ST, LD2, ST2, the atomic adds and the offset and load-and-add forms. */
static inline int dvm_row_index_operand(uint32_t op, int k) {
    return k >= 1 && k <= 3 && (dvm_op_props(op) & (DVM_P_ROW_A << (k - 1))) != 0;
}
dvm_task_flow dvm_task_flow_of(const dvm_node *nodes, const dvm_task_desc *t);

/* Whether task t may record a runtime error (vm/launch.c: a launch that cannot fail takes no
 * snapshot of the arrays it writes). A parallel task's dimension d runs over [lo[d], hi[d])
 * (none: it cannot fail); arr_len and arr_shape (DVM_MAX_RANK a slot) are its nslots slots'.
 * 0 only when every node is one that never fails (arithmetic, branches, uniforms) or an
 * array access (the row-path forms: dvm_row_index_operand) whose indices are index registers
 * (in a task with branches, ones no node writes; without, followed through the nodes in order
 * and the ADDIKs from them) plus constants, in bounds over their whole range. */
int dvm_task_may_fail(const dvm_node *nodes, const dvm_task_desc *t, const int64_t *lo, const int64_t *hi,
                      const int64_t *arr_len, const int32_t *arr_shape, uint32_t nslots);

/* Registers written before they are read (bytecode/verify.c; docs/bytecode.md, "What the
 * verifier guarantees"): whether every register a node of task t (its nodes at code, its
 * operands in range, a parallel task's prologue straight through) reads is written on every path
 * from the task's start. An iteration of a parallel task starts with its index registers, and at
 * body with the prologue's registers that no node from body on writes. Solved in one pass in
 * reverse postorder of a depth-first search from node 0; a backward jump must then hold every
 * register its target has (a loop is entered through its head). Cost: O(code_len x nregs / 64).
 * Returns 0 if so, 1 if not (the first offence in *fail when fail is given; with need, every
 * register of every offence is added to need, DVM_REG_WORDS words, and the search goes on as if
 * it were written), -1 when out of memory. The scratch is reused from call to call. */
#define DVM_REG_WORDS (DVM_MAX_REGS / 64)
typedef struct dvm_flow_scratch {
    uint32_t *order, *num, *dfs, *succ, len; /* succ: each node's two successors */
    uint64_t *sets;
    uint64_t sets_cap;
} dvm_flow_scratch;
typedef struct dvm_flow_fail {
    uint32_t node; /* the node that reads, or that jumps */
    int operand;   /* 0..3 (fields x a b c) of the read; -1: the jump to node `target` */
    uint32_t reg;
    uint32_t target;
} dvm_flow_fail;
int dvm_flow_regs(const dvm_node *code, const dvm_task_desc *t, dvm_flow_scratch *s, dvm_flow_fail *fail, uint64_t *need);
void dvm_flow_scratch_free(dvm_flow_scratch *s);

/* Whether serial task t computes on uniforms alone, so that a host can run it before a launch
 * (vm/launch.c): no array, stack or heap access, no library math (a device's may round
 * otherwise), no backward jump (it ends), and every uniform it reads (U) is marked in
 * known[0 .. nuniforms) (a host-filled slot, or one an earlier such task wrote). */
int dvm_task_uniform_only(const dvm_node *nodes, const dvm_task_desc *t, const uint8_t *known, uint32_t nuniforms);

#endif /* DVM_BC_DEVICE_ONLY */
#endif
