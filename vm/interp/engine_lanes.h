/* engine_lanes.h: the lane engines of dvm_run (vm/interp/interp_run.h): DVM_LANES iterations
 * per call in lockstep, so that a node's dispatch is paid once for all of them and their loads
 * are in flight together. The GPU backends' kernels for parallel tasks (4 and 8 lanes, plain
 * and masked; vm/cuda_hip/interp_cuda.cu), and the CPU backend's cpu_lanes option, which runs
 * these same engines on a machine without a GPU. An engine defines the words the opcode
 * handlers (interp_ops.h) are written in; see interp_run.h for the list. Included by
 * interp_run.h only.
 *   plain lanes  (no DVM_MASKED): every lane runs every node; branch-free tasks only (the
 *                backends send every task with a conditional branch to a masked run).
 *   masked lanes (DVM_MASKED): lanes that disagree at a branch part and meet again: each lane
 *                keeps its own node index and the call always runs the lowest one, for the
 *                lanes at it (the others wait).
 *   the row path (the includer's DVM_ROW_STEP): affine array accesses of lanes one row apart
 *                take one bounds check for all lanes and no per-lane index (ROW1_, ROW2_). */
#define DVM_LANEMASK_ 1 /* m_: the lanes that run this node (all lanes with an iteration, unless masked lanes parted) */
/* DVM_LANE_MASK_T (optional, the includer's): the type of `have` and of the lane masks, an
 * unsigned integer type with more bits than DVM_LANES (its top bit is the row flag,
 * DVM_ROW_FLAG_OF): uint32_t by default (up to 31 lanes); the CPU's blocks take uint64_t. */
#ifndef DVM_LANE_MASK_T
#define DVM_LANE_MASK_T uint32_t
#endif
#define LMASK_ DVM_LANE_MASK_T
#define LBIT_(l) ((LMASK_)1 << (l))                                   /* lane l's bit */
#define LALL_ ((LMASK_)~(LMASK_)0 >> (sizeof(LMASK_) * 8u - DVM_LANES)) /* every lane's bit */
#ifdef DVM_MASKED
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
        if (m_ != LALL_) {                                                             \
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
/* RU(n): lane l_'s word of register n, read through the row's address (ROW_AT_: with
 * DVM_ROW_AT, vector loads); the same word as RREF(n). */
#define RU(n) (ROW_AT_(n)[l_])
#ifdef DVM_MASKED_
#define JUMP_MEET_(tgt) if ((uint32_t)(tgt) >= wnext_) PARK_AT((uint32_t)(tgt)) /* a waiting lane is passed */
#else
#define JUMP_MEET_(tgt) ((void)0)
#endif
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
        LMASK_ t_ = 0;                                                                 \
        LANES_ALL(int c_; lane_; t_ |= (LMASK_)(c_ != 0) << l_);                       \
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
            const LMASK_ lv_ = m_ ^ t_;                                                \
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
#endif
#ifdef DVM_MASKED_
#define END_NODE_() LANES(lp_[l_] = DONE_); goto dvm_select_
/* one-node loops (ONE_NODE_LOOP_) run fused, the lanes one at a time in a loop that is not
 * unrolled (unrolled, the 8-lane masked CUDA kernel spilled 16 bytes) */
#define FUSES_LOOPS_ 1
#define ANY_RUNS_ (m_ != 0u)
#define FUSE_LANES_(body) LANES_EACH_LOOP_(DVM_NOUNROLL, RUNS(l_), body)
#else
#define END_NODE_() RET(0)
#endif
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
#ifdef DVM_ROW_STEP
#define ROW_STEP_ ((uint32_t)DVM_ROW_STEP)
#define ROW_SPAN_ (ROW_STEP_ * (uint32_t)(DVM_LANES - 1))
#define ROW_ALL_ (m_ == LALL_)
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
/* the run's signature, state, index registers and tail */
#define ENGINE_NONE_RUNS_ (m_ == 0u) /* the call has nothing to run */
#define ENGINE_PARAMS_ , LMASK_ have
#ifdef DVM_MASKED_
#define ENGINE_MASKED_STATE_()                                                         \
    uint32_t wnext_ = DONE_;                                                           \
    uint32_t lp_[DVM_LANES];                                                           \
    LANES_ALL(lp_[l_] = ((m_ >> l_) & 1u) ? start : DONE_)
#else
#define ENGINE_MASKED_STATE_()
#endif
#ifdef DVM_ROW_STEP
#define ENGINE_ROW_STATE_() const uint32_t rows_ = (have & DVM_ROW_FLAG_OF(LMASK_)) ? (uint32_t)t->ndim : 0u /* the row path (ROW1_) */
#else
#define ENGINE_ROW_STATE_()
#endif
#define ENGINE_STATE_()                                                                \
    LMASK_ m_ = have & LALL_;                                                          \
    ENGINE_MASKED_STATE_();                                                            \
    ENGINE_ROW_STATE_()
/* every lane's index d, as one row: a lane without an iteration has lane 0's indices (the
   caller's), in registers no running lane reads. DVM_ROW_INDEX (optional, the includer's, with
   DVM_ROW_STEP): a run with the row flag reads lane 0's indices only (idx[0..2]; the caller
   need not fill the other lanes'), lane l's being lane 0's + l * DVM_ROW_STEP in the last
   dimension, as the flag says. */
#if defined(DVM_ROW_INDEX) && defined(DVM_ROW_STEP)
#define ROW_IDX_(d) (rows_ != 0u ? (uint32_t)idx[d] + ((d) + 1u == rows_ ? ROW_STEP_ * (uint32_t)l_ : 0u) \
                                 : (uint32_t)idx[3 * l_ + (d)])
#else
#define ROW_IDX_(d) ((uint32_t)idx[3 * l_ + (d)])
#endif
#define ENGINE_PUT_INDEX_(r, d, st)                                                    \
    do {                                                                               \
        uint32_t w_[DVM_LANES];                                                        \
        DVM_UNROLL for (int l_ = 0; l_ < DVM_LANES; l_++) w_[l_] = ROW_IDX_(d) + (st); \
        ROW_PUT_(ROW_AT_(r), w_);                                                      \
    } while (0)
#ifdef DVM_MASKED_
#define ENGINE_TAIL_()                                                                 \
dvm_select_:                                                                           \
    /* every lane's node is in lp_: run the lowest, with the lanes at it */            \
    {                                                                                  \
        uint32_t lo_ = DONE_;                                                          \
        LANES_ALL(lo_ = lp_[l_] < lo_ ? lp_[l_] : lo_);                                \
        if (lo_ == DONE_) RET(0);                                                      \
        m_ = 0u;                                                                       \
        wnext_ = DONE_;                                                                \
        LANES_ALL(if (lp_[l_] == lo_) m_ |= LBIT_(l_); else if (lp_[l_] < wnext_) wnext_ = lp_[l_]); \
        pc = lo_;                                                                      \
        CONV_MARK(); /* the thread may have moved on: the warp votes */                \
        vmdispatch();                                                                  \
    }
#else
#define ENGINE_TAIL_()
#endif
