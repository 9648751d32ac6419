/* check.h: the one check macro of the C unit tests. A failed check prints the place and
 * what was expected and what came, counts the failure, and the test goes on; main returns
 * `fails != 0`. Also 32-bit word <-> f32 bit casts. */
#ifndef DVM_TESTS_CHECK_H
#define DVM_TESTS_CHECK_H
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static int fails;
#define CHECK(cond, ...)                                                                  \
    do {                                                                                  \
        if (!(cond)) {                                                                    \
            fails++;                                                                      \
            printf("FAIL %s:%d: ", __FILE__, __LINE__);                                   \
            printf(__VA_ARGS__);                                                          \
            printf("\n");                                                                 \
        }                                                                                 \
    } while (0)

static inline uint32_t f2u(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static inline float u2f(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
#endif
