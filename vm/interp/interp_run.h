/* interp_run.h: dvm_run, the interpreter loop, compiled once per configuration: an includer
 * that wants several (the CUDA kernels: 4 and 8 lanes, plain and masked) includes this file
 * once per configuration, each with its own DVM_RUN_NAME. It is made of three parts:
 *   the engine (engine_scalar.h, or engine_lanes.h with DVM_LANES > 1): how one node runs over
 *       the call's iterations: the words LANES, LANES_ALL, LANES_ADD, LANES_MATH, RUNS, RU,
 *       SETU, CBRANCH, CBRANCH_LOOP, JUMP_MEET_, END_NODE_, vmbreak, the row path ROW1_/ROW2_,
 *       and the run's extra parameter, state, index registers and tail (ENGINE_*);
 *   the words built on them (this file): register views, JUMP, FAIL, array access, the fused
 *       one-node loop, warp convergence;
 *   the opcodes' semantics (interp_ops.h): one handler per ops.def row, written in those words
 *       only, the same for every engine.
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
 * (And DVM_SWITCH_MARK / DVM_CASE_MARK, the dispatch switch's markers: see the switch.) */
#include "vm/interp/interp_core.h"

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
/* DVM_WARP_MIN(mask, v) (optional; scalar and masked runs): the minimum of v over the threads in
 * mask, all of which call it (a warp-wide reduction on a GPU). With it (and e->wmask set),
 * the threads of a warp that run this call together stay together: after each conditional
 * branch (masked lanes: also after a lane finishes) they vote their node index and only those at
 * the lowest one go on; the rest wait. Threads that took different ways at a branch thus meet again where the ways join (a loop's exit waits for the longest trip; the
 * adjoint's reverse loop starts for all at once), instead of running each group's nodes one
 * group after another for the rest of the call. A thread that has finished (END or an error)
 * votes "none" until all have; RET(v) is every return of the call. */
#if (DVM_LANES == 1 || defined(DVM_MASKED)) && defined(DVM_WARP_MIN)
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
/* Register access: 32-bit words, viewed as u32, i32 or f32; lane l_. */
/* RREF(n): lane l_'s word of register n as an lvalue, addressed in words (the writes of one
 * lane at a time); RU(n) reads through the row's address (ROW_AT_: with DVM_ROW_AT, vector
 * loads). The same word either way. */
#define RREF(n) (R[(uint32_t)(n) * DVM_LANES + l_])
/* ---- the engine ---- */
#if DVM_LANES > 1
#include "vm/interp/engine_lanes.h"
#else
#include "vm/interp/engine_scalar.h"
#endif
/* ---- the words built on the engine's ---- */
#define RI(n) ((int32_t)RU(n))
#define RF(n) DVM_U2F(RU(n))
#define SETI(n, v) SETU(n, (int32_t)(v))
#define SETF(n, v) SETU(n, DVM_F2U(v))
#define KF(n) DVM_U2F(K[n])
#define NODE_ID() (pc + t->code_begin)
/* A jump: a backward one polls the error word so that other threads stop early. */
#ifndef DVM_POLL_EVERY
#define DVM_POLL_EVERY 1
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
#ifdef FUSES_LOOPS_
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
#define RP_(l) (rp_ + ROW_STEP_ * (uint32_t)(l)) /* lane l's element on the row path */
#define ROW_OR_(row_, rowstmt_, ...)                                                   \
    do {                                                                               \
        row_;                                                                          \
        if (rok_) {                                                                    \
            rowstmt_;                                                                  \
        } else {                                                                       \
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
DVM_FN int DVM_RUN_NAME(const dvm_env *e, uint32_t task_index, const dvm_task_desc *t,
                        const int32_t *idx, int64_t slot, uint32_t *regs, uint32_t start ENGINE_PARAMS_)
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
    ENGINE_STATE_();
    uint64_t nw_ = 0; /* the current node as one word (DVM_NODE_WORD) */
    const uint32_t *const K = e->consts;
    uint32_t polls_ = 0; /* backward jumps taken (see DVM_POLL_EVERY) */
    (void)polls_;
    DVM_GLOBAL uint32_t *const *const arr = e->arr;
#ifndef DVM_CALLER_POLLS
    if (DVM_LOAD_ERR(&e->err->code)) RET(1); /* another thread failed: stop early */
#endif
    if (ENGINE_NONE_RUNS_) RET(0);

    if (t->kind == DVM_TASK_PARALLEL) {
        const uint32_t nd = t->ndim;
        DVM_UNROLL for (uint32_t d = 0; d < DVM_MAX_PAR_DIMS; d++)
            if (d < nd) {
                const uint32_t r = t->idx_reg[d];
#ifdef DVM_START_AT
                const uint32_t st_ = (uint32_t)DVM_START_AT(d); /* index = start + digit (in u32: no overflow) */
#else
                const uint32_t st_ = (uint32_t)e->start[d];
#endif
                ENGINE_PUT_INDEX_(r, d, st_);
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
#include "vm/interp/interp_ops.h"
    ENGINE_TAIL_();
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
#undef NOREG_
#undef LANES_LOOP_
#undef ROW_WRITE_
#undef ROW_PUT_
#undef ROW_AT_
#undef LANES_EACH_
#undef LANES_EACH_LOOP_
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
#undef END_NODE_
#undef FUSES_LOOPS_
#undef ENGINE_PARAMS_
#undef ENGINE_STATE_
#undef ENGINE_MASKED_STATE_
#undef ENGINE_ROW_STATE_
#undef ENGINE_PUT_INDEX_
#undef ROW_IDX_
#undef LMASK_
#undef LBIT_
#undef LALL_
#undef DVM_LANE_MASK_T
#undef ENGINE_TAIL_
#undef ENGINE_NONE_RUNS_
