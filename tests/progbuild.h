/* progbuild.h: a dvm_program written by hand, node by node, for the backend unit tests
 * (test_interp.c, test_vulkan.c): one kernel, forward variant. Include after check.h. */
#ifndef DVM_TESTS_PROGBUILD_H
#define DVM_TESTS_PROGBUILD_H
#include <string.h>
#include "bytecode/bc.h"
#include "heap/heap.h"
#include "vm/backend.h"

/* ---- the adstack heap's allocator over one backend (vm/launch.c passes its context's) ---- */
typedef struct heap_be {
    const dvm_backend_vtbl *vt;
    dvm_backend *be;
} heap_be;
static inline int heap_be_alloc(void *user, size_t bytes, void **out, char *err, size_t errlen)
{
    heap_be *h = (heap_be *)user;
    dvm_buffer *b = NULL;
    int rc = h->vt->alloc(h->be, bytes, &b, err, errlen);
    *out = b;
    return rc;
}
static inline void heap_be_free(void *user, void *buf)
{
    heap_be *h = (heap_be *)user;
    h->vt->free(h->be, (dvm_buffer *)buf);
}

/* ---- a program under construction: one kernel, forward variant ---- */
#define MAXN 4096
static dvm_node nodes[MAXN];
static uint32_t nn;
static dvm_task_desc tasks[16];
static uint32_t nt;
static dvm_stack_desc stacks[8];
static uint32_t ns;
static uint32_t consts[64];
static uint32_t nk;
static char strings[64] = "\0boom";

static inline void reset(void)
{
    nn = nt = ns = nk = 0;
    memset(tasks, 0, sizeof tasks);
    memset(stacks, 0, sizeof stacks);
}
static inline void N(uint8_t op, uint8_t x, uint16_t a, uint16_t b, uint16_t c)
{
    dvm_node n = {op, x, a, b, c};
    nodes[nn++] = n;
}
static inline uint16_t K(uint32_t v) { consts[nk] = v; return (uint16_t)nk++; }
static inline void CI(uint16_t r, uint32_t v) { N(DVM_OP_CONST, 0, r, (uint16_t)(v & 0xFFFF), (uint16_t)(v >> 16)); }
static inline void CF(uint16_t r, float f) { CI(r, f2u(f)); }
/* begins a task at the current node; returns its index */
static inline dvm_task_desc *task(int kind, int ndim)
{
    dvm_task_desc *t = &tasks[nt++];
    t->kind = (uint8_t)kind;
    t->ndim = (uint8_t)ndim;
    t->nregs = 64;
    t->code_begin = nn;
    for (int d = 0; d < DVM_MAX_PAR_DIMS; d++) t->start_u[d] = DVM_NO_SLOT;
    return t;
}
static inline void end_task(dvm_task_desc *t) { t->code_len = nn - t->code_begin; }
static inline uint16_t rel(dvm_task_desc *t) { return (uint16_t)(nn - t->code_begin); }

/* The program built so far, and its one variant (forward) over nslots slots and nuni uniforms. */
static inline void pb_program(dvm_program *p, dvm_variant_desc *v, uint32_t nslots, uint32_t nuni)
{
    memset(p, 0, sizeof *p);
    p->nodes = nodes; p->nnodes = nn;
    p->tasks = tasks; p->ntasks = nt;
    p->stacks = stacks; p->nstacks = ns;
    p->consts = consts; p->nconsts = nk;
    p->strings = strings; p->nstrings_bytes = sizeof strings;
    memset(v, 0, sizeof *v);
    v->ntasks = nt; v->nstacks = ns; v->nslots = nslots; v->nuniforms = nuni; v->present = 1;
}

#endif
