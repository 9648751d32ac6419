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

/* ---- Vulkan: what the host (vulkan_backend.c) and the GLSL interpreter (interp.comp) share.
 * gen_glsl_ops writes each as GLSL into dvm_ops.glsl, which interp.comp includes. ---- */
/* The push constants, in order: A(name) a 64-bit device address (GLSL uvec2, lo and hi), W(name)
   a 32-bit word. nodes .. aux: the program's buffers and the parameter tables below; cancel: the
   context's cancel word; mode: DVM_VK_MODE_*; task: absolute task index (kernel modes);
   task_rel: variant-relative, for the error record; nthreads: parallel thread slots (heap
   slots); stride_lo/hi: heap words per slot; flags: DVM_VK_FLAG_* (kernel modes); naux: the
   sizer's jobs (serial passes) or ranges (reducer); walk_lo/hi: the sizer's walk cap. */
#define DVM_VK_PUSH_FIELDS(A, W)                                                                     \
    A(nodes) A(consts) A(uni) A(heap) A(err) A(slots) A(stacks) A(tasks) A(aux) A(cancel)          \
    W(mode) W(task) W(task_rel) W(nthreads) W(stride_lo) W(stride_hi) W(nstacks) W(flags) W(naux)   \
    W(walk_lo) W(walk_hi)
#define DVM_VK_MODE_SERIAL 0u
#define DVM_VK_MODE_PARALLEL 1u
#define DVM_VK_MODE_SZ_RANGES 2u
#define DVM_VK_MODE_SZ_FINAL 3u
#define DVM_VK_MODE_SZ_BODY 4u
/* A copy between two buffers (vulkan_backend.c, record_copy): pc.walk_lo 16-byte units, then
   pc.walk_hi words, from address pc.aux to address pc.heap; nthreads invocations. */
#define DVM_VK_MODE_COPY 5u
#define DVM_VK_FLAG_ZERO_SERIAL 1u /* serial task: zero the serial slot's stack counts first */
/* a parallel task on four lanes in whole workgroups whose index registers are registers
   0..ndim-1, never written: the row path (interp.comp, row1), FLAG_ROWS times its ndim (1, 2) */
#define DVM_VK_FLAG_ROWS 2u
/* Threads per workgroup (local_size_x). */
#define DVM_VK_WG_SIZE 64u
/* The error record's words in the parameter buffer (dvm_rt_error, 12 words, padded). */
#define DVM_VK_ERR_WORDS 16u
/* The slot table: per array slot DVM_VK_SLOT_WORDS words: its address (lo, hi), its element
   count (lo, hi), then its shape (DVM_MAX_RANK words). */
#define DVM_VK_SLOT_ADDR 0u
#define DVM_VK_SLOT_LEN 2u
#define DVM_VK_SLOT_SHAPE 4u
#define DVM_VK_SLOT_WORDS 8u
/* The stack table: per stack DVM_VK_STACK_WORDS words: its offset in a heap slot (lo, hi),
   then its capacity (lo, hi). */
#define DVM_VK_STACK_OFF 0u
#define DVM_VK_STACK_CAP 2u
#define DVM_VK_STACK_WORDS 4u
/* Backend-private error codes of the GLSL interpreter: the host turns them into a backend error
   with a message. RANGE32: a count or offset exceeds what the 32-bit path handles; STEPS: a loop
   ran 65535^2 iterations (the lavapipe loop guard). */
#define DVM_VK_RT_RANGE32 1000
#define DVM_VK_RT_STEPS 1001

#endif
