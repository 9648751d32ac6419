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
const uint RS_WORDS = REGS_SHARED ? REGS * WG : 1u;
const uint RP_WORDS = REGS_SHARED ? 1u : REGS;
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
uvec2 addw(uvec2 b, uint w) {
    uint c;
    uint lo = uaddCarry(b.x, w << 2, c);
    return uvec2(lo, b.y + c + (w >> 30));
}
#if DVM_INT64
uvec2 addw64(uvec2 b, uint64_t w) {
    uint64_t a = packUint2x32(b) + w * 4ul;
    return unpackUint2x32(a);
}
#endif
uint ldw(uvec2 b, uint i) { return W(addw(b, i)).v; }

uvec2 P(int v) { return uvec2(uint(v), v < 0 ? 0xFFFFFFFFu : 0u); }
const uvec2 P0 = uvec2(0u);

bool failed() { return WC(pc.err).v != 0u; }
/* Backward jumps between two reads of the cancel word (interp_run.h, DVM_CANCEL_EVERY). */
const uint CANCEL_EVERY = 64u;
uint g_polls = 0u;
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
/* Checks flat index i of slot x; records OOB (axis -1) and returns false when outside; base:
   the array's address. */
bool chk(uint x, int i, uint node, out uvec2 base) {
    uvec4 s = slot_al(x);
    base = s.xy;
    /* the element count clamped to the i32 index range: registers hold i32 indices */
    int n = (s.w != 0u || s.z > 0x7FFFFFFFu) ? 0x7FFFFFFF : int(s.z);
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

/* ---- heap: slot s owns words [s*stride, (s+1)*stride); stack i at stack_off[i] (the stack
   table, gpu_abi.h); HEAP_SLOT_WORD is bc.h's ---- */
uint stack_w(uint i, uint k) { return ldw(pc.stacks, i * STACK_WORDS + k); }
#if DVM_INT64
uint64_t stride64() { return packUint2x32(uvec2(pc.stride_lo, pc.stride_hi)); }
uvec2 stack_base(uint slot, uint i) {
    uint64_t off = packUint2x32(uvec2(stack_w(i, STACK_OFF), stack_w(i, STACK_OFF + 1u)));
    return addw64(pc.heap, HEAP_SLOT_WORD(uint64_t(slot), stride64(), off));
}
#else
/* The host refuses heaps of 2^32 words or more on this path, so 32-bit offsets are exact. */
uvec2 stack_base(uint slot, uint i) {
    return addw(pc.heap, HEAP_SLOT_WORD(slot, pc.stride_lo, stack_w(i, STACK_OFF)));
}
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

/* Runs one iteration of the task whose code starts at node cb, from its node ip0 (0, or the
   body for a parallel task's later iterations: the prologue runs once per invocation);
   slot = heap slot. Returns 0 at END, 1 after a runtime error (or when another thread
   recorded one). */
int run(uint cb, uint ip0, uint slot) {
    uint ip = ip0;
    LONG_LOOP(true) {
        uint n = cb + ip;
        uvec2 nw = W2(addw(pc.nodes, n * 2u)).v; /* one 8-byte load */
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
            if (x == 0u && c + 1u == ip && iv(a) < int(hi)) {
                uint bn = cb + c, v0 = ldw(pc.nodes, bn * 2u), v1 = ldw(pc.nodes, bn * 2u + 1u);
                uint bop = v0 & 0xFFu, ba = v0 >> 16, bb = v1 & 0xFFFFu, bc = v1 >> 16;
                /* the forms (su_form, generated from ops.def) and their m and k: bc.h, enum
                   dvm_su_form and DVM_SELF_UPDATE */
                uint su = su_form(bop);
                bool self = su == SU_FMA_K ? bb != ba
                            : (su == SU_MUL_R || su == SU_ADD_R) ? ((bb == ba) != (bc == ba))
                            : (su == SU_MUL_K || su == SU_ADD_K) ? bb == ba
                            : su == SU_SUB_R ? (bb == ba && bc != ba)
                            : su == SU_FMA_R ? (bb != ba && bc != ba) : false;
                uint bo = (su == SU_FMA_K || su == SU_FMA_R) ? bb : (su == SU_MUL_K || su == SU_ADD_K) ? ba : bb == ba ? bc : bb;
                uint bk = su == SU_FMA_R ? bc : bo; /* k's register */
                uint steps = hi - rg(a) - 1u;
                if (self && a != ba && b != ba && a != bo && a != bk && steps < 65535u * 65535u) {
                    /* the node as v * m + k; fma, fused or not, gives the node's result: for
                       FMAFK and FMAFR it is the node's own fma, and for the others one of its
                       two steps is exact (x * 1, or + -0.0) */
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
            W(addw(sb, 1u + cnt)).v = rg(b);
            W(sb).v = cnt + 1u;
            break;
        }
        case OP_POP: {
            uvec2 sb = stack_base(slot, b);
            uint cnt = W(sb).v;
            if (cnt == 0u) { rec_err(RT_ADSTACK_UNDERFLOW, n, uvec2(b, 0u), P0, P0, P0); return 1; }
            rs(a, W(addw(sb, cnt)).v);
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
        ip = next;
    }
    rec_err(RT_VK_STEPS, cb + ip, P0, P0, P0, P0);
    return 1;
}

/* ---- task descriptors: dvm_task_desc, 8 words (bytecode/bc.h) ---- */
/* word k of task t's dvm_task_desc (9 words: vulkan_backend.c uploads the structs as they are) */
uint tw(uint t, uint k) { return ldw(pc.tasks, t * 10u + k); }

void serial_task() {
    if (gl_GlobalInvocationID.x != 0u || failed()) return;
    uint slot = pc.nthreads;
    if ((pc.flags & FLAG_ZERO_SERIAL) != 0u) zero_counts(slot);
    uint nregs = tw(pc.task, 0u) >> 16;
    for (uint i = 0u; i < nregs; i++) rs(i, 0u);
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
    if (g >= pc.nthreads || failed()) return;
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
    for (uint d = 0u; d < ndim; d++) {
        int stop = int(ldw(pc.uni, ext_u[d]));
        int start = start_u[d] != 0xFFFFu ? int(ldw(pc.uni, start_u[d])) : 0;
        s[d] = uint(start);
        e[d] = stop > start ? uint(stop) - uint(start) : 0u;
    }
    for (uint d = 0u; d < ndim; d++) if (e[d] == 0u) return;
    zero_counts(g);
    for (uint i = 0u; i < nregs; i++) rs(i, 0u);
#if DVM_INT64
    uint64_t total = uint64_t(e[0]) * uint64_t(e[1]) * uint64_t(e[2]);
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
    par_loop32(lo2, ndim, e, s, idx_reg, cb, ir2 >> 16);
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

void main() {
    switch (pc.mode) {
    case MODE_SERIAL: serial_task(); break;
    case MODE_PARALLEL: parallel_task(); break;
    case MODE_SZ_RANGES:
    case MODE_SZ_FINAL: sizer_serial(); break;
    case MODE_SZ_BODY: sizer_body(); break;
    }
}
