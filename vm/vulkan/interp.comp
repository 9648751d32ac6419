#version 450
/* interp.comp: the GLSL interpreter of the Vulkan backend. It implements the semantics of
 * bytecode/ops.def (as vm/interp/interp_ops.h does for C) for kernel tasks, the sizer's
 * serial passes and the parallel max-reducer. Every buffer is reached through a buffer device
 * address in the push constants, so the number and size of user arrays is not bounded by
 * descriptor limits (maxStorageBufferRange, maxPerStageDescriptorStorageBuffers).
 *
 * Built four ways (vm/vulkan/vulkan.cmake):
 *   DVM_INT64   1: 64-bit heap offsets, iteration counts and size values (shaderInt64);
 *               0: 32-bit, with every overflow detected and reported through a backend
 *                  error (never a wrong result).
 * No 64-bit atomics are needed: the max-reducer reduces in shared memory per workgroup and
 * the final serial pass folds the workgroups' results.
 *   DVM_FATOMIC 1: f32 atomic add (VK_EXT_shader_atomic_float); 0: compare-and-swap loops. */
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_buffer_reference_uvec2 : require
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#if DVM_INT64
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#endif
#if DVM_FATOMIC
#extension GL_EXT_shader_atomic_float : require
#endif

/* opcodes, limits, error codes, heap addressing, the push constants (pc) and the parameter
   tables: generated from bytecode/ops.def, bytecode/bc.h and gpu_abi.h (gen_glsl_ops.c) */
#include "dvm_ops.glsl"

layout(local_size_x = WG_SIZE) in;
const uint WG = uint(WG_SIZE);

layout(buffer_reference, std430, buffer_reference_align = 4) buffer W { uint v; };
layout(buffer_reference, std430, buffer_reference_align = 4) buffer WI { int v; };
layout(buffer_reference, std430, buffer_reference_align = 4) buffer WF { float v; };
layout(buffer_reference, std430, buffer_reference_align = 8) buffer W2 { uvec2 v; };
layout(buffer_reference, std430, buffer_reference_align = 8) readonly restrict buffer N2 { uvec2 v; };
layout(buffer_reference, std430, buffer_reference_align = 16) buffer W4 { uvec4 v; };
layout(buffer_reference, std430, buffer_reference_align = 4) coherent buffer WC { uint v; };
/* the cancel word: the host stores to it while the shader runs, so every read is a new load */
layout(buffer_reference, std430, buffer_reference_align = 4) volatile coherent buffer WV { uint v; };

/* llvmpipe (lavapipe) silently leaves any one loop after 65535 iterations; every loop that
   may run longer is written as two nested ones (up to 65535^2 iterations, then an error). */
#define LONG_LOOP(cond) for (uint lo_ = 0u; lo_ < 65535u && (cond); lo_++) for (uint li_ = 0u; li_ < 65535u && (cond); li_++)
/* (RT_VK_STEPS: a loop ran 65535^2 iterations, this driver-limit guard's error) */

/* The register file, sized per task: vulkan_backend.c specializes one pipeline per size class
   (REGS registers, at least the task's nregs, which the verifier bounds every register operand
   by) and creates each on first use. In shared memory when REGS_SHARED (register r of
   invocation l at word r * WG + l: consecutive invocations in consecutive banks), which no
   data stream can evict; else a private array, which drivers keep in (cached) local memory.
   The other array of the two is one word, unused. The sizer's modes use no register. */
layout(constant_id = 0) const uint REGS = 1u;
layout(constant_id = 1) const bool REGS_SHARED = false;
/* LANES 4: parallel tasks run four iterations an invocation through run4 (below), each
   register a uvec4 of private R4 (REGS of them); 1: one iteration, through run. */
layout(constant_id = 2) const uint LANES = 1u;
/* What run4 has beyond the other nodes, for the tasks that need it (vulkan_backend.c,
   vk_task_lanes): PUSH and POP (LANE_STACKS), the fused one-node loop in INCLT (LANE_LOOPS),
   the row path (LANE_ROWS, row1). Pipelines of their own, so that the other four-lane tasks
   keep code without them (the registers of the lane interpreter set how many threads stay
   resident, and its code layout matters too: the row path's code, never run, made the
   transcendental kernel 1.3x slower). */
layout(constant_id = 3) const bool LANE_STACKS = false;
layout(constant_id = 4) const bool LANE_LOOPS = false;
layout(constant_id = 5) const bool LANE_ROWS = false;
/* LANE_PLAIN: the task has no branch but counted one-node loops, which run whole at their
   head (vk_task_lanes, vk_plain_loop; OP_JGEI in run4), so its four lanes never part: every
   lane runs every node, a lane without an iteration (a task's last round) repeats lane 0's
   (par_loop4 gives it lane 0's indices) and only its stores and adds are masked (L4W), as
   the CUDA interpreter's plain lanes. A register write is then a whole row, with no select
   against the old value, and nothing is kept for parting lanes after a node. */
layout(constant_id = 6) const bool LANE_PLAIN = false;
const uint RS_WORDS = REGS_SHARED ? REGS * WG : 1u;
const uint RP_WORDS = (REGS_SHARED || LANES == 4u) ? 1u : REGS;
shared uint RS[RS_WORDS];
uint RP[RP_WORDS];
uint rg(uint r) {
    if (REGS_SHARED) return RS[r * WG + gl_LocalInvocationID.x];
    return RP[r];
}
void rs(uint r, uint v) {
    if (REGS_SHARED) RS[r * WG + gl_LocalInvocationID.x] = v;
    else RP[r] = v;
}

/* ---- addresses: uvec2 (lo, hi) byte addresses, word offsets added with carry ---- */
#if DVM_INT64
uvec2 addw64(uvec2 b, uint64_t w) {
    uint64_t a = packUint2x32(b) + w * 4ul;
    return unpackUint2x32(a);
}
uvec2 addw(uvec2 b, uint w) { return addw64(b, uint64_t(w)); }
#else
uvec2 addw(uvec2 b, uint w) {
    uint c;
    uint lo = uaddCarry(b.x, w << 2, c);
    return uvec2(lo, b.y + c + (w >> 30));
}
#endif
uint ldw(uvec2 b, uint i) { return W(addw(b, i)).v; }

uvec2 P(int v) { return uvec2(uint(v), v < 0 ? 0xFFFFFFFFu : 0u); }
const uvec2 P0 = uvec2(0u);

bool failed() { return WC(pc.err).v != 0u; }
/* Backward jumps between two reads of the cancel word (interp_run.h, DVM_CANCEL_EVERY). */
const uint CANCEL_EVERY = 64u;
uint g_polls = 0u;
/* The node offset of the running task's closing END (its last node), else 0xFFFFFFFF
   (set_end): an iteration that reaches it is over without that node's fetch and dispatch, one
   node less every iteration. */
uint g_end = 0xFFFFFFFFu;
bool cancelled() { return WV(pc.cancel).v != 0u; }

void rec_err(int code, uint node, uvec2 p0, uvec2 p1, uvec2 p2, uvec2 p3) {
    if (atomicCompSwap(WC(pc.err).v, 0u, uint(code)) == 0u) {
        WC(addw(pc.err, ERR_TASK)).v = pc.task_rel;
        WC(addw(pc.err, ERR_NODE)).v = node;
        WC(addw(pc.err, ERR_P)).v = p0.x; WC(addw(pc.err, ERR_P + 1u)).v = p0.y;
        WC(addw(pc.err, ERR_P + 2u)).v = p1.x; WC(addw(pc.err, ERR_P + 3u)).v = p1.y;
        WC(addw(pc.err, ERR_P + 4u)).v = p2.x; WC(addw(pc.err, ERR_P + 5u)).v = p2.y;
        WC(addw(pc.err, ERR_P + 6u)).v = p3.x; WC(addw(pc.err, ERR_P + 7u)).v = p3.y;
    }
}

/* ---- the slot table (gpu_abi.h): per array slot its address, length and shape ---- */
uint slot_w(uint x, uint k) { return ldw(pc.slots, x * SLOT_WORDS + k); }
uvec2 arr_base(uint x) { return uvec2(slot_w(x, SLOT_ADDR), slot_w(x, SLOT_ADDR + 1u)); }
int arr_dim(uint x, uint ax) { return int(slot_w(x, SLOT_SHAPE + ax)); }

/* Slot x's address (xy) and element count (zw) in one load: SLOT_ADDR and SLOT_LEN are its
   first four words, and the host aligns the slot table to 16 bytes (vulkan_backend.c). */
uvec4 slot_al(uint x) { return W4(addw(pc.slots, x * SLOT_WORDS)).v; }
/* the element count of slot s (slot_al), clamped to the i32 index range: registers hold i32
   indices */
uint len31(uvec4 s) { return (s.w != 0u || s.z > 0x7FFFFFFFu) ? 0x7FFFFFFFu : s.z; }
/* Checks flat index i of slot x; records OOB (axis -1) and returns false when outside; base:
   the array's address. */
bool chk(uint x, int i, uint node, out uvec2 base) {
    uvec4 s = slot_al(x);
    base = s.xy;
    int n = int(len31(s));
    if (i >= 0 && i < n) return true;
    rec_err(RT_OOB, node, uvec2(x, 0u), P(-1), P(i), s.zw);
    return false;
}

float f(uint r) { return uintBitsToFloat(rg(r)); }
void setf(uint r, float v) { rs(r, floatBitsToUint(v)); }
int iv(uint r) { return int(rg(r)); }
/* an 'o' operand (ops.def): register in bits 0-9 plus a signed 6-bit offset in bits 10-15 */
int ov(uint f) { return int(rg(f & 1023u) + uint((int((f >> 10) & 63u) ^ 32) - 32)); } /* wraps, like ADDIK */
/* register r plus the sign-extended 16-bit immediate k (LDO, ATOMADDFO, LDADDFO): wraps too */
int rk16(uint r, uint k) { return int(rg(r) + uint(int(k << 16) >> 16)); }
/* the load-and-add nodes: r[a] += the f32 element with bits v */
void ldadd(uint a, uint v) { precise float t = f(a) + uintBitsToFloat(v); setf(a, t); }
void seti(uint r, int v) { rs(r, uint(v)); }
float K(uint k) { return uintBitsToFloat(ldw(pc.consts, k)); }

/* A NaN test on the bits: drivers may fold a float compare-and-select into fmin/fmax, which
   drops the NaN that MINF/MAXF must keep when it is the first operand. */
bool isnan_bits(uint u) { return (u & 0x7FFFFFFFu) > 0x7F800000u; }

/* sin, cos and tan with their own argument reduction (3-part pi/2, exact for |x| < 2^16 *
   pi/2) and Cephes' single-precision polynomials: the GLSL builtins are only required to be
   within 2^-11 absolute on [-pi, pi] and are far off on some drivers (NVIDIA: 7e-5 at 1000).
   Beyond |x| = 1e5 the builtin is used (documented in docs/backends.md). */
vec2 sincos_red(float x) { /* (sin, cos) of x for |x| <= 1e5 */
    float k = floor(x * 0.636619772367581 + 0.5);
    precise float r = x - k * 1.5703125;
    r = r - k * 4.837512969970703125e-4;
    r = r - k * 7.54978995489188216e-8;
    precise float z = r * r;
    precise float sp = ((-1.9515295891e-4 * z + 8.3321608736e-3) * z - 1.6666654611e-1) * z * r + r;
    precise float cp = ((2.443315711809948e-5 * z - 1.388731625493765e-3) * z + 4.166664568298827e-2) * z * z - 0.5 * z + 1.0;
    int q = int(k) & 3;
    if (q == 0) return vec2(sp, cp);
    if (q == 1) return vec2(cp, -sp);
    if (q == 2) return vec2(-sp, -cp);
    return vec2(-cp, sp);
}
float c_sincos(float x, uint which) {
    if (isnan(x) || isinf(x)) return uintBitsToFloat(0x7FC00000u) + x;
    if (abs(x) > 1e5) return which == 0u ? sin(x) : cos(x);
    if (which == 0u && abs(x) < 1e-4) return x; /* keeps -0 and tiny values exact */
    vec2 sc = sincos_red(x);
    return which == 0u ? sc.x : sc.y;
}
float c_tan(float x) {
    if (isnan(x) || isinf(x)) return uintBitsToFloat(0x7FC00000u) + x;
    if (abs(x) > 1e5) return tan(x);
    if (abs(x) < 1e-4) return x;
    vec2 sc = sincos_red(x);
    precise float t = sc.x / sc.y;
    return t;
}

/* NaN in, NaN out (some drivers return 0 for atan(NaN) and the like). */
float nanp(float x, float r) { return isnan(x) ? x : r; }

/* ---- f32 helpers with the C library's special cases (GLSL leaves them undefined) ---- */
float c_pow(float x, float y) {
    if (y == 0.0) return 1.0;
    if (x == 1.0) return 1.0;
    if (isnan(x) || isnan(y)) return x + y;
    bool yint = floor(y) == y;
    bool yodd = yint && abs(y) < 16777216.0 && (int(abs(y)) & 1) == 1;
    if (x == 0.0) {
        if (y < 0.0) return yodd ? (1.0 / x) : uintBitsToFloat(0x7F800000u);
        return yodd ? x : 0.0;
    }
    if (isinf(y)) {
        float ax = abs(x);
        if (ax == 1.0) return 1.0;
        return ((ax > 1.0) == (y > 0.0)) ? uintBitsToFloat(0x7F800000u) : 0.0;
    }
    if (isinf(x)) {
        bool neg = x < 0.0 && yodd;
        float r = y > 0.0 ? uintBitsToFloat(0x7F800000u) : 0.0;
        return neg ? -r : r;
    }
    if (x < 0.0) {
        if (!yint) return uintBitsToFloat(0x7FC00000u);
        precise float r = exp2(y * log2(-x));
        return yodd ? -r : r;
    }
    precise float r = exp2(y * log2(x));
    return r;
}
float c_atan2(float y, float x) {
    if (isnan(x) || isnan(y)) return x + y;
    const float PI = 3.14159265358979;
    if (y == 0.0) {
        bool xneg = x < 0.0 || (x == 0.0 && (floatBitsToUint(x) >> 31) != 0u);
        return xneg ? ((floatBitsToUint(y) >> 31) != 0u ? -PI : PI) : y;
    }
    if (isinf(x) && isinf(y)) {
        float r = x > 0.0 ? PI * 0.25 : PI * 0.75;
        return y < 0.0 ? -r : r;
    }
    return atan(y, x);
}
float c_tanh(float x) {
    float ax = abs(x);
    if (ax < 0.0004) return x;          /* tanh(x) = x to f32 precision */
    if (ax > 9.1) return sign(x);        /* tanh rounds to +-1 */
    precise float t = exp(-2.0 * ax);
    precise float r = (1.0 - t) / (1.0 + t);
    return x < 0.0 ? -r : r;
}
/* asin/acos through atan2 of the exact-ish complement: GLSL's asin/acos may be far looser
   (lavapipe's are off by 2e-4). */
float c_asin(float x) {
    if (!(abs(x) <= 1.0)) return uintBitsToFloat(0x7FC00000u);
    precise float s = sqrt((1.0 - x) * (1.0 + x));
    return atan(x, s);
}
float c_acos(float x) {
    if (!(abs(x) <= 1.0)) return uintBitsToFloat(0x7FC00000u);
    precise float s = sqrt((1.0 - x) * (1.0 + x));
    return atan(s, x);
}
int c_f2i(float v) {
    if (isnan(v)) return 0;
    if (v >= 2147483648.0) return 0x7FFFFFFF;
    if (v <= -2147483648.0) return int(0x80000000u);
    return int(v);
}

/* ---- heap: S + 1 slots (the last the serial tasks'), each stride words; stack i at word
   stack_off[i] of a slot (the stack table, gpu_abi.h), its count there and element j at word
   stack_off[i] + j. S is the launch's thread slots: one an invocation, so nthreads, except in
   a four-lane dispatch, where lane l of invocation g has slot g + l * nthreads of S = 4 *
   nthreads (vulkan_backend.c, vk_slots). The slots are interleaved as the CUDA interpreter's
   (vm/interp/interp_core.h, DVM_HEAP_WORD): word w of slot s at w * (S + 1) + s, so a subgroup
   pushing in step writes consecutive words, not one cache line an invocation. stack_base is
   the count's address, stack_elem element j's. ---- */
uint stack_w(uint i, uint k) { return ldw(pc.stacks, i * STACK_WORDS + k); }
uint heap_slots() { return LANES * pc.nthreads + 1u; }
#if DVM_INT64
uvec2 stack_base(uint slot, uint i) {
    uint64_t off = packUint2x32(uvec2(stack_w(i, STACK_OFF), stack_w(i, STACK_OFF + 1u)));
    return addw64(pc.heap, off * uint64_t(heap_slots()) + uint64_t(slot));
}
uvec2 stack_elem(uvec2 sb, uint j) { return addw64(sb, uint64_t(j) * uint64_t(heap_slots())); }
#else
/* The host refuses heaps of 2^32 words or more on this path, so 32-bit offsets are exact. */
uvec2 stack_base(uint slot, uint i) { return addw(pc.heap, stack_w(i, STACK_OFF) * heap_slots() + slot); }
uvec2 stack_elem(uvec2 sb, uint j) { return addw(sb, j * heap_slots()); }
#endif
uvec2 stack_cap(uint i) { return uvec2(stack_w(i, STACK_CAP), stack_w(i, STACK_CAP + 1u)); }

void zero_counts(uint slot) {
    for (uint i = 0u; i < pc.nstacks; i++) W(stack_base(slot, i)).v = 0u;
}

/* f32 atomic add on a word. */
void atom_addf(uvec2 ad, float v) {
#if DVM_FATOMIC
    atomicAdd(WF(ad).v, v);
#else
    uint old = W(ad).v;
    for (;;) {
        precise float n = uintBitsToFloat(old) + v;
        uint prev = atomicCompSwap(W(ad).v, old, floatBitsToUint(n));
        if (prev == old) break;
        old = prev;
    }
#endif
}
/* f32 atomic max (want_max) or min, first operand (the stored value) kept when equal or
   unordered, as MAXF/MINF. */
void atom_mmf(uvec2 ad, float v, bool want_max) {
    uint old = W(ad).v;
    for (;;) {
        float o = uintBitsToFloat(old);
        float n = want_max ? (v > o ? v : o) : (v < o ? v : o);
        uint nb = floatBitsToUint(n);
        if (nb == old) break;
        uint prev = atomicCompSwap(W(ad).v, old, nb);
        if (prev == old) break;
        old = prev;
    }
}

/* Python floor division and modulo on i32; b != 0. INT_MIN // -1 wraps, INT_MIN % -1 is 0. */
ivec2 floordivmod(int a, int b) {
    if (b == -1) return ivec2(int(0u - uint(a)), 0);
    int q = a / b;
    int r = int(uint(a) - uint(q) * uint(b));
    if (r != 0 && ((r < 0) != (b < 0))) { q -= 1; r += b; }
    return ivec2(q, r);
}

/* INCLT a, b at node ip whose loop body is the one node c = ip - 1 (x == 0): whether that node
   is a self-update (DVM_SELF_UPDATE in bytecode/bc.h) that neither the counter a nor the bound b
   takes part in, so the loop's remaining trips can run as v = fma(v, m, k) (interp_run.h's
   ONE_NODE_LOOP_). ba: v's register; bo: m's (or the other operand's), bk: k's; su: the form
   (su_form, generated from ops.def; bc.h, enum dvm_su_form); bc: the node's constant index. The
   node as v * m + k: fma, fused or not, gives the node's result (for FMAFK and FMAFR it is the
   node's own fma; for the others one of its two steps is exact: x * 1, or + -0.0). */
bool one_node_loop(uint cb, uint c, uint a, uint b, out uint ba, out uint bo, out uint bk, out uint su, out uint bc) {
    uint bn = cb + c, v0 = ldw(pc.nodes, bn * 2u), v1 = ldw(pc.nodes, bn * 2u + 1u);
    uint bop = v0 & 0xFFu, bb = v1 & 0xFFFFu;
    ba = v0 >> 16;
    bc = v1 >> 16;
    su = su_form(bop);
    bool self = su == SU_FMA_K ? bb != ba
                : (su == SU_MUL_R || su == SU_ADD_R) ? ((bb == ba) != (bc == ba))
                : (su == SU_MUL_K || su == SU_ADD_K) ? bb == ba
                : su == SU_SUB_R ? (bb == ba && bc != ba)
                : su == SU_FMA_R ? (bb != ba && bc != ba) : false;
    bo = (su == SU_FMA_K || su == SU_FMA_R) ? bb : (su == SU_MUL_K || su == SU_ADD_K) ? ba : bb == ba ? bc : bb;
    bk = su == SU_FMA_R ? bc : bo;
    return self && a != ba && b != ba && a != bo && a != bk;
}

/* Runs one iteration of the task whose code starts at node cb, from its node ip0 (0, or the
   body for a parallel task's later iterations: the prologue runs once per invocation);
   slot = heap slot. Returns 0 at END, 1 after a runtime error (or when another thread
   recorded one). */
int run(uint cb, uint ip0, uint slot) {
    uint ip = ip0;
    LONG_LOOP(true) {
        uint n = cb + ip;
        uvec2 nw = N2(addw(pc.nodes, n * 2u)).v; /* one 8-byte load */
        uint w0 = nw.x, w1 = nw.y;
        uint op = w0 & 0xFFu, x = (w0 >> 8) & 0xFFu, a = w0 >> 16, b = w1 & 0xFFFFu, c = w1 >> 16;
        uint next = ip + 1u;
        switch (op) {
        case OP_NOP: break;
        case OP_CONST: rs(a, b | (c << 16)); break;
        case OP_CONSTK: rs(a, ldw(pc.consts, b)); break;
        case OP_MOV: rs(a, rg(b)); break;
        case OP_LDU: rs(a, ldw(pc.uni, b)); break;
        case OP_STU: W(addw(pc.uni, a)).v = rg(b); break;
        case OP_ATOMADDU: atom_addf(addw(pc.uni, a), f(b)); break;

        case OP_ADDF: { precise float t = f(b) + f(c); setf(a, t); break; }
        case OP_SUBF: { precise float t = f(b) - f(c); setf(a, t); break; }
        case OP_MULF: { precise float t = f(b) * f(c); setf(a, t); break; }
        case OP_DIVF: { precise float t = f(b) / f(c); setf(a, t); break; }
        case OP_MINF: rs(a, (isnan_bits(rg(b)) || !(f(c) < f(b))) ? rg(b) : rg(c)); break;
        case OP_MAXF: rs(a, (isnan_bits(rg(b)) || !(f(c) > f(b))) ? rg(b) : rg(c)); break;
        case OP_POWF: setf(a, c_pow(f(b), f(c))); break;
        case OP_ATAN2F: setf(a, c_atan2(f(b), f(c))); break;
        case OP_NEGF: rs(a, rg(b) ^ 0x80000000u); break;
        case OP_ABSF: rs(a, rg(b) & 0x7FFFFFFFu); break;
        case OP_SIN: setf(a, c_sincos(f(b), 0u)); break;
        case OP_COS: setf(a, c_sincos(f(b), 1u)); break;
        case OP_TAN: setf(a, c_tan(f(b))); break;
        case OP_ASIN: setf(a, c_asin(f(b))); break;
        case OP_ACOS: setf(a, c_acos(f(b))); break;
        case OP_ATAN: setf(a, nanp(f(b), atan(f(b)))); break;
        case OP_EXP: setf(a, nanp(f(b), exp(f(b)))); break;
        case OP_LOG: {
            float v = f(b);
            setf(a, v < 0.0 ? uintBitsToFloat(0x7FC00000u) : (v == 0.0 ? uintBitsToFloat(0xFF800000u) : log(v)));
            break;
        }
        case OP_SQRT: setf(a, nanp(f(b), sqrt(f(b)))); break;
        case OP_RSQRT: { precise float t = 1.0 / sqrt(f(b)); setf(a, t); break; }
        case OP_TANH: setf(a, c_tanh(f(b))); break;
        case OP_FLOOR: setf(a, floor(f(b))); break;
        case OP_CEIL: setf(a, ceil(f(b))); break;

        case OP_ADDI: rs(a, rg(b) + rg(c)); break;
        case OP_SUBI: rs(a, rg(b) - rg(c)); break;
        case OP_MULI: rs(a, rg(b) * rg(c)); break;
        case OP_DIVI:
        case OP_MODI: {
            int q = iv(c);
            if (q == 0) { rec_err(RT_DIVZERO, n, P0, P0, P0, P0); return 1; }
            ivec2 dm = floordivmod(iv(b), q);
            seti(a, op == OP_DIVI ? dm.x : dm.y);
            break;
        }
        case OP_MINI: seti(a, min(iv(b), iv(c))); break;
        case OP_MAXI: seti(a, max(iv(b), iv(c))); break;
        case OP_NEGI: rs(a, 0u - rg(b)); break;
        case OP_ABSI: rs(a, iv(b) < 0 ? 0u - rg(b) : rg(b)); break;
        case OP_ADDIK: rs(a, rg(b) + uint(int(c << 16) >> 16)); break;

        case OP_I2F: setf(a, float(iv(b))); break;
        case OP_F2I: seti(a, c_f2i(f(b))); break;
        case OP_FFLOORDIV: { precise float t = floor(f(b) / f(c)); setf(a, t); break; }
        case OP_FMODF: {
            precise float q = floor(f(b) / f(c));
            precise float m = f(c) * q;
            precise float t = f(b) - m;
            setf(a, t);
            break;
        }
        case OP_POWI: {
            int e = iv(c);
            if (e < 0) { rec_err(RT_NEGPOW, n, P(e), P0, P0, P0); return 1; }
            uint base = rg(b), acc = 1u, ue = uint(e);
            while (ue != 0u) { if ((ue & 1u) != 0u) acc *= base; base *= base; ue >>= 1; }
            rs(a, acc);
            break;
        }

        case OP_LTF: rs(a, f(b) < f(c) ? 1u : 0u); break;
        case OP_LEF: rs(a, f(b) <= f(c) ? 1u : 0u); break;
        case OP_EQF: rs(a, f(b) == f(c) ? 1u : 0u); break;
        case OP_NEF: rs(a, (f(b) == f(c)) ? 0u : 1u); break;
        case OP_LTI: rs(a, iv(b) < iv(c) ? 1u : 0u); break;
        case OP_LEI: rs(a, iv(b) <= iv(c) ? 1u : 0u); break;
        case OP_EQI: rs(a, rg(b) == rg(c) ? 1u : 0u); break;
        case OP_NEI: rs(a, rg(b) != rg(c) ? 1u : 0u); break;
        case OP_NOT: rs(a, rg(b) == 0u ? 1u : 0u); break;
        case OP_SEL: rs(a, rg(a) != 0u ? rg(b) : rg(c)); break;

        case OP_JMP: next = a; break;
        case OP_JZ: if (rg(a) == 0u) next = b; break;
        case OP_JNZ: if (rg(a) != 0u) next = b; break;
        case OP_JGEI: if (!(iv(a) < iv(b) && rg(b) - rg(a) > x)) next = c; break; /* x: see ops.def */
        case OP_JOUTI: if (iv(x) >= iv(a) || iv(a) >= iv(b)) next = c; break;
        /* the bound is read before the count is written (they may be one register) */
        case OP_INCLT: {
            uint hi = rg(b);
            /* a loop whose body is the one node before, a self-update (DVM_SELF_UPDATE in
               bytecode/bc.h): its remaining trips here, as interp_run.h's ONE_NODE_LOOP_ (the
               steps in loops of at most 65535 iterations, for llvmpipe) */
            uint ba, bo, bk, su, bc;
            if (x == 0u && c + 1u == ip && iv(a) < int(hi) && one_node_loop(cb, c, a, b, ba, bo, bk, su, bc)) {
                uint steps = hi - rg(a) - 1u;
                if (steps < 65535u * 65535u) {
                    bool kc = su == SU_FMA_K || su == SU_MUL_K || su == SU_ADD_K;
                    float v = f(ba), o = f(bo), kk = kc ? K(bc) : 0.0;
                    float m = (su == SU_FMA_K || su == SU_MUL_R || su == SU_FMA_R) ? o : su == SU_MUL_K ? kk : 1.0;
                    float k = (su == SU_ADD_R || su == SU_FMA_R) ? f(bk) : su == SU_SUB_R ? -o
                            : (su == SU_MUL_R || su == SU_MUL_K) ? uintBitsToFloat(0x80000000u) : kk; /* -0.0 */
                    uint q = steps / 65535u, r = steps - q * 65535u;
                    for (uint oi = 0u; oi <= q; oi++) {
                        uint mm = oi < q ? 65535u : r;
                        for (uint i = 0u; i < mm; i++) v = fma(v, m, k);
                    }
                    setf(ba, v);
                    rs(a, hi);
                    break;
                }
            }
            rs(a, rg(a) + (x + 1u));
            if (iv(a) < int(hi) && hi - rg(a) > x) next = c;
            break;
        }
        case OP_END: return 0;
        case OP_ASSERT:
            if (rg(a) == 0u) { rec_err(RT_ASSERT, n, uvec2(b, 0u), P0, P0, P0); return 1; }
            break;

        case OP_IDX:
        case OP_IDXM: {
            int i = iv(b), d = arr_dim(x, c);
            if (i < 0 || i >= d) { rec_err(RT_OOB, n, uvec2(x, 0u), uvec2(c, 0u), P(i), P(d)); return 1; }
            rs(a, op == OP_IDX ? uint(i) : rg(a) * uint(d) + uint(i));
            break;
        }
        case OP_LD: { int i = iv(b); uvec2 ab; if (!chk(x, i, n, ab)) return 1; rs(a, ldw(ab, uint(i))); break; }
        case OP_LDADDF: { int i = iv(b); uvec2 ab; if (!chk(x, i, n, ab)) return 1; ldadd(a, ldw(ab, uint(i))); break; }
        case OP_ST: { int i = iv(a); uvec2 ab; if (!chk(x, i, n, ab)) return 1; W(addw(ab, uint(i))).v = rg(b); break; }
        case OP_LD2:
        case OP_ST2:
        case OP_ATOMADDF2:
        case OP_LD2O:
        case OP_ATOMADDF2O:
        case OP_LDADDF2O: {
            /* rank 2 only (verifier); axis 0 checked first, like IDX then IDXM */
            bool ld = op == OP_LD2 || op == OP_LD2O || op == OP_LDADDF2O;
            bool o = op == OP_LD2O || op == OP_ATOMADDF2O || op == OP_LDADDF2O;
            uint fi = ld ? b : a, fj = ld ? c : b;
            uvec2 dd = W2(addw(pc.slots, x * SLOT_WORDS + SLOT_SHAPE)).v; /* 8-byte aligned */
            int i = o ? ov(fi) : iv(fi), j = o ? ov(fj) : iv(fj), d0 = int(dd.x), d1 = int(dd.y);
            if (i < 0 || i >= d0) { rec_err(RT_OOB, n, uvec2(x, 0u), uvec2(0u, 0u), P(i), P(d0)); return 1; }
            if (j < 0 || j >= d1) { rec_err(RT_OOB, n, uvec2(x, 0u), uvec2(1u, 0u), P(j), P(d1)); return 1; }
            uvec2 p = addw(slot_al(x).xy, uint(i) * uint(d1) + uint(j)); /* as IDXM + LD: 32-bit */
            if (op == OP_LDADDF2O) ldadd(a, W(p).v);
            else if (ld) rs(a, W(p).v);
            else if (op == OP_ST2) W(p).v = rg(c);
            else atom_addf(p, f(c));
            break;
        }
        case OP_ATOMADDF: { int i = iv(a); uvec2 ab; if (!chk(x, i, n, ab)) return 1; atom_addf(addw(ab, uint(i)), f(b)); break; }
        case OP_LDO: { int i = rk16(b, c); uvec2 ab; if (!chk(x, i, n, ab)) return 1; rs(a, ldw(ab, uint(i))); break; }
        case OP_LDADDFO: { int i = rk16(b, c); uvec2 ab; if (!chk(x, i, n, ab)) return 1; ldadd(a, ldw(ab, uint(i))); break; }
        case OP_ATOMADDFO: { int i = rk16(a, c); uvec2 ab; if (!chk(x, i, n, ab)) return 1; atom_addf(addw(ab, uint(i)), f(b)); break; }
        case OP_ATOMADDI: { int i = iv(a); uvec2 ab; if (!chk(x, i, n, ab)) return 1; atomicAdd(W(addw(ab, uint(i))).v, rg(b)); break; }
        case OP_ATOMMAXF: { int i = iv(a); uvec2 ab; if (!chk(x, i, n, ab)) return 1; atom_mmf(addw(ab, uint(i)), f(b), true); break; }
        case OP_ATOMMINF: { int i = iv(a); uvec2 ab; if (!chk(x, i, n, ab)) return 1; atom_mmf(addw(ab, uint(i)), f(b), false); break; }
        case OP_ATOMMAXI: { int i = iv(a); uvec2 ab; if (!chk(x, i, n, ab)) return 1; atomicMax(WI(addw(ab, uint(i))).v, iv(b)); break; }
        case OP_ATOMMINI: { int i = iv(a); uvec2 ab; if (!chk(x, i, n, ab)) return 1; atomicMin(WI(addw(ab, uint(i))).v, iv(b)); break; }
        case OP_SHAPE: seti(a, arr_dim(x, b)); break;

        case OP_PUSH: {
            uvec2 sb = stack_base(slot, a);
            uint cnt = W(sb).v;
            uvec2 cap = stack_cap(a);
            if (cap.y == 0u && cnt >= cap.x) { rec_err(RT_ADSTACK_OVERFLOW, n, uvec2(a, 0u), cap, P0, P0); return 1; }
            W(stack_elem(sb, 1u + cnt)).v = rg(b);
            W(sb).v = cnt + 1u;
            break;
        }
        case OP_POP: {
            uvec2 sb = stack_base(slot, b);
            uint cnt = W(sb).v;
            if (cnt == 0u) { rec_err(RT_ADSTACK_UNDERFLOW, n, uvec2(b, 0u), P0, P0, P0); return 1; }
            rs(a, W(stack_elem(sb, cnt)).v);
            W(sb).v = cnt - 1u;
            break;
        }

        case OP_ADDFK: { precise float t = f(b) + K(c); setf(a, t); break; }
        case OP_MULFK: { precise float t = f(b) * K(c); setf(a, t); break; }
        case OP_KSUBF: { precise float t = K(c) - f(b); setf(a, t); break; }
        case OP_KDIVF: { precise float t = K(c) / f(b); setf(a, t); break; }
        case OP_FMAF: setf(a, fma(f(b), f(c), f(a))); break;
        case OP_FMAFK: setf(a, fma(f(a), f(b), K(c))); break;
        case OP_FMAFR: setf(a, fma(f(a), f(b), f(c))); break;

        default: rec_err(RT_BAD_OP, n, uvec2(op, 0u), P0, P0, P0); return 1;
        }
        /* A backward jump is where a long-running thread notices another thread's error
           (every jump: once one thread has seen the cancel word, the rest stop at once) and,
           every CANCEL_EVERY of them, the cancel word (in host memory on some devices). */
        if (next <= ip) {
            if (failed()) return 1;
            if ((++g_polls & (CANCEL_EVERY - 1u)) == 0u && cancelled()) {
                rec_err(RT_CANCELLED, n, P0, P0, P0, P0);
                return 1;
            }
        }
        if (next == g_end) return 0;
        ip = next;
    }
    rec_err(RT_VK_STEPS, cb + ip, P0, P0, P0, P0);
    return 1;
}

/* ---- four lanes (LANES == 4): four iterations of a parallel task an invocation ----
 * The interpreter waits on each invocation's nodes one after another (bench/HISTORY.md,
 * "Vulkan: resident threads"), so four iterations an invocation put four loads in flight per
 * node and pay one fetch and dispatch for four. Register r of lane l is R4[r][l]: one 16-byte
 * private access a register for all lanes. Lanes part at branches and meet again, as the CUDA
 * interpreter's masked lanes (vm/interp/engine_lanes.h): the lanes at the lowest node index
 * run it (L4M), the others wait. Lane l of invocation g takes iterations g + l * nthreads +
 * 4k * nthreads, so each lane's accesses stay coalesced across the subgroup, and has its own
 * heap slot (heap_slots) for its adstacks. Tasks with a few rare nodes run on one lane
 * (vulkan_backend.c, vk_task_lanes and vk_lanes, pick LANES per launch). */
const uint R4_WORDS = LANES == 4u ? REGS : 1u;
uvec4 R4[R4_WORDS];
bvec4 L4M;    /* the lanes that run the node */
bool L4ALL;   /* all four do (LANE_PLAIN: all four have an iteration) */
bvec4 L4W;    /* LANE_PLAIN: the lanes whose stores and adds count (those with an iteration) */
bvec4 wmask() { return LANE_PLAIN ? L4W : L4M; }
/* LANE_PLAIN: the register written last stays in machine registers (CV, number CR) and goes to
   R4 only when another register is written (or run4 returns: flush4), so a node that reads
   the one before's result loads nothing. A four-lane node's register accesses are 16-byte
   private loads and stores of the whole subgroup (four L1 wavefronts each), and they, not the
   node's fetch or dispatch, set its cost: a chain of 64 MULFK 1.25 -> 0.65 ms at 2^24, trans
   1.14 -> 0.95 (H100; bench/HISTORY.md). The same on masked lanes made the loops 13-50% slower,
   and a second cached register made every row slower. */
const uint CR_NONE = 0xFFFFFFFFu;
uint CR = CR_NONE;
uvec4 CV;
uvec4 g4(uint r) { return LANE_PLAIN && r == CR ? CV : R4[r]; }
vec4 f4(uint r) { return uintBitsToFloat(g4(r)); }
ivec4 i4(uint r) { return ivec4(g4(r)); }
void flush4() {
    if (LANE_PLAIN && CR != CR_NONE) R4[CR] = CV;
    CR = CR_NONE;
}
/* writes the running lanes of register r (masked lanes: a select, so the row is written whole) */
void s4(uint r, uvec4 v) {
    if (!LANE_PLAIN) {
        R4[r] = L4ALL ? v : mix(R4[r], v, L4M);
        return;
    }
    if (r != CR && CR != CR_NONE) R4[CR] = CV;
    CR = r;
    CV = v;
}
void sf4(uint r, vec4 v) { s4(r, floatBitsToUint(v)); }
void si4(uint r, ivec4 v) { s4(r, uvec4(v)); }
void sb4(uint r, bvec4 v) { s4(r, uvec4(v)); }
bvec4 band(bvec4 p, bvec4 q) { return bvec4(p.x && q.x, p.y && q.y, p.z && q.z, p.w && q.w); }
bvec4 bor(bvec4 p, bvec4 q) { return bvec4(p.x || q.x, p.y || q.y, p.z || q.z, p.w || q.w); }
uint lane_of(bvec4 m) { return m.x ? 0u : m.y ? 1u : m.z ? 2u : 3u; } /* the first lane in m */
uint umin4(uvec4 v) { return min(min(v.x, v.y), min(v.z, v.w)); }
uint umax4(uvec4 v) { return max(max(v.x, v.y), max(v.z, v.w)); }
bvec4 isnan_bits4(uvec4 u) { return greaterThan(u & 0x7FFFFFFFu, uvec4(0x7F800000u)); }
/* an 'o' operand, a register plus a signed 6-bit offset (ov) */
ivec4 ov4(uint f) { return ivec4(g4(f & 1023u) + uint((int((f >> 10) & 63u) ^ 32) - 32)); }
ivec4 rk16_4(uint r, uint k) { return ivec4(g4(r) + uint(int(k << 16) >> 16)); }

/* The library math of run, lane by lane in select form (no branch per lane): the same
   formulas, so each lane's result is the scalar one's. */
void sincos_red4(vec4 x, out vec4 sp, out vec4 cp, out ivec4 q) {
    vec4 k = floor(x * 0.636619772367581 + 0.5);
    precise vec4 r = x - k * 1.5703125;
    r = r - k * 4.837512969970703125e-4;
    r = r - k * 7.54978995489188216e-8;
    precise vec4 z = r * r;
    sp = ((-1.9515295891e-4 * z + 8.3321608736e-3) * z - 1.6666654611e-1) * z * r + r;
    cp = ((2.443315711809948e-5 * z - 1.388731625493765e-3) * z + 4.166664568298827e-2) * z * z - 0.5 * z + 1.0;
    q = ivec4(k) & 3;
}
vec4 qnan4() { return vec4(uintBitsToFloat(0x7FC00000u)); }
bvec4 naninf4(vec4 x) { return bor(isnan(x), isinf(x)); }
/* sin (which 0), cos (1) or tan (2): one copy of the reduction for the three */
vec4 c_trig4(vec4 x, uint which) {
    vec4 sp, cp;
    ivec4 q;
    sincos_red4(x, sp, cp, q);
    /* (sin, cos) by quadrant as sincos_red: 0 (sp, cp), 1 (cp, -sp), 2 (-sp, -cp), 3 (-cp, sp) */
    bvec4 odd = equal(q & 1, ivec4(1)), neg = greaterThanEqual(q, ivec4(2));
    vec4 s = mix(sp, cp, odd), c = mix(cp, -sp, odd);
    s = mix(s, -s, neg);
    c = mix(c, -c, neg);
    vec4 r = which == 0u ? s : c;
    if (which == 2u) { precise vec4 t = s / c; r = t; }
    bvec4 big = greaterThan(abs(x), vec4(1e5));
    if (any(big)) r = mix(r, which == 0u ? sin(x) : which == 1u ? cos(x) : tan(x), big);
    if (which != 1u) r = mix(r, x, lessThan(abs(x), vec4(1e-4))); /* keeps -0 and tiny values exact */
    return mix(r, qnan4() + x, naninf4(x));
}
vec4 c_tanh4(vec4 x) {
    vec4 ax = abs(x);
    precise vec4 t = exp(-2.0 * ax);
    precise vec4 r = (1.0 - t) / (1.0 + t);
    vec4 v = mix(r, -r, lessThan(x, vec4(0.0)));
    v = mix(v, sign(x), greaterThan(ax, vec4(9.1)));
    return mix(v, x, lessThan(ax, vec4(0.0004)));
}
vec4 nanp4(vec4 x, vec4 r) { return mix(r, x, isnan(x)); }
vec4 c_log4(vec4 v) {
    vec4 r = mix(log(v), vec4(uintBitsToFloat(0xFF800000u)), equal(v, vec4(0.0)));
    return mix(r, qnan4(), lessThan(v, vec4(0.0)));
}

/* One lane's error, the first of the lanes in bad; returns 1 (run4's failure). */
int err4(int code, uint node, uvec2 p0, uvec2 p1, uvec2 p2, uvec2 p3) { rec_err(code, node, p0, p1, p2, p3); return 1; }

/* Checks flat indices i of slot x for the running lanes; on failure records the first bad
   lane's OOB, as chk. Returns the indices to access (a waiting lane's is 0, which is in bounds
   when any running lane's is). */
bool chk4(uint x, ivec4 i, uint node, out uvec2 base, out uvec4 idx) {
    uvec4 s = slot_al(x);
    base = s.xy;
    uint n = len31(s);
    bvec4 bad = band(L4M, greaterThanEqual(uvec4(i), uvec4(n))); /* negative i: huge unsigned */
    idx = (LANE_PLAIN || L4ALL) ? uvec4(i) : mix(uvec4(0u), uvec4(i), L4M);
    if (!any(bad)) return true;
    uint l = lane_of(bad);
    rec_err(RT_OOB, node, uvec2(x, 0u), P(-1), P(i[l]), s.zw);
    return false;
}
/* the running lanes' i against an axis extent d (IDX, LD2 ...); axis ax for the record */
bool chk_axis4(uint x, uint ax, ivec4 i, int d, uint node) {
    bvec4 bad = band(L4M, bor(lessThan(i, ivec4(0)), greaterThanEqual(i, ivec4(d))));
    if (!any(bad)) return true;
    rec_err(RT_OOB, node, uvec2(x, 0u), uvec2(ax, 0u), P(i[lane_of(bad)]), P(d));
    return false;
}
uvec4 ld4(uvec2 base, uvec4 idx) {
    return uvec4(ldw(base, idx.x), ldw(base, idx.y), ldw(base, idx.z), ldw(base, idx.w));
}

/* The row path (engine_lanes.h's, for the CUDA lanes). A task whose index registers are
   registers 0..ndim-1 (ndim <= 2) and never written runs with FLAG_ROWS x ndim in pc.flags
   (rows_n); lane l of a round then takes lane 0's iteration + l * WG (par_loop4). When every
   lane runs the node (so each has an iteration) and the lanes lie in one row (2-D: lane 0's
   row index is lane 3's), an array node whose index is the innermost index register plus a
   constant (x[j + k]: row1), or whose two indices are the two index registers plus constants
   (u[i + a, j + b]: row2), has lane l's element at lane 0's + l * WG: lane 0's and lane 3's in
   bounds check all four, and each lane's address is lane 0's plus a constant. Otherwise, and
   for any lane out of bounds (whose error it then reports), the node takes its usual path.
   Nothing of it is kept across nodes (lane 0's indices kept in scalars beside the register
   file ran slower: bench/HISTORY.md, "Vulkan: the row path"). */
const uint ROW_SPAN = 3u * WG;
const uvec4 ROW_E = uvec4(0u, WG, 2u * WG, 3u * WG); /* the lanes' elements from lane 0's */
layout(buffer_reference, std430, buffer_reference_align = 4) buffer WR { uint v[]; };
uint rows_n() { return LANE_ROWS ? (pc.flags / FLAG_ROWS) & 3u : 0u; }
/* x[r + k] for the running lanes on the row path: rp is then lane 0's element */
bool row1(uint x, uint r, uint k, out uvec2 rp) {
    rp = P0;
    uint rn = rows_n();
    if (rn == 0u || !L4ALL || r + 1u != rn) return false;
    uint r0;
    if (rn == 2u) {
        uvec4 i = g4(0u);
        if (i.x != i.w) return false;
        r0 = g4(1u).x + k;
    } else r0 = g4(0u).x + k; /* wraps: a negative index fails the test below */
    uvec4 s = slot_al(x);
    uint n = len31(s);
    if (r0 >= n || r0 + ROW_SPAN >= n) return false;
    rp = addw(s.xy, r0);
    return true;
}
/* x[i + a, j + b] (the 'o' operands fi and fj when o, else registers) on the row path */
bool row2(uint x, uint fi, uint fj, bool o, out uvec2 rp) {
    rp = P0;
    if (rows_n() != 2u || !L4ALL || (o ? fi & 1023u : fi) != 0u || (o ? fj & 1023u : fj) != 1u) return false;
    uvec4 i = g4(0u);
    if (i.x != i.w) return false;
    uint i0 = i.x, j0 = g4(1u).x;
    if (o) {
        i0 += uint((int((fi >> 10) & 63u) ^ 32) - 32);
        j0 += uint((int((fj >> 10) & 63u) ^ 32) - 32);
    }
    uvec2 dd = W2(addw(pc.slots, x * SLOT_WORDS + SLOT_SHAPE)).v;
    if (i0 >= dd.x || j0 >= dd.y || j0 + ROW_SPAN >= dd.y) return false;
    rp = addw(slot_al(x).xy, i0 * dd.y + j0);
    return true;
}
uvec4 ldrow(uvec2 rp) { WR p = WR(rp); return uvec4(p.v[0], p.v[WG], p.v[2u * WG], p.v[3u * WG]); }
void strow(uvec2 rp, uvec4 v) {
    WR p = WR(rp);
    p.v[0] = v.x;
    p.v[WG] = v.y;
    p.v[2u * WG] = v.z;
    p.v[3u * WG] = v.w;
}

/* LANE_LOOPS: `steps` trips (each lane's; `most` of them, fewer than 65535^2) of a one-node
   loop's self-update (one_node_loop's ba, bo, bk, su, bc) at once, each lane's fma kept while
   it has trips left, as run's INCLT does for one lane (loops of at most 65535 iterations, for
   llvmpipe) */
void self_loop4(uint ba, uint bo, uint bk, uint su, uint bc, uvec4 steps, uint most) {
    bool kc = su == SU_FMA_K || su == SU_MUL_K || su == SU_ADD_K;
    vec4 v = f4(ba), o = f4(bo);
    float kk = kc ? K(bc) : 0.0;
    vec4 m = (su == SU_FMA_K || su == SU_MUL_R || su == SU_FMA_R) ? o : vec4(su == SU_MUL_K ? kk : 1.0);
    vec4 k = (su == SU_ADD_R || su == SU_FMA_R) ? f4(bk) : su == SU_SUB_R ? -o
           : vec4((su == SU_MUL_R || su == SU_MUL_K) ? uintBitsToFloat(0x80000000u) : kk); /* -0.0 */
    uint q = most / 65535u, r = most - q * 65535u, i = 0u;
    for (uint oi = 0u; oi <= q; oi++) {
        uint mm = oi < q ? 65535u : r;
        for (uint j = 0u; j < mm; j++, i++) v = mix(v, fma(v, m, k), lessThan(uvec4(i), steps));
    }
    sf4(ba, v);
}

/* run for four lanes: lanes in `have` run an iteration from node ip0, the others have none.
   Returns 0 when every lane has reached END, 1 after a runtime error. */
int run4(uint cb, uint ip0, bvec4 have) {
    const uint DONE = 0xFFFFFFFFu;
    /* The running lanes (L4M) are at node ip; lip holds the node of each waiting or finished
       lane (always beyond ip) and wnext the lowest of them. Only a branch whose lanes
       disagree parts them, so the other nodes step with one scalar compare (next against
       wnext), as engine_lanes.h's masked lanes do; sel: choose the running lanes again. */
    uvec4 lip = mix(uvec4(DONE), uvec4(ip0), have);
    uint ip = ip0, wnext = g_end; /* lanes that reach the closing END (g_end) stop there */
    /* a branch node's lanes' next nodes (br), set by branch nodes only: as a per-node value
       reset to next, every other node paid four moves for it (trans 1.21 -> 1.18 ms, H100) */
    uvec4 nxt = uvec4(0u);
    /* every lane has an iteration (all but a task's last round): they start together */
    bool sel = !LANE_PLAIN && !all(have);
    L4M = bvec4(true);
    L4ALL = !LANE_PLAIN || all(have);
    L4W = have;
    LONG_LOOP(true) {
        if (sel) {
            ip = umin4(lip);
            if (ip >= g_end) return 0;
            L4M = equal(lip, uvec4(ip));
            L4ALL = all(L4M);
            wnext = min(umin4(mix(lip, uvec4(DONE), L4M)), g_end);
            sel = false;
        }
        uint n = cb + ip;
        uvec2 nw = N2(addw(pc.nodes, n * 2u)).v;
        uint w0 = nw.x, w1 = nw.y;
        uint op = w0 & 0xFFu, x = (w0 >> 8) & 0xFFu, a = w0 >> 16, b = w1 & 0xFFFFu, c = w1 >> 16;
        uint next = ip + 1u;
        bool br = false;           /* a branch: nxt holds each lane's next node */
        switch (op) {
        case OP_NOP: break;
        case OP_CONST: s4(a, uvec4(b | (c << 16))); break;
        case OP_CONSTK: s4(a, uvec4(ldw(pc.consts, b))); break;
        case OP_MOV: s4(a, g4(b)); break;
        case OP_LDU: s4(a, uvec4(ldw(pc.uni, b))); break;
        case OP_ATOMADDU: {
            vec4 v = f4(b);
            bvec4 w = wmask();
            for (uint l = 0u; l < 4u; l++) if (w[l]) atom_addf(addw(pc.uni, a), v[l]);
            break;
        }

        case OP_ADDF: { precise vec4 t = f4(b) + f4(c); sf4(a, t); break; }
        case OP_SUBF: { precise vec4 t = f4(b) - f4(c); sf4(a, t); break; }
        case OP_MULF: { precise vec4 t = f4(b) * f4(c); sf4(a, t); break; }
        case OP_DIVF: { precise vec4 t = f4(b) / f4(c); sf4(a, t); break; }
        case OP_MINF: s4(a, mix(g4(c), g4(b), bor(isnan_bits4(g4(b)), not(lessThan(f4(c), f4(b)))))); break;
        case OP_MAXF: s4(a, mix(g4(c), g4(b), bor(isnan_bits4(g4(b)), not(greaterThan(f4(c), f4(b)))))); break;
        case OP_F2I: {
            vec4 v = f4(b);
            ivec4 r = ivec4(clamp(v, vec4(-2147483648.0), vec4(2147483520.0))); /* the largest f32 below 2^31 */
            r = mix(r, ivec4(0x7FFFFFFF), greaterThanEqual(v, vec4(2147483648.0)));
            si4(a, mix(r, ivec4(0), isnan(v)));
            break;
        }
        case OP_FFLOORDIV: { precise vec4 t = floor(f4(b) / f4(c)); sf4(a, t); break; }
        case OP_FMODF: {
            vec4 p = f4(b), q = f4(c);
            precise vec4 fq = floor(p / q);
            precise vec4 m = q * fq;
            precise vec4 t = p - m;
            sf4(a, t);
            break;
        }
        case OP_NEGF: s4(a, g4(b) ^ 0x80000000u); break;
        case OP_ABSF: s4(a, g4(b) & 0x7FFFFFFFu); break;
        case OP_SIN:
        case OP_COS:
        case OP_TAN: sf4(a, c_trig4(f4(b), op == OP_SIN ? 0u : op == OP_COS ? 1u : 2u)); break;
        case OP_ATAN: sf4(a, nanp4(f4(b), atan(f4(b)))); break;
        case OP_EXP: sf4(a, nanp4(f4(b), exp(f4(b)))); break;
        case OP_LOG: sf4(a, c_log4(f4(b))); break;
        case OP_SQRT: sf4(a, nanp4(f4(b), sqrt(f4(b)))); break;
        case OP_RSQRT: { precise vec4 t = 1.0 / sqrt(f4(b)); sf4(a, t); break; }
        case OP_TANH: sf4(a, c_tanh4(f4(b))); break;
        case OP_FLOOR: sf4(a, floor(f4(b))); break;
        case OP_CEIL: sf4(a, ceil(f4(b))); break;

        case OP_ADDI: s4(a, g4(b) + g4(c)); break;
        case OP_SUBI: s4(a, g4(b) - g4(c)); break;
        case OP_MULI: s4(a, g4(b) * g4(c)); break;
        case OP_DIVI:
        case OP_MODI: {
            if (any(band(L4M, equal(g4(c), uvec4(0u))))) return err4(RT_DIVZERO, n, P0, P0, P0, P0);
            if (!LANE_ROWS) {
                /* lane by lane, in a loop that is not unrolled: the four lanes' divisions
                   together (the select form below) took the four-lane pipelines from 48 to 56
                   registers (H100). The row path's pipelines keep the select form: with the
                   loop they stayed at 56 and ran saxpy and the stencil 4-5% slower. */
                flush4(); /* R4 lane by lane */
                [[dont_unroll]] for (uint l = 0u; l < 4u; l++) {
                    if (!L4M[l]) continue;
                    ivec2 dm = floordivmod(int(R4[b][l]), int(R4[c][l]));
                    R4[a][l] = uint(op == OP_DIVI ? dm.x : dm.y);
                }
                break;
            }
            ivec4 p = i4(b), q = i4(c);
            /* floordivmod lane by lane in select form: a divisor of 0 (a waiting lane's) or -1
               divides by 1 instead, and -1's quotient is the wrapped negation */
            bvec4 m1 = equal(q, ivec4(-1));
            ivec4 d = mix(q, ivec4(1), bor(m1, equal(q, ivec4(0))));
            ivec4 qq = p / d;
            ivec4 r = ivec4(uvec4(p) - uvec4(qq) * uvec4(d));
            bvec4 adj = band(notEqual(r, ivec4(0)), notEqual(lessThan(r, ivec4(0)), lessThan(d, ivec4(0))));
            qq = mix(qq, qq - 1, adj);
            r = mix(r, r + d, adj);
            qq = mix(qq, ivec4(uvec4(0u) - uvec4(p)), m1);
            r = mix(r, ivec4(0), m1);
            si4(a, op == OP_DIVI ? qq : r);
            break;
        }
        case OP_MINI: si4(a, min(i4(b), i4(c))); break;
        case OP_MAXI: si4(a, max(i4(b), i4(c))); break;
        case OP_NEGI: s4(a, uvec4(0u) - g4(b)); break;
        case OP_ABSI: s4(a, mix(g4(b), uvec4(0u) - g4(b), lessThan(i4(b), ivec4(0)))); break;
        case OP_ADDIK: s4(a, g4(b) + uint(int(c << 16) >> 16)); break;

        case OP_I2F: sf4(a, vec4(i4(b))); break;
        case OP_POWI: {
            ivec4 e = i4(c);
            bvec4 neg = band(L4M, lessThan(e, ivec4(0)));
            if (any(neg)) return err4(RT_NEGPOW, n, P(e[lane_of(neg)]), P0, P0, P0);
            uvec4 base = g4(b), acc = uvec4(1u), ue = mix(uvec4(0u), uvec4(e), L4M);
            while (any(notEqual(ue, uvec4(0u)))) {
                acc = mix(acc, acc * base, notEqual(ue & 1u, uvec4(0u)));
                base *= base;
                ue >>= 1;
            }
            s4(a, acc);
            break;
        }

        case OP_LTF: sb4(a, lessThan(f4(b), f4(c))); break;
        case OP_LEF: sb4(a, lessThanEqual(f4(b), f4(c))); break;
        case OP_EQF: sb4(a, equal(f4(b), f4(c))); break;
        case OP_NEF: sb4(a, not(equal(f4(b), f4(c)))); break;
        case OP_LTI: sb4(a, lessThan(i4(b), i4(c))); break;
        case OP_LEI: sb4(a, lessThanEqual(i4(b), i4(c))); break;
        case OP_EQI: sb4(a, equal(g4(b), g4(c))); break;
        case OP_NEI: sb4(a, notEqual(g4(b), g4(c))); break;
        case OP_NOT: sb4(a, equal(g4(b), uvec4(0u))); break;
        case OP_SEL: s4(a, mix(g4(c), g4(b), notEqual(g4(a), uvec4(0u)))); break;

        /* branches: never in a task on plain lanes (vk_task_lanes) */
        case OP_JMP:
            if (LANE_PLAIN) return err4(RT_BAD_OP, n, uvec2(op, 0u), P0, P0, P0);
            next = a;
            break;
        case OP_JZ:
            if (LANE_PLAIN) return err4(RT_BAD_OP, n, uvec2(op, 0u), P0, P0, P0);
            nxt = mix(uvec4(next), uvec4(b), equal(g4(a), uvec4(0u)));
            br = true;
            break;
        case OP_JNZ:
            if (LANE_PLAIN) return err4(RT_BAD_OP, n, uvec2(op, 0u), P0, P0, P0);
            nxt = mix(uvec4(next), uvec4(b), notEqual(g4(a), uvec4(0u)));
            br = true;
            break;
        case OP_JGEI: {
            if (LANE_PLAIN) {
                /* Plain lanes meet a branch only at the head of a counted one-node loop
                   (vulkan_backend.c, vk_plain_loop): JGEI lo, hi, ->past it; MOV cnt, lo, or
                   none (cnt is lo); a self-update; INCLT cnt, hi, ->the self-update; x 0 in both.
                   Each lane runs its own hi - lo trips here (none where lo >= hi) and leaves with
                   cnt = hi, as the four nodes would, so the lanes never part. */
                uint w = ldw(pc.nodes, (n + 1u) * 2u), ba, bo, bk, su, bc;
                bool mv = (w & 0xFFu) == OP_MOV;
                uint cnt = mv ? w >> 16 : a;
                if (!LANE_LOOPS || x != 0u || !one_node_loop(cb, ip + (mv ? 2u : 1u), cnt, b, ba, bo, bk, su, bc))
                    return err4(RT_BAD_OP, n, uvec2(op, 0u), P0, P0, P0);
                uvec4 lo = g4(a), hi = g4(b);
                bvec4 go = lessThan(ivec4(lo), ivec4(hi));
                uvec4 steps = mix(uvec4(0u), hi - lo, go);
                uint most = umax4(steps);
                if (most >= 65535u * 65535u) { /* as the node-by-node loop would: the step limit */
                    rec_err(RT_VK_STEPS, n, P0, P0, P0, P0);
                    return 1;
                }
                self_loop4(ba, bo, bk, su, bc, steps, most);
                s4(cnt, mix(g4(cnt), hi, go));
                next = c;
                break;
            }
            uvec4 p = g4(a), q = g4(b);
            nxt = mix(uvec4(c), uvec4(next), band(lessThan(ivec4(p), ivec4(q)), greaterThan(q - p, uvec4(x))));
            br = true;
            break;
        }
        case OP_JOUTI: {
            if (LANE_PLAIN) return err4(RT_BAD_OP, n, uvec2(op, 0u), P0, P0, P0);
            ivec4 p = i4(a);
            nxt = mix(uvec4(next), uvec4(c), bor(greaterThanEqual(i4(x), p), greaterThanEqual(p, i4(b))));
            br = true;
            break;
        }
        case OP_INCLT: {
            if (LANE_PLAIN) return err4(RT_BAD_OP, n, uvec2(op, 0u), P0, P0, P0);
            uvec4 hi = g4(b), c2 = g4(a) + (x + 1u);
            bvec4 jump = band(lessThan(ivec4(c2), ivec4(hi)), greaterThan(hi - c2, uvec4(x)));
            /* LANE_LOOPS: a loop whose body is the one node before, a self-update, runs the
               remaining trips of each running lane whose counter is below the bound (go) here,
               as run's INCLT, the lane's fma kept while it has trips left; every lane then
               leaves the loop, as the step would take the others (unless one's counter wrapped:
               the step then) */
            uint ba, bo, bk, su, bc;
            if (LANE_LOOPS && x == 0u && c + 1u == ip && one_node_loop(cb, c, a, b, ba, bo, bk, su, bc)) {
                ivec4 cur = i4(a);
                bvec4 go = band(L4M, lessThan(cur, ivec4(hi)));
                uvec4 steps = mix(uvec4(0u), hi - uvec4(cur) - 1u, go);
                uint most = umax4(steps);
                if (most < 65535u * 65535u && !any(band(band(L4M, not(go)), jump))) {
                    self_loop4(ba, bo, bk, su, bc, steps, most);
                    s4(a, mix(c2, hi, go));
                    break;
                }
            }
            s4(a, c2);
            nxt = mix(uvec4(next), uvec4(c), jump);
            br = true;
            break;
        }
        case OP_END: next = DONE; break;
        case OP_ASSERT: {
            bvec4 f = band(L4M, equal(g4(a), uvec4(0u)));
            if (any(f)) return err4(RT_ASSERT, n, uvec2(b, 0u), P0, P0, P0);
            break;
        }

        case OP_IDX:
        case OP_IDXM: {
            ivec4 i = i4(b);
            int d = arr_dim(x, c);
            if (!chk_axis4(x, c, i, d, n)) return 1;
            s4(a, op == OP_IDX ? uvec4(i) : g4(a) * uint(d) + uvec4(i));
            break;
        }
        case OP_LD:
        case OP_LDO:
        case OP_LDADDF:
        case OP_LDADDFO: {
            bool o = op == OP_LDO || op == OP_LDADDFO;
            uvec2 ab;
            uvec4 v;
            if (row1(x, b, o ? uint(int(c << 16) >> 16) : 0u, ab)) v = ldrow(ab);
            else {
                uvec4 idx;
                if (!chk4(x, o ? rk16_4(b, c) : i4(b), n, ab, idx)) return 1;
                v = ld4(ab, idx);
            }
            if (op == OP_LD || op == OP_LDO) s4(a, v);
            else { precise vec4 t = f4(a) + uintBitsToFloat(v); sf4(a, t); }
            break;
        }
        case OP_ST:
        case OP_ATOMADDF:
        case OP_ATOMADDFO:
        case OP_ATOMADDI:
        case OP_ATOMMAXI:
        case OP_ATOMMINI: {
            uvec2 ab;
            uvec4 idx = ROW_E, v = g4(b);
            if (row1(x, a, op == OP_ATOMADDFO ? uint(int(c << 16) >> 16) : 0u, ab)) {
                if (op == OP_ST) { strow(ab, v); break; }
            } else if (!chk4(x, op == OP_ATOMADDFO ? rk16_4(a, c) : i4(a), n, ab, idx)) return 1;
            bvec4 w = wmask();
            if (op == OP_ST) {
                if (w.x) W(addw(ab, idx.x)).v = v.x;
                if (w.y) W(addw(ab, idx.y)).v = v.y;
                if (w.z) W(addw(ab, idx.z)).v = v.z;
                if (w.w) W(addw(ab, idx.w)).v = v.w;
                break;
            }
            for (uint l = 0u; l < 4u; l++) {
                if (w[l]) {
                    uvec2 p = addw(ab, idx[l]);
                    if (op == OP_ATOMADDF || op == OP_ATOMADDFO) atom_addf(p, uintBitsToFloat(v[l]));
                    else if (op == OP_ATOMADDI) atomicAdd(W(p).v, v[l]);
                    else if (op == OP_ATOMMAXI) atomicMax(WI(p).v, int(v[l]));
                    else atomicMin(WI(p).v, int(v[l]));
                }
            }
            break;
        }
        case OP_LD2:
        case OP_ST2:
        case OP_ATOMADDF2:
        case OP_LD2O:
        case OP_ATOMADDF2O:
        case OP_LDADDF2O: {
            bool ld = op == OP_LD2 || op == OP_LD2O || op == OP_LDADDF2O;
            bool o = op == OP_LD2O || op == OP_ATOMADDF2O || op == OP_LDADDF2O;
            uint fi = ld ? b : a, fj = ld ? c : b;
            uvec2 base;
            uvec4 e = ROW_E;
            bool row = row2(x, fi, fj, o, base);
            if (!row) {
                uvec2 dd = W2(addw(pc.slots, x * SLOT_WORDS + SLOT_SHAPE)).v;
                ivec4 i = o ? ov4(fi) : i4(fi), j = o ? ov4(fj) : i4(fj);
                if (!chk_axis4(x, 0u, i, int(dd.x), n) || !chk_axis4(x, 1u, j, int(dd.y), n)) return 1;
                e = uvec4(i) * dd.y + uvec4(j);
                if (!LANE_PLAIN && !L4ALL) e = mix(uvec4(0u), e, L4M);
                base = slot_al(x).xy;
            }
            if (ld) {
                uvec4 v = row ? ldrow(base) : ld4(base, e);
                if (op == OP_LDADDF2O) { precise vec4 t = f4(a) + uintBitsToFloat(v); sf4(a, t); }
                else s4(a, v);
            } else {
                vec4 v = f4(c);
                if (row && op == OP_ST2) { strow(base, floatBitsToUint(v)); break; }
                bvec4 w = wmask();
                for (uint l = 0u; l < 4u; l++) {
                    if (w[l]) {
                        if (op == OP_ST2) W(addw(base, e[l])).v = floatBitsToUint(v[l]);
                        else atom_addf(addw(base, e[l]), v[l]);
                    }
                }
            }
            break;
        }
        case OP_SHAPE: s4(a, uvec4(arr_dim(x, b))); break;

        case OP_ADDFK: { precise vec4 t = f4(b) + K(c); sf4(a, t); break; }
        case OP_MULFK: { precise vec4 t = f4(b) * K(c); sf4(a, t); break; }
        case OP_KSUBF: { precise vec4 t = K(c) - f4(b); sf4(a, t); break; }
        case OP_KDIVF: { precise vec4 t = K(c) / f4(b); sf4(a, t); break; }
        case OP_FMAF: sf4(a, fma(f4(b), f4(c), f4(a))); break;
        case OP_FMAFK: sf4(a, fma(f4(a), f4(b), vec4(K(c)))); break;
        case OP_FMAFR: sf4(a, fma(f4(a), f4(b), f4(c))); break;

        /* each lane its own stack, in heap slot g + l * nthreads (heap_slots); the lanes' counts
           are loaded together and every load comes before the first store, so the lanes'
           round trips to memory overlap */
        case OP_PUSH: {
            if (!LANE_STACKS) return err4(RT_BAD_OP, n, uvec2(op, 0u), P0, P0, P0);
            uvec2 cap = stack_cap(a), sb[4];
            uvec4 cnt = uvec4(0u), v = g4(b);
            [[unroll]] for (uint l = 0u; l < 4u; l++) {
                sb[l] = stack_base(gl_GlobalInvocationID.x + l * pc.nthreads, a);
                if (L4M[l]) cnt[l] = W(sb[l]).v;
            }
            if (cap.y == 0u && any(band(L4M, greaterThanEqual(cnt, uvec4(cap.x)))))
                return err4(RT_ADSTACK_OVERFLOW, n, uvec2(a, 0u), cap, P0, P0);
            [[unroll]] for (uint l = 0u; l < 4u; l++) {
                if (!L4M[l]) continue;
                W(stack_elem(sb[l], 1u + cnt[l])).v = v[l];
                W(sb[l]).v = cnt[l] + 1u;
            }
            break;
        }
        case OP_POP: {
            if (!LANE_STACKS) return err4(RT_BAD_OP, n, uvec2(op, 0u), P0, P0, P0);
            uvec2 sb[4];
            uvec4 cnt = uvec4(1u), v = uvec4(0u);
            [[unroll]] for (uint l = 0u; l < 4u; l++) {
                sb[l] = stack_base(gl_GlobalInvocationID.x + l * pc.nthreads, b);
                if (L4M[l]) cnt[l] = W(sb[l]).v;
            }
            if (any(band(L4M, equal(cnt, uvec4(0u))))) return err4(RT_ADSTACK_UNDERFLOW, n, uvec2(b, 0u), P0, P0, P0);
            [[unroll]] for (uint l = 0u; l < 4u; l++) if (L4M[l]) v[l] = W(stack_elem(sb[l], cnt[l])).v;
            [[unroll]] for (uint l = 0u; l < 4u; l++) if (L4M[l]) W(sb[l]).v = cnt[l] - 1u;
            s4(a, v);
            break;
        }

        /* STU (serial tasks only), POWF, ATAN2F, ASIN, ACOS, ATOMMAXF and ATOMMINF: a task with
           any runs on one lane (vk_task_lanes); PUSH and POP without LANE_STACKS: the host
           gives a task with them a pipeline with them */
        default: return err4(RT_BAD_OP, n, uvec2(op, 0u), P0, P0, P0);
        }
        if (LANE_PLAIN) { /* no branch: the next node, or the task's end */
            if (next >= g_end) {
                flush4(); /* par_loop4 writes the index registers in R4 */
                return 0;
            }
            ip = next;
            continue;
        }
        bool back = next <= ip;
        if (br) {
            /* the running lanes' targets: one node when they agree, else they part */
            uint lo = umin4(mix(uvec4(DONE), nxt, L4M)), hi = umax4(mix(uvec4(0u), nxt, L4M));
            back = lo <= ip;
            if (lo == hi) next = lo;
            else {
                lip = mix(lip, nxt, L4M);
                sel = true;
            }
        }
        /* every CANCEL_EVERY backward jumps, the error word (another thread's failure) and the
           cancel word: read at every jump, the error word's trip to L2 sat on the loop's path
           (the sin loop's adjoint 11.56 -> 11.24 ms, H100; the tasks without loops run on
           plain lanes, which have no backward jump) */
        if (back && (++g_polls & (CANCEL_EVERY - 1u)) == 0u) {
            if (failed()) return 1;
            if (cancelled()) return err4(RT_CANCELLED, n, P0, P0, P0, P0);
        }
        /* reaching a waiting lane's node (or END): the running lanes wait there too */
        if (!sel && next >= wnext) {
            lip = mix(lip, uvec4(next), L4M);
            sel = true;
        }
        ip = next;
    }
    rec_err(RT_VK_STEPS, cb + ip, P0, P0, P0, P0);
    return 1;
}

/* par_loop32 for four lanes (total + 4 * nthreads < 2^32: the host runs larger tasks on one
   lane). Lane l of invocation g takes iterations g + l nthreads, 4 nthreads more each round. On
   the row path (whole workgroups: vk_slots), invocation k of workgroup w takes 4 WG w + k + l WG
   instead: the workgroup's invocations take consecutive iterations in each lane (coalesced),
   and an invocation's four lanes usually lie in one row. (The layout alone ran as fast as the
   other, H100; without LANE_ROWS the compiler folds it away.) */
void par_loop4(uint total, uint ndim, uint e[3], uint s[3], uint idx_reg[3], uint cb, uint body) {
    uint N = pc.nthreads, ip0 = 0u;
    if (total > 0xFFFFFFFFu - 4u * N) { rec_err(RT_VK_RANGE32, cb, P0, P0, P0, P0); return; }
    bool whole = rows_n() != 0u;
    uint t = whole ? gl_WorkGroupID.x * (4u * WG) + gl_LocalInvocationID.x : gl_GlobalInvocationID.x;
    uint step = whole ? WG : N;
    LONG_LOOP(t < total) {
        uvec4 q = uvec4(t) + uvec4(0u, step, 2u * step, 3u * step);
        bvec4 have = lessThan(q, uvec4(total));
        if (LANE_PLAIN) q = mix(uvec4(q.x), q, have);
        for (int d = int(ndim) - 1; d >= 1; d--) {
            R4[idx_reg[d]] = q % e[d] + s[d];
            q /= e[d];
        }
        R4[idx_reg[0]] = q + s[0];
        if (run4(cb, ip0, have) != 0) return;
        ip0 = body;
        t += 4u * N;
    }
    if (t < total) rec_err(RT_VK_STEPS, cb, P0, P0, P0, P0);
}

/* ---- task descriptors: dvm_task_desc, 8 words (bytecode/bc.h) ---- */
/* word k of task t's dvm_task_desc (9 words: vulkan_backend.c uploads the structs as they are) */
uint tw(uint t, uint k) { return ldw(pc.tasks, t * 10u + k); }
/* g_end of task t, whose code starts at node cb (word 2: code_len) */
void set_end(uint t, uint cb) {
    uint len = tw(t, 2u);
    g_end = len != 0u && (ldw(pc.nodes, (cb + len - 1u) * 2u) & 0xFFu) == OP_END ? len - 1u : 0xFFFFFFFFu;
}

void serial_task() {
    if (gl_GlobalInvocationID.x != 0u || failed()) return;
    uint slot = pc.nthreads;
    if ((pc.flags & FLAG_ZERO_SERIAL) != 0u) zero_counts(slot);
    uint nregs = tw(pc.task, 0u) >> 16;
    for (uint i = 0u; i < nregs; i++) rs(i, 0u);
    set_end(pc.task, tw(pc.task, 1u));
    run(tw(pc.task, 1u), 0u, slot);
}

/* The grid-stride loop of a parallel task over total (<= 2^32 - 1 - nthreads) iterations: the
   first runs the task's prologue, the later ones start at its body. */
void par_loop32(uint total, uint ndim, uint e[3], uint s[3], uint idx_reg[3], uint cb, uint body) {
    uint g = gl_GlobalInvocationID.x, ip0 = 0u;
    uint t = g;
    LONG_LOOP(t < total) {
        uint q = t;
        for (int d = int(ndim) - 1; d >= 1; d--) {
            rs(idx_reg[d], q % e[d] + s[d]);
            q /= e[d];
        }
        rs(idx_reg[0], q + s[0]);
        if (run(cb, ip0, g) != 0) return;
        ip0 = body;
        t += pc.nthreads;
    }
    if (t < total) rec_err(RT_VK_STEPS, cb, P0, P0, P0, P0);
}

void parallel_task() {
    uint g = gl_GlobalInvocationID.x;
    if (g >= pc.nthreads) return;
    uint w0 = tw(pc.task, 0u);
    uint ndim = (w0 >> 8) & 0xFFu, nregs = w0 >> 16, cb = tw(pc.task, 1u);
    /* words 3..7: u16 ext_u[3], start_u[3], idx_reg[3], body */
    uint eu01 = tw(pc.task, 3u), eu2s0 = tw(pc.task, 4u), s12 = tw(pc.task, 5u);
    uint ir01 = tw(pc.task, 6u), ir2 = tw(pc.task, 7u);
    uint ext_u[3] = uint[3](eu01 & 0xFFFFu, eu01 >> 16, eu2s0 & 0xFFFFu);
    uint start_u[3] = uint[3](eu2s0 >> 16, s12 & 0xFFFFu, s12 >> 16);
    uint idx_reg[3] = uint[3](ir01 & 0xFFFFu, ir01 >> 16, ir2 & 0xFFFFu);
    /* dimension d over [start, stop): e[d] digits (stop - start, up to 2^32 - 1; none when
       stop <= start), the index register gets start + digit */
    uint e[3] = uint[3](1u, 1u, 1u);
    uint s[3] = uint[3](0u, 0u, 0u);
    [[unroll]] for (uint d = 0u; d < 3u; d++) {
        if (d < ndim) {
            int stop = int(ldw(pc.uni, ext_u[d]));
            int start = start_u[d] != 0xFFFFu ? int(ldw(pc.uni, start_u[d])) : 0;
            s[d] = uint(start);
            e[d] = stop > start ? uint(stop) - uint(start) : 0u;
        }
    }
    set_end(pc.task, cb);
    /* no task runs after one failed: the error word is read after the task's own loads, so
       that its trip to memory overlaps theirs (a thread of a launch of 2^22 iterations on four
       lanes runs one round: dynloop 0.169 -> 0.162 ms, H100) */
    if (failed()) return;
    for (uint d = 0u; d < ndim; d++) if (e[d] == 0u) return;
    for (uint l = 0u; l < LANES; l++) zero_counts(g + l * pc.nthreads);
    for (uint i = 0u; i < nregs; i++) {
        if (LANES == 4u) R4[i] = uvec4(0u);
        else rs(i, 0u);
    }
#if DVM_INT64
    uint64_t total = uint64_t(e[0]) * uint64_t(e[1]) * uint64_t(e[2]);
    if (LANES == 4u) {
        if (total > uint64_t(0xFFFFFFFFu)) rec_err(RT_VK_RANGE32, cb, P0, P0, P0, P0);
        else par_loop4(uint(total), ndim, e, s, idx_reg, cb, ir2 >> 16);
        return;
    }
    /* 32-bit index arithmetic when it is exact: a 64-bit division is a long call */
    if (total <= uint64_t(0xFFFFFFFFu - pc.nthreads)) { par_loop32(uint(total), ndim, e, s, idx_reg, cb, ir2 >> 16); return; }
    uint64_t t = g;
    uint ip0 = 0u; /* the first iteration runs the prologue; the later ones start at the body */
    LONG_LOOP(t < total) {
        uint64_t q = t;
        for (int d = int(ndim) - 1; d >= 1; d--) {
            rs(idx_reg[d], uint(q % uint64_t(e[d])) + s[d]);
            q /= uint64_t(e[d]);
        }
        rs(idx_reg[0], uint(q) + s[0]);
        if (run(cb, ip0, g) != 0) return;
        ip0 = ir2 >> 16;
        t += pc.nthreads;
    }
    if (t < total) rec_err(RT_VK_STEPS, cb, P0, P0, P0, P0);
#else
    uint hi, total;
    umulExtended(e[0], e[1], hi, total);
    uint hi2, lo2;
    umulExtended(total, e[2], hi2, lo2);
    if (hi != 0u || hi2 != 0u || lo2 > 0xFFFFFFFFu - pc.nthreads) {
        rec_err(RT_VK_RANGE32, tw(pc.task, 1u), P0, P0, P0, P0);
        return;
    }
    if (LANES == 4u) par_loop4(lo2, ndim, e, s, idx_reg, cb, ir2 >> 16);
    else par_loop32(lo2, ndim, e, s, idx_reg, cb, ir2 >> 16);
#endif
}

/* ---- sizer ----
 * pc.aux holds the job table, then the range table (njobs = pc.naux in the serial passes,
 * pc.flags in the reducer); pc.heap points at the sizer's scratch buffer. All written by the
 * host (vk_size_begin in vulkan_backend.c, one job a dispatch):
 *   job j (8 words): stack id, program begin (absolute node), length, first range entry,
 *     scratch word offset of its slots, result word offset in aux, reducer scratch word
 *     offset, reducer scratch words per thread
 *   range r (10 words): job, node (program-relative), lo(2), hi(2), val(2), overflow flag, 0
 *   result (3 words): value lo/hi (clamped at 0), overflow flag (32-bit path)
 * Size values take 2 words (lo, hi); on the 32-bit path hi is the sign. */
#if DVM_INT64
#define SZ int64_t
const int64_t SAT = 1099511627776l; /* DVM_SIZE_SAT */
SZ sz_ld(uvec2 ad) { return int64_t(packUint2x32(uvec2(W(ad).v, W(addw(ad, 1u)).v))); }
void sz_st(uvec2 ad, SZ v) { uvec2 p = unpackUint2x32(uint64_t(v)); W(ad).v = p.x; W(addw(ad, 1u)).v = p.y; }
SZ sat(SZ v) { return clamp(v, -SAT, SAT); }
SZ sz_add(SZ a, SZ b, inout bool ovf) { return sat(a + b); }
SZ sz_mul(SZ a, SZ b, inout bool ovf) {
    if (a == 0l || b == 0l) return 0l;
    int64_t aa = abs(a), ab = abs(b);
    if (aa > SAT / ab) return ((a < 0l) != (b < 0l)) ? -SAT : SAT;
    return sat(a * b);
}
SZ sz_of_i32(int v) { return int64_t(v); }
SZ sz_of_u32(uint v) { return int64_t(v); }
const SZ SZ_MIN = -9223372036854775807l - 1l;
#else
#define SZ int
SZ sz_ld(uvec2 ad) { return int(W(ad).v); }
void sz_st(uvec2 ad, SZ v) { W(ad).v = uint(v); W(addw(ad, 1u)).v = v < 0 ? 0xFFFFFFFFu : 0u; }
SZ sz_add(SZ a, SZ b, inout bool ovf) {
    int r = int(uint(a) + uint(b));
    if (((a ^ r) & (b ^ r)) < 0) ovf = true;
    return r;
}
SZ sz_mul(SZ a, SZ b, inout bool ovf) {
    int hi, lo;
    imulExtended(a, b, hi, lo);
    if (hi != (lo >> 31)) ovf = true;
    return lo;
}
SZ sz_of_i32(int v) { return v; }
SZ sz_of_u32(uint v) { return int(v); } /* 32-bit constants above INT_MAX set ovf below */
const SZ SZ_MIN = int(0x80000000u);
#endif

uint jw(uint j, uint k) { return ldw(pc.aux, j * 8u + k); }
uvec2 range_ad(uint njobs, uint r) { return addw(pc.aux, njobs * 8u + r * 10u); }

/* Slot k (program-relative) of the evaluation in progress: in the serial passes all slots
   live at g_ser; a reducer body reads slots before its range (g_rb) from the serial pass's
   slots and keeps its own from g_thr, as the CPU backend's per-thread copy does. */
uvec2 g_ser, g_thr;
uint g_rb;
uvec2 slot_ad(uint k) { return k < g_rb ? addw(g_ser, 2u * k) : addw(g_thr, 2u * (k - g_rb)); }
SZ sl(uint k) { return sz_ld(slot_ad(k)); }

/* dvm_size_eval of interp_core.h, step for step: evaluates program-relative nodes
 * [begin, begin + len) of the size program at absolute node pb. mode: MODE_SZ_RANGES,
 * MODE_SZ_FINAL (top-level SZ_RANGE nodes through the range table from entry r0) or
 * MODE_SZ_BODY (nbound = 1, bound0 the outermost bound variable). At most walk cap nodes. */
SZ sz_eval(uint pb, uint begin, uint len, uint mode, uint njobs, uint r0, SZ bound0,
           uint stack_id, inout bool ovf, out bool bad) {
    bad = false;
    uint fnode[MAX_DEPTH], fend[MAX_DEPTH];
    SZ fv[MAX_DEPTH], fhi[MAX_DEPTH], facc[MAX_DEPTH], var[MAX_DEPTH];
    uint nf = 0u, depth = 0u;
    if (mode == MODE_SZ_BODY) { var[0] = bound0; depth = 1u; }
#if DVM_INT64
    uint64_t steps = 0ul, cap = packUint2x32(uvec2(pc.walk_lo, pc.walk_hi));
#else
    uint steps = 0u, cap = pc.walk_hi != 0u ? 0xFFFFFFFFu : pc.walk_lo;
#endif
    uint r = r0;
    uint k = begin, end = begin + len;
    if (len == 0u) return SZ(0);
    LONG_LOOP(k < end) {
        uint nn = pb + k;
        uint w0 = ldw(pc.nodes, nn * 2u), w1 = ldw(pc.nodes, nn * 2u + 1u);
        uint op = w0 & 0xFFu, x = (w0 >> 8) & 0xFFu, a = w0 >> 16, b = w1 & 0xFFFFu, c = w1 >> 16;
        steps++;
        if (steps > cap) {
            rec_err(RT_SIZER_CAP, nn, uvec2(stack_id, 0u), uvec2(pc.walk_lo, pc.walk_hi), P0, P0);
            bad = true;
            return SZ(-1);
        }
        if (failed()) { bad = true; return SZ(-1); }
        if ((uint(steps) & 1023u) == 0u && cancelled()) {
            rec_err(RT_CANCELLED, nn, uvec2(stack_id, 0u), P0, P0, P0);
            bad = true;
            return SZ(-1);
        }
        SZ v = SZ(0);
        bool store = true, opened = false;
        switch (op) {
        case OP_SZ_CONST:
            v = sz_of_u32(a | (b << 16));
#if !DVM_INT64
            if (v < 0) ovf = true;
#endif
            break;
        case OP_SZ_ADD: v = sz_add(sl(a), sl(b), ovf); break;
        case OP_SZ_SUB: { SZ p = sl(a), q = sl(b); v = p > q ? sz_add(p, -q, ovf) : SZ(0); break; }
        case OP_SZ_MUL: v = sz_mul(sl(a), sl(b), ovf); break;
        case OP_SZ_MAX: v = max(sl(a), sl(b)); break;
        case OP_SZ_VAR: v = a < depth ? var[a] : SZ(0); break;
        case OP_SZ_LOAD: {
            SZ i = sl(a);
            uint lo = slot_w(x, SLOT_LEN), hi = slot_w(x, SLOT_LEN + 1u);
#if DVM_INT64
            bool inb = i >= 0l && uint64_t(i) < packUint2x32(uvec2(lo, hi));
#else
            bool inb = i >= 0 && (hi != 0u || uint(i) < lo);
#endif
            v = inb ? sz_of_i32(int(ldw(arr_base(x), uint(i)))) : SZ(0);
            break;
        }
        case OP_SZ_SHAPE: v = sz_of_i32(arr_dim(x, a)); break;
        case OP_SZ_PARAM: v = sz_of_i32(int(ldw(pc.uni, a))); break;
        case OP_SZ_RANGE: {
            SZ lo = sl(a), hi = sl(b);
            store = false;
            if (nf == 0u && depth == 0u && mode == MODE_SZ_RANGES) {
                uvec2 re = range_ad(njobs, r++);
                sz_st(addw(re, 2u), lo);
                sz_st(addw(re, 4u), hi);
                sz_st(slot_ad(k), SZ(0));
                k = c;
                break;
            }
            if (nf == 0u && depth == 0u && mode == MODE_SZ_FINAL) {
                uvec2 re = range_ad(njobs, r++);
                bool nonempty = sz_ld(addw(re, 2u)) < sz_ld(addw(re, 4u)) && c > k + 1u;
                SZ best = SZ_MIN;
                for (uint gi = 0u; gi < pc.stride_hi; gi++)
                    best = max(best, sz_ld(addw(pc.heap, pc.stride_lo + 2u * ((r - 1u) * pc.stride_hi + gi))));
                sz_st(slot_ad(k), nonempty ? best : SZ(0));
                if (W(addw(re, 8u)).v != 0u) ovf = true; /* the reducer's overflow flag */
                k = c;
                break;
            }
            if (lo >= hi || c <= k + 1u || depth >= MAX_DEPTH || nf >= MAX_DEPTH) {
                sz_st(slot_ad(k), SZ(0));
                k = c > k ? c : k + 1u;
                break;
            }
            fnode[nf] = k; fend[nf] = c; fv[nf] = lo; fhi[nf] = hi; facc[nf] = SZ_MIN;
            nf++;
            var[depth++] = lo;
            k = k + 1u;
            opened = true; /* no `continue` inside a switch: some drivers mishandle it */
            break;
        }
        default:
            rec_err(RT_BAD_OP, nn, uvec2(op, 0u), P0, P0, P0);
            bad = true;
            return SZ(-1);
        }
        if (opened) continue;
        if (store) { sz_st(slot_ad(k), v); k++; }
        /* finished the body of the innermost range: fold its root, step its variable */
        while (nf > 0u && k >= fend[nf - 1u]) {
            uint d = nf - 1u;
            SZ rv = sl(fend[d] - 1u);
            if (rv > facc[d]) facc[d] = rv;
            fv[d] = fv[d] + SZ(1);
            if (fv[d] < fhi[d]) { var[depth - 1u] = fv[d]; k = fnode[d] + 1u; break; }
            sz_st(slot_ad(fnode[d]), facc[d]);
            k = fend[d];
            nf--;
            depth--;
        }
    }
    if (k < end) { rec_err(RT_VK_STEPS, pb + k, P0, P0, P0, P0); bad = true; return SZ(-1); }
    return sl(end - 1u);
}

void sizer_serial() {
    if (gl_GlobalInvocationID.x != 0u || failed()) return;
    uint njobs = pc.naux;
    for (uint j = 0u; j < njobs; j++) {
        bool ovf = false, bad;
        g_ser = addw(pc.heap, jw(j, 4u)); /* serial slots live in the scratch (pc.heap) */
        g_thr = g_ser;
        g_rb = 0u;
        SZ v = sz_eval(jw(j, 1u), 0u, jw(j, 2u), pc.mode, njobs, jw(j, 3u), SZ(0), jw(j, 0u), ovf, bad);
        if (bad) return;
        if (pc.mode == MODE_SZ_FINAL) {
            uvec2 res = addw(pc.aux, jw(j, 5u));
            sz_st(res, max(v, SZ(0)));
            W(addw(res, 2u)).v = ovf ? 1u : 0u;
        }
    }
}

/* The max-reducer: thread g evaluates the bodies of every top-level range for bound values
   lo+g, lo+g+nthreads, ...; each workgroup reduces in shared memory and writes one value per
   range at pc.stride_lo + 2*(r*ngroups + group) in the scratch (ngroups = pc.stride_hi), which
   the final pass folds. Barriers stay in uniform control flow: no thread returns early. */
shared SZ red[WG];
void sizer_body() {
    uint g = gl_GlobalInvocationID.x, li = gl_LocalInvocationID.x;
    bool live = g < pc.nthreads && !failed();
    uint nr = pc.naux, njobs = pc.flags;
    for (uint r = 0u; r < nr; r++) {
        uvec2 re = range_ad(njobs, r);
        SZ best = SZ_MIN;
        bool ovf = false;
        if (live) {
            uint j = W(re).v;
            uint k = W(addw(re, 1u)).v;
            uint pb = jw(j, 1u);
            uint c = ldw(pc.nodes, (pb + k) * 2u + 1u) >> 16;
            uint blen = c - k - 1u;
            SZ lo = sz_ld(addw(re, 2u)), hi = sz_ld(addw(re, 4u));
            g_ser = addw(pc.heap, jw(j, 4u));
            g_thr = addw(pc.heap, jw(j, 6u) + g * jw(j, 7u));
            g_rb = k + 1u;
            SZ v = lo + SZ(g);
            bool stop = false;
            LONG_LOOP(v < hi && !stop) {
                bool bad;
                SZ val = sz_eval(pb, k + 1u, blen, MODE_SZ_BODY, njobs, 0u, v, jw(j, 0u), ovf, bad);
                if (bad) { live = false; stop = true; continue; }
                best = max(best, val);
#if !DVM_INT64
                if (v > 0x7FFFFFFF - int(pc.nthreads)) { stop = true; continue; }
#endif
                v += SZ(pc.nthreads);
            }
            if (v < hi && !stop && live) { rec_err(RT_VK_STEPS, pb + k, P0, P0, P0, P0); live = false; }
            if (ovf) atomicOr(W(addw(re, 8u)).v, 1u);
        }
        red[li] = best;
        barrier();
        for (uint h = WG / 2u; h > 0u; h >>= 1) {
            if (li < h) red[li] = max(red[li], red[li + h]);
            barrier();
        }
        if (li == 0u) sz_st(addw(pc.heap, pc.stride_lo + 2u * (r * pc.stride_hi + gl_WorkGroupID.x)), red[0]);
        barrier();
    }
}

/* ---- copies between buffers (vulkan_backend.c, record_copy) ----
   Invocation g copies the 16-byte units g, g + nthreads, .. of pc.walk_lo from address pc.aux
   to pc.heap, then the word g of the pc.walk_hi after them. Consecutive invocations take
   consecutive units: each subgroup moves whole cache lines. */
void copy_mode() {
    uint g = gl_GlobalInvocationID.x, n = pc.walk_lo;
    LONG_LOOP(g < n) {
        W4(addw(pc.heap, g * 4u)).v = W4(addw(pc.aux, g * 4u)).v;
        g += pc.nthreads;
    }
    g = gl_GlobalInvocationID.x;
    if (g < pc.walk_hi) W(addw(pc.heap, n * 4u + g)).v = W(addw(pc.aux, n * 4u + g)).v;
}

void main() {
    switch (pc.mode) {
    case MODE_COPY: copy_mode(); break;
    case MODE_SERIAL: serial_task(); break;
    case MODE_PARALLEL: parallel_task(); break;
    case MODE_SZ_RANGES:
    case MODE_SZ_FINAL: sizer_serial(); break;
    case MODE_SZ_BODY: sizer_body(); break;
    }
}
