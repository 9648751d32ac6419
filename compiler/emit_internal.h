/* emit_internal.h: state shared by the emitter's files (emit.c assembles the program,
 * emit_code.c lowers statements and expressions of one task, emit_size.c builds stack
 * size programs). Not a contract: nothing outside compiler/emit*.c includes it. */
#ifndef DVM_EMIT_INTERNAL_H
#define DVM_EMIT_INTERNAL_H
#include <stdint.h>
#include "compiler/compile.h"

/* The program under construction: growable arrays that become the dvm_program. */
typedef struct emit_prog {
    dvm_diags *d;
    int oom;
    dvm_kernel_desc *kernels; uint32_t nkernels, ckernels;
    dvm_param_desc *params;   uint32_t nparams, cparams;
    dvm_sym_desc *syms;       uint32_t nsyms, csyms;
    dvm_slot_desc *slots;     uint32_t nslots, cslots;
    dvm_task_desc *tasks;     uint32_t ntasks, ctasks;
    dvm_stack_desc *stacks;   uint32_t nstacks, cstacks;
    dvm_node *nodes;          uint32_t nnodes, cnodes;
    uint32_t *lines;          uint32_t clines;
    uint16_t *cols;           uint32_t ccols;
    uint32_t *consts;         uint32_t nconsts, cconsts;
    char *strings;            uint32_t nstrings, cstrings;
    uint32_t *khash; uint32_t khcap; /* constant pool index + 1, open addressing */
    uint32_t *shash; uint32_t shcap; /* string offset + 1 */
} emit_prog;

/* One variant of one kernel being lowered. */
typedef struct emit_variant {
    emit_prog *ep;
    const ir_kernel *k;
    const ir_variant *v;
    int vk;                /* dvm_variant_kind */
    uint32_t slot_begin;   /* this variant's slots in ep->slots */
    int *uslot;            /* per kernel variable: its uniform slot, -1 if none yet */
    const int *param_uslot; /* per kernel parameter: uniform slot of a scalar, -1 for arrays */
    int nscalars;
    uint32_t nuniforms;    /* next free uniform slot */
    int stage, phase;      /* of the tasks being emitted (ir_top.stage, phase) */
    int failed;
} emit_variant;

/* Growth of the program's arrays; returns 0 (and sets ep->oom) when out of memory. */
int emit_grow(emit_prog *ep, void **arr, uint32_t *cap, uint32_t need, size_t elem);
#define GROW(ep, arr, cap, need) emit_grow((ep), (void **)&(ep)->arr, &(ep)->cap, (need), sizeof *(ep)->arr)

uint32_t emit_string(emit_prog *ep, const char *s);
uint32_t emit_const(emit_prog *ep, uint32_t word);
/* Appends one node to the program's node array; returns its index or UINT32_MAX. */
uint32_t emit_node(emit_prog *ep, dvm_node n, int line, int col);

/* Uniform slot of a PARAM / SHAPESYM / GLOBAL variable (GLOBAL: allocated on first use). */
int emit_var_uslot(emit_variant *ev, int var);
/* Allocates a fresh hidden uniform slot (extents of parallel loops). */
int emit_hidden_uslot(emit_variant *ev, int line, int col);

/* emit_code.c: one task. `stmts` are serial statements (NULL for a parallel task);
 * `hidden` lists expressions to store into uniform slots `hidden_u` at the end of a serial
 * task. For a parallel task `top` is the loop. Appends the task; 0 on success. */
int emit_task_serial(emit_variant *ev, ir_stmt *const *stmts, int nstmts, ir_expr *const *hidden,
                     const int *hidden_u, int nhidden, int line);
int emit_task_parallel(emit_variant *ev, const ir_top *top, const uint16_t ext_u[DVM_MAX_PAR_DIMS],
                       const uint16_t start_u[DVM_MAX_PAR_DIMS]);

/* emit_size.c: fills the sizing fields of a stack descriptor from its size tree. */
int emit_stack_size(emit_variant *ev, const ir_stack *st, dvm_stack_desc *sd);

#endif
