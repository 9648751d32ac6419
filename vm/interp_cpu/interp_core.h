/* interp_core.h: THE interpreter. One source, compiled three ways: as C by the CPU backend
 * (interp_cpu.c), by nvcc for CUDA and by hipcc for HIP (vm/interp_gpu/). The GLSL
 * interpreter (vm/interp_gpu/interp.comp) implements the same semantics.
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
 *
 * API (all DVM_FN):
 *   void dvm_thread_begin(const dvm_env *e, int64_t slot)
 *       zero the counts of every stack in heap slot `slot` (call once per thread and task)
 *   int  dvm_run(const dvm_env *e, uint32_t task_index, const dvm_task_desc *t,
 *                const int32_t idx[3], int64_t slot, uint32_t *regs)
 *       run one iteration (parallel: indices idx; serial: idx ignored) of task t from
 *       t->code_begin until END; regs has DVM_MAX_REGS words. Returns 0, or 1 after
 *       recording a runtime error in e->err (first error wins; see dvm_record_error).
 *       Also returns 1 at once if e->err->code is already set (another thread failed).
 *   int64_t dvm_size_eval(const dvm_size_env *s, uint32_t begin, uint32_t len,
 *                         int mode, const int64_t *bound, int nbound, int64_t *scratch)
 *       evaluates size program nodes [begin, begin+len) (scratch holds len slots; the
 *       range stack is internal and fixed-size). mode DVM_SZ_PASS_RANGES: for each
 *       top-level SZ_RANGE node, stores its begin/end in s->range_lo/hi[node - begin] and
 *       skips its body; mode DVM_SZ_PASS_FINAL: top-level SZ_RANGE nodes take their value
 *       from s->range_val[node - begin]; mode DVM_SZ_PASS_BODY: evaluates a range body
 *       (begin/len the body nodes) with bound[0..nbound) the enclosing bound variables.
 *       Returns the last node's value; on walk-cap overflow records DVM_RT_SIZER_CAP and
 *       returns -1.
 *
 * Heap layout seen by the interpreter: slot s owns words [s*stride, (s+1)*stride); stack i
 * starts at stack_off[i] in it: word 0 = count, then stack_cap[i] entries (32-bit). */
#ifndef DVM_INTERP_CORE_H
#define DVM_INTERP_CORE_H

#define DVM_BC_DEVICE_ONLY
#include "../../bytecode/bc.h"

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
    dvm_rt_error *err;
} dvm_size_env;

/* ---- implementation below (owned by the CPU backend) ---- */

#endif
