/* interp_cuda.cu: the device entry points of the CUDA and HIP backends. THE interpreter
 * (vm/interp/interp_core.h) is compiled here by nvcc (and, through interp_hip.cpp, by
 * hipcc); this file only adds the launch shapes: a serial task on one thread, a parallel
 * task grid-stride over its iteration space, and the three sizer passes. The host side is
 * gpu_backend.c; the parameter structs are in gpu_abi.h. */
#include <stdint.h>
#include "bytecode/hash.h"

#if defined(__HIP__) || defined(__HIPCC__)
#include <hip/hip_runtime.h>
#endif

#define DVM_FN __device__ static __forceinline__ /* one copy per call site: the interpreter must be inlined into each entry point */
#define DVM_ATOMIC_ADD_F32(p, v) atomicAdd((float *)(p), (v))
#define DVM_ATOMIC_ADD_I32(p, v) atomicAdd((int *)(p), (int)(v))
#define DVM_ATOMIC_MAX_I32(p, v) atomicMax((int *)(p), (int)(v))
#define DVM_ATOMIC_MIN_I32(p, v) atomicMin((int *)(p), (int)(v))
#define DVM_ATOMIC_CAS_I32(p, e, d) ((uint32_t)atomicCAS((unsigned int *)(p), (unsigned int)(e), (unsigned int)(d)))

/* Signed 64-bit max as a CAS loop: HIP has no signed 64-bit atomicMax. Called once per
   thread and range by the max-reducer, so the loop costs nothing measurable. */
__device__ static inline void dvm_gpu_atomic_max_i64(int64_t *p, int64_t v) {
    unsigned long long *q = (unsigned long long *)p;
    unsigned long long old = *(volatile unsigned long long *)q;
    while ((int64_t)old < v) {
        unsigned long long prev = atomicCAS(q, old, (unsigned long long)v);
        if (prev == old) return;
        old = prev;
    }
}
#define DVM_ATOMIC_MAX_I64(p, v) dvm_gpu_atomic_max_i64((int64_t *)(p), (int64_t)(v))

/* f32 max/min with the shared semantics (first operand kept when equal or unordered):
   a compare-and-swap loop that stores only when the value changes. MAX: v replaces when
   v > current; else when v < current. */
template <bool MAX> __device__ static inline void dvm_gpu_atomic_extf(uint32_t *p, float v) {
    unsigned int old = *(volatile unsigned int *)p;
    for (;;) {
        float cur = __uint_as_float(old);
        if (!(MAX ? v > cur : v < cur)) return;
        unsigned int prev = atomicCAS((unsigned int *)p, old, __float_as_uint(v));
        if (prev == old) return;
        old = prev;
    }
}
#define DVM_ATOMIC_MAX_F32(p, v) dvm_gpu_atomic_extf<true>((uint32_t *)(p), (v))
#define DVM_ATOMIC_MIN_F32(p, v) dvm_gpu_atomic_extf<false>((uint32_t *)(p), (v))

#include "vm/interp/gpu_abi.h"
/* A loop polls the other threads' error word every 64 backward jumps, not every one. */
#ifndef DVM_POLL_EVERY
#define DVM_POLL_EVERY 64
#endif
/* The cancel word lives in host memory (a read crosses the bus, about a microsecond): every
   4096 backward jumps of a thread. */
#define DVM_CANCEL_EVERY 4096
/* Adstack heap interleaved across slots (heap/heap.h): word w of slot s at w * nslots + s,
   so the threads of a warp pushing in step write consecutive words (one or two cache lines
   per push, not 32). */
#define DVM_HEAP_WORD(e, slot, word) ((e)->heap + (int64_t)(word) * (e)->nslots + (int64_t)(slot))
/* Node arrays are 8-byte aligned here (device allocations, and the shared-memory copy):
   a node is fetched with one 64-bit load. */
#define DVM_NODE_WORD(ip) (*(const uint64_t *)(ip))
#if !defined(__HIP__) && !defined(__HIPCC__)
/* Array elements are global memory (ld.global / st.global, not generic: the fast shape reads
   array bases from shared memory, so nvcc cannot infer the space). */
#define DVM_LDG(p) __ldca(p)
#define DVM_STG(p, v) __stwb((p), (v))
#endif
/* The 8-lane kernels' register files start 16-byte aligned and their stride is a multiple of
   16 bytes (DVM_GPU_LANE_PAD), so a register's 8 lanes are loaded and stored as two 16-byte
   vectors (engine_lanes.h, LANES_LOOP_): a quarter of the shared-memory instructions. Row n is
   computed in 16-byte units: nvcc then proves the rows aligned (the same address in 32-bit
   words got 32-bit and 64-bit loads only). The 4-lane kernels keep an odd stride: their
   per-lane accesses (library math, adstack pushes and pops) then hit 32 different banks, and
   with rows the sin loop's adjoint was 14% slower. */
#define DVM_ROW_LANES DVM_GPU_LANES_WIDE
/* The row path of array nodes (engine_lanes.h, DVM_ROW_STEP): a call whose `have` carries
   DVM_ROW_FLAG has every lane, lane l at iteration lane 0's + l * DVM_ROW_STEP in one row. */
#define DVM_ROW_STEP DVM_GPU_LANE_STEP
#define DVM_ROW_AT(R, n) ((uint32_t *)((uint4 *)(R) + (uint32_t)(n) * (DVM_LANES / 4)))
#define DVM_ROW_PUT(row, w)                                                                        \
    do {                                                                                          \
        DVM_UNROLL for (int q_ = 0; q_ < DVM_LANES / 4; q_++)                                     \
            ((uint4 *)(row))[q_] = make_uint4((w)[4 * q_], (w)[4 * q_ + 1], (w)[4 * q_ + 2], (w)[4 * q_ + 3]); \
    } while (0)
/* A vote among the threads running the statement together (engine_lanes.h: the masked lanes
   hold at a loop's back edge). */
#if defined(__HIP__) || defined(__HIPCC__)
#define DVM_WARP_ANY_ACTIVE(pred) __any(pred)
#else
#define DVM_WARP_ANY_ACTIVE(pred) __any_sync(__activemask(), (pred))
#endif
/* The dispatch switch's markers for ptx_brx (the build's -DDVM_GPU_BRX; tools/ptx_brx.c):
   PTX comments naming the opcode's register before the switch and each case's number at its
   head. The asm "changes" the opcode, so the compare tree nvcc makes compares exactly that
   register (and ptx_brx can run the tree on each value to find its case). */
#ifdef DVM_GPU_BRX
#define DVM_STR_(x) #x
#define DVM_XSTR_(x) DVM_STR_(x)
#define DVM_SWITCH_MARK(op) asm volatile("// dvm-switch " DVM_XSTR_(DVM_RUN_NAME) " %0;" : "+r"(op))
#define DVM_CASE_MARK(num) asm volatile("// dvm-case " DVM_XSTR_(DVM_RUN_NAME) " " #num ";")
#endif
/* The runs of the interpreter compiled here (vm/interp/interp_run.h, one inclusion each), with
   the tasks gpu_backend.c (task_cfg) gives them and what each measurably pays for itself (each
   turned off alone; bench/HISTORY.md):
     dvm_run             scalar       serial tasks; parallel tasks too large for shared memory
     dvm_run_conv        scalar+vote  the latter with two loops or more: dynsin adjoint 24.9 -> 13.6 ms (H200)
     dvm_run_lanes       4 plain      branch-free tasks: lanes 1.5-4.0x (H100)
     dvm_run_lanes_w     8 plain      the same where 8 fit (both 8-lane runs: 12-71% over 4, H100)
     dvm_run_mlanes      4 masked     tasks with a branch: the loops 1.5-2.9x (H100)
     dvm_run_mlanes_w    8 masked     the same where 8 fit
     dvm_run_mlanes_conv 4 masked+vote  those with two loops or more: dynsin adjoint 44% (H100) */
#include "vm/interp/interp_run.h" /* dvm_run: one iteration per call */
/* dvm_run_conv: the same, with the threads of a warp that run an iteration together kept
   on the same node (interp_run.h, DVM_WARP_MIN; redux.sync: sm_80 and newer). A separate
   copy, so that tasks that do not converge pay nothing for it (the vote's bookkeeping in the
   one copy made the one-loop kernels 10% slower on an H200). */
#if !defined(__HIP__) && !defined(__HIPCC__) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define DVM_GPU_CONVERGE_RUN 1
#define DVM_WARP_MIN(mask, v) __reduce_min_sync((mask), (v))
#define DVM_RUN_NAME dvm_run_conv
#include "vm/interp/interp_run.h"
#undef DVM_WARP_MIN
#endif
/* L = DVM_GPU_LANES or DVM_GPU_LANES_WIDE iterations per call in lockstep: the plain lanes
   (dvm_k_parallel_lanes, dvm_k_parallel_lanes8) for tasks with no conditional branch, and
   masked lanes (dvm_k_parallel_mlanes, dvm_k_parallel_mlanes8) for the rest: lanes that
   disagree at a branch part and meet again (engine_lanes.h, DVM_MASKED). On sm_80 and newer a
   DVM_GPU_LANES masked copy whose warp also keeps together (a task with two loops or more, as
   for dvm_run_conv: a separate copy, since the votes' bookkeeping in the one copy made the
   one-loop kernels 6% slower on an H200; 8 such lanes ran the dynsin adjoint at 9.9 ms against
   4 lanes' 7.1 ms, so the host picks 4 for those tasks and there is no 8-lane voting copy). */
/* the lane runs read the nodes where dvm_gpu_stage_all staged them (always: the host checks),
   and get indices, not digits: dvm_gpu_lanes adds the starts, read from the uniforms at each
   round (sm_90: the starts in the env, or staged in shared memory, took dvm_k_parallel_mlanes
   from 88 to 100-108 bytes of spills; so, 88 and fewer spill loads than before) */
#define DVM_CODE_AT (e->code)
#define DVM_START_AT(d) 0
#define DVM_LANES DVM_GPU_LANES
#define DVM_RUN_NAME dvm_run_lanes
#include "vm/interp/interp_run.h"
/* the runs below: their caller (dvm_gpu_lanes: AHEAD) reads the error word
   between runs */
#define DVM_CALLER_POLLS 1
#define DVM_LANES DVM_GPU_LANES_WIDE
#define DVM_RUN_NAME dvm_run_lanes_w
#include "vm/interp/interp_run.h"
#define DVM_LANES DVM_GPU_LANES
#define DVM_MASKED 1
#define DVM_RUN_NAME dvm_run_mlanes
#include "vm/interp/interp_run.h"
#define DVM_LANES DVM_GPU_LANES_WIDE
#define DVM_MASKED 1
#define DVM_RUN_NAME dvm_run_mlanes_w
#include "vm/interp/interp_run.h"
#ifdef DVM_GPU_CONVERGE_RUN
#define DVM_WARP_MIN(mask, v) __reduce_min_sync((mask), (v))
#define DVM_LANES DVM_GPU_LANES
#define DVM_MASKED 1
#define DVM_RUN_NAME dvm_run_mlanes_conv
#include "vm/interp/interp_run.h"
#undef DVM_WARP_MIN
#endif
#undef DVM_CALLER_POLLS
#undef DVM_CODE_AT
#undef DVM_START_AT
/* The runner for L lanes, plain (MASKED false) or masked. */
template <int L, bool MASKED>
__device__ static __forceinline__ int dvm_gpu_run_lanes(const dvm_env *e, uint32_t ti, const dvm_task_desc *t,
                                                        const int32_t *idx, int64_t slot, uint32_t *regs, uint32_t start,
                                                        uint32_t have) {
    if constexpr (MASKED && L == DVM_GPU_LANES) return dvm_run_mlanes(e, ti, t, idx, slot, regs, start, have);
    else if constexpr (MASKED) return dvm_run_mlanes_w(e, ti, t, idx, slot, regs, start, have);
    else if constexpr (L == DVM_GPU_LANES) return dvm_run_lanes(e, ti, t, idx, slot, regs, start, have);
    else return dvm_run_lanes_w(e, ti, t, idx, slot, regs, start, have);
}

/* ---- the ops-table hash, computed at compile time from the same ops.def rows and in the
   same way as bytecode/ops.c (FNV-1a 64 of bytecode/hash.h: number, name, format, flags, props); the host refuses an
   interpreter binary whose hash differs from dvm_ops_hash(). ---- */
struct dvm_gpu_fnv {
    uint64_t h;
    constexpr dvm_gpu_fnv byte(unsigned char b) const { return dvm_gpu_fnv{(h ^ b) * DVM_FNV_PRIME}; }
    constexpr dvm_gpu_fnv u32(uint32_t v) const {
        return byte((unsigned char)v).byte((unsigned char)(v >> 8)).byte((unsigned char)(v >> 16)).byte((unsigned char)(v >> 24));
    }
    template <unsigned N> constexpr dvm_gpu_fnv str(const char (&s)[N]) const {
        dvm_gpu_fnv f = *this;
        for (unsigned i = 0; i < N; i++) f = f.byte((unsigned char)s[i]);
        return f;
    }
};
static constexpr uint64_t dvm_gpu_ops_hash(void) {
    dvm_gpu_fnv f{DVM_FNV_BASIS};
#define DVM_OP(name, num, fmt, flags, props, doc) f = f.u32((uint32_t)(num)).str(#name).str(fmt).u32((uint32_t)(flags)).u32((uint32_t)(props));
#define DVM_DOP(name, num, fmt, flags, props, doc) DVM_OP(name, num, fmt, (flags) | DVM_F_DIFF, props, doc)
#include "bytecode/ops.def"
#undef DVM_OP
#undef DVM_DOP
    return f.h;
}
extern "C" __device__ const unsigned long long dvm_interp_ops_hash = dvm_gpu_ops_hash();

/* ---- exec ---- */
__device__ static inline void dvm_gpu_env(const dvm_gpu_exec_args &a, dvm_env *e, const dvm_node *nodes) {
    e->nodes = nodes;
    e->consts = (const uint32_t *)a.consts;
    e->arr = (uint32_t *const *)a.arr;
    e->arr_len = (const int64_t *)a.arr_len;
    e->arr_shape = (const int32_t *)a.arr_shape;
    e->uni = (uint32_t *)a.uni;
    e->heap = (uint32_t *)a.heap;
    e->stride = a.stride;
    e->stack_off = (const int64_t *)a.stack_off;
    e->stack_cap = (const int64_t *)a.stack_cap;
    e->nstacks = a.nstacks;
    e->err = (dvm_rt_error *)a.err;
    e->cancel = (const volatile uint32_t *)a.cancel;
    e->nslots = a.nslots;
    e->wmask = 0;
    e->start[0] = e->start[1] = e->start[2] = 0; /* a parallel task's: dvm_gpu_parallel */
}

extern __shared__ __align__(16) uint64_t dvm_gpu_smem[];

/* Dynamic shared memory: [nodes of the task, if SMEM_CODE][register files, if SMEM_REGS].
   Returns the node array to interpret (indexed by absolute node number, like the global one). */
__device__ static inline const dvm_node *dvm_gpu_stage_code(const dvm_gpu_exec_args &a, uint32_t **regs_base) {
    const dvm_node *gnodes = (const dvm_node *)a.nodes;
    const dvm_node *nodes = gnodes;
    unsigned char *p = (unsigned char *)dvm_gpu_smem;
    if (a.flags & DVM_GPU_F_SMEM_CODE) {
        uint64_t *dst = dvm_gpu_smem;
        const uint64_t *src = (const uint64_t *)(gnodes + a.code_begin);
        for (uint32_t i = threadIdx.x; i < a.code_len; i += blockDim.x) dst[i] = src[i];
        __syncthreads();
        /* absolute node n lives at dst[n - code_begin]; the core reads only this task's nodes */
        nodes = (const dvm_node *)dst - a.code_begin;
        p += (size_t)a.code_len * 8u;
    }
    *regs_base = (uint32_t *)p;
    return nodes;
}

__device__ static inline uint32_t *dvm_gpu_regs(const dvm_gpu_exec_args &a, uint32_t *smem_regs, uint64_t gtid) {
    if (a.flags & DVM_GPU_F_SMEM_REGS) return smem_regs + (size_t)threadIdx.x * a.nregs_pad;
    return (uint32_t *)a.regs_global + gtid * a.nregs_pad;
}

extern "C" __global__ void dvm_k_serial(dvm_gpu_exec_args a) {
    if (threadIdx.x != 0 || blockIdx.x != 0) return;
    uint32_t *smem_regs;
    const dvm_node *nodes = dvm_gpu_stage_code(a, &smem_regs);
    dvm_env e;
    dvm_gpu_env(a, &e, nodes);
    if (e.err->code != 0) return;
    if (a.flags & DVM_GPU_F_ZERO_SERIAL) dvm_thread_begin(&e, a.slot);
    uint32_t *regs = dvm_gpu_regs(a, smem_regs, 0);
    for (uint32_t r = 0; r < a.nregs_pad; r++) regs[r] = 0;
    const int32_t idx[3] = {0, 0, 0};
    dvm_run(&e, a.task_index, (const dvm_task_desc *)a.task, idx, a.slot, regs, 0);
}

/* The iteration space of a parallel task, read on the device: a serial task just before may
   have computed the extents and starts. Row-major (last dimension fastest). The kernels work
   on digits (each below its extent, from 0), and the starts are added where the indices are
   written: by the run (interp_run.h, e->start) in dvm_gpu_parallel, by dvm_gpu_lanes in the
   lane kernels. */
/* dimension d's start (0 where it has none) */
__device__ static __forceinline__ int32_t dvm_gpu_start(const dvm_gpu_exec_args &a, uint32_t d) {
    if (a.flags & DVM_GPU_F_STARTS_KNOWN) return a.start_v[d];
    return a.start_u[d] != DVM_NO_SLOT ? (int32_t)((const uint32_t *)a.uni)[a.start_u[d]] : 0;
}
struct dvm_gpu_space {
    int64_t total;
    uint32_t ext0, ext1, ext2; /* extents of dimensions 0, 1 and 2 (1 when absent) */
    int small;           /* total < 2^31: 32-bit index arithmetic */
};
__device__ static inline dvm_gpu_space dvm_gpu_space_of(const dvm_gpu_exec_args &a) {
    const uint32_t *U = (const uint32_t *)a.uni;
    dvm_gpu_space sp;
    int64_t ext[3] = {1, 1, 1};
    sp.total = 1;
#pragma unroll
    for (uint32_t d = 0; d < 3; d++) {
        if (d < a.ndim) { /* no early exit: clang (HIP) unrolls only a loop without one */
            const int64_t x = (int64_t)(int32_t)U[a.ext_u[d]] - dvm_gpu_start(a, d);
            ext[d] = x < 0 ? 0 : x;
            sp.total *= ext[d];
        }
    }
    /* each extent (an i32 stop less an i32 start) fits in 32 bits unsigned; the total may not */
    sp.ext0 = (uint32_t)ext[0];
    sp.ext1 = (uint32_t)ext[1];
    sp.ext2 = (uint32_t)ext[2];
    sp.small = sp.total < ((int64_t)1 << 31);
    return sp;
}
/* digits of linear iteration lin into idx[0..2] (no run-time indexed arrays: registers) */
__device__ static inline void dvm_gpu_decompose(const dvm_gpu_space &sp, uint32_t ndim, int64_t lin, int32_t *idx) {
    if (ndim <= 1) {
        idx[0] = (int32_t)(uint32_t)lin;
        idx[1] = idx[2] = 0;
    } else if (sp.small) {
        uint32_t r = (uint32_t)lin;
        if (ndim == 3) {
            idx[2] = (int32_t)(r % sp.ext2);
            r /= sp.ext2;
        } else {
            idx[2] = 0;
        }
        idx[1] = (int32_t)(r % sp.ext1);
        idx[0] = (int32_t)(r / sp.ext1);
    } else {
        int64_t r = lin;
        if (ndim == 3) {
            idx[2] = (int32_t)(r % sp.ext2);
            r /= sp.ext2;
        } else {
            idx[2] = 0;
        }
        idx[1] = (int32_t)(r % sp.ext1);
        idx[0] = (int32_t)(r / sp.ext1);
    }
}

/* The digits of iteration lin + s, from those of lin (from) and the digits of s (step, as
   dvm_gpu_decompose gives them, s < total): a mixed-radix add, last dimension first, each digit
   below its extent, so one subtraction per carry (no division: a lane kernel decomposes one
   iteration per thread and steps to its rounds' and its lanes' ones). ndim 1 to 3 (1: ext1 is 1,
   so only the first digit moves). An extent may pass
   2^31 (a stop less a negative start): a sum that wraps 32 bits carries too. The first digit
   stops at UINT32_MAX, past every extent (an extent is below 2^32): no wrap back into the space. */
__device__ static __forceinline__ void dvm_gpu_step(const dvm_gpu_space &sp, uint32_t ndim, const int32_t *from,
                                                    const int32_t *step, int32_t *to) {
    uint32_t c = 0;
    if (ndim == 3) {
        uint32_t d2 = (uint32_t)from[2] + (uint32_t)step[2];
        c = d2 >= sp.ext2 || d2 < (uint32_t)from[2];
        to[2] = (int32_t)(c ? d2 - sp.ext2 : d2);
    } else {
        to[2] = 0;
    }
    uint32_t d1 = (uint32_t)from[1] + (uint32_t)step[1] + c;
    c = d1 >= sp.ext1 || d1 < (uint32_t)from[1];
    to[1] = (int32_t)(c ? d1 - sp.ext1 : d1);
    const uint64_t d0 = (uint64_t)(uint32_t)from[0] + (uint32_t)step[0] + c;
    to[0] = (int32_t)(uint32_t)(d0 > 0xFFFFFFFFull ? 0xFFFFFFFFull : d0);
}

/* Warp votes. CUDA: explicit masks of the threads still iterating. HIP (ROCm 5.2 has no
   __ballot_sync; wavefronts are 32 or 64 wide): a vote among the active lanes, which are
   exactly the threads still iterating. */
#if defined(__HIP__) || defined(__HIPCC__)
#define DVM_WARP_MASK(pred) 0u
#define DVM_WARP_ANY(mask, pred) ((void)(mask), __any(pred))
#else
#define DVM_WARP_MASK(pred) __ballot_sync(0xffffffffu, (pred))
#define DVM_WARP_ANY(mask, pred) (__ballot_sync((mask), (pred)) != 0u)
#endif
/* Whether another round of iterations starts: with sync, while any thread of the warp still
   has one (all of them start it together); without, while this thread has one. */
__device__ static __forceinline__ int dvm_gpu_round(int sync, unsigned wmask, int mine) {
    return sync ? DVM_WARP_ANY(wmask, mine) : mine;
}

/* Launch bounds of the two interpreter kernels. With the block size alone ptxas held them
   to 32 registers and kept loop invariants in local memory (ncu on an H200: 7.4M local
   spill requests per saxpy launch, reloaded every round). A floor of 12 resident blocks
   per SM on sm_90 gives 40 registers and no spills (measured); sm_80-89 spill at 40, so
   10 there (48 registers); sm_75 holds 1024 threads, so 8. HIP keeps the one-argument form
   (its second argument means something else). */
#if defined(__HIP__) || defined(__HIPCC__)
#define DVM_GPU_BOUNDS __launch_bounds__(DVM_GPU_BLOCK)
#elif defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
#define DVM_GPU_BOUNDS __launch_bounds__(DVM_GPU_BLOCK, 8)
#elif defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
#define DVM_GPU_BOUNDS __launch_bounds__(DVM_GPU_BLOCK, 10)
#else
#ifndef DVM_GPU_MIN_BLOCKS
#define DVM_GPU_MIN_BLOCKS 12
#endif
#define DVM_GPU_BOUNDS __launch_bounds__(DVM_GPU_BLOCK, DVM_GPU_MIN_BLOCKS)
#endif

/* The fast launch shape (DVM_GPU_F_SMEM_CODE and DVM_GPU_F_SMEM_REGS both set): the array
   table (bases, lengths, shapes), the task's nodes and the register files all in shared
   memory, staged once per block. Every pointer of the env then points into shared memory, so
   nvcc emits shared loads (not generic ones) for every node, operand and array descriptor.
   Layout, in bytes (gpu_backend.c computes the same): [narr * 8 bases][narr * 8 lengths]
   [narr * 16 shapes][code_len * 8 nodes, rounded up to 16 bytes][register files]. Returns
   the register files. */
__device__ static inline uint32_t *dvm_gpu_stage_all(const dvm_gpu_exec_args &a, dvm_env *e) {
    uint64_t *base = dvm_gpu_smem, *len = base + a.narr;
    int32_t *shape = (int32_t *)(len + a.narr);
    uint64_t *code = base + (size_t)a.narr * 4u; /* after the 32 bytes a slot: 16-byte aligned, visibly */
    const uint64_t *gbase = (const uint64_t *)a.arr, *glen = (const uint64_t *)a.arr_len;
    const int32_t *gshape = (const int32_t *)a.arr_shape;
    const uint64_t *gcode = (const uint64_t *)((const dvm_node *)a.nodes + a.code_begin);
    for (uint32_t i = threadIdx.x; i < a.narr; i += blockDim.x) {
        base[i] = gbase[i];
        len[i] = glen[i];
    }
    for (uint32_t i = threadIdx.x; i < a.narr * DVM_MAX_RANK; i += blockDim.x) shape[i] = gshape[i];
    for (uint32_t i = threadIdx.x; i < a.code_len; i += blockDim.x) code[i] = gcode[i];
    __syncthreads();
    e->arr = (uint32_t *const *)base;
    e->arr_len = (const int64_t *)len;
    e->arr_shape = shape;
    /* absolute node n lives at code[n - code_begin]; the core reads only this task's nodes */
    e->nodes = (const dvm_node *)code - a.code_begin;
    e->code = (const dvm_node *)code;
    return (uint32_t *)(code + DVM_GPU_CODE_WORDS(a.code_len)); /* 16-byte aligned */
}

/* One iteration per thread and call, grid-stride. SMEM: the fast shape above; otherwise
   nodes and register files each where the flags say (global when they do not fit). */
template <bool SMEM> __device__ static __forceinline__ void dvm_gpu_parallel(const dvm_gpu_exec_args &a) {
    const uint64_t gtid = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    dvm_env e;
    uint32_t *regs;
    if (SMEM) {
        dvm_gpu_env(a, &e, (const dvm_node *)a.nodes);
        regs = dvm_gpu_stage_all(a, &e) + (size_t)threadIdx.x * a.nregs_pad;
    } else {
        uint32_t *smem_regs;
        const dvm_node *nodes = dvm_gpu_stage_code(a, &smem_regs);
        dvm_gpu_env(a, &e, nodes);
        regs = dvm_gpu_regs(a, smem_regs, gtid);
    }
    const dvm_gpu_space sp = dvm_gpu_space_of(a);
#pragma unroll
    for (uint32_t d = 0; d < 3; d++) e.start[d] = dvm_gpu_start(a, d); /* the run adds them */
    uint64_t nthreads = (uint64_t)gridDim.x * blockDim.x;
    if (a.max_threads && a.max_threads < nthreads) nthreads = a.max_threads;
    const int live = (int64_t)gtid < sp.total && gtid < nthreads;
    /* the threads of this warp that iterate (no thread of the warp has left yet) */
    const unsigned wmask = DVM_WARP_MASK(live);
    if (!live) return;
    if (a.flags & DVM_GPU_F_STACKS) dvm_thread_begin(&e, (int64_t)gtid);
    for (uint32_t r = 0; r < a.nregs_pad; r++) regs[r] = 0;
    /* the descriptor in registers: no global re-read per iteration */
    const dvm_task_desc td = *(const dvm_task_desc *)a.task;
    /* The warp starts each round of iterations together (a ballot): a thread whose
       iteration ended early (a shorter data-dependent loop) waits for the others instead of
       starting its next one, so the warp's threads stay on the same nodes. Without it the
       warp splits a little more at every disagreement and never rejoins inside the
       interpreter. */
    const int sync = 1;
    int stop = 0;
    for (int64_t lin = (int64_t)gtid;; lin += (int64_t)nthreads) {
        const int mine = lin < sp.total && !stop;
        if (!dvm_gpu_round(sync, wmask, mine)) break;
        /* the thread's first iteration runs the prologue; the later ones start at td.body */
        const uint32_t start = lin == (int64_t)gtid ? 0u : td.body;
#ifdef DVM_GPU_CONVERGE_RUN
        if (sync && (a.flags & DVM_GPU_F_CONVERGE)) {
            e.wmask = __ballot_sync(wmask, mine); /* this round's threads keep together */
            if (mine) {
                int32_t idx[3];
                dvm_gpu_decompose(sp, a.ndim, lin, idx);
                if (dvm_run_conv(&e, a.task_index, &td, idx, (int64_t)gtid, regs, start)) stop = 1;
            }
            continue;
        }
#endif
        if (mine) {
            int32_t idx[3];
            dvm_gpu_decompose(sp, a.ndim, lin, idx);
            if (dvm_run(&e, a.task_index, &td, idx, (int64_t)gtid, regs, start)) stop = 1;
        }
    }
}

extern "C" __global__ void DVM_GPU_BOUNDS dvm_k_parallel(dvm_gpu_exec_args a) {
    if ((a.flags & (DVM_GPU_F_SMEM_CODE | DVM_GPU_F_SMEM_REGS)) == (DVM_GPU_F_SMEM_CODE | DVM_GPU_F_SMEM_REGS))
        dvm_gpu_parallel<true>(a);
    else
        dvm_gpu_parallel<false>(a);
}

/* A lane kernel's thread: the fast shape staged, its iteration space, and (lanes_begin) its
   L heap slots and its zeroed register file. Lane l of a round takes iteration base + l * q:
   q = DVM_GPU_LANE_STEP when the grid's thread count is a multiple of it (a warp's 32 threads
   then take 32 consecutive iterations in each lane, q * L in all, and a thread's lanes are in
   one row of a 2-D space unless the row ends among them: the row path of interp_core.h),
   otherwise q = the thread count (only the test shape of the gpu_threads option). */
struct dvm_gpu_lane_thread {
    dvm_env e;
    uint32_t *regs;
    dvm_gpu_space sp;
    uint64_t gtid;
    int64_t nthreads;
    int64_t q;     /* the lanes' distance in iterations */
    int64_t first; /* lane 0's iteration in the first round */
    int live;      /* this thread has an iteration */
};
template <int L> __device__ static __forceinline__ void dvm_gpu_lanes_open(const dvm_gpu_exec_args &a, dvm_gpu_lane_thread &th) {
    dvm_gpu_env(a, &th.e, (const dvm_node *)a.nodes);
    uint32_t *const files = dvm_gpu_stage_all(a, &th.e);
    if (L == DVM_ROW_LANES) /* in 16-byte units (DVM_GPU_LANE_PAD), so that nvcc sees the alignment */
        th.regs = (uint32_t *)((uint4 *)files + (size_t)threadIdx.x * (a.nregs_pad >> 2));
    else
        th.regs = files + (size_t)threadIdx.x * a.nregs_pad;
    th.sp = dvm_gpu_space_of(a);
    th.gtid = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    th.nthreads = (int64_t)gridDim.x * blockDim.x;
    if (a.max_threads && a.max_threads < th.nthreads) th.nthreads = a.max_threads;
    const int64_t s = DVM_GPU_LANE_STEP;
    th.q = th.nthreads % s == 0 ? s : th.nthreads;
    th.first = th.q == s ? (int64_t)(th.gtid / s) * s * L + (int64_t)(th.gtid % s) : (int64_t)th.gtid;
    th.live = th.first < th.sp.total && (int64_t)th.gtid < th.nthreads;
}
template <int L> __device__ static __forceinline__ void dvm_gpu_lanes_begin(const dvm_gpu_exec_args &a, dvm_gpu_lane_thread &th) {
    if (a.flags & DVM_GPU_F_STACKS)
        for (int l = 0; l < L; l++) dvm_thread_begin(&th.e, (int64_t)th.gtid * L + l);
    for (uint32_t r = 0; r < a.nregs_pad; r++) th.regs[r] = 0;
}

/* L iterations per thread and call: lane l of a thread takes iteration base + l * q
   (dvm_gpu_lane_thread; each lane's accesses stay coalesced across the warp). The launch
   needs the task's nodes and the register files in shared memory (the host checks) and
   L heap slots per thread. Register r of lane l: regs[r * L + l]; a thread's file is
   a.nregs_pad words (odd: no bank conflicts between threads). A partial last round passes
   the mask of the lanes that have an iteration (the others take lane 0's indices and have no
   effect). MASKED: the lanes of a call part at a branch and meet again, and the warp starts
   each round together, as in dvm_gpu_parallel; plain lanes run branch-free tasks only. The
   lockstep indices are only ever indexed by constants (registers, no local memory: ncu
   showed an earlier shape, an index array indexed by lane, spending 73% of its memory
   requests on local-memory spills). */
template <int L, bool MASKED> __device__ static __forceinline__ void dvm_gpu_lanes(const dvm_gpu_exec_args &a) {
    dvm_gpu_lane_thread th;
    dvm_gpu_lanes_open<L>(a, th);
    const unsigned wmask = DVM_WARP_MASK(th.live);
    if (!th.live) return;
    dvm_gpu_lanes_begin<L>(a, th);
    dvm_env &e = th.e;
    uint32_t *const regs = th.regs;
    const dvm_gpu_space &sp = th.sp;
    const uint64_t gtid = th.gtid;
    const int64_t nthreads = th.nthreads;
    const dvm_task_desc td = *(const dvm_task_desc *)a.task;
    const int sync = MASKED; /* plain lanes never part: no need (and the ballot cost lanes8 84 bytes of spills) */
    const int64_t q = th.q;
    /* AHEAD: the round's setup below for the kernels with room for it (the masked ones and
       the 8 plain lanes, whose launch bounds give 64 registers). In the 4 plain lanes (40
       registers on sm_90) each of its steps spilled, so they divide per lane and read the
       error word at each run's start. */
    constexpr bool AHEAD = MASKED || L == DVM_GPU_LANES_WIDE;
    /* Several dimensions: lane l + 1's indices are lane l's stepped by q's digits (one
       division a thread, not one a lane). */
    int32_t qstep[3] = {-1, 0, 0}; /* q >= total: UINT32_MAX, past the end (dvm_gpu_step stops there) */
    if (AHEAD && a.ndim > 1 && q < sp.total) dvm_gpu_decompose(sp, a.ndim, q, qstep);
    /* AHEAD: the round's lane 0 as digits (ridx), each round's the last one's stepped by the
       rounds' distance (rstep; past the end at once when one round covers the space): no
       division a round (they were 15% of the partitioned stencil's instructions) and no
       64-bit iteration number held across the rounds. The others count iterations (base). */
    int32_t ridx[3] = {0, 0, 0}, rstep[3] = {-1, 0, 0};
    const int64_t rs = nthreads * L;
    if (AHEAD) {
        dvm_gpu_decompose(sp, a.ndim, th.first, ridx);
        if (rs < sp.total) dvm_gpu_decompose(sp, a.ndim, rs, rstep);
    }
    /* the row path (interp_core.h): the task's flag, lanes one step apart */
    const int rowable = (a.flags & DVM_GPU_F_ROWS) && q == DVM_GPU_LANE_STEP && a.ndim <= 2;
    int stop = 0;
    /* another thread's failure stops the thread early: the AHEAD lane runs do not read the
       error word (DVM_CALLER_POLLS), each round reads it for the next one (no wait for the read:
       the stencil 2% faster on an H200); the 4 plain lanes' runs read it at their start */
    int err_seen = DVM_LOAD_ERR(&e.err->code) != 0;
    int first = 1;
    for (int64_t base = th.first;; base += rs) {
        if (AHEAD && !first) dvm_gpu_step(sp, a.ndim, ridx, rstep, ridx);
        const int mine = (AHEAD ? (uint32_t)ridx[0] < sp.ext0 : base < sp.total) && !stop && !err_seen;
        if (!dvm_gpu_round(sync, wmask, mine)) break;
#ifdef DVM_GPU_CONVERGE_RUN
        const int conv = MASKED && L == DVM_GPU_LANES && sync && (a.flags & DVM_GPU_F_CONVERGE); /* the host's rule */
        if (conv) e.wmask = __ballot_sync(wmask, mine); /* this round's threads keep together */
#endif
        /* The first round runs the prologue; the later ones start at td.body. A lane without an
           iteration in the first round has none later (iterations only grow), so every lane
           that runs has run the prologue. */
        const uint32_t start = first ? 0u : td.body;
        first = 0;
        if (!mine) continue;
        /* the error word for the next round's test, its read in flight during this round */
        if (AHEAD) err_seen = DVM_LOAD_ERR(&e.err->code) != 0;
        int32_t idx[3 * L];
        uint32_t have = 0;
        if (AHEAD) idx[0] = ridx[0], idx[1] = ridx[1], idx[2] = ridx[2];
        /* 2-D, all lanes in lane 0's row (so each has an iteration): no stepping */
        const int row = AHEAD && a.ndim == 2 && (int64_t)(uint32_t)idx[1] + q * (L - 1) < (int64_t)sp.ext1;
        if (row) {
            have = (1u << L) - 1u;
#pragma unroll
            for (int l = 1; l < L; l++)
                idx[3 * l] = idx[0], idx[3 * l + 1] = (int32_t)((uint32_t)idx[1] + (uint32_t)(q * l)), idx[3 * l + 2] = 0;
        } else if (AHEAD && a.ndim > 1) {
            /* lane l's digits from lane l - 1's (cur: also past the end); it has an iteration
               while its first digit is in range (dvm_gpu_step stops past the end) */
            have = 1;
            int32_t cur[3] = {idx[0], idx[1], idx[2]};
#pragma unroll
            for (int l = 1; l < L; l++) {
                int32_t nx[3];
                dvm_gpu_step(sp, a.ndim, cur, qstep, nx);
                cur[0] = nx[0], cur[1] = nx[1], cur[2] = nx[2];
                if ((uint32_t)nx[0] < sp.ext0) {
                    have |= 1u << l;
                    idx[3 * l] = nx[0], idx[3 * l + 1] = nx[1], idx[3 * l + 2] = nx[2];
                } else {
                    idx[3 * l] = idx[0], idx[3 * l + 1] = idx[1], idx[3 * l + 2] = idx[2];
                }
            }
        } else if (AHEAD) {
            /* 1-D: lane l at lane 0's + l * q */
#pragma unroll
            for (int l = 0; l < L; l++) {
                const uint64_t lin = (uint64_t)(uint32_t)idx[0] + (uint64_t)(l * q);
                const int in = lin < sp.ext0;
                if (in) have |= 1u << l;
                idx[3 * l] = in ? (int32_t)(uint32_t)lin : idx[0], idx[3 * l + 1] = 0, idx[3 * l + 2] = 0;
            }
        } else {
#pragma unroll
            for (int l = 0; l < L; l++) {
                const int64_t lin = base + l * q;
                if (lin < sp.total) have |= 1u << l;
                dvm_gpu_decompose(sp, a.ndim, lin < sp.total ? lin : base, idx + 3 * l);
            }
        }
        /* the row path: every lane has an iteration, 2-D all in one row */
        if (rowable && have == (1u << L) - 1u &&
            (a.ndim == 1 || (uint64_t)(uint32_t)idx[1] + (uint64_t)(DVM_GPU_LANE_STEP * (L - 1)) < sp.ext1))
            have |= DVM_ROW_FLAG;
        /* digits -> indices: each dimension's start, read from the uniforms at each round (the
           slot from the parameter space: nothing held across the round); one test for tasks
           without starts (the host's flag) */
        if (a.flags & DVM_GPU_F_STARTS) {
#pragma unroll
            for (int d = 0; d < 3; d++)
                if (a.start_u[d] != DVM_NO_SLOT) {
                    const uint32_t s = (uint32_t)dvm_gpu_start(a, d);
#pragma unroll
                    for (int l = 0; l < L; l++) idx[3 * l + d] = (int32_t)((uint32_t)idx[3 * l + d] + s);
                }
        }
#ifdef DVM_GPU_CONVERGE_RUN
        if constexpr (MASKED && L == DVM_GPU_LANES) {
            if (conv) {
                if (dvm_run_mlanes_conv(&e, a.task_index, &td, idx, (int64_t)gtid, regs, start, have)) stop = 1;
                continue;
            }
        }
#endif
        if (dvm_gpu_run_lanes<L, MASKED>(&e, a.task_index, &td, idx, (int64_t)gtid, regs, start, have)) stop = 1;
    }
}

extern "C" __global__ void DVM_GPU_BOUNDS dvm_k_parallel_lanes(dvm_gpu_exec_args a) { dvm_gpu_lanes<DVM_GPU_LANES, false>(a); }
extern "C" __global__ void DVM_GPU_BOUNDS dvm_k_parallel_mlanes(dvm_gpu_exec_args a) { dvm_gpu_lanes<DVM_GPU_LANES, true>(a); }
/* 8 masked lanes hold 8 node indices: at sm_90's floor of 12 blocks ptxas spilled 240 bytes
   (sm_80-89 at 10: 56 bytes), at 8 (64 registers) none. The 8 plain lanes spilled 64 bytes
   at 12 (40 registers) and none at 8, with the AHEAD round setup: saxpy 0.53x -> 0.57x on an
   H200. */
#if !defined(__HIP__) && !defined(__HIPCC__)
#ifndef DVM_GPU_MIN_BLOCKS_W
#define DVM_GPU_MIN_BLOCKS_W 8
#endif
#define DVM_GPU_BOUNDS_W __launch_bounds__(DVM_GPU_BLOCK, DVM_GPU_MIN_BLOCKS_W)
#else
#define DVM_GPU_BOUNDS_W DVM_GPU_BOUNDS
#endif
extern "C" __global__ void DVM_GPU_BOUNDS_W dvm_k_parallel_mlanes8(dvm_gpu_exec_args a) { dvm_gpu_lanes<DVM_GPU_LANES_WIDE, true>(a); }
extern "C" __global__ void DVM_GPU_BOUNDS_W dvm_k_parallel_lanes8(dvm_gpu_exec_args a) { dvm_gpu_lanes<DVM_GPU_LANES_WIDE, false>(a); }

/* ---- sizer ---- */
__device__ static inline void dvm_gpu_size_env(const dvm_gpu_size_args &a, dvm_size_env *s) {
    s->nodes = (const dvm_node *)a.nodes;
    s->consts = (const uint32_t *)a.consts;
    s->arr = (uint32_t *const *)a.arr;
    s->arr_len = (const int64_t *)a.arr_len;
    s->arr_shape = (const int32_t *)a.arr_shape;
    s->uni = (const uint32_t *)a.uni;
    s->range_lo = (int64_t *)a.range_lo;
    s->range_hi = (int64_t *)a.range_hi;
    s->range_val = (int64_t *)a.range_val;
    s->walk_cap = a.walk_cap;
    s->stack = a.stack;
    s->prog_begin = a.begin;
    s->err = (dvm_rt_error *)a.err;
    s->cancel = (const volatile uint32_t *)a.cancel;
    s->tally = 0;
}

/* Pass RANGES (one thread): the bounds of every top-level range; their maxima start at
   INT64_MIN (the reducer's identity) or 0 for an empty range (dvm_size_eval). */
extern "C" __global__ void dvm_k_size_ranges(dvm_gpu_size_args a) {
    if (threadIdx.x != 0 || blockIdx.x != 0) return;
    dvm_size_env s;
    dvm_gpu_size_env(a, &s);
    if (s.err->code != 0) return;
    dvm_size_eval(&s, a.begin, a.len, DVM_SZ_PASS_RANGES, 0, 0, (int64_t *)a.scratch);
}

/* The max-reducer: grid-stride over each top-level range, the body evaluated per value,
   a per-thread maximum, then one 64-bit atomic max per thread and range. A body may read
   slots computed before its range: each thread starts from a copy of the RANGES scratch. */
extern "C" __global__ void __launch_bounds__(DVM_GPU_BLOCK) dvm_k_size_reduce(dvm_gpu_size_args a) {
    dvm_size_env s;
    dvm_gpu_size_env(a, &s);
    const uint64_t gtid = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    const int64_t nthreads = (int64_t)gridDim.x * blockDim.x;
    int64_t *scratch = (int64_t *)a.scratch_par + gtid * a.len;
    const int64_t *base = (const int64_t *)a.scratch;
    for (uint32_t r = 0; r < a.nranges; r++) {
        const uint32_t k = a.range_node[r], end = a.range_end[r];
        const int64_t lo = s.range_lo[k], hi = s.range_hi[k];
        int64_t m = INT64_MIN;
        if (lo + (int64_t)gtid < hi)
            for (uint32_t i = 0; i <= k; i++) scratch[i] = base[i];
        for (int64_t v = lo + (int64_t)gtid; v < hi; v += nthreads) {
            if (s.err->code != 0) return;
            int64_t bound[1] = {v};
            int64_t x = dvm_size_eval(&s, a.begin + k + 1, end - k - 1, DVM_SZ_PASS_BODY, bound, 1, scratch);
            if (x > m) m = x;
        }
        if (m != INT64_MIN) DVM_ATOMIC_MAX_I64(&s.range_val[k], m);
    }
}

/* Pass FINAL (one thread): the capacity, clamped at 0, into caps[cap_index]. */
extern "C" __global__ void dvm_k_size_final(dvm_gpu_size_args a) {
    if (threadIdx.x != 0 || blockIdx.x != 0) return;
    dvm_size_env s;
    dvm_gpu_size_env(a, &s);
    if (s.err->code != 0) return;
    int64_t v = dvm_size_eval(&s, a.begin, a.len, DVM_SZ_PASS_FINAL, 0, 0, (int64_t *)a.scratch);
    if (s.err->code != 0) return;
    ((int64_t *)a.caps)[a.cap_index] = v < 0 ? 0 : v;
}
