/* cpu_blocks.h: the CPU backend's block runs (vm/cpu/interp_cpu.c, "Blocks"), included by it
 * once per instruction set, CPU_SFX naming the copy: dvm_run_blk (plain lanes), dvm_run_mblk
 * (masked), each shared (atomics: other threads run the launch too) and alone (the launch's
 * only thread: plain read-modify-writes, CPU_ALONE_). */
#define CPU_CAT2_(a, b) a##b
#define CPU_CAT_(a, b) CPU_CAT2_(a, b)
#define DVM_ROW_STEP 1
#define DVM_ROW_INDEX 1 /* a row block passes lane 0's indices only */
#define CPU_ALONE_ 0
#define DVM_LANES CPU_BLOCK
#define DVM_LANE_MASK_T cpu_mask
#define DVM_RUN_NAME CPU_CAT_(dvm_run_blk, CPU_SFX)
#include "vm/interp/interp_run.h"
#define DVM_LANES CPU_BLOCK
#define DVM_LANE_MASK_T cpu_mask
#define DVM_MASKED 1
#define DVM_RUN_NAME CPU_CAT_(dvm_run_mblk, CPU_SFX)
#include "vm/interp/interp_run.h"
#undef CPU_ALONE_
#define CPU_ALONE_ 1
#define DVM_LANES CPU_BLOCK
#define DVM_LANE_MASK_T cpu_mask
#define DVM_RUN_NAME CPU_CAT_(dvm_run_blk_alone, CPU_SFX)
#include "vm/interp/interp_run.h"
#define DVM_LANES CPU_BLOCK
#define DVM_LANE_MASK_T cpu_mask
#define DVM_MASKED 1
#define DVM_RUN_NAME CPU_CAT_(dvm_run_mblk_alone, CPU_SFX)
#include "vm/interp/interp_run.h"
#undef CPU_ALONE_
#undef DVM_ROW_STEP
#undef DVM_ROW_INDEX
#undef CPU_CAT_
#undef CPU_CAT2_
