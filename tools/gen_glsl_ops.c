/* gen_glsl_ops: build-time generator for the Vulkan interpreter.
 *   gen_glsl_ops INTERP.comp OUT.glsl
 * Writes `const uint OP_NAME = N;` for every row of bytecode/ops.def to OUT.glsl, with each
 * opcode's self-update form (su_form, from the rows' PROPS) and what else the GLSL interpreter
 * shares with the C side (limits, error codes and record, heap addressing, push constants and
 * parameter tables: bytecode/bc.h, gpu_abi.h), and fails
 * (exit 1, naming the opcodes) when INTERP.comp has no `case OP_NAME:` for some opcode, so
 * that adding an opcode without a GLSL implementation fails the build. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <stddef.h>

#define DVM_BC_DEVICE_ONLY
#include "bytecode/bc.h"
#include "vm/interp/gpu_abi.h"

typedef struct { const char *name; int num; unsigned props; } op_row;

static const op_row rows[] = {
#define DVM_OP(name, num, fmt, flags, props, doc) { #name, num, (props) },
#define DVM_DOP DVM_OP
#include "bytecode/ops.def"
#undef DVM_OP
#undef DVM_DOP
};

static char *slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    if (fseek(f, 0, SEEK_END) != 0) { fclose(f); return NULL; }
    long n = ftell(f);
    if (n < 0 || fseek(f, 0, SEEK_SET) != 0) { fclose(f); return NULL; }
    char *s = malloc((size_t)n + 1);
    if (!s) { fclose(f); return NULL; }
    size_t got = fread(s, 1, (size_t)n, f);
    fclose(f);
    s[got] = 0;
    return s;
}

#define STR_(x) #x
#define STR(x) STR_(x) /* a macro's expansion as text */

/* Everything else interp.comp shares with the C side: limits, error codes and record, heap
 * addressing, the push constants and the parameter tables (bytecode/bc.h, gpu_abi.h). */
static void write_abi(FILE *o) {
    fprintf(o, "\n/* limits (bytecode/bc.h) */\n");
    fprintf(o, "const uint MAX_REGS = %uu;\nconst uint MAX_DEPTH = %uu;\nconst uint MAX_RANK = %uu;\n",
            (unsigned)DVM_MAX_REGS, (unsigned)DVM_MAX_SIZE_DEPTH, (unsigned)DVM_MAX_RANK);
    fprintf(o, "\n/* runtime error codes (bytecode/bc.h, DVM_RT_CODES; gpu_abi.h, DVM_VK_RT_*) */\n");
#define RT_(name, num) fprintf(o, "const int RT_%s = %d;\n", #name, (int)(num));
    DVM_RT_CODES(RT_)
#undef RT_
    fprintf(o, "const int RT_VK_RANGE32 = %d;\nconst int RT_VK_STEPS = %d;\n", DVM_VK_RT_RANGE32, DVM_VK_RT_STEPS);
    /* the error record's words: code, task, node, then p[0..3] as (lo, hi) pairs */
    _Static_assert(offsetof(dvm_rt_error, code) == 0 && sizeof(int64_t) == 8, "error record layout");
    _Static_assert(DVM_VK_SLOT_SHAPE + DVM_MAX_RANK <= DVM_VK_SLOT_WORDS, "the slot table holds the shape");
    _Static_assert(sizeof(dvm_rt_error) <= DVM_VK_ERR_WORDS * 4, "the error record fits its words");
    fprintf(o, "const uint ERR_TASK = %uu, ERR_NODE = %uu, ERR_P = %uu;\n", (unsigned)(offsetof(dvm_rt_error, task) / 4),
            (unsigned)(offsetof(dvm_rt_error, node) / 4), (unsigned)(offsetof(dvm_rt_error, p) / 4));
    fprintf(o, "const uint ERR_WORDS = %uu;\n", (unsigned)DVM_VK_ERR_WORDS);
    fprintf(o, "\n/* heap addressing (bytecode/bc.h) */\n#define HEAP_SLOT_WORD(slot, stride, word) %s\n",
            STR(DVM_HEAP_SLOT_WORD(slot, stride, word)));
    fprintf(o, "\n/* per-dispatch parameters (gpu_abi.h, DVM_VK_PUSH_FIELDS) */\nlayout(push_constant) uniform PC {\n");
#define A_(name) fprintf(o, "    uvec2 %s;\n", #name);
#define W_(name) fprintf(o, "    uint %s;\n", #name);
    DVM_VK_PUSH_FIELDS(A_, W_)
#undef A_
#undef W_
    fprintf(o, "} pc;\n");
    fprintf(o, "const uint MODE_SERIAL = %uu, MODE_PARALLEL = %uu, MODE_SZ_RANGES = %uu, MODE_SZ_FINAL = %uu, "
               "MODE_SZ_BODY = %uu, MODE_COPY = %uu;\n",
            DVM_VK_MODE_SERIAL, DVM_VK_MODE_PARALLEL, DVM_VK_MODE_SZ_RANGES, DVM_VK_MODE_SZ_FINAL, DVM_VK_MODE_SZ_BODY,
            DVM_VK_MODE_COPY);
    fprintf(o, "const uint FLAG_ZERO_SERIAL = %uu;\n", DVM_VK_FLAG_ZERO_SERIAL);
    fprintf(o, "const uint FLAG_ROWS = %uu;\n", DVM_VK_FLAG_ROWS);
    fprintf(o, "#define WG_SIZE %u\n", DVM_VK_WG_SIZE);
    fprintf(o, "const uint SLOT_ADDR = %uu, SLOT_LEN = %uu, SLOT_SHAPE = %uu, SLOT_WORDS = %uu;\n", DVM_VK_SLOT_ADDR,
            DVM_VK_SLOT_LEN, DVM_VK_SLOT_SHAPE, DVM_VK_SLOT_WORDS);
    fprintf(o, "const uint STACK_OFF = %uu, STACK_CAP = %uu, STACK_WORDS = %uu;\n", DVM_VK_STACK_OFF, DVM_VK_STACK_CAP,
            DVM_VK_STACK_WORDS);
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: gen_glsl_ops INTERP.comp OUT.glsl\n");
        return 2;
    }
    char *src = slurp(argv[1]);
    if (!src) {
        fprintf(stderr, "gen_glsl_ops: cannot read %s\n", argv[1]);
        return 1;
    }
    size_t nrows = sizeof rows / sizeof rows[0];
    int missing = 0;
    for (size_t i = 0; i < nrows; i++) {
        char pat[96];
        snprintf(pat, sizeof pat, "case OP_%s:", rows[i].name);
        if (!strstr(src, pat)) {
            fprintf(stderr, "%s: error: opcode %s (%d) has no `%s` in the GLSL interpreter\n",
                    argv[1], rows[i].name, rows[i].num, pat);
            missing++;
        }
    }
    free(src);
    if (missing) return 1;
    FILE *o = fopen(argv[2], "w");
    if (!o) {
        fprintf(stderr, "gen_glsl_ops: cannot write %s\n", argv[2]);
        return 1;
    }
    fprintf(o, "/* generated by gen_glsl_ops from bytecode/ops.def, bytecode/bc.h and vm/interp/gpu_abi.h: do not edit */\n");
    for (size_t i = 0; i < nrows; i++) fprintf(o, "const uint OP_%s = %du;\n", rows[i].name, rows[i].num);
    /* the self-update forms (bc.h, enum dvm_su_form) and each opcode's (ops.def, DVM_SU) */
    fprintf(o, "const uint SU_NONE = %uu, SU_FMA_K = %uu, SU_MUL_R = %uu, SU_MUL_K = %uu, SU_ADD_R = %uu, "
               "SU_ADD_K = %uu, SU_SUB_R = %uu, SU_FMA_R = %uu;\n",
            (unsigned)DVM_SU_NONE, (unsigned)DVM_SU_FMA_K, (unsigned)DVM_SU_MUL_R, (unsigned)DVM_SU_MUL_K,
            (unsigned)DVM_SU_ADD_R, (unsigned)DVM_SU_ADD_K, (unsigned)DVM_SU_SUB_R, (unsigned)DVM_SU_FMA_R);
    fprintf(o, "uint su_form(uint op) {\n    switch (op) {\n");
    for (size_t i = 0; i < nrows; i++) {
        unsigned form = (rows[i].props >> DVM_SU_SHIFT) & 7u;
        if (form) fprintf(o, "    case OP_%s: return %uu;\n", rows[i].name, form);
    }
    fprintf(o, "    default: return SU_NONE;\n    }\n}\n");
    write_abi(o);
    if (fclose(o) != 0) {
        fprintf(stderr, "gen_glsl_ops: cannot write %s\n", argv[2]);
        return 1;
    }
    return 0;
}
