/* interp_core.h: THE interpreter's shared part. One source, compiled three ways: as C by the
 * CPU backend (interp_cpu.c), by nvcc for CUDA and by hipcc for HIP (vm/cuda_hip/). The GLSL
 * interpreter (vm/vulkan/interp.comp) implements the same semantics.
 *   interp_core.h   (this file) the environment, the helpers every engine shares, the size
 *                   programs (dvm_size_eval, dvm_thread_begin);
 *   interp_run.h    dvm_run, the interpreter loop, included once per configuration;
 *   engine_scalar.h one iteration per call;
 *   engine_lanes.h  several iterations per call in lockstep: plain, masked, the row path;
 *   interp_ops.h    the opcodes' semantics, one handler per ops.def row, for every engine.
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
/* A lane run's `have` bit: the row path (below, ROW1_ and ROW2_) may be taken; the top bit of
 * the lane mask type (engine_lanes.h, DVM_LANE_MASK_T): DVM_ROW_FLAG for uint32_t. */
#define DVM_ROW_FLAG_OF(T) ((T)1 << (sizeof(T) * 8u - 1u))
#define DVM_ROW_FLAG 0x80000000u

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
