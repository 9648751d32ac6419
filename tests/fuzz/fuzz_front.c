/* fuzz_front.c: libFuzzer harness for the whole compiler (tests/fuzz/run_fuzz.sh): the
 * input bytes are .dvk source. Compiling must never crash; a program it accepts must pass
 * the verifier (an emitter bug otherwise) and survive a blob round trip. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bytecode/blob.h"
#include "compiler/compile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    dvm_program *p = NULL;
    char *msg = NULL;
    int rc = dvm_compile_source((const char *)data, size, "fuzz.dvk", &p, &msg);
    if (rc) {
        if (p || !msg) abort(); /* a failure returns diagnostics and no program */
        free(msg);
        return 0;
    }
    free(msg);
    char err[512];
    if (dvm_verify(p, err, sizeof err)) abort();
    void *blob = NULL;
    size_t len = 0;
    if (dvm_blob_write(p, &blob, &len, err, sizeof err)) abort();
    dvm_program *q = NULL;
    if (dvm_blob_read(blob, len, &q, err, sizeof err)) abort();
    free(blob);
    dvm_program_free(q);
    dvm_program_free(p);
    return 0;
}
