/* fuzz_npy.c: libFuzzer harness for the .npy reader (tests/fuzz/run_fuzz.sh): the input bytes
 * are a file's contents. Parsing must never crash or overflow (shapes, counts and sizes are
 * checked arithmetic); an accepted array must hold exactly count elements of its dtype. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli/npy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    dvm_npy a;
    char err[512];
    if (dvm_npy_parse(data, size, "fuzz.npy", &a, err, sizeof err)) {
        if (!err[0]) abort(); /* a refusal says why */
        return 0;
    }
    int64_t count = 1;
    int empty = 0;
    for (int k = 0; k < a.rank; k++) {
        if (a.shape[k] < 0 || a.shape[k] > DVM_NPY_MAX_COUNT) abort();
        if (a.shape[k] == 0) empty = 1;
    }
    for (int k = 0; k < a.rank && !empty; k++) {
        if (count > DVM_NPY_MAX_COUNT / a.shape[k]) abort(); /* the reader accepted an overflowing shape */
        count *= a.shape[k];
    }
    if (empty) count = 0;
    if (count != a.count || (a.count && !a.data)) abort();
    volatile uint8_t sink = 0; /* every element is readable */
    for (int64_t i = 0; i < a.count * 4; i++) sink ^= ((const uint8_t *)a.data)[i];
    (void)sink;
    dvm_npy_free(&a);
    return 0;
}
