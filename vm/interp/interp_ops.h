/* interp_ops.h: the semantics of every opcode of bytecode/ops.def, one handler each, written in
 * the words of interp_run.h and its engine (LANES_ALL, SETU, RU, CBRANCH, LOAD_NODE, ...), the
 * same text for every engine. Included inside dvm_run by interp_run.h only. */
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
    vmcase(END) END_NODE_();
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
