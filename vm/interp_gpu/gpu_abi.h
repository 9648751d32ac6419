/* gpu_abi.h: the kernel-parameter structs shared by the host side of the CUDA/HIP backends
 * (C, gpu_backend.c) and the device entry points (interp_cuda.cu, compiled by nvcc/hipcc).
 * Device addresses travel as uint64_t so that the layout is the same on both sides; every
 * field is naturally aligned and the structs have no implicit padding. */
#ifndef DVM_GPU_ABI_H
#define DVM_GPU_ABI_H

#include <stdint.h>

/* Top-level SZ_RANGE nodes handled by one max-reducer launch (more: several launches). */
#define DVM_GPU_MAX_RANGES 32
/* Threads per block of every parallel entry point. */
#define DVM_GPU_BLOCK 128
/* Iterations per thread and call of dvm_k_parallel_lanes and dvm_k_parallel_lanes8 (each
   lane has its own heap slot). */
#define DVM_GPU_LANES 4
#define DVM_GPU_LANES_WIDE 8
/* A lane kernel's lanes are DVM_GPU_LANE_STEP iterations apart (a warp's lane l covers
   DVM_GPU_LANE_STEP consecutive iterations, its L lanes L times as many) when the grid's
   thread count is a multiple of it; otherwise the grid's thread count apart. */
#define DVM_GPU_LANE_STEP 32

/* The task's nodes in the fast shape's shared memory: code_len 8-byte words, rounded up to
   an even count so that the register files after them start 16-byte aligned. */
#define DVM_GPU_CODE_WORDS(code_len) (((code_len) + 1u) & ~1u)
/* The register-file stride in words of a kernel of L lanes for nregs registers: DVM_GPU_LANES_WIDE
   lanes, a multiple of 4 (each lane row 16-byte aligned, loaded as vectors) whose count of
   16-byte units is odd, so that the 8 threads of each quarter-warp's 16-byte access hit
   different banks; otherwise odd (a warp's 32-bit accesses hit 32 different banks). */
#define DVM_GPU_LANE_PAD(nregs, L) ((L) == DVM_GPU_LANES_WIDE ? (((nregs) * (L) + 4u) | 4u) : (((nregs) * (L)) | 1u))

/* exec flags */
#define DVM_GPU_F_ZERO_SERIAL 1u /* serial task: zero the serial slot's stack counts first */
#define DVM_GPU_F_SMEM_CODE 2u   /* copy the task's nodes into shared memory per block */
#define DVM_GPU_F_SMEM_REGS 4u   /* register files in shared memory (else regs_global); with
                                    SMEM_CODE on a parallel task: the array table too (the
                                    fast shape, dvm_gpu_stage_all in interp_cuda.cu) */
#define DVM_GPU_F_STACKS 8u      /* the variant has stacks: call dvm_thread_begin */
#define DVM_GPU_F_CONVERGE 32u     /* dvm_k_parallel: a round's threads keep together (DVM_WARP_MIN) */
#define DVM_GPU_F_ROWS 64u         /* lane kernels: the task's index registers are registers 0..ndim-1 and
                                      never written (dvm_task_flow.fixed_idx): the row path */
#define DVM_GPU_F_ROW_LAZY 512u     /* with ROWS: the index registers are read only as row-path indices
                                      (dvm_task_flow.idx_as_index): written to the file lazily */
#define DVM_GPU_F_STARTS 128u      /* lane kernels: some dimension has a start (start_u[d] set) */
#define DVM_GPU_F_STARTS_KNOWN 256u /* the starts are in start_v (the host knew them), not only in
                                       the uniforms: no global load for them (a lane kernel's every
                                       round read them: 5% of the partitioned stencil's stalls) */

typedef struct dvm_gpu_exec_args {
    uint64_t nodes, consts;        /* program */
    uint64_t arr, arr_len, arr_shape; /* per-slot tables (device) */
    uint64_t uni, heap, stack_off, stack_cap, err;
    uint64_t task;                 /* device address of this task's dvm_task_desc */
    uint64_t regs_global;          /* fallback register files: nthreads * nregs_pad words */
    uint64_t cancel;               /* the cancel word, in mapped host memory (DVM_CANCEL_EVERY) */
    int64_t stride;
    int64_t slot;                  /* serial tasks: the serial slot (= nthread_slots) */
    int64_t nslots;                /* heap slots in all (nthread_slots + 1): the interleave */
    uint32_t nstacks, task_index;
    uint32_t code_begin, code_len; /* for the shared-memory copy of the nodes */
    uint32_t nregs_pad;            /* words per thread in the register file (no bank conflicts: odd,
                                      or DVM_GPU_LANE_PAD) */
    uint32_t flags;
    /* iteration space, copied from the task descriptor (the extents live in uniforms) */
    uint32_t ndim;
    uint32_t start_u[3];           /* per dimension: DVM_NO_SLOT (start 0) or a uniform slot */
    uint32_t ext_u[3];
    uint32_t max_threads;          /* 0, or: only threads below it iterate (the gpu_threads option) */
    uint32_t narr;                 /* array slots of the variant (the shared-memory table) */
    int32_t start_v[3];            /* DVM_GPU_F_STARTS_KNOWN: each dimension's start (0 where it has
                                      none), known to the host before the launch (18 u32 after the
                                      u64s: the size a multiple of 8) */
} dvm_gpu_exec_args;

typedef struct dvm_gpu_size_args {
    uint64_t nodes, consts, arr, arr_len, arr_shape, uni;
    uint64_t range_lo, range_hi, range_val; /* len slots each, indexed by node - begin */
    uint64_t scratch;                       /* single-thread passes: len slots */
    uint64_t scratch_par;                   /* max-reducer: nthreads * len slots */
    uint64_t err, caps;
    uint64_t cancel;                        /* as in dvm_gpu_exec_args */
    int64_t walk_cap;
    uint32_t begin, len;                    /* the size program's node range */
    uint32_t stack, cap_index;              /* for the error record / caps[cap_index] */
    uint32_t nranges, pad;
    uint32_t range_node[DVM_GPU_MAX_RANGES]; /* top-level SZ_RANGE nodes, relative to begin */
    uint32_t range_end[DVM_GPU_MAX_RANGES];  /* their body ends (node.c), relative */
} dvm_gpu_size_args;

#endif
