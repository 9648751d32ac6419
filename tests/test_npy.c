/* test_npy.c: every malformation of a .npy file gets its own message; good files round-trip.
 * Fails with what was expected and what came. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/npy.h"

static int failures = 0;

/* Builds a v1.0 (or other version) image: magic, version, header length, header, data. */
static size_t image(unsigned char *buf, int major, int minor, const char *dict, const void *data, size_t dlen) {
    size_t hl = strlen(dict), pre = major == 1 ? 10 : 12;
    memcpy(buf, "\x93NUMPY", 6);
    buf[6] = (unsigned char)major;
    buf[7] = (unsigned char)minor;
    buf[8] = (unsigned char)(hl & 0xff);
    buf[9] = (unsigned char)(hl >> 8);
    if (major != 1) buf[10] = buf[11] = 0;
    memcpy(buf + pre, dict, hl);
    if (dlen) memcpy(buf + pre + hl, data, dlen);
    return pre + hl + dlen;
}

static void expect_error(const char *what, const unsigned char *buf, size_t len, const char *want) {
    dvm_npy a;
    char err[1024] = "";
    int rc = dvm_npy_parse(buf, len, "f.npy", &a, err, sizeof err);
    if (rc == 0) {
        printf("FAIL %s: parsed, expected an error containing \"%s\"\n", what, want);
        dvm_npy_free(&a);
        failures++;
    } else if (!strstr(err, want) || strncmp(err, "f.npy: ", 7) != 0) {
        printf("FAIL %s: message \"%s\", expected one starting with \"f.npy: \" and containing \"%s\"\n", what, err, want);
        failures++;
    }
}

static void expect_ok(const char *what, const unsigned char *buf, size_t len, dvm_dtype dt, int rank, const int64_t *shape) {
    dvm_npy a;
    char err[1024] = "";
    if (dvm_npy_parse(buf, len, "f.npy", &a, err, sizeof err) != 0) {
        printf("FAIL %s: expected success, got \"%s\"\n", what, err);
        failures++;
        return;
    }
    int ok = a.dtype == dt && a.rank == rank;
    for (int k = 0; ok && k < rank; k++) ok = a.shape[k] == shape[k];
    if (!ok) {
        printf("FAIL %s: expected dtype %d rank %d, got dtype %d rank %d\n", what, (int)dt, rank, (int)a.dtype, a.rank);
        failures++;
    }
    dvm_npy_free(&a);
}

#define HDR "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }   \n"

int main(void) {
    unsigned char buf[4096];
    float two[2] = {1.5f, -2.0f};
    size_t n;
    int64_t s2[1] = {2}, s23[2] = {2, 3}, s0[1] = {0};

    n = image(buf, 1, 0, HDR, two, 8);
    expect_ok("plain v1.0", buf, n, DVM_F32, 1, s2);
    n = image(buf, 2, 0, HDR, two, 8);
    expect_ok("v2.0", buf, n, DVM_F32, 1, s2);
    n = image(buf, 3, 0, HDR, two, 8);
    expect_ok("v3.0", buf, n, DVM_F32, 1, s2);
    int32_t six[6] = {1, 2, 3, 4, 5, 6};
    n = image(buf, 1, 0, "{\"shape\": (2, 3), \"fortran_order\": False, \"descr\": \"<i4\"}\n", six, 24);
    expect_ok("keys in any order, double quotes, rank 2", buf, n, DVM_I32, 2, s23);
    n = image(buf, 1, 0, "{'descr': '<f4', 'fortran_order': False, 'shape': (0,), }\n", NULL, 0);
    expect_ok("empty array", buf, n, DVM_F32, 1, s0);
    n = image(buf, 1, 0, "{'descr': '<f4', 'fortran_order': False, 'shape': (), }\n", two, 4);
    expect_ok("0-d array parses (callers reject it for array parameters)", buf, n, DVM_F32, 0, NULL);

    expect_error("empty file", buf, 0, "not a .npy file");
    memcpy(buf, "\x93NUMPX\x01\x00\x00\x00", 10);
    expect_error("bad magic", buf, 10, "magic");
    n = image(buf, 4, 0, HDR, two, 8);
    expect_error("version 4.0", buf, n, "unsupported .npy format version 4.0");
    n = image(buf, 1, 1, HDR, two, 8);
    expect_error("version 1.1", buf, n, "version 1.1");
    n = image(buf, 1, 0, HDR, two, 8);
    buf[8] = 0xff;
    buf[9] = 0x7f;
    expect_error("header length past the end", buf, n, "runs past the end");
    n = image(buf, 2, 0, HDR, NULL, 0);
    expect_error("v2 truncated to its length field", buf, 11, "truncated .npy header");
    n = image(buf, 1, 0, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }   ", two, 8);
    expect_error("header without newline", buf, n, "newline");
    n = image(buf, 1, 0, "['descr']\n", NULL, 0);
    expect_error("header not a dict", buf, n, "not a dict");
    n = image(buf, 1, 0, "{descr: '<f4'}\n", NULL, 0);
    expect_error("unquoted key", buf, n, "expected a quoted key");
    n = image(buf, 1, 0, "{'descr' '<f4'}\n", NULL, 0);
    expect_error("missing colon", buf, n, "expected ':'");
    n = image(buf, 1, 0, "{'descr': '<f4' 'fortran_order': False}\n", NULL, 0);
    expect_error("missing comma", buf, n, "expected ',' or '}'");
    n = image(buf, 1, 0, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'extra': 1}\n", two, 8);
    expect_error("unknown key", buf, n, "unexpected key 'extra'");
    n = image(buf, 1, 0, "{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2,)}\n", two, 8);
    expect_error("duplicate key", buf, n, "duplicate key 'descr'");
    n = image(buf, 1, 0, "{'fortran_order': False, 'shape': (2,)}\n", two, 8);
    expect_error("missing descr", buf, n, "missing key 'descr'");
    n = image(buf, 1, 0, "{'descr': '<f4', 'shape': (2,)}\n", two, 8);
    expect_error("missing fortran_order", buf, n, "missing key 'fortran_order'");
    n = image(buf, 1, 0, "{'descr': '<f4', 'fortran_order': False}\n", two, 8);
    expect_error("missing shape", buf, n, "missing key 'shape'");
    n = image(buf, 1, 0, "{'descr': 5, 'fortran_order': False, 'shape': (2,)}\n", two, 8);
    expect_error("descr not a string", buf, n, "'descr' must be a dtype string");
    n = image(buf, 1, 0, "{'descr': '<f8', 'fortran_order': False, 'shape': (1,)}\n", two, 8);
    expect_error("f8", buf, n, "unsupported dtype '<f8'");
    n = image(buf, 1, 0, "{'descr': '>f4', 'fortran_order': False, 'shape': (2,)}\n", two, 8);
    expect_error("big-endian", buf, n, "big-endian");
    n = image(buf, 1, 0, "{'descr': '|i4', 'fortran_order': False, 'shape': (2,)}\n", two, 8);
    expect_error("'|' byte order on a 4-byte type", buf, n, "byte order '|'");
    n = image(buf, 1, 0, "{'descr': '<f4', 'fortran_order': True, 'shape': (2,)}\n", two, 8);
    expect_error("fortran order", buf, n, "fortran_order is True");
    n = image(buf, 1, 0, "{'descr': '<f4', 'fortran_order': 0, 'shape': (2,)}\n", two, 8);
    expect_error("fortran_order not a bool", buf, n, "must be True or False");
    n = image(buf, 1, 0, "{'descr': '<f4', 'fortran_order': False, 'shape': [2]}\n", two, 8);
    expect_error("shape as a list", buf, n, "'shape' must be a tuple");
    n = image(buf, 1, 0, "{'descr': '<f4', 'fortran_order': False, 'shape': (2)}\n", two, 8);
    expect_error("(2) is not a tuple", buf, n, "'shape' must be a tuple");
    n = image(buf, 1, 0, "{'descr': '<f4', 'fortran_order': False, 'shape': (-2,)}\n", two, 8);
    expect_error("negative dimension", buf, n, "'shape' must be a tuple");
    n = image(buf, 1, 0, "{'descr': '<f4', 'fortran_order': False, 'shape': (2.5,)}\n", two, 8);
    expect_error("float dimension", buf, n, "'shape' must be a tuple");
    n = image(buf, 1, 0, "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999,)}\n", two, 8);
    expect_error("huge dimension", buf, n, "too large");
    n = image(buf, 1, 0, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,)}\n", two, 4);
    expect_error("33 dimensions", buf, n, "more than 32 dimensions");
    n = image(buf, 1, 0, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,)} x\n", two, 8);
    expect_error("text after the dict", buf, n, "unexpected text after the dict");
    n = image(buf, 1, 0, HDR, two, 6);
    expect_error("truncated data", buf, n, "truncated data");
    n = image(buf, 1, 0, HDR, six, 12);
    expect_error("extra data", buf, n, "extra bytes");

    /* shapes whose element count overflows: refused by checked arithmetic, naming the file */
    n = image(buf, 1, 0, "{'descr': '<f4', 'fortran_order': False, 'shape': (1099511627776, 1099511627776), }\n", NULL, 0);
    expect_error("2^40 x 2^40 elements", buf, n, "shape (1099511627776, 1099511627776) is too large");
    n = image(buf, 1, 0, "{'descr': '<f4', 'fortran_order': False, 'shape': (1048576, 1048576, 2), }\n", NULL, 0);
    expect_error("2^41 elements", buf, n, "is too large (more than 2^40 elements)");
    int64_t s_big0[3] = {(int64_t)1 << 40, (int64_t)1 << 40, 0};
    n = image(buf, 1, 0, "{'descr': '<f4', 'fortran_order': False, 'shape': (1099511627776, 1099511627776, 0), }\n", NULL, 0);
    expect_ok("a zero extent makes any shape empty", buf, n, DVM_F32, 3, s_big0);
    {
        /* a v2.0 header longer than DVM_NPY_MAX_HEADER is refused before it is read */
        size_t hl = DVM_NPY_MAX_HEADER + 64;
        unsigned char *big = (unsigned char *)malloc(12 + hl + 8);
        if (big) {
            memcpy(big, "\x93NUMPY\x02\x00", 8);
            big[8] = (unsigned char)(hl & 0xff);
            big[9] = (unsigned char)(hl >> 8);
            big[10] = (unsigned char)(hl >> 16);
            big[11] = 0;
            const char *d = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }";
            memset(big + 12, ' ', hl);
            memcpy(big + 12, d, strlen(d));
            big[12 + hl - 1] = '\n';
            memcpy(big + 12 + hl, two, 8);
            expect_error("header over the limit", big, 12 + hl + 8, "longer than the limit of 65536 bytes");
            free(big);
        }
    }

    /* reading a file: only the header and the announced data are read, and the file's size
     * must match (before the fix, /dev/zero was read until memory ran out) */
    {
        static const struct {
            const char *what;
            size_t dlen;
            const char *want;
        } bad[] = {{"file with truncated data", 6, "test_npy_bad.npy: truncated data"},
                   {"file with extra data", 12, "test_npy_bad.npy: extra bytes after the data"}};
        for (size_t t = 0; t < sizeof bad / sizeof bad[0]; t++) {
            n = image(buf, 1, 0, HDR, six, bad[t].dlen);
            FILE *f = fopen("test_npy_bad.npy", "wb");
            if (f) {
                fwrite(buf, 1, n, f);
                fclose(f);
            }
            dvm_npy a;
            char e[1024] = "";
            if (dvm_npy_read("test_npy_bad.npy", &a, e, sizeof e) == 0 || !strstr(e, bad[t].want)) {
                printf("FAIL %s: message \"%s\", expected one containing \"%s\"\n", bad[t].what, e, bad[t].want);
                failures++;
            }
            remove("test_npy_bad.npy");
        }
        dvm_npy a;
        char e[1024] = "";
        FILE *z = fopen("/dev/zero", "rb");
        if (z) {
            fclose(z);
            if (dvm_npy_read("/dev/zero", &a, e, sizeof e) == 0 || !strstr(e, "/dev/zero: not a .npy file")) {
                printf("FAIL /dev/zero: message \"%s\", expected \"/dev/zero: not a .npy file\"\n", e);
                failures++;
            }
        }
    }

    /* write then read back: the header is padded to 64 bytes and the values survive */
    const char *path = "test_npy_roundtrip.npy";
    char err[1024] = "";
    float vals[6] = {0.5f, 1, 2, 3, 4, -7.25f};
    if (dvm_npy_write(path, DVM_F32, 2, s23, vals, err, sizeof err) != 0) {
        printf("FAIL write: %s\n", err);
        failures++;
    } else {
        dvm_npy a;
        FILE *f = fopen(path, "rb");
        long sz = 0;
        if (f) {
            fseek(f, 0, SEEK_END);
            sz = ftell(f);
            fclose(f);
        }
        if ((sz - 24) % 64 != 0) {
            printf("FAIL write: header of %ld bytes is not padded to a multiple of 64\n", sz - 24);
            failures++;
        }
        if (dvm_npy_read(path, &a, err, sizeof err) != 0) {
            printf("FAIL read back: %s\n", err);
            failures++;
        } else {
            if (a.rank != 2 || a.shape[0] != 2 || a.shape[1] != 3 || memcmp(a.data, vals, sizeof vals) != 0) {
                printf("FAIL read back: shape or values differ\n");
                failures++;
            }
            dvm_npy_free(&a);
        }
        remove(path);
    }
    dvm_npy a;
    if (dvm_npy_read("no/such/file.npy", &a, err, sizeof err) == 0 || !strstr(err, "no/such/file.npy: cannot open")) {
        printf("FAIL missing file: message \"%s\"\n", err);
        failures++;
    }
    if (failures) {
        printf("%d npy check(s) failed\n", failures);
        return 1;
    }
    printf("all npy checks passed\n");
    return 0;
}
