/* engine_scalar.h: the scalar engine of dvm_run (vm/interp/interp_run.h): one iteration per
 * call. The CPU backend's interpreter, and the GPU backends' for serial tasks and for
 * parallel tasks that the lane kernels cannot take. An engine defines the words the opcode
 * handlers (interp_ops.h) are written in; see interp_run.h for the list. Included by
 * interp_run.h only. */
#define vmbreak do { pc++; vmdispatch(); } while (0)
/* every word of a node runs for the one iteration: lane 0 */
#define LANES(body) do { const int l_ = 0; body; } while (0)
#define RUNS(l) 1
#define LANES_ADD(body) LANES(body)
#define LANES_ALL(body) LANES(body)
#define LANES_MATH(body) LANES(body)
#define RU(n) RREF(n)
#define SETU(n, v) (RU(n) = (uint32_t)(v))
#define JUMP_MEET_(tgt) ((void)0)
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
#define END_NODE_() RET(0)
/* one-node loops (ONE_NODE_LOOP_) run fused */
#define FUSES_LOOPS_ 1
#define ANY_RUNS_ 1
#define FUSE_LANES_(body) LANES(body)
/* no row path */
#define ROW_STEP_ 1u
#define ROW1_(reg, off) DVM_GLOBAL uint32_t *const rp_ = 0; const int rok_ = 0
#define ROW2_(ri, io, rj, jo) DVM_GLOBAL uint32_t *const rp_ = 0; const int rok_ = 0
/* the run's signature, state, index registers and tail */
#define ENGINE_NONE_RUNS_ 0 /* the call has nothing to run */
#define ENGINE_PARAMS_
#define ENGINE_STATE_()
#define ENGINE_PUT_INDEX_(r, d, st) LANES(RREF(r) = (uint32_t)idx[d] + (st))
#define ENGINE_TAIL_()
