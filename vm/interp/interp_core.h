/* interp_core.h: THE interpreter. One source, compiled three ways: as C by the CPU backend
 * (interp_cpu.c), by nvcc for CUDA and by hipcc for HIP (vm/cuda_hip/). The GLSL
 * interpreter (vm/vulkan/interp.comp) implements the same semantics.
 *
 * Rules for this file: no libc calls except math (through DVM_MATH_* macros), no recursion,
 * no allocation, fixed-size per-thread state, 64-bit index arithmetic. It trusts only what
 * the verifier guarantees (operand ranges, jump targets inside the task, array slots and
 * axes valid, size-program structure); every data-dependent access is checked at run time.
 *
 * The includer defines before including:
 *   DVM_FN                 function qualifier (e.g. `static inline`, `__device__ static inline`)
 *   DVM_ATOMIC_ADD_F32(p, v), DVM_ATOMIC_ADD_I32(p, v), DVM_ATOMIC_MAX_I32, DVM_ATOMIC_MIN_I32,
 *   DVM_ATOMIC_MAX_F32, DVM_ATOMIC_MIN_F32 (p: uint32_t *), DVM_ATOMIC_CAS_I32(p, expect, desired)
 *   DVM_ATOMIC_MAX_I64(p, v)  (p: int64_t *) for the max-reducer
 *   DVM_SINF... math functions: see the DVM_MATH block below for the list and defaults.
 *   Optional (defaults below suit C): DVM_LOAD_ERR(p) a non-cached read of err->code;
 *   DVM_U2F(u)/DVM_F2U(f) bit casts; DVM_FMAF(a, b, c) = a*b+c (fused or not);
 *   DVM_USE_SWITCH dispatch by `switch` (set automatically under __CUDACC__/__HIPCC__
 *   or a compiler without computed goto). DVM_ATOMIC_CAS_I32 returns the old value.
 *   DVM_POLL_EVERY (a power of two, default 1): a backward jump polls the error word of
 *   other threads every that many backward jumps of this call (GPU: the poll is a load
 *   from L2 on the loop's critical path).
 *   DVM_CANCEL_EVERY (a power of two, a multiple of DVM_POLL_EVERY, default 64): every that
 *   many backward jumps the run also reads the launch's cancel word (e->cancel, never NULL)
 *   and stops with DVM_RT_CANCELLED when it is set; DVM_LOAD_CANCEL(p) reads it (default a
 *   volatile load; GPU: host memory, so rarely). Backward jumps are the only cancel points of
 *   a run: a launch without loops runs to its end (vm/launch.c relies on that).
 *
 * API (all DVM_FN):
 *   void dvm_thread_begin(const dvm_env *e, int64_t slot)
 *       zero the counts of every stack in heap slot `slot` (call once per thread and task)
 *   int  dvm_run(const dvm_env *e, uint32_t task_index, const dvm_task_desc *t,
 *                const int32_t idx[3], int64_t slot, uint32_t *regs, uint32_t start)
 *       (with DVM_LANES > 1: DVM_LANES iterations in lockstep; see "dvm_run" below)
 *       run one iteration (parallel: the digits idx of its indices, index d being
 *       e->start[d] + idx[d]; serial: idx ignored) of task t from
 *       node `start` until END: 0 for a thread's first iteration of the task, t->body for
 *       every later one (the prologue, nodes [0, body), runs once per thread; the registers
 *       it writes keep their values); regs has DVM_MAX_REGS words. Returns 0, or 1 after
 *       recording a runtime error in e->err (first error wins; see dvm_record_error).
 *       Also returns 1 at once if e->err->code is already set (another thread failed).
 *   int64_t dvm_size_eval(const dvm_size_env *s, uint32_t begin, uint32_t len,
 *                         int mode, const int64_t *bound, int nbound, int64_t *scratch)
 *       evaluates size program nodes [begin, begin+len) (scratch holds len slots; the
 *       range stack is internal and fixed-size). mode DVM_SZ_PASS_RANGES: for each
 *       top-level SZ_RANGE node, stores its begin/end in s->range_lo/hi[node - begin], in
 *       s->range_val INT64_MIN (the max-reducer's identity; 0 for an empty range or body),
 *       and skips its body; mode DVM_SZ_PASS_FINAL: top-level SZ_RANGE nodes take their value
 *       from s->range_val[node - begin]; mode DVM_SZ_PASS_BODY: evaluates a range body
 *       (begin/len the body nodes) with bound[0..nbound) the enclosing bound variables.
 *       Returns the last node's value; on walk-cap overflow records DVM_RT_SIZER_CAP and
 *       returns -1.
 *       Size-slot (s) and body-end (e) operands are relative to the size program's first
 *       node, s->prog_begin; scratch and range_* are indexed the same way, so scratch holds
 *       (begin + len - prog_begin) slots. In BODY mode the slots before the body that it
 *       reads must hold the values of the RANGES pass (the max-reducer copies them).
 *
 * Heap layout seen by the interpreter: word w of slot s (heap/heap.h: stack i starts at
 * word stack_off[i] of a slot: its count, then stack_cap[i] entries, 32-bit) is at
 * DVM_HEAP_WORD(e, s, w): by default slot-contiguous, heap + s*stride + w; the includer
 * may define it otherwise (CUDA/HIP: interleaved, heap + w*nslots + s, see interp_cuda.cu). */
#ifndef DVM_INTERP_CORE_H
#define DVM_INTERP_CORE_H

/* The whole of bc.h (plain declarations, fine for nvcc/hipcc): dvm_run takes a
 * dvm_task_desc, which the DVM_BC_DEVICE_ONLY part does not have. */
#include "bytecode/bc.h"

#ifndef DVM_GLOBAL
#define DVM_GLOBAL /* address-space qualifier for device pointers; empty in C and CUDA */
#endif

typedef struct dvm_env {
    const dvm_node *nodes;        /* the program's node array (all tasks) */
    const uint32_t *consts;
    uint32_t *const *arr;         /* per array slot: base */
    const int64_t *arr_len;       /* per slot: elements */
    const int32_t *arr_shape;     /* per slot: DVM_MAX_RANK extents */
    uint32_t *uni;                /* uniform words */
    uint32_t *heap;
    int64_t stride;
    const int64_t *stack_off;
    const int64_t *stack_cap;
    uint32_t nstacks;
    dvm_rt_error *err;
    int64_t nslots;               /* heap slots in all (nthread_slots + 1); read only by an
                                     interleaved DVM_HEAP_WORD (GPU) */
    uint32_t wmask;               /* DVM_WARP_MIN (GPU): the warp's threads running this call
                                     together, or 0 (each thread on its own) */
    const dvm_node *code;         /* GPU lanes: the task's nodes (DVM_CODE_AT) */
    int32_t start[3];             /* the parallel task's start per dimension (0 where it has
                                     none): dvm_run's idx are digits, the index registers get
                                     start + digit. The driver sets them per task. */
    const volatile uint32_t *cancel; /* the launch's cancel word (DVM_CANCEL_EVERY), never NULL */
} dvm_env;

enum { DVM_SZ_PASS_RANGES = 0, DVM_SZ_PASS_FINAL = 1, DVM_SZ_PASS_BODY = 2 };

typedef struct dvm_size_env {
    const dvm_node *nodes;
    const uint32_t *consts;
    uint32_t *const *arr;
    const int64_t *arr_len;
    const int32_t *arr_shape;
    const uint32_t *uni;
    int64_t *range_lo, *range_hi, *range_val; /* indexed by node - begin */
    int64_t walk_cap;
    uint32_t stack; /* the stack being sized, for the error record */
    uint32_t prog_begin; /* absolute index of the size program's first node */
    dvm_rt_error *err;
    const volatile uint32_t *cancel; /* polled every DVM_SIZE_CANCEL_EVERY steps; NULL: never */
    int64_t *tally;  /* NULL, or: each evaluation adds the steps it took (the CPU max-reducer's cap) */
} dvm_size_env;

/* ---- implementation below (owned by the CPU backend) ---- */

#ifndef DVM_FN
#define DVM_FN static inline
#endif

/* Dispatch: computed goto where the compiler has it (one indirect jump per handler, the
 * best a C interpreter gets); a `switch` on CUDA/HIP, where it compiles to a jump table
 * without divergence when a warp runs the same node. */
#if !defined(DVM_USE_SWITCH) && (defined(__CUDACC__) || defined(__HIPCC__) || !defined(__GNUC__))
#define DVM_USE_SWITCH 1
#endif

/* ---- DVM_MATH: every math function the interpreter calls; an includer may map them to
 * device intrinsics. Defaults are the C99 float functions (<math.h> in C; built in for
 * nvcc and hipcc). ---- */
#ifndef DVM_SINF
#define DVM_SINF(x) sinf(x)
#endif
#ifndef DVM_COSF
#define DVM_COSF(x) cosf(x)
#endif
#ifndef DVM_TANF
#define DVM_TANF(x) tanf(x)
#endif
#ifndef DVM_ASINF
#define DVM_ASINF(x) asinf(x)
#endif
#ifndef DVM_ACOSF
#define DVM_ACOSF(x) acosf(x)
#endif
#ifndef DVM_ATANF
#define DVM_ATANF(x) atanf(x)
#endif
#ifndef DVM_ATAN2F
#define DVM_ATAN2F(y, x) atan2f(y, x)
#endif
#ifndef DVM_EXPF
#define DVM_EXPF(x) expf(x)
#endif
#ifndef DVM_LOGF
#define DVM_LOGF(x) logf(x)
#endif
#ifndef DVM_SQRTF
#define DVM_SQRTF(x) sqrtf(x)
#endif
#ifndef DVM_TANHF
#define DVM_TANHF(x) tanhf(x)
#endif
#ifndef DVM_FLOORF
#define DVM_FLOORF(x) floorf(x)
#endif
#ifndef DVM_CEILF
#define DVM_CEILF(x) ceilf(x)
#endif
#ifndef DVM_POWF
#define DVM_POWF(x, y) powf(x, y)
#endif
#ifndef DVM_FABSF
#define DVM_FABSF(x) fabsf(x)
#endif
#ifndef DVM_FMAF
#define DVM_FMAF(a, b, c) ((a) * (b) + (c)) /* contraction is allowed here, not required */
#endif

/* DVM_NODE_WORD(ip): node *ip as one little-endian 64-bit word: op in bits 0-7, x 8-15,
 * a 16-31, b 32-47, c 48-63 (the field order of dvm_node). A GPU includer whose node array is
 * 8-byte aligned defines it as a plain 64-bit load. */
#ifndef DVM_NODE_WORD
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define DVM_NODE_WORD(ip) ((uint64_t)(ip)->op | (uint64_t)(ip)->x << 8 | (uint64_t)(ip)->a << 16 | \
                           (uint64_t)(ip)->b << 32 | (uint64_t)(ip)->c << 48)
#else
#if defined(__GNUC__)
#define DVM_MEMCPY_ __builtin_memcpy
#else
#include <string.h>
#define DVM_MEMCPY_ memcpy
#endif
DVM_FN uint64_t dvm_node_word_(const dvm_node *ip) { uint64_t w; DVM_MEMCPY_(&w, ip, 8); return w; }
#define DVM_NODE_WORD(ip) dvm_node_word_(ip)
#endif
#endif

/* DVM_LDG(p), DVM_STG(p, v): a kernel array element's load and store (CUDA: explicit global
 * ones, since the array table may sit in shared memory and nvcc would emit generic ones). */
#ifndef DVM_LDG
#define DVM_LDG(p) (*(p))
#endif
#ifndef DVM_STG
#define DVM_STG(p, v) (*(p) = (v))
#endif
/* A lane run's `have` bit: the row path (below, ROW1_ and ROW2_) may be taken. */
#define DVM_ROW_FLAG 0x80000000u
/* With DVM_ROW_FLAG: the task reads its index registers only as row-path indices
 * (dvm_task_flow.idx_as_index), so the plain lanes need not write them to the register file
 * (ROW_LAZY_FLUSH_ when an access leaves the row path). */
#define DVM_ROW_LAZY 0x40000000u

#ifndef DVM_LOAD_ERR
#define DVM_LOAD_ERR(p) (*(volatile int32_t *)(p))
#endif
#ifndef DVM_LOAD_CANCEL
#define DVM_LOAD_CANCEL(p) (*(p))
#endif

#ifndef DVM_U2F
DVM_FN float dvm_u2f_(uint32_t u) { union { uint32_t u; float f; } v; v.u = u; return v.f; }
DVM_FN uint32_t dvm_f2u_(float f) { union { uint32_t u; float f; } v; v.f = f; return v.u; }
#define DVM_U2F(u) dvm_u2f_(u)
#define DVM_F2U(f) dvm_f2u_(f)
#endif

/* A one-node loop's steps (ONE_NODE_LOOP_ below): x = x * m + k, n times. */
DVM_FN float dvm_fma_steps_(float x, float m, float k, uint32_t n) {
    for (uint32_t i = 0; i < n; i++) x = DVM_FMAF(x, m, k);
    return x;
}

/* Records a runtime error unless one is already recorded (first error wins). Returns 1 so
 * that handlers can `return dvm_record_error(...)`. */
DVM_FN int dvm_record_error(dvm_rt_error *err, int32_t code, uint32_t task, uint32_t node,
                            int64_t p0, int64_t p1, int64_t p2, int64_t p3)
{
    if (DVM_ATOMIC_CAS_I32((uint32_t *)&err->code, 0u, (uint32_t)code) == 0u) {
        err->task = task;
        err->node = node;
        err->p[0] = p0;
        err->p[1] = p1;
        err->p[2] = p2;
        err->p[3] = p3;
    }
    return 1;
}

/* Address of word `word` of heap slot `slot`. Default (CPU): a slot is one contiguous
 * stride, so no two threads share a cache line. A GPU backend defines it interleaved (word
 * w of slot s at w * nslots + s): a warp pushing in step writes one run of consecutive words
 * instead of 32 cache lines. Same total size either way. */
#ifndef DVM_HEAP_WORD
#define DVM_HEAP_WORD(e, slot, word) ((e)->heap + DVM_HEAP_SLOT_WORD((int64_t)(slot), (e)->stride, (int64_t)(word)))
#endif

DVM_FN void dvm_thread_begin(const dvm_env *e, int64_t slot)
{
    for (uint32_t i = 0; i < e->nstacks; i++)
        *DVM_HEAP_WORD(e, slot, e->stack_off[i]) = 0;
}

/* F2I: toward zero, NaN -> 0, saturating (a plain cast is undefined out of range). */
DVM_FN int32_t dvm_f2i_(float f)
{
    if (!(f == f)) return 0;
    if (f >= 2147483648.0f) return 2147483647;
    if (f <= -2147483648.0f) return (-2147483647 - 1);
    return (int32_t)f;
}

/* Python floor division and modulo on i32; c != 0 (the caller checks). */
DVM_FN int32_t dvm_floordiv_(int32_t b, int32_t c)
{
    if (c == -1) return (int32_t)(0u - (uint32_t)b); /* INT_MIN // -1 wraps to INT_MIN */
    int32_t q = b / c;
    if ((b % c != 0) && ((b < 0) != (c < 0))) q -= 1;
    return q;
}
DVM_FN int32_t dvm_floormod_(int32_t b, int32_t c)
{
    if (c == -1) return 0;
    int32_t r = b % c;
    if (r != 0 && ((r < 0) != (c < 0))) r += c;
    return r;
}
DVM_FN uint32_t dvm_powi_(uint32_t base, int32_t ex)
{
    uint32_t r = 1u;
    uint32_t e2 = (uint32_t)ex;
    while (e2) {
        if (e2 & 1u) r *= base;
        base *= base;
        e2 >>= 1;
    }
    return r;
}

/* ---- size programs ---- */

DVM_FN int64_t dvm_sz_sat_(int64_t v)
{
    return v > DVM_SIZE_SAT ? DVM_SIZE_SAT : (v < -DVM_SIZE_SAT ? -DVM_SIZE_SAT : v);
}
/* |a|, |b| <= DVM_SIZE_SAT = 2^40, so only the product can leave int64. */
DVM_FN int64_t dvm_sz_mul_(int64_t a, int64_t b)
{
    if (a == 0 || b == 0) return 0;
    uint64_t ua = (uint64_t)(a < 0 ? -a : a), ub = (uint64_t)(b < 0 ? -b : b);
    int neg = (a < 0) != (b < 0);
    if (ua > (uint64_t)DVM_SIZE_SAT / ub) return neg ? -DVM_SIZE_SAT : DVM_SIZE_SAT;
    return dvm_sz_sat_(neg ? -(int64_t)(ua * ub) : (int64_t)(ua * ub));
}

/* size-program steps between two reads of the cancel word */
#define DVM_SIZE_CANCEL_EVERY 1024
#define DVM_SZ_TALLY_() do { if (s->tally) *s->tally += steps; } while (0)
DVM_FN int64_t dvm_size_eval(const dvm_size_env *s, uint32_t begin, uint32_t len, int mode,
                             const int64_t *bound, int nbound, int64_t *scratch)
{
    /* Nested ranges are walked with an explicit stack of frames (no recursion). */
    struct { uint32_t node, end; int64_t v, hi, acc; } fr[DVM_MAX_SIZE_DEPTH];
    int64_t var[DVM_MAX_SIZE_DEPTH];
    int nf = 0;
    int depth = nbound < 0 ? 0 : (nbound > DVM_MAX_SIZE_DEPTH ? DVM_MAX_SIZE_DEPTH : nbound);
    for (int d = 0; d < depth; d++) var[d] = bound[d];
    const dvm_node *P = s->nodes + s->prog_begin;
    uint32_t k = begin - s->prog_begin, end = k + len;
    int64_t steps = 0;
    if (len == 0) return 0;
    while (k < end) {
        const dvm_node n = P[k];
        int64_t v = 0;
        if (++steps > s->walk_cap) {
            dvm_record_error(s->err, DVM_RT_SIZER_CAP, 0, s->prog_begin + k, s->stack, s->walk_cap, 0, 0);
            DVM_SZ_TALLY_();
            return -1;
        }
        if (DVM_LOAD_ERR(&s->err->code)) {
            DVM_SZ_TALLY_();
            return -1;
        }
        if ((steps & (DVM_SIZE_CANCEL_EVERY - 1)) == 0 && s->cancel && DVM_LOAD_CANCEL(s->cancel)) {
            dvm_record_error(s->err, DVM_RT_CANCELLED, 0, s->prog_begin + k, s->stack, 0, 0, 0);
            DVM_SZ_TALLY_();
            return -1;
        }
        switch (n.op) {
        case DVM_OP_SZ_CONST: v = (int64_t)((uint32_t)n.a | ((uint32_t)n.b << 16)); break;
        case DVM_OP_SZ_ADD: v = dvm_sz_sat_(scratch[n.a] + scratch[n.b]); break;
        case DVM_OP_SZ_SUB: v = scratch[n.a] - scratch[n.b]; v = v < 0 ? 0 : dvm_sz_sat_(v); break;
        case DVM_OP_SZ_MUL: v = dvm_sz_mul_(scratch[n.a], scratch[n.b]); break;
        case DVM_OP_SZ_MAX: v = scratch[n.a] > scratch[n.b] ? scratch[n.a] : scratch[n.b]; break;
        case DVM_OP_SZ_VAR: v = n.a < depth ? var[n.a] : 0; break;
        case DVM_OP_SZ_LOAD: {
            int64_t i = scratch[n.a];
            v = (i >= 0 && i < s->arr_len[n.x]) ? (int64_t)(int32_t)s->arr[n.x][i] : 0;
        } break;
        case DVM_OP_SZ_SHAPE: v = s->arr_shape[(uint32_t)n.x * DVM_MAX_RANK + n.a]; break;
        case DVM_OP_SZ_PARAM: v = (int64_t)(int32_t)s->uni[n.a]; break;
        case DVM_OP_SZ_RANGE: {
            int64_t lo = scratch[n.a], hi = scratch[n.b];
            uint32_t bend = n.c;
            if (nf == 0 && depth == 0 && mode == DVM_SZ_PASS_RANGES) {
                s->range_lo[k] = lo;
                s->range_hi[k] = hi;
                /* the max-reducer's identity, or the value of a range with nothing to run */
                s->range_val[k] = lo < hi && bend > k + 1 ? INT64_MIN : 0;
                scratch[k] = 0;
                k = bend;
                goto close_frames;
            }
            if (nf == 0 && depth == 0 && mode == DVM_SZ_PASS_FINAL) {
                scratch[k] = s->range_val[k];
                k = bend;
                goto close_frames;
            }
            if (lo >= hi || bend <= k + 1 || depth >= DVM_MAX_SIZE_DEPTH || nf >= DVM_MAX_SIZE_DEPTH) {
                scratch[k] = 0;
                k = bend > k ? bend : k + 1;
                goto close_frames;
            }
            fr[nf].node = k;
            fr[nf].end = bend;
            fr[nf].v = lo;
            fr[nf].hi = hi;
            fr[nf].acc = -DVM_SIZE_SAT - 1; /* below every value: values saturate at +-SAT */
            nf++;
            var[depth++] = lo;
            k = k + 1;
            continue;
        }
        default:
            dvm_record_error(s->err, DVM_RT_BAD_OP, 0, s->prog_begin + k, n.op, 0, 0, 0);
            return -1;
        }
        scratch[k] = v;
        k++;
    close_frames:
        /* Finished the body of the innermost range: fold its root, step its variable. */
        while (nf > 0 && k >= fr[nf - 1].end) {
            int64_t r = scratch[fr[nf - 1].end - 1];
            if (r > fr[nf - 1].acc) fr[nf - 1].acc = r;
            if (++fr[nf - 1].v < fr[nf - 1].hi) {
                var[depth - 1] = fr[nf - 1].v;
                k = fr[nf - 1].node + 1;
                break;
            }
            scratch[fr[nf - 1].node] = fr[nf - 1].acc;
            k = fr[nf - 1].end;
            nf--;
            depth--;
        }
    }
    DVM_SZ_TALLY_();
    return scratch[end - 1];
}
#undef DVM_SZ_TALLY_

#endif /* DVM_INTERP_CORE_H */

/* ---- dvm_run: this part may be included again, once per lane configuration ----
 * Optional, per inclusion (all default to the plain scalar interpreter):
 *   DVM_LANES    iterations run in lockstep by one call (GPU: dispatch paid once for all of
 *                them, their loads in flight together); lane l's register r is
 *                regs[r * DVM_LANES + l], its indices idx[3*l .. 3*l+2], its heap slot
 *                slot * DVM_LANES + l. The function then takes one more argument, `have`:
 *                the mask of the lanes that have an iteration (bit l: lane l; lane 0 always
 *                has one), and DVM_ROW_FLAG where the row path may be taken (DVM_ROW_STEP,
 *                below). The caller gives a lane without one lane 0's indices; it then has
 *                no effect of its own (see LANES below; its registers are scratch). Without
 *                DVM_MASKED such a run is for branch-free tasks only: a conditional branch
 *                records DVM_RT_BAD_OP (p1 = 1), an internal error (the backends send every
 *                task with one to a masked run).
 *   DVM_MASKED   (with DVM_LANES > 1) lanes that disagree at a branch part and meet again:
 *                each lane keeps its own node index and the call always runs the lowest one,
 *                for the lanes at it (the others wait). A lane that leaves a loop waits at its
 *                exit for the lanes still in it; after an if/else the two groups meet where
 *                the ways join.
 *   DVM_ROW_STEP (with DVM_LANES > 1) the row path of array nodes (ROW1_, ROW2_): the
 *                lanes' distance in iterations when the caller sets DVM_ROW_FLAG.
 *   DVM_CALLER_POLLS the caller reads the error word between runs (another thread's failure),
 *                so a run does not read it at its start. Not undefined here: the includer
 *                sets it for the inclusions whose caller polls.
 *   DVM_START_AT(d) the start of dimension d of a parallel task, added to idx[d] (default
 *                e->start[d]; the CUDA lanes: 0, their caller adds the starts itself, so that
 *                no register holds them across a round). Not undefined here, like DVM_CODE_AT.
 *   DVM_CODE_AT  the task's first node, where the includer knows it (default
 *                e->nodes + t->code_begin; the CUDA lanes: e->code, the staged copy). Not
 *                undefined here: the includer sets it for the inclusions that want it.
 *   DVM_RUN_NAME the function's name (default dvm_run).
 * (And DVM_SWITCH_MARK / DVM_CASE_MARK, the dispatch switch's markers: see the switch.)
 * This part is compiled at every inclusion of the header: an includer that wants several
 * configurations includes it once per configuration, each with its own name. */
#ifndef DVM_LANES
#define DVM_LANES 1
#endif
#ifndef DVM_RUN_NAME
#define DVM_RUN_NAME dvm_run
#endif
#ifndef DVM_UNROLL
#if defined(__CUDACC__) || defined(__HIPCC__)
#define DVM_UNROLL _Pragma("unroll")
#define DVM_NOUNROLL _Pragma("unroll 1")
#else
#define DVM_UNROLL
#define DVM_NOUNROLL
#endif
#endif

/* ---- dispatch ----
 * Every handler is a label L_NAME. The table (computed goto) or the switch (CUDA/HIP) is
 * generated from ops.def and names every label, so an opcode with no handler is a build
 * error. */
#ifdef DVM_USE_SWITCH
#define vmdispatch() goto dvm_dispatch_
#else
#define vmdispatch() do { nw_ = DVM_NODE_WORD(code + pc); goto *dvm_disp_[N_OP]; } while (0)
#endif
/* The node being run, fetched as one 64-bit word (one load, not five): its fields. */
#define W_OP(w) ((uint32_t)((w) & 0xFFu)) /* the fields of a node word w */
#define W_A(w) ((uint32_t)((w) >> 16) & 0xFFFFu)
#define W_B(w) ((uint32_t)((w) >> 32) & 0xFFFFu)
#define W_C(w) ((uint32_t)((w) >> 48))
#define N_OP W_OP(nw_)
#define N_X ((uint32_t)(nw_ >> 8) & 0xFFu)
#define N_A W_A(nw_)
#define N_B W_B(nw_)
#define N_C W_C(nw_)
#define vmcase(name) L_##name:
#if DVM_LANES > 1
#define DVM_LANEMASK_ 1 /* m_: the lanes that run this node (all lanes with an iteration, unless masked lanes parted) */
#endif
#if DVM_LANES > 1 && defined(DVM_MASKED)
#define DVM_MASKED_ 1
#define DONE_ 0xFFFFFFFFu /* the node index of a lane that has finished, or has no iteration */
/* Masked lanes: m_ holds the lanes at node pc; lp_[l] the node a waiting or finished lane is
 * at (always beyond pc); wnext_ the lowest of the waiting lanes' nodes (DONE_ when none).
 * Only a branch parts lanes, so a step to the next node needs one compare: reaching wnext_
 * parks the running lanes there and selects again. */
#define vmbreak                                                                        \
    do {                                                                               \
        pc++;                                                                          \
        if (pc == wnext_) PARK_AT(pc);                                                 \
        vmdispatch();                                                                  \
    } while (0)
#define PARK_AT(pc)                                                                    \
    do {                                                                               \
        const uint32_t pk_ = (pc);                                                     \
        LANES(lp_[l_] = pk_);                                                          \
        goto dvm_select_;                                                              \
    } while (0)
#else
#define vmbreak do { pc++; vmdispatch(); } while (0)
#endif
/* LANES(body): the lanes that run the node, each with l_ its lane number; LANES_ALL(body):
 * every lane (pure nodes: no branch per lane); LANES_ADD(body): the lanes that run an add
 * (atomic adds). RUNS(l): whether lane l runs the node (0 or 1). An array node computes every
 * lane's index and loads only the running lanes' elements (a select, not a branch per lane:
 * ptxas spilled 224 bytes with the branches).
 * Plain lanes (no DVM_MASKED): a lane without an iteration repeats lane 0's (the caller gives
 * it lane 0's indices), so it loads, stores and fails exactly as lane 0 does, in the same
 * node, and only an add would count twice: only adds are masked. (Masking every node cost
 * the 8-lane kernel 196 bytes of spills on sm_90.) */
#ifdef DVM_LANEMASK_
/* Lanes: a node's register writes (SETU) are deferred to the end of its lane loop and made
 * as one row write, every lane of register r together (regs[r * DVM_LANES .. + DVM_LANES),
 * contiguous). Every read of the node then comes before any write, so the compiler may load
 * and store a register's lanes as vectors (CUDA: ld/st.shared.v4 where DVM_ROW_AT says the
 * rows are 16-byte aligned: a quarter of the instructions). A node writes at most one
 * register (its a operand), so the row is known once the loop has run (wr_, or NOREG_ when
 * the node wrote none). Every read of a lane comes before its own write in every node. */
#define NOREG_ 0xFFFFFFFFu
#define LANES_LOOP_(body)                                                              \
    do {                                                                               \
        uint32_t wv_[DVM_LANES] = {0}, wr_ = NOREG_;                                   \
        const int ws_ = 1;                                                             \
        (void)ws_;                                                                     \
        DVM_UNROLL for (int l_ = 0; l_ < DVM_LANES; l_++) { body; }                    \
        if (wr_ != NOREG_) ROW_WRITE_(ROW_AT_(wr_));                                   \
    } while (0)
#define SETU(n, v) (wv_[l_ * ws_] = (uint32_t)(v), wr_ = (uint32_t)(n)) /* ws_: see LANES_EACH_ */
/* LANES_EACH_: the lanes of a node that may fail, branch per lane or has side effects (LANES,
 * LANES_ADD), and of library math (LANES_MATH, a loop that is not unrolled): each lane's write
 * made at the end of its own iteration (SETU's buffer is then one word, ws_ = 0). Deferring
 * those to a row write kept every lane's value live across the others' work: ptxas spilled
 * 400-800 bytes in the masked kernels. */
#define LANES_EACH_(cond_, body) LANES_EACH_LOOP_(DVM_UNROLL, cond_, body)
#define LANES_EACH_LOOP_(unroll_, cond_, body)                                         \
    do {                                                                               \
        unroll_ for (int l_ = 0; l_ < DVM_LANES; l_++) if (cond_) {                    \
            uint32_t wv_[1] = {0}, wr_ = NOREG_;                                       \
            const int ws_ = 0;                                                         \
            (void)ws_;                                                                 \
            body;                                                                      \
            if (wr_ != NOREG_) RREF(wr_) = wv_[0];                                     \
        }                                                                              \
    } while (0)
/* DVM_ROW_LANES, DVM_ROW_AT(R, n), DVM_ROW_PUT(row, w) (optional, the includer's: all three or
 * none): for the runs of DVM_ROW_LANES lanes, the address of register n's lane row in the file
 * R and the whole row written from w[0 .. DVM_LANES) (CUDA: 16-byte vectors, the rows being
 * aligned). */
#if !defined(DVM_ROW_PUT) || DVM_LANES != DVM_ROW_LANES
#define ROW_PUT_(row, w) do { DVM_UNROLL for (int l_ = 0; l_ < DVM_LANES; l_++) (row)[l_] = (w)[l_]; } while (0)
#define ROW_AT_(n) (R + (uint32_t)(n) * DVM_LANES)
#else
#define ROW_PUT_(row, w) DVM_ROW_PUT(row, w)
#define ROW_AT_(n) DVM_ROW_AT(R, n)
#endif
#ifdef DVM_MASKED_
/* Masked lanes write the running lanes only: the others keep their values (a select, so
 * that the row is still written whole). */
#define ROW_WRITE_(row)                                                                \
    do {                                                                               \
        uint32_t *const rw_ = (row);                                                   \
        if (m_ != (1u << DVM_LANES) - 1u) {                                            \
            DVM_UNROLL for (int l_ = 0; l_ < DVM_LANES; l_++)                          \
                wv_[l_] = ((m_ >> l_) & 1u) ? wv_[l_] : rw_[l_];                      \
        }                                                                              \
        ROW_PUT_(rw_, wv_);                                                            \
    } while (0)
#define LANES(body) LANES_EACH_((m_ >> l_) & 1u, body)
#define RUNS(l) ((int)((m_ >> (l)) & 1u))
#else
/* Unmasked lanes write every lane: a lane without an iteration has scratch registers. */
#define ROW_WRITE_(row) ROW_PUT_(row, wv_)
#define LANES(body) LANES_EACH_(1, body)
#define RUNS(l) 1
#endif
#define LANES_ADD(body) LANES_EACH_((m_ >> l_) & 1u, body)
#define LANES_ALL(body) LANES_LOOP_(body)
#else
#define LANES(body) do { const int l_ = 0; body; } while (0)
#define RUNS(l) 1
#define LANES_ADD(body) LANES(body)
#define LANES_ALL(body) LANES(body)
#define SETU(n, v) (RU(n) = (uint32_t)(v))
#endif
/* LANES_MATH(body): a library math node (sin, exp, pow, ...), every lane. Masked lanes run
 * it in a loop that is not unrolled: the unrolled copies of these functions' code were a third
 * of the 8-lane kernel's 300 KB and ncu showed a third of its stalls waiting for instructions;
 * the loop made the sin loop 8% faster on an H200. Looping over the running lanes only was
 * no faster: the warp runs as many rounds as its busiest thread. The plain
 * lanes keep the unrolled copies (saxpy and the transcendental adjoint were 3% slower). */
#ifdef DVM_MASKED_
#define LANES_MATH(body) LANES_EACH_LOOP_(DVM_NOUNROLL, 1, body; if (!RUNS(l_)) wr_ = NOREG_)
#else
#define LANES_MATH(body) LANES_ALL(body)
#endif
/* Register access: 32-bit words, viewed as u32, i32 or f32; lane l_. */
/* RREF(n): lane l_'s word of register n as an lvalue, addressed in words (the writes of one
 * lane at a time); RU(n) reads through the row's address (ROW_AT_: with DVM_ROW_AT, vector
 * loads). The same word either way. */
#define RREF(n) (R[(uint32_t)(n) * DVM_LANES + l_])
#ifdef DVM_LANEMASK_
#define RU(n) (ROW_AT_(n)[l_])
#else
#define RU(n) RREF(n)
#endif
#define RI(n) ((int32_t)RU(n))
#define RF(n) DVM_U2F(RU(n))
#define SETI(n, v) SETU(n, (int32_t)(v))
#define SETF(n, v) SETU(n, DVM_F2U(v))
#define KF(n) DVM_U2F(K[n])
#define NODE_ID() (pc + t->code_begin)
/* DVM_WARP_MIN(mask, v) (optional; scalar and masked runs): the minimum of v over the threads in
 * mask, all of which call it (a warp-wide reduction on a GPU). With it (and e->wmask set),
 * the threads of a warp that run this call together stay together: after each conditional
 * branch (masked lanes: also after a lane finishes) they vote their node index and only those at
 * the lowest one go on; the rest wait. Threads that took different ways at a branch thus meet again where the ways join (a loop's exit waits for the longest trip; the
 * adjoint's reverse loop starts for all at once), instead of running each group's nodes one
 * group after another for the rest of the call. A thread that has finished (END or an error)
 * votes "none" until all have; RET(v) is every return of the call. */
#if (DVM_LANES == 1 || defined(DVM_MASKED_)) && defined(DVM_WARP_MIN)
#define DVM_CONVERGE_ 1
#define RET(v)                                                                         \
    do {                                                                               \
        rc_ = (v);                                                                     \
        goto dvm_finish_;                                                              \
    } while (0)
#define CONV_MARK() (vote_ = 1) /* threads can part only at a conditional branch: vote next */
#else
#define RET(v) return (v)
#define CONV_MARK() ((void)0)
#endif
/* A jump: a backward one polls the error word so that other threads stop early. */
#ifndef DVM_POLL_EVERY
#define DVM_POLL_EVERY 1
#endif
#ifdef DVM_MASKED_
#define JUMP_MEET_(tgt) if ((uint32_t)(tgt) >= wnext_) PARK_AT((uint32_t)(tgt)) /* a waiting lane is passed */
#else
#define JUMP_MEET_(tgt) ((void)0)
#endif
#ifndef DVM_CANCEL_EVERY
#define DVM_CANCEL_EVERY (DVM_POLL_EVERY > 64 ? DVM_POLL_EVERY : 64)
#endif
#define JUMP(tgt)                                                                      \
    do {                                                                               \
        const uint32_t npc_ = (uint32_t)(tgt);                                         \
        if (npc_ <= pc && (++polls_ & (DVM_POLL_EVERY - 1)) == 0u) {                   \
            if (DVM_LOAD_ERR(&e->err->code)) RET(1);                                   \
            if ((polls_ & (DVM_CANCEL_EVERY - 1)) == 0u && DVM_LOAD_CANCEL(e->cancel)) \
                FAIL(DVM_RT_CANCELLED, 0, 0, 0, 0);                                    \
        }                                                                              \
        JUMP_MEET_(tgt);                                                               \
        pc = npc_;                                                                     \
        vmdispatch();                                                                  \
    } while (0)
/* A conditional branch node: for every lane, `lane_` (a statement of lane l_) sets c_ and may
 * write that lane's registers through SETU (masked lanes: every lane computes, as in the pure
 * nodes, and only the running lanes write: no branch per lane); then the running lanes for
 * which c_ holds go to tgt, the
 * others on. Masked lanes that disagree part: at a backward branch (a loop that some lanes
 * leave) the lanes that stay run on at tgt and the others wait at the next node; at a forward
 * branch the lanes that jump wait at tgt and the others run on. Either way the lowest node
 * runs next (waiting lanes are beyond this node) without a new selection: the selection's
 * search over every lane's node, run by each thread whenever its lanes parted, had been a tenth
 * of the sin loop's instructions (ncu, H200). CBRANCH_LOOP, a loop's back edge: when some
 * lanes stay, the same statements run whether or not others leave. In a loop with
 * data-dependent trip counts some thread of a warp parts at nearly every back edge, and as a
 * separate way the parting ran with 3 threads of the warp on average (ncu, H100: 29% of the
 * FMA loop's instructions ran with 3 threads or fewer). Forward branches keep the separate
 * way (the stencil's bounds tests were 8% slower with the select form everywhere). */
#ifdef DVM_MASKED_
#define CBRANCH_HEAD_(lane_, tgt)                                                      \
        uint32_t t_ = 0;                                                               \
        LANES_ALL(int c_; lane_; t_ |= (uint32_t)(c_ != 0) << l_);                     \
        t_ &= m_;                                                                      \
        CONV_MARK();                                                                   \
        const uint32_t tg_ = (uint32_t)(tgt), nx_ = pc + 1u
#define CBRANCH_TAIL_                                                                  \
        if (t_ == m_) JUMP(tg_);                                                       \
        if (t_ != 0u) {                                                                \
            if (tg_ < nx_) {                                                           \
                LANES(if (!((t_ >> l_) & 1u)) lp_[l_] = nx_);                          \
                m_ = t_;                                                               \
                wnext_ = nx_ < wnext_ ? nx_ : wnext_;                                  \
                JUMP(tg_);                                                             \
            }                                                                          \
            LANES(if ((t_ >> l_) & 1u) lp_[l_] = tg_);                                 \
            m_ &= ~t_;                                                                 \
            wnext_ = tg_ < wnext_ ? tg_ : wnext_;                                      \
        }
#define CBRANCH(lane_, tgt)                                                            \
    do {                                                                               \
        CBRANCH_HEAD_(lane_, tgt);                                                     \
        CBRANCH_TAIL_                                                                  \
    } while (0);                                                                       \
    vmbreak
/* A loop's back edge (INCLT): when some lanes stay, the same statements run whether or not
 * others leave (a select per lane, lv_ the leaving lanes).
 * DVM_WARP_ANY_ACTIVE(pred) (optional; a GPU's vote among the threads running this statement
 * together): a thread whose lanes all leave while other threads of its warp stay **holds**:
 * its leaving lanes wait after the loop as usual, and the thread goes around again with no
 * running lane (m_ = 0: every node computes and writes nothing) until the others leave too.
 * Then the warp runs the loop's exit together. Before, each thread ran the nodes after the
 * loop on its own as it left, one after another: with data-dependent trip counts that cost the
 * FMA loop a third of its time on an H200 (the hold makes it 1.44x faster). Not in a copy whose warp
 * votes at every branch anyway (DVM_CONVERGE_). */
#if defined(DVM_WARP_ANY_ACTIVE) && !defined(DVM_CONVERGE_)
#define LOOP_HOLDS_ 1
#define LOOP_STAY_(t) DVM_WARP_ANY_ACTIVE((t) != 0u)
#else
#define LOOP_HOLDS_ 0 /* no vote: m_ is never 0 at a back edge */
#define LOOP_STAY_(t) 0
#endif
#define CBRANCH_LOOP(lane_, tgt)                                                       \
    do {                                                                               \
        CBRANCH_HEAD_(lane_, tgt);                                                     \
        const int stay_ = LOOP_STAY_(t_); /* every thread at this node votes first */  \
        if (tg_ < nx_ && (t_ != 0u || stay_)) {                                        \
            const uint32_t lv_ = m_ ^ t_;                                              \
            LANES_ALL(lp_[l_] = ((lv_ >> l_) & 1u) ? nx_ : lp_[l_]);                   \
            wnext_ = lv_ != 0u && nx_ < wnext_ ? nx_ : wnext_;                         \
            m_ = t_;                                                                   \
            JUMP(tg_);                                                                 \
        }                                                                              \
        /* a thread that held goes on where its lanes wait */                          \
        if (LOOP_HOLDS_ && m_ == 0u) goto dvm_select_;                                \
        CBRANCH_TAIL_                                                                  \
    } while (0);                                                                       \
    vmbreak
#elif DVM_LANES > 1
/* Unmasked lanes run branch-free tasks only (see DVM_LANES). */
#define CBRANCH(lane_, tgt) FAIL(DVM_RT_BAD_OP, N_OP, 1, 0, 0)
#define CBRANCH_LOOP CBRANCH
#else
#define CBRANCH(lane_, tgt)                                                            \
    do {                                                                               \
        const int l_ = 0;                                                              \
        int c_;                                                                        \
        lane_;                                                                         \
        CONV_MARK();                                                                   \
        if (c_) JUMP(tgt);                                                             \
    } while (0);                                                                       \
    vmbreak
#define CBRANCH_LOOP CBRANCH
#endif
#define FAIL(code_, p0, p1, p2, p3)                                                    \
    do {                                                                               \
        dvm_record_error(e->err, (code_), task_index, NODE_ID(), (p0), (p1), (p2), (p3)); \
        RET(1);                                                                        \
    } while (0)
/* LANES_COLD_(body): an array node's slow path, the report of the first running lane whose
 * index is out of bounds, in a loop that is not unrolled; the body recomputes the lane's
 * index from its registers (an array indexed by a run-time lane would live in local memory).
 * One copy a node instead of one per lane: the 8-lane masked CUDA kernel 241 -> 222 KB, the
 * stencil 5.5% faster on an H200. */
#define LANES_COLD_(body) do { DVM_NOUNROLL for (int l_ = 0; l_ < DVM_LANES; l_++) if (RUNS(l_)) { body; } } while (0)
/* ONE_NODE_LOOP_(): at an INCLT (no count: x = 0) that closes a loop whose body is the one node
 * before it, a self-update (DVM_SELF_UPDATE: `v = v * rate + k`, `g = g * rate`, `s = s + x`,
 * `v = v * 0.5`: the node as r[a] * m + k, bc.h) that neither
 * counts in nor is bounded by the loop's registers: when every running lane's count is below
 * its bound, the loop's remaining trips run here, each lane's steps in a tight loop on its
 * value (the body node has just written it), its count then the bound, as the INCLTs would
 * have left it; all go on after the INCLT. The same operations in the same order per lane.
 * Masked lanes all leave together (no parting); a thread that holds at the back edge (no
 * running lane) does not fuse. The loop's trips poll no error word (they end: at most 2^32).
 * The lanes one at a time in a loop that is not unrolled (unrolled, the 8-lane masked CUDA
 * kernel spilled 16 bytes). H200: the FMA loop 0.249 -> 0.099 ms, its adjoint 0.580 -> 0.220,
 * against running each trip as its own nodes. */
#ifdef DVM_MASKED_
#define ANY_RUNS_ (m_ != 0u)
#else
#define ANY_RUNS_ 1
#endif
#ifdef DVM_LANEMASK_
#define FUSE_LANES_(body) LANES_EACH_LOOP_(DVM_NOUNROLL, RUNS(l_), body)
#else
#define FUSE_LANES_(body) LANES(body)
#endif
#if DVM_LANES == 1 || defined(DVM_MASKED_)
#define ONE_NODE_LOOP_()                                                               \
    if (N_X == 0u && N_C + 1u == pc && ANY_RUNS_) {                                    \
        const uint64_t bw_ = DVM_NODE_WORD(code + N_C);                                \
        const uint32_t bop_ = W_OP(bw_), ba_ = W_A(bw_);                              \
        const uint32_t bo_ = DVM_SELF_OTHER(bop_, ba_, W_B(bw_), W_C(bw_));            \
        const uint32_t bk_ = DVM_SU_IS(bop_, FMA_R) ? W_C(bw_) : bo_; /* k's register */ \
        if (DVM_SELF_UPDATE(bop_, ba_, W_B(bw_), W_C(bw_)) && N_A != ba_ && N_B != ba_ && N_A != bo_ && N_A != bk_) { \
            int ok_ = 1;                                                               \
            FUSE_LANES_(ok_ &= RI(N_A) < RI(N_B));                                     \
            if (ok_) {                                                                 \
                /* the node as r[a] * m + k (bc.h): m and k per lane */                 \
                const int kc_ = DVM_SU_IS(bop_, FMA_K) || DVM_SU_IS(bop_, MUL_K) || DVM_SU_IS(bop_, ADD_K); \
                const float kk_ = kc_ ? KF(W_C(bw_)) : 0.0f;                           \
                const int mo_ = DVM_SU_IS(bop_, FMA_K) || DVM_SU_IS(bop_, MUL_R) || DVM_SU_IS(bop_, FMA_R); \
                const int ko_ = DVM_SU_IS(bop_, ADD_R) || DVM_SU_IS(bop_, SUB_R) || DVM_SU_IS(bop_, FMA_R); \
                FUSE_LANES_(const uint32_t n_ = RU(N_B) - RU(N_A) - 1u;                \
                            const float o_ = RF(bo_);                                  \
                            const float m_f_ = mo_ ? o_ : DVM_SU_IS(bop_, MUL_K) ? kk_ : 1.0f; \
                            const float k_f_ = ko_ ? (DVM_SU_IS(bop_, SUB_R) ? -RF(bk_) : RF(bk_)) \
                                                   : (DVM_SU_IS(bop_, MUL_R) || DVM_SU_IS(bop_, MUL_K)) ? -0.0f : kk_; \
                            RREF(ba_) = DVM_F2U(dvm_fma_steps_(RF(ba_), m_f_, k_f_, n_)); \
                            SETU(N_A, RU(N_B)));                                       \
                CONV_MARK();                                                           \
                vmbreak;                                                               \
            }                                                                          \
        }                                                                              \
    }
#else
#define ONE_NODE_LOOP_() /* plain lanes run no loops */
#endif
/* Flat bounds check of index v (i32) against len_ (the slot's element count, read once per
 * node): one unsigned compare. */
#define CHECK_LEN(x_, v_, len_)                                                        \
    do {                                                                               \
        if ((uint64_t)(int64_t)(v_) >= (uint64_t)(len_))                               \
            FAIL(DVM_RT_OOB, (x_), -1, (v_), (len_));                                  \
    } while (0)
/* An array node: its base and length read once, before the lanes. */
#define ARR_NODE DVM_GLOBAL uint32_t *const ab_ = arr[N_X]; const int64_t al_ = e->arr_len[N_X]
/* The flat index in register ia of an array node, one per lane in ix_[], all checked before
 * any access: one unsigned 32-bit compare a lane (lengths are below 2^31: the runtime refuses
 * larger arrays) and one branch a node; the slow path reports the first failing lane. */
#define ARR_IDX_E(ie)                                                                  \
    ARR_NODE;                                                                          \
    uint32_t ix_[DVM_LANES];                                                           \
    {                                                                                  \
        int bad_ = 0;                                                                  \
        LANES_ALL(ix_[l_] = (ie); bad_ |= (ix_[l_] >= (uint32_t)al_) & RUNS(l_));      \
        if (bad_) LANES_COLD_(CHECK_LEN(N_X, (int32_t)(ie), al_));                     \
    }
/* ARR_IDX_E with the index in register ia */
#define ARR_IDX(ia) ARR_IDX_E(RU(ia))
/* An 'o' operand's value, lane l_: its register plus its offset (wrapping, like ADDIK). */
#define RO(f) (RU(DVM_OFS_REG(f)) + (uint32_t)DVM_OFS_OFF(f))
/* A register plus a 16-bit immediate, lane l_ (an index plus a constant: wraps, like ADDIK). */
#define RK16(n, k) (RU(n) + (uint32_t)(int32_t)(int16_t)(k))
/* ---- the row path (the GPU lanes; the includer's DVM_ROW_STEP) ----
 * A lane run whose `have` carries DVM_ROW_FLAG has an iteration in every lane, lane l's
 * lane 0's + l * DVM_ROW_STEP, all in one row (2-D: the same row index), and its task's index
 * registers are registers 0..ndim-1, never written (dvm_task_flow.fixed_idx); rows_ is then the
 * task's ndim, else 0. An array node whose index is the innermost index register plus a
 * constant (x[j + k]: ROW1_), or whose two indices are the two index registers plus constants
 * (u[i + a, j + b]: ROW2_), with every lane running, then has lane l's element at lane 0's
 * + l * DVM_ROW_STEP: lane 0's and the last lane's element, both in bounds, check every lane,
 * and each lane's address is the row pointer rp_ plus a constant (no index or check per lane).
 * Otherwise rp_ is null and the node takes its usual path, which also reports an out-of-bounds
 * lane. ROW_OR_(row_, rowstmt_, usual) runs one or the other. */
#if defined(DVM_ROW_STEP) && defined(DVM_LANEMASK_)
#define ROW_STEP_ ((uint32_t)DVM_ROW_STEP)
#define ROW_SPAN_ (ROW_STEP_ * (uint32_t)(DVM_LANES - 1))
#define ROW_ALL_ (m_ == (1u << DVM_LANES) - 1u)
/* ROW_I_(d): lane 0's index d, the value of its register d (the row path's index registers are
 * registers 0 .. ndim - 1, never written): from the caller's idx, not from the register file
 * (whose 32-bit reads of one lane, a thread's file 36 words from the next one's, met 4-way
 * bank conflicts: the register files' traffic in shared memory is what holds the stencil) */
#if defined(DVM_MASKED_)
/* the masked runs: from the file (the caller's, kept live, spilled in the 4 masked lanes) */
#define ROW_I_(d) ROW_AT_(d)[0]
#define ROW_LAST_I_(reg) ROW_AT_(reg)[0]
#else
#if defined(DVM_START_AT)
#define ROW_I_(d) ((uint32_t)idx[d] + (uint32_t)DVM_START_AT(d))
#else
#define ROW_I_(d) ((uint32_t)idx[d] + (uint32_t)e->start[d])
#endif
#define ROW_LAST_I_(reg) (rows_ == 2u ? ROW_I_(1) : ROW_I_(0)) /* reg is rows_ - 1 */
#endif
/* rok_: the row path is taken; rp_ is then lane 0's element. The array's base is read
 * before the test (in parallel with the index registers' reads, not after them). */
#define ROW1_(reg, off)                                                                \
    DVM_GLOBAL uint32_t *rp_ = arr[N_X];                                               \
    int rok_ = 0;                                                                      \
    if (rows_ != 0u && (uint32_t)(reg) + 1u == rows_ && ROW_ALL_) {                    \
        const uint32_t rl_ = (uint32_t)e->arr_len[N_X]; /* < 2^31 */                   \
        const uint32_t r0_ = ROW_LAST_I_(reg) + (uint32_t)(off);                       \
        rok_ = r0_ < rl_ && r0_ + ROW_SPAN_ < rl_;                                     \
        if (rok_) rp_ += r0_;                                                          \
    }
#define ROW2_(ri, io, rj, jo)                                                          \
    DVM_GLOBAL uint32_t *rp_ = arr[N_X];                                               \
    int rok_ = 0;                                                                      \
    if (rows_ == 2u && (uint32_t)(ri) == 0u && (uint32_t)(rj) == 1u && ROW_ALL_) {     \
        const uint32_t re0_ = (uint32_t)e->arr_shape[(uint32_t)N_X * DVM_MAX_RANK];    \
        const uint32_t re1_ = (uint32_t)e->arr_shape[(uint32_t)N_X * DVM_MAX_RANK + 1]; \
        const uint32_t i0_ = ROW_I_(0) + (uint32_t)(io); /* no comma: row_ is passed on */ \
        const uint32_t j0_ = ROW_I_(1) + (uint32_t)(jo);                               \
        rok_ = i0_ < re0_ && j0_ < re1_ && j0_ + ROW_SPAN_ < re1_;                     \
        if (rok_) rp_ += i0_ * re1_ + j0_;                                             \
    }
#else
#define ROW_STEP_ 1u
#define ROW1_(reg, off) DVM_GLOBAL uint32_t *const rp_ = 0; const int rok_ = 0
#define ROW2_(ri, io, rj, jo) DVM_GLOBAL uint32_t *const rp_ = 0; const int rok_ = 0
#endif
#if defined(DVM_ROW_STEP) && defined(DVM_LANEMASK_) && !defined(DVM_MASKED_)
/* A run that left the index rows unwritten (DVM_ROW_LAZY) and meets an access off the row
 * path (the only reader of those registers: dvm_task_flow.idx_as_index) writes them
 * (dvm_idx_rows_: lane l's index d is lane 0's, plus l * DVM_ROW_STEP in the last dimension)
 * and runs the node again, before it has done anything. One copy of that code for every
 * access: written in each access's fallback, it cost the 8 lanes 284 bytes of spills. */
#define ROW_LAZY_ 1
#define ROW_LAZY_FLUSH_() do { if (ixp_) goto dvm_idx_rows_; } while (0)
#else
#define ROW_LAZY_FLUSH_() ((void)0)
#endif
#define RP_(l) (rp_ + ROW_STEP_ * (uint32_t)(l)) /* lane l's element on the row path */
#define ROW_OR_(row_, rowstmt_, ...)                                                   \
    do {                                                                               \
        row_;                                                                          \
        if (rok_) {                                                                    \
            rowstmt_;                                                                  \
        } else {                                                                       \
            ROW_LAZY_FLUSH_();                                                         \
            __VA_ARGS__;                                                               \
        }                                                                              \
    } while (0)
/* The row tests of the indexed nodes: a register plus a 16-bit immediate (LDO), an 'o' operand. */
#define ROW1K_(reg, k) ROW1_(reg, (int32_t)(int16_t)(k))
#define ROW2O_(fb, fc) ROW2_(DVM_OFS_REG(fb), DVM_OFS_OFF(fb), DVM_OFS_REG(fc), DVM_OFS_OFF(fc))
/* A load node: row_ its row test (ROW1_, ROW2_), and the index statement (ARR_IDX_E or
 * ARR2_IDX_E, the variadic part: it may hold commas) sets every lane's flat index ix_[]; all
 * lanes' loads first, then the register writes (the loads are in flight together). LOAD_NODE
 * writes the element to r[a]; LOAD_ADD_NODE adds it (f32). */
#define LOAD_NODE_(add_, row_, ...)                                                    \
    do {                                                                               \
        uint32_t ld_[DVM_LANES];                                                       \
        ROW_OR_(row_, LANES_ALL(ld_[l_] = DVM_LDG(RP_(l_))),                           \
                __VA_ARGS__; LANES_ALL(ld_[l_] = RUNS(l_) ? DVM_LDG(&ab_[ix_[l_]]) : 0u)); \
        LANES_ALL(if (add_) SETF(N_A, RF(N_A) + DVM_U2F(ld_[l_])); else SETU(N_A, ld_[l_])); \
    } while (0)
#define LOAD_NODE(row_, ...) LOAD_NODE_(0, row_, __VA_ARGS__)
#define LOAD_ADD_NODE(row_, ...) LOAD_NODE_(1, row_, __VA_ARGS__)
/* read-modify-write of element RI(ia) of the node's array, per lane (v: the index);
 * ARR_ADD the same for an add */
#define ARR_RMW(ia, stmt)                                                              \
    do {                                                                               \
        ARR_IDX(ia);                                                                   \
        LANES(const uint32_t v = ix_[l_]; stmt);                                       \
    } while (0)
#define ARR_ADD(ia, stmt)                                                              \
    do {                                                                               \
        ARR_IDX(ia);                                                                   \
        LANES_ADD(const uint32_t v = ix_[l_]; stmt);                                   \
    } while (0)
/* Both indices of a rank-2 node (registers ia, ja), checked axis 0 then axis 1 per lane
 * before any access; ix_[] the flat index (< arr_len < 2^31: the verifier allows LD2/ST2 on
 * rank-2 slots only). */
#define ARR2_IDX_E(ie, je)                                                             \
    DVM_GLOBAL uint32_t *const ab_ = arr[N_X];                                         \
    const uint32_t e0_ = (uint32_t)e->arr_shape[(uint32_t)N_X * DVM_MAX_RANK];         \
    const uint32_t e1_ = (uint32_t)e->arr_shape[(uint32_t)N_X * DVM_MAX_RANK + 1];     \
    uint32_t ix_[DVM_LANES];                                                           \
    {                                                                                  \
        uint32_t i_[DVM_LANES], j_[DVM_LANES];                                         \
        int bad_ = 0;                                                                  \
        LANES_ALL(i_[l_] = (ie); j_[l_] = (je);                                        \
                  bad_ |= ((i_[l_] >= e0_) | (j_[l_] >= e1_)) & RUNS(l_));             \
        if (bad_)                                                                      \
            LANES_COLD_(const uint32_t i = (ie); const uint32_t j = (je);              \
                        if (i >= e0_) FAIL(DVM_RT_OOB, N_X, 0, (int32_t)i, (int32_t)e0_); \
                        if (j >= e1_) FAIL(DVM_RT_OOB, N_X, 1, (int32_t)j, (int32_t)e1_)); \
        LANES_ALL(ix_[l_] = i_[l_] * e1_ + j_[l_]);                                    \
    }
#define ARR2_IDX(ia, ja) ARR2_IDX_E(RU(ia), RU(ja))

#ifdef DVM_LANEMASK_
DVM_FN int DVM_RUN_NAME(const dvm_env *e, uint32_t task_index, const dvm_task_desc *t,
                        const int32_t *idx, int64_t slot, uint32_t *regs, uint32_t start, uint32_t have)
#else
DVM_FN int DVM_RUN_NAME(const dvm_env *e, uint32_t task_index, const dvm_task_desc *t,
                        const int32_t *idx, int64_t slot, uint32_t *regs, uint32_t start)
#endif
{
#ifdef DVM_CONVERGE_
    int rc_ = 0, vote_ = 0;
#endif
#ifndef DVM_USE_SWITCH
    /* Unlisted numbers go to L__BAD; each ops.def row then overrides its own entry. */
#if defined(__clang__)
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Winitializer-overrides"
#else
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Woverride-init"
#endif
    static const void *const dvm_disp_[256] = {
        [0 ... 255] = &&L__BAD,
#define DVM_OP(name, num, fmt, flags, props, doc) [num] = &&L_##name,
#define DVM_DOP DVM_OP
#include "bytecode/ops.def"
#undef DVM_OP
#undef DVM_DOP
    };
#if defined(__clang__)
#pragma clang diagnostic pop
#else
#pragma GCC diagnostic pop
#endif
#endif
    uint32_t *const R = regs;
#ifdef DVM_CODE_AT
    const dvm_node *const code = DVM_CODE_AT; /* the includer's: where it knows the task's nodes are */
#else
    const dvm_node *const code = e->nodes + t->code_begin;
#endif
    uint32_t pc = start; /* the node being run, relative to code (32-bit: cheaper than a pointer on a GPU) */
#ifdef DVM_LANEMASK_
    uint32_t m_ = have & ((1u << DVM_LANES) - 1u);
#endif
#ifdef DVM_MASKED_
    uint32_t wnext_ = DONE_;
    uint32_t lp_[DVM_LANES];
    LANES_ALL(lp_[l_] = ((m_ >> l_) & 1u) ? start : DONE_);
#endif
    uint64_t nw_ = 0; /* the current node as one word (DVM_NODE_WORD) */
    const uint32_t *const K = e->consts;
    uint32_t polls_ = 0; /* backward jumps taken (see DVM_POLL_EVERY) */
    (void)polls_;
    DVM_GLOBAL uint32_t *const *const arr = e->arr;
#if defined(DVM_ROW_STEP) && defined(DVM_LANEMASK_)
    const uint32_t rows_ = (have & DVM_ROW_FLAG) ? (uint32_t)t->ndim : 0u; /* the row path (ROW1_) */
#endif
#ifdef ROW_LAZY_
    uint32_t ixp_ = (have & DVM_ROW_FLAG) ? (have & DVM_ROW_LAZY) : 0u; /* index rows not written yet */
#endif
#ifndef DVM_CALLER_POLLS
    if (DVM_LOAD_ERR(&e->err->code)) RET(1); /* another thread failed: stop early */
#endif
#ifdef DVM_LANEMASK_
    if (m_ == 0u) RET(0);
#endif

#ifdef ROW_LAZY_
    if (t->kind == DVM_TASK_PARALLEL && !ixp_) {
#else
    if (t->kind == DVM_TASK_PARALLEL) {
#endif
        const uint32_t nd = t->ndim;
        DVM_UNROLL for (uint32_t d = 0; d < DVM_MAX_PAR_DIMS; d++)
            if (d < nd) {
                const uint32_t r = t->idx_reg[d];
#ifdef DVM_START_AT
                const uint32_t st_ = (uint32_t)DVM_START_AT(d); /* index = start + digit (in u32: no overflow) */
#else
                const uint32_t st_ = (uint32_t)e->start[d];
#endif
#ifdef DVM_LANEMASK_
                /* every lane's, as one row: a lane without an iteration has lane 0's indices
                   (the caller's), in registers no running lane reads */
                uint32_t w_[DVM_LANES];
                DVM_UNROLL for (int l_ = 0; l_ < DVM_LANES; l_++) w_[l_] = (uint32_t)idx[3 * l_ + d] + st_;
                ROW_PUT_(ROW_AT_(r), w_);
#else
                LANES(RREF(r) = (uint32_t)idx[3 * l_ + d] + st_);
#endif
            }
    }
#ifdef DVM_USE_SWITCH
dvm_dispatch_:
#ifdef DVM_CONVERGE_
    if (vote_ && e->wmask) {
        const uint32_t me_ = pc;
        vote_ = 0;
        while (DVM_WARP_MIN(e->wmask, me_) != me_) {
        }
    }
#endif
    nw_ = DVM_NODE_WORD(code + pc);
#ifdef DVM_HOT_OPS
    /* nvcc compiles the switch to a tree of compares (no jump table; ptx_brx makes it one):
       the includer's hottest opcodes are tested first, in its order (DVM_HOT_OPS:
       DVM_HOT(NAME) ...). */
    {
        const uint32_t op_ = N_OP;
#define DVM_HOT(name) if (op_ == (uint32_t)DVM_OP_##name) goto L_##name;
        DVM_HOT_OPS
#undef DVM_HOT
    }
#endif
    /* DVM_SWITCH_MARK(op), DVM_CASE_MARK(num) (optional, the includer's: both or neither):
       markers around the switch, from which a build step makes the compare tree a jump table
       (CUDA: comments in the PTX for ptx_brx). SWITCH_MARK may only pass op through. */
#ifndef DVM_SWITCH_MARK
#define DVM_SWITCH_MARK(op) ((void)0)
#define DVM_CASE_MARK(num) ((void)0)
#endif
    {
    uint32_t op_ = N_OP;
    DVM_SWITCH_MARK(op_);
    switch (op_) {
#define DVM_OP(name, num, fmt, flags, props, doc) case num: DVM_CASE_MARK(num); goto L_##name;
#define DVM_DOP DVM_OP
#include "bytecode/ops.def"
#undef DVM_OP
#undef DVM_DOP
    default: DVM_CASE_MARK(default); goto L__BAD;
    }
    }
#else
    vmdispatch();
#endif

    /* ---- constants and moves ---- */
    vmcase(NOP) vmbreak;
    vmcase(CONST) { const uint32_t k_ = (uint32_t)N_B | ((uint32_t)N_C << 16); LANES_ALL(SETU(N_A, k_)); } vmbreak;
    vmcase(CONSTK) { const uint32_t k_ = K[N_B]; LANES_ALL(SETU(N_A, k_)); } vmbreak;
    vmcase(MOV) LANES_ALL(SETU(N_A, RU(N_B))); vmbreak;
    vmcase(LDU) { const uint32_t k_ = e->uni[N_B]; LANES_ALL(SETU(N_A, k_)); } vmbreak;
    vmcase(STU) LANES(e->uni[N_A] = RU(N_B)); vmbreak;
    vmcase(ATOMADDU) LANES_ADD(DVM_ATOMIC_ADD_F32(&e->uni[N_A], RF(N_B))); vmbreak;

    /* ---- f32 ---- */
    vmcase(ADDF) LANES_ALL(SETF(N_A, RF(N_B) + RF(N_C))); vmbreak;
    vmcase(SUBF) LANES_ALL(SETF(N_A, RF(N_B) - RF(N_C))); vmbreak;
    vmcase(MULF) LANES_ALL(SETF(N_A, RF(N_B) * RF(N_C))); vmbreak;
    vmcase(DIVF) LANES_ALL(SETF(N_A, RF(N_B) / RF(N_C))); vmbreak;
    vmcase(MINF) LANES_ALL(float x = RF(N_B); float y = RF(N_C); SETF(N_A, y < x ? y : x)); vmbreak;
    vmcase(MAXF) LANES_ALL(float x = RF(N_B); float y = RF(N_C); SETF(N_A, y > x ? y : x)); vmbreak;
    vmcase(POWF) LANES_MATH(SETF(N_A, DVM_POWF(RF(N_B), RF(N_C)))); vmbreak;
    vmcase(ATAN2F) LANES_MATH(SETF(N_A, DVM_ATAN2F(RF(N_B), RF(N_C)))); vmbreak;
    vmcase(NEGF) LANES_ALL(SETU(N_A, RU(N_B) ^ 0x80000000u)); vmbreak;
    vmcase(ABSF) LANES_ALL(SETU(N_A, RU(N_B) & 0x7FFFFFFFu)); vmbreak;
    vmcase(SIN) LANES_MATH(SETF(N_A, DVM_SINF(RF(N_B)))); vmbreak;
    vmcase(COS) LANES_MATH(SETF(N_A, DVM_COSF(RF(N_B)))); vmbreak;
    vmcase(TAN) LANES_MATH(SETF(N_A, DVM_TANF(RF(N_B)))); vmbreak;
    vmcase(ASIN) LANES_MATH(SETF(N_A, DVM_ASINF(RF(N_B)))); vmbreak;
    vmcase(ACOS) LANES_MATH(SETF(N_A, DVM_ACOSF(RF(N_B)))); vmbreak;
    vmcase(ATAN) LANES_MATH(SETF(N_A, DVM_ATANF(RF(N_B)))); vmbreak;
    vmcase(EXP) LANES_MATH(SETF(N_A, DVM_EXPF(RF(N_B)))); vmbreak;
    vmcase(LOG) LANES_MATH(SETF(N_A, DVM_LOGF(RF(N_B)))); vmbreak;
    vmcase(SQRT) LANES_ALL(SETF(N_A, DVM_SQRTF(RF(N_B)))); vmbreak;
    vmcase(RSQRT) LANES_ALL(SETF(N_A, 1.0f / DVM_SQRTF(RF(N_B)))); vmbreak;
    vmcase(TANH) LANES_MATH(SETF(N_A, DVM_TANHF(RF(N_B)))); vmbreak;
    vmcase(FLOOR) LANES_ALL(SETF(N_A, DVM_FLOORF(RF(N_B)))); vmbreak;
    vmcase(CEIL) LANES_ALL(SETF(N_A, DVM_CEILF(RF(N_B)))); vmbreak;

    /* ---- i32 (wrapping: computed on u32) ---- */
    vmcase(ADDI) LANES_ALL(SETU(N_A, RU(N_B) + RU(N_C))); vmbreak;
    vmcase(SUBI) LANES_ALL(SETU(N_A, RU(N_B) - RU(N_C))); vmbreak;
    vmcase(MULI) LANES_ALL(SETU(N_A, RU(N_B) * RU(N_C))); vmbreak;
    vmcase(DIVI) LANES(
        int32_t c = RI(N_C);
        if (c == 0) FAIL(DVM_RT_DIVZERO, 0, 0, 0, 0);
        SETI(N_A, dvm_floordiv_(RI(N_B), c))); vmbreak;
    vmcase(MODI) LANES(
        int32_t c = RI(N_C);
        if (c == 0) FAIL(DVM_RT_DIVZERO, 0, 0, 0, 0);
        SETI(N_A, dvm_floormod_(RI(N_B), c))); vmbreak;
    vmcase(MINI) LANES_ALL(int32_t x = RI(N_B); int32_t y = RI(N_C); SETI(N_A, y < x ? y : x)); vmbreak;
    vmcase(MAXI) LANES_ALL(int32_t x = RI(N_B); int32_t y = RI(N_C); SETI(N_A, y > x ? y : x)); vmbreak;
    vmcase(NEGI) LANES_ALL(SETU(N_A, 0u - RU(N_B))); vmbreak;
    vmcase(ABSI) LANES_ALL(uint32_t v = RU(N_B); SETU(N_A, (v & 0x80000000u) ? 0u - v : v)); vmbreak;
    vmcase(ADDIK) { const uint32_t k_ = (uint32_t)(int32_t)(int16_t)N_C; LANES_ALL(SETU(N_A, RU(N_B) + k_)); } vmbreak;

    /* ---- conversions ---- */
    vmcase(I2F) LANES_ALL(SETF(N_A, (float)RI(N_B))); vmbreak;
    vmcase(F2I) LANES_ALL(SETI(N_A, dvm_f2i_(RF(N_B)))); vmbreak;
    vmcase(FFLOORDIV) LANES_ALL(SETF(N_A, DVM_FLOORF(RF(N_B) / RF(N_C)))); vmbreak;
    vmcase(FMODF) LANES_ALL(
        float x = RF(N_B); float y = RF(N_C);
        float q = DVM_FLOORF(x / y);
        float m = y * q; /* separate statements: no contraction */
        SETF(N_A, x - m)); vmbreak;
    vmcase(POWI) LANES(
        int32_t c = RI(N_C);
        if (c < 0) FAIL(DVM_RT_NEGPOW, c, 0, 0, 0);
        SETU(N_A, dvm_powi_(RU(N_B), c))); vmbreak;

    /* ---- comparisons and logic ---- */
    vmcase(LTF) LANES_ALL(SETU(N_A, RF(N_B) < RF(N_C))); vmbreak;
    vmcase(LEF) LANES_ALL(SETU(N_A, RF(N_B) <= RF(N_C))); vmbreak;
    vmcase(EQF) LANES_ALL(SETU(N_A, RF(N_B) == RF(N_C))); vmbreak;
    vmcase(NEF) LANES_ALL(SETU(N_A, RF(N_B) != RF(N_C))); vmbreak;
    vmcase(LTI) LANES_ALL(SETU(N_A, RI(N_B) < RI(N_C))); vmbreak;
    vmcase(LEI) LANES_ALL(SETU(N_A, RI(N_B) <= RI(N_C))); vmbreak;
    vmcase(EQI) LANES_ALL(SETU(N_A, RU(N_B) == RU(N_C))); vmbreak;
    vmcase(NEI) LANES_ALL(SETU(N_A, RU(N_B) != RU(N_C))); vmbreak;
    vmcase(NOT) LANES_ALL(SETU(N_A, RU(N_B) == 0u)); vmbreak;
    vmcase(SEL) LANES_ALL(SETU(N_A, RU(N_A) ? RU(N_B) : RU(N_C))); vmbreak;

    /* ---- control ---- */
    vmcase(JMP) JUMP(N_A);
    vmcase(JZ) CBRANCH(c_ = RU(N_A) == 0u, N_B);
    vmcase(JNZ) CBRANCH(c_ = RU(N_A) != 0u, N_B);
    /* the loop tests: x + 1 iterations left is r[b] - r[a] > x, exact (once r[a] < r[b], the
       difference fits in a u32); x is 0 but in an unrolled loop */
    vmcase(JGEI) CBRANCH(c_ = !((RI(N_A) < RI(N_B)) & (RU(N_B) - RU(N_A) > N_X)), N_C);
    vmcase(JOUTI) CBRANCH(c_ = (RI(N_X) >= RI(N_A)) | (RI(N_A) >= RI(N_B)), N_C);
    /* the bound is read before the count is written (they may be one register) */
    vmcase(INCLT) {
        ONE_NODE_LOOP_();
        CBRANCH_LOOP(const uint32_t v_ = RU(N_A) + N_X + 1u; c_ = ((int32_t)v_ < RI(N_B)) & (RU(N_B) - v_ > N_X);
                     SETU(N_A, v_), N_C);
    }
#ifdef DVM_MASKED_
    vmcase(END) LANES(lp_[l_] = DONE_); goto dvm_select_;
#else
    vmcase(END) RET(0);
#endif
    vmcase(ASSERT) LANES(if (!RU(N_A)) FAIL(DVM_RT_ASSERT, N_B, 0, 0, 0)); vmbreak;

    /* ---- arrays ---- */
    vmcase(IDX) {
        const int32_t ext = e->arr_shape[(uint32_t)N_X * DVM_MAX_RANK + N_C];
        LANES(int32_t v = RI(N_B);
              if (v < 0 || v >= ext) FAIL(DVM_RT_OOB, N_X, N_C, v, ext);
              SETI(N_A, v));
    } vmbreak;
    vmcase(IDXM) {
        const int32_t ext = e->arr_shape[(uint32_t)N_X * DVM_MAX_RANK + N_C];
        LANES(int32_t v = RI(N_B);
              if (v < 0 || v >= ext) FAIL(DVM_RT_OOB, N_X, N_C, v, ext);
              SETU(N_A, RU(N_A) * (uint32_t)ext + (uint32_t)v));
    } vmbreak;
    vmcase(LD) LOAD_NODE(ROW1_(N_B, 0), ARR_IDX(N_B)); vmbreak;
    vmcase(ST) ROW_OR_(ROW1_(N_A, 0), LANES_ALL(DVM_STG(RP_(l_), RU(N_B))), ARR_RMW(N_A, DVM_STG(&ab_[v], RU(N_B)))); vmbreak;
    /* rank-2 access, both indices in registers: IDX + IDXM + LD/ST in one node. The verifier
       allows it only on rank-2 slots, so the flat index i * e1 + j < arr_len. */
    vmcase(LD2) LOAD_NODE(ROW2_(N_B, 0, N_C, 0), ARR2_IDX(N_B, N_C)); vmbreak;
    vmcase(ST2) ROW_OR_(ROW2_(N_A, 0, N_B, 0), LANES_ALL(DVM_STG(RP_(l_), RU(N_C))),
                        ARR2_IDX(N_A, N_B); LANES(DVM_STG(&ab_[ix_[l_]], RU(N_C)))); vmbreak;
    vmcase(ATOMADDF) ROW_OR_(ROW1_(N_A, 0), LANES_ALL(DVM_ATOMIC_ADD_F32(RP_(l_), RF(N_B))),
                             ARR_ADD(N_A, DVM_ATOMIC_ADD_F32(&ab_[v], RF(N_B)))); vmbreak;
    vmcase(ATOMADDF2) ROW_OR_(ROW2_(N_A, 0, N_B, 0), LANES_ALL(DVM_ATOMIC_ADD_F32(RP_(l_), RF(N_C))),
                              ARR2_IDX(N_A, N_B); LANES_ADD(DVM_ATOMIC_ADD_F32(&ab_[ix_[l_]], RF(N_C)))); vmbreak;
    /* an index plus a constant: ADDIK fused into the access (the sum checked as the index) */
    vmcase(LDO) LOAD_NODE(ROW1K_(N_B, N_C), ARR_IDX_E(RK16(N_B, N_C))); vmbreak;
    vmcase(ATOMADDFO) ROW_OR_(ROW1K_(N_A, N_C), LANES_ALL(DVM_ATOMIC_ADD_F32(RP_(l_), RF(N_B))),
                              ARR_IDX_E(RK16(N_A, N_C)); LANES_ADD(DVM_ATOMIC_ADD_F32(&ab_[ix_[l_]], RF(N_B)))); vmbreak;
    vmcase(LD2O) LOAD_NODE(ROW2O_(N_B, N_C), ARR2_IDX_E(RO(N_B), RO(N_C))); vmbreak;
    vmcase(ATOMADDF2O) ROW_OR_(ROW2O_(N_A, N_B), LANES_ALL(DVM_ATOMIC_ADD_F32(RP_(l_), RF(N_C))),
                               ARR2_IDX_E(RO(N_A), RO(N_B)); LANES_ADD(DVM_ATOMIC_ADD_F32(&ab_[ix_[l_]], RF(N_C)))); vmbreak;
    vmcase(ATOMADDI) ARR_ADD(N_A, DVM_ATOMIC_ADD_I32(&ab_[v], RU(N_B))); vmbreak;
    vmcase(ATOMMAXF) ARR_RMW(N_A, DVM_ATOMIC_MAX_F32(&ab_[v], RF(N_B))); vmbreak;
    vmcase(ATOMMINF) ARR_RMW(N_A, DVM_ATOMIC_MIN_F32(&ab_[v], RF(N_B))); vmbreak;
    vmcase(ATOMMAXI) ARR_RMW(N_A, DVM_ATOMIC_MAX_I32(&ab_[v], RI(N_B))); vmbreak;
    vmcase(ATOMMINI) ARR_RMW(N_A, DVM_ATOMIC_MIN_I32(&ab_[v], RI(N_B))); vmbreak;
    vmcase(SHAPE) { const int32_t k_ = e->arr_shape[(uint32_t)N_X * DVM_MAX_RANK + N_B]; LANES_ALL(SETI(N_A, k_)); } vmbreak;

    /* ---- adstacks: word 0 of a stack is its count, entries follow ---- */
    vmcase(PUSH) {
        const int64_t off = e->stack_off[N_A], cap = e->stack_cap[N_A];
        LANES(const int64_t s_ = slot * DVM_LANES + l_; /* lane l's heap slot */
              DVM_GLOBAL uint32_t *cnt = DVM_HEAP_WORD(e, s_, off);
              uint32_t n = *cnt;
              if ((int64_t)n >= cap) FAIL(DVM_RT_ADSTACK_OVERFLOW, N_A, cap, 0, 0);
              *DVM_HEAP_WORD(e, s_, off + 1 + (int64_t)n) = RU(N_B);
              *cnt = n + 1u);
    } vmbreak;
    vmcase(POP) {
        const int64_t off = e->stack_off[N_B];
        LANES(const int64_t s_ = slot * DVM_LANES + l_;
              DVM_GLOBAL uint32_t *cnt = DVM_HEAP_WORD(e, s_, off);
              uint32_t n = *cnt;
              if (n == 0u) FAIL(DVM_RT_ADSTACK_UNDERFLOW, N_B, 0, 0, 0);
              n -= 1u;
              SETU(N_A, *DVM_HEAP_WORD(e, s_, off + 1 + (int64_t)n));
              *cnt = n);
    } vmbreak;

    /* ---- superinstructions ---- */
    vmcase(ADDFK) { const float k_ = KF(N_C); LANES_ALL(SETF(N_A, RF(N_B) + k_)); } vmbreak;
    vmcase(MULFK) { const float k_ = KF(N_C); LANES_ALL(SETF(N_A, RF(N_B) * k_)); } vmbreak;
    vmcase(KSUBF) { const float k_ = KF(N_C); LANES_ALL(SETF(N_A, k_ - RF(N_B))); } vmbreak;
    vmcase(KDIVF) { const float k_ = KF(N_C); LANES_ALL(SETF(N_A, k_ / RF(N_B))); } vmbreak;
#if DVM_LANES == 1 && !defined(DVM_USE_SWITCH)
    /* The scalar C interpreter runs a run of FMAF/FMAFK nodes into one accumulator
       (consecutive updates of one variable: Horner's rule, an unrolled loop body) in one
       handler: the accumulator stays in a machine register from node to node and is stored
       once. Each node otherwise stored it and the next loaded it back, a store-to-load round
       trip (about 5 cycles on x86) on the chain of dependent multiply-adds. The run goes on
       while the next node (there is one: a task ends with END or JMP) is an FMAF/FMAFK into
       the same register that does not read it as a factor; a jump into the run's middle
       still runs that node by itself. The same operations in the same order: the results
       are those of one node at a time, bit for bit (the FMA loop 1.4x faster on 1 thread of
       an EPYC). */
    vmcase(FMAF)
    vmcase(FMAFK) {
        const int l_ = 0; /* RF's lane */
        const uint32_t acc_ = N_A;
        float x_ = RF(acc_);
        for (;;) {
            x_ = N_OP == DVM_OP_FMAFK ? DVM_FMAF(x_, RF(N_B), KF(N_C)) : DVM_FMAF(RF(N_B), RF(N_C), x_);
            const uint64_t nx_ = DVM_NODE_WORD(code + pc + 1);
            if (W_A(nx_) != acc_ || W_B(nx_) == acc_ ||
                !(W_OP(nx_) == DVM_OP_FMAFK || (W_OP(nx_) == DVM_OP_FMAF && W_C(nx_) != acc_)))
                break;
            pc++;
            nw_ = nx_;
        }
        SETF(acc_, x_);
    }
    vmbreak;
#else
    vmcase(FMAF) LANES_ALL(SETF(N_A, DVM_FMAF(RF(N_B), RF(N_C), RF(N_A)))); vmbreak;
    vmcase(FMAFK) { const float k_ = KF(N_C); LANES_ALL(SETF(N_A, DVM_FMAF(RF(N_A), RF(N_B), k_))); } vmbreak;
#endif
    vmcase(FMAFR) LANES_ALL(SETF(N_A, DVM_FMAF(RF(N_A), RF(N_B), RF(N_C)))); vmbreak;
    vmcase(LDADDF) LOAD_ADD_NODE(ROW1_(N_B, 0), ARR_IDX(N_B)); vmbreak;
    vmcase(LDADDFO) LOAD_ADD_NODE(ROW1K_(N_B, N_C), ARR_IDX_E(RK16(N_B, N_C))); vmbreak;
    vmcase(LDADDF2O) LOAD_ADD_NODE(ROW2O_(N_B, N_C), ARR2_IDX_E(RO(N_B), RO(N_C))); vmbreak;

    /* ---- size opcodes never appear in kernel code (the verifier rejects them) ---- */
    vmcase(SZ_CONST)
    vmcase(SZ_ADD)
    vmcase(SZ_SUB)
    vmcase(SZ_MUL)
    vmcase(SZ_MAX)
    vmcase(SZ_RANGE)
    vmcase(SZ_VAR)
    vmcase(SZ_LOAD)
    vmcase(SZ_SHAPE)
    vmcase(SZ_PARAM)
    L__BAD:
    FAIL(DVM_RT_BAD_OP, N_OP, 0, 0, 0);
#ifdef ROW_LAZY_
dvm_idx_rows_:
    ixp_ = 0u;
    DVM_UNROLL for (uint32_t d_ = 0; d_ < 2u; d_++) /* the row path: 1 or 2 dimensions */
        if (d_ < t->ndim) {
            const uint32_t i0_ = d_ == 0u ? ROW_I_(0) : ROW_I_(1);
            const uint32_t s_ = d_ + 1u == t->ndim ? ROW_STEP_ : 0u;
            uint32_t w_[DVM_LANES];
            DVM_UNROLL for (int l_ = 0; l_ < DVM_LANES; l_++) w_[l_] = i0_ + s_ * (uint32_t)l_;
            ROW_PUT_(ROW_AT_(d_), w_);
        }
    vmdispatch(); /* the node again, now with them */
#endif
#ifdef DVM_MASKED_
dvm_select_:
    /* every lane's node is in lp_: run the lowest, with the lanes at it */
    {
        uint32_t lo_ = DONE_;
        LANES_ALL(lo_ = lp_[l_] < lo_ ? lp_[l_] : lo_);
        if (lo_ == DONE_) RET(0);
        m_ = 0u;
        wnext_ = DONE_;
        LANES_ALL(if (lp_[l_] == lo_) m_ |= 1u << l_; else if (lp_[l_] < wnext_) wnext_ = lp_[l_]);
        pc = lo_;
        CONV_MARK(); /* the thread may have moved on: the warp votes */
        vmdispatch();
    }
#endif
#ifdef DVM_CONVERGE_
dvm_finish_:
    /* wait, voting "none", until every thread of the call has finished */
    if (e->wmask)
        while (DVM_WARP_MIN(e->wmask, 0xFFFFFFFFu) != 0xFFFFFFFFu) {
        }
    return rc_;
#endif
}

#undef LANES
#undef RU
#undef RREF
#undef RI
#undef RF
#undef SETU
#undef SETI
#undef SETF
#undef KF
#undef NODE_ID
#undef JUMP
#undef CBRANCH
#undef CBRANCH_LOOP
#undef CBRANCH_HEAD_
#undef CBRANCH_TAIL_
#undef LOOP_STAY_
#undef LOOP_HOLDS_
#undef JUMP_MEET_
#undef LANES_ALL
#undef LANES_ADD
#undef LANES_MATH
#undef RUNS
#ifdef DVM_LANEMASK_
#undef NOREG_
#undef LANES_LOOP_
#undef ROW_WRITE_
#undef ROW_PUT_
#undef ROW_AT_
#undef LANES_EACH_
#undef LANES_EACH_LOOP_
#endif
#undef DVM_LANEMASK_
#ifdef DVM_MASKED_
#undef PARK_AT
#undef DONE_
#undef DVM_MASKED_
#endif
#undef DVM_MASKED
#undef FAIL
#undef RET
#undef CONV_MARK
#undef DVM_CONVERGE_
#undef CHECK_LEN
#undef LANES_COLD_
#undef ONE_NODE_LOOP_
#undef FUSE_LANES_
#undef ANY_RUNS_
#undef ARR_NODE
#undef ARR_RMW
#undef ARR_ADD
#undef ARR_IDX
#undef ARR_IDX_E
#undef ARR2_IDX
#undef ARR2_IDX_E
#undef RO
#undef LOAD_NODE_
#undef LOAD_NODE
#undef LOAD_ADD_NODE
#undef ROW_STEP_
#undef ROW_SPAN_
#undef ROW_ALL_
#undef ROW_I_
#undef ROW_LAST_I_
#undef ROW1_
#undef ROW2_
#undef ROW1K_
#undef ROW2O_
#undef RP_
#undef ROW_LAZY_
#undef ROW_LAZY_FLUSH_
#undef ROW_OR_
#undef RK16
#undef vmcase
#undef vmbreak
#undef vmdispatch
#undef N_OP
#undef W_OP
#undef W_A
#undef W_B
#undef W_C
#undef N_X
#undef N_A
#undef N_B
#undef N_C
#undef DVM_LANES
#undef DVM_RUN_NAME
