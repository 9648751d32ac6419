/* fuzz_blob.c: libFuzzer harness for the blob reader and verifier (tests/fuzz/run_fuzz.sh).
 * Each input is read twice: as it is, and with its header's ops hash, length and checksum
 * fixed up, so that mutations reach the section parser and the verifier instead of dying
 * at the checksum. Whatever is accepted must verify, rewrite to the same bytes and
 * disassemble; anything else is a bug (abort, so libFuzzer records it). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bytecode/blob.h"

static void sink(void *ctx, const char *line) {
    (void)ctx;
    (void)line;
}

static void check_one(const uint8_t *data, size_t size) {
    dvm_program *p = NULL;
    char err[512];
    if (dvm_blob_read(data, size, &p, err, sizeof err)) {
        if (p || strncmp(err, "blob: ", 6)) abort(); /* failures leave nothing and say why */
        return;
    }
    if (dvm_verify(p, err, sizeof err)) abort();
    void *again = NULL;
    size_t len = 0;
    if (dvm_blob_write(p, &again, &len, err, sizeof err) || len != size || memcmp(again, data, size)) abort();
    free(again);
    dvm_disasm(p, sink, NULL);
    dvm_program_free(p);
}

static void put64(uint8_t *b, uint64_t v) {
    for (int i = 0; i < 8; i++) b[i] = (uint8_t)(v >> (8 * i));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    check_one(data, size);
    if (size >= DVM_BLOB_HEADER_SIZE + 8) {
        uint8_t *b = malloc(size);
        if (!b) return 0;
        memcpy(b, data, size);
        memcpy(b, DVM_BLOB_MAGIC, 4);
        put64(b + 16, dvm_ops_hash());
        put64(b + 24, size);
        put64(b + size - 8, dvm_blob_checksum(b, size - 8));
        check_one(b, size);
        free(b);
    }
    return 0;
}
