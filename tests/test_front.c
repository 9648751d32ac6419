/* test_front.c: the front end (lex.c, parse.c, the checker, ir.c) on small kernels: the IR it
 * builds (through ir_dump), and one negative test per class of compile error with its exact
 * FILE:LINE:COL and message. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "compiler/compile.h"

static int failures, checks;

typedef struct text {
    char *s;
    size_t n, cap;
} text;
static void text_out(void *ctx, const char *t) {
    text *x = ctx;
    size_t n = strlen(t);
    if (x->n + n + 1 > x->cap) {
        x->cap = (x->n + n + 1) * 2;
        x->s = realloc(x->s, x->cap);
        if (!x->s) abort();
    }
    memcpy(x->s + x->n, t, n + 1);
    x->n += n;
}

/* Compiles src; returns the dump of every kernel (or NULL) and the diagnostics in *diag. */
static char *front(const char *src, char **diag) {
    dvm_arena *a = dvm_arena_create();
    dvm_diags d;
    dvm_diags_init(&d, "t.dvk", src, strlen(src));
    ir_module *m = dvm_front(a, src, strlen(src), "t.dvk", &d);
    if (m && dvm_check_races(m, &d)) m = NULL; /* the language rule checked right after it */
    text t = {0};
    if (m)
        for (int i = 0; i < m->nkernels; i++) ir_dump(m->kernels[i], text_out, &t);
    *diag = dvm_diags_take(&d);
    dvm_diags_free(&d);
    dvm_arena_destroy(a);
    return t.s;
}

/* Every needle (NULL-terminated list) must appear in the dump, in order. */
static void expect_ir(int line, const char *src, const char *const *needles) {
    char *diag;
    char *dump = front(src, &diag);
    checks++;
    if (!dump) {
        failures++;
        fprintf(stderr, "test_front.c:%d: expected the kernel to compile, got:\n%s\n", line, diag);
        free(diag);
        return;
    }
    const char *at = dump;
    for (int i = 0; needles[i]; i++) {
        const char *p = strstr(at, needles[i]);
        if (!p) {
            failures++;
            fprintf(stderr, "test_front.c:%d: expected in the IR dump (after the previous match): %s\nthe dump:\n%s\n", line, needles[i], dump);
            break;
        }
        at = p + strlen(needles[i]);
    }
    free(dump);
    free(diag);
}

/* The source must fail with a diagnostic that contains `where` (FILE:LINE:COL: error: ...) and `msg`. */
static void expect_error(int line, const char *src, const char *where, const char *msg) {
    char *diag;
    char *dump = front(src, &diag);
    checks++;
    char *p = strstr(diag, where);
    if (dump || !p || !strstr(p, msg)) {
        failures++;
        fprintf(stderr, "test_front.c:%d: expected an error '%s ... %s', got %s:\n%s\n", line, where, msg, dump ? "a compiled kernel" : "", diag);
    }
    free(dump);
    free(diag);
}

#define IR(src, ...) expect_ir(__LINE__, src, (const char *const[]){__VA_ARGS__, NULL})
#define ERR(src, where, msg) expect_error(__LINE__, src, "t.dvk:" where ": error: ", msg)

static const char *damp =
    "# Damped accumulation\n"
    "def step(v: f32, rate: f32) -> f32:      # helper: inlined at every call\n"
    "    return v * rate + 0.01\n"
    "\n"
    "kernel damp(x: f32[n], steps: i32[n], y: f32[1], rate: f32):\n"
    "    for i in range(n):                   # top-level for: parallel over i\n"
    "        v = x[i]\n"
    "        for _ in range(steps[i]):        # nested loop: serial, dynamic trip count\n"
    "            v = step(v, rate)\n"
    "        y[0] += v                        # += on an array element is atomic\n";

static const char *damp_ir =
    "kernel damp(x: f32[n], steps: i32[n], y: f32[1], rate: f32)  @5:8\n"
    "vars:\n"
    "  %0 rate: f32 param #3  @5:50\n"
    "  %1 n: i32 shapesym #0  @5:20\n"
    "  %2 i: i32 pindex  @6:9\n"
    "  %3 v: f32 local  @7:9\n"
    "  %4 _: i32 local  @8:13\n"
    "forward:\n"
    "  slots: 0=x.primal 1=steps.primal 2=y.primal\n"
    "  parallel i%2 in range(n%1):  @6:5\n"
    "    v%3 = x[i%2]  @7:9\n"
    "    for _%4 in range(0, steps[i%2]):  @8:9\n"
    "      v%3 = ADDF(MULF(v%3, rate%0), 0.00999999978f)  @9:13\n"
    "    ATOMADDF y[0], v%3  @10:9\n";

static void test_spec_example(void) {
    char *diag;
    char *dump = front(damp, &diag);
    checks++;
    if (!dump || strcmp(dump, damp_ir) != 0) {
        failures++;
        fprintf(stderr, "test_front.c:%d: the spec's example: expected\n%s\ngot\n%s%s\n", __LINE__, damp_ir, dump ? dump : "", diag);
    }
    free(dump);
    free(diag);
}

static void test_lexer(void) {
    IR("kernel k(y: f32[4]):\n"
       "    y[0] = 1.5 + 1e-3 + 2. + .5 + 1E+2\n"
       "    y[1] = f32(2147483647 + -2147483648)\n",
       "y[0] = ADDF(ADDF(ADDF(ADDF(1.5f, 0.00100000005f), 2f), 0.5f), 100f)", "y[1] = -1f");
    /* comments, blank lines, continuation inside brackets, backslash joining */
    IR("kernel k(y: f32[4],\n"
       "         s: f32):   # a comment\n"
       "\n"
       "    # only a comment\n"
       "    y[0] = (s +\n"
       "       1.0)\n"
       "    y[1] = s \\\n"
       "       * 2.0\n",
       "y[0] = ADDF(s%0, 1f)  @5:5", "y[1] = MULF(s%0, 2f)  @7:5");
    ERR("kernel k(y: f32[4]):\n\ty[0] = 1.0\n", "2:1", "tabs are not allowed in indentation");
    ERR("kernel k(y: f32[4]):\n    y[0] = 2147483648\n", "2:12", "out of the i32 range");
    ERR("kernel k(y: f32[4]):\n    y[0] = 1e\n", "2:12", "malformed number");
    ERR("kernel k(y: f32[4]):\n    y[0] = 1 $ 2\n", "2:14", "unexpected character '$'");
    ERR("kernel k(y: f32[4]):\n    y[0] = (1.0\n", "2:12", "'(' was never closed");
    ERR("kernel k(y: f32[4]):\n        y[0] = 1.0\n    y[1] = 1.0\n", "3:5", "does not match any enclosing block");
    ERR("kernel k(y: f32[4]):\n    assert True, \"abc\n", "2:18", "unterminated string");
}

static void test_parser_errors(void) {
    ERR("kernel k(y: f32[4])\n    y[0] = 1.0\n", "1:20", "expected ':' to start the body, got end of line");
    ERR("kernel k(y: f32[4]):\ny[0] = 1.0\n", "2:1", "expected an indented block");
    ERR("kernel k(y: f32[4]):\n    y[0] = \n", "2:12", "expected an expression, got end of line");
    ERR("kernel k(y: f32[4]):\n    y[0] = 1.0 1.0\n", "2:16", "expected end of line after the assignment, got '1.0'");
    ERR("kernel k(y: f32[4]):\n    if y[0] > 1.0\n        y[0] = 1.0\n", "2:18", "expected ':' after the if condition");
    ERR("x = 1\n", "1:1", "expected 'kernel' or 'def' at the top level, got 'x'");
    ERR("kernel k(y: f32[4]):\n    def f(a: f32) -> f32:\n        return a\n", "2:5", "only allowed at the top level");
    ERR("def f(a: f32):\n    return a\n", "1:14", "expected '->'");
    ERR("kernel k(y: b32[4]):\n    pass\n", "1:13", "expected a type (f32, i32, bool, vec2..vec4 or mat2..mat4), got 'b32'");
    ERR("kernel k(y: f32[4]):\n    a, b = 1, 2\n", "2:13", "tuple values are not supported: 'a, b = f(...)' unpacks the values of one helper call");
    ERR("kernel k(y: f32[4]):\n    else:\n        pass\n", "2:5", "'else' without a matching 'if'");
    /* several errors in one run: each statement is reported */
    {
        char *diag;
        char *dump = front("kernel k(y: f32[4]):\n    y[0] = +\n    y[1] = *\n    y[2] = 1.0\n", &diag);
        checks++;
        if (dump || !strstr(diag, "t.dvk:2:13: error:") || !strstr(diag, "t.dvk:3:12: error:")) {
            failures++;
            fprintf(stderr, "test_front.c:%d: expected errors at 2:13 and 3:12, got:\n%s\n", __LINE__, diag);
        }
        free(dump);
        free(diag);
    }
}

static void test_expressions(void) {
    /* precedence: ** binds tighter than unary minus on its left, right-assoc */
    IR("kernel k(y: f32[4], a: f32, b: f32, c: f32):\n"
       "    y[0] = -a ** 2\n"
       "    y[1] = a ** b ** c\n"
       "    y[2] = a + b * c - a / b\n"
       "    y[3] = 2 ** -1 if a > b else a\n",
       "y[0] = NEGF(POWF(a%0, 2f))", "y[1] = POWF(a%0, POWF(b%1, c%2))", "y[2] = SUBF(ADDF(a%0, MULF(b%1, c%2)), DIVF(a%0, b%1))",
       "y[3] = (I2F(POWI(2, -1)) if LTF(b%1, a%0) else a%0)");
    /* i32 vs f32 arithmetic: / is f32, // % ** keep i32 */
    IR("kernel k(y: f32[4], z: i32[4], i: i32, f: f32):\n"
       "    z[0] = i // 2 + i % 3 + i ** 2\n"
       "    y[0] = i / 2\n"
       "    y[1] = f // 2 + f % i + f ** i\n"
       "    y[2] = i + f\n",
       "z[0] = ADDI(ADDI(DIVI(i%0, 2), MODI(i%0, 3)), POWI(i%0, 2))", "y[0] = DIVF(I2F(i%0), 2f)",
       "y[1] = ADDF(ADDF(FFLOORDIV(f%1, 2f), FMODF(f%1, I2F(i%0))), POWF(f%1, I2F(i%0)))", "y[2] = ADDF(I2F(i%0), f%1)");
    /* comparisons normalised to LT/LE/EQ/NE; chains; bools compared with EQI/NEI */
    IR("kernel k(y: f32[4], i: i32, f: f32):\n"
       "    a = i > 2\n"
       "    b = f >= i\n"
       "    c = 1 < i <= 5\n"
       "    d = a == b\n"
       "    e = a != (f != 1.0)\n"
       "    g = not a and b or c\n",
       "a%2 = LTI(2, i%0)", "b%3 = LEF(I2F(i%0), f%1)", "c%4 = (LTI(1, i%0) and LEI(i%0, 5))", "d%5 = EQI(a%2, b%3)",
       "e%6 = NEI(a%2, NEF(f%1, 1f))", "g%7 = ((NOT(a%2) and b%3) or c%4)");
    /* a chain's middle operand is evaluated once */
    IR("kernel k(y: f32[4], x: f32[4]):\n"
       "    a = 0.0 < x[1] * 2.0 < 1.0\n",
       "%0 cmp: f32 global", "cmp%0 = MULF(x[1], 2f)", "a%1 = (LTF(0f, cmp%0) and LTF(cmp%0, 1f))");
    /* builtins */
    IR("kernel k(y: f32[8], z: i32[4], f: f32, i: i32):\n"
       "    y[0] = sin(f) + cos(f) + tan(f) + asin(f) + acos(f) + atan(f) + exp(f) + log(i)\n"
       "    y[1] = sqrt(f) + rsqrt(f) + tanh(f) + abs(f) + floor(f) + ceil(f) + atan2(f, i) + pow(f, 2)\n"
       "    y[2] = min(f, i) + max(f, 1.0, 2.0) + clamp(f, 0, 1)\n"
       "    z[0] = abs(i) + min(i, 3) + max(i, 2) + clamp(i, 0, 9) + select(f > 0.0, i, 2)\n"
       "    z[1] = i32(f) + i32(True)\n"
       "    y[3] = f32(i) + f32(f > 1.0) + select(True, 1, 2.5)\n",
       "SIN(f%0)", "COS(f%0)", "TAN(f%0)", "ASIN(f%0)", "ACOS(f%0)", "ATAN(f%0)", "EXP(f%0)", "LOG(I2F(i%1))", "SQRT(f%0)", "RSQRT(f%0)",
       "TANH(f%0)", "ABSF(f%0)", "FLOOR(f%0)", "CEIL(f%0)", "ATAN2F(f%0, I2F(i%1))", "POWF(f%0, 2f)",
       "y[2] = ADDF(ADDF(MINF(f%0, I2F(i%1)), MAXF(MAXF(f%0, 1f), 2f)), MINF(MAXF(f%0, 0f), 1f))",
       "z[0] = ADDI(ADDI(ADDI(ADDI(ABSI(i%1), MINI(i%1, 3)), MAXI(i%1, 2)), MINI(MAXI(i%1, 0), 9)), select(LTF(0f, f%0), i%1, 2))",
       "z[1] = ADDI(F2I(f%0), select(True, 1, 0))", "y[3] = ADDF(ADDF(I2F(i%1), select(LTF(1f, f%0), 1f, 0f)), select(True, 1f, 2.5f))");
    /* shapes */
    IR("kernel k(m: f32[r, 3], z: i32[2]):\n"
       "    z[0] = m.shape[0] + r\n"
       "    z[1] = m.shape[1]\n",
       "z[0] = ADDI(r%0, r%0)", "z[1] = 3");
}

static void test_statements(void) {
    IR("kernel k(x: f32[n], z: i32[n], s: f32):\n"
       "    for i in range(n):\n"
       "        v = 1\n"
       "        w = 2.0\n"
       "        w = v\n"
       "        w += 1\n"
       "        w -= s\n"
       "        w *= 2\n"
       "        w /= 4\n"
       "        v *= 3\n"
       "        x[i] -= w\n"
       "        z[i] -= 1\n"
       "        z[i] += v\n"
       "        atomic_max(x[0], w)\n"
       "        atomic_min(x[0], v)\n"
       "        atomic_max(z[0], v)\n"
       "        atomic_min(z[0], v)\n"
       "        x[i] = v\n",
       "w%4 = I2F(v%3)", "w%4 = ADDF(w%4, 1f)", "w%4 = SUBF(w%4, s%0)", "w%4 = MULF(w%4, 2f)", "w%4 = DIVF(w%4, 4f)",
       "v%3 = MULI(v%3, 3)", "ATOMADDF x[i%2], NEGF(w%4)", "ATOMADDI z[i%2], -1", "ATOMADDI z[i%2], v%3", "ATOMMAXF x[0], w%4",
       "ATOMMINF x[0], I2F(v%3)", "ATOMMAXI z[0], v%3", "ATOMMINI z[0], v%3", "x[i%2] = I2F(v%3)");
    /* if / elif / else, while, break, continue, pass, assert */
    IR("kernel k(x: f32[n], s: f32):\n"
       "    for i in range(n):\n"
       "        if s > 1.0:\n"
       "            pass\n"
       "        elif s > 0.0:\n"
       "            x[i] = 1.0\n"
       "        else:\n"
       "            x[i] = 2.0\n"
       "        j = 0\n"
       "        while j < 10:\n"
       "            j += 1\n"
       "            if j == 3:\n"
       "                continue\n"
       "            if j == 7:\n"
       "                break\n"
       "        assert j < 10\n"
       "        assert x[i] >= 0.0, \"x must be >= 0\"\n",
       "if LTF(1f, s%0):  @3:9", "pass", "else:", "if LTF(0f, s%0):  @5:9", "x[i%2] = 1f", "else:", "x[i%2] = 2f", "while LTI(j%3, 10):",
       "continue  @13:17", "break  @15:17", "assert LTI(j%3, 10), \"j < 10\"", "assert LEF(0f, x[i%2]), \"x must be >= 0\"");
    /* for over range(start, stop); nested ndrange becomes nested serial loops */
    IR("kernel k(x: f32[n], a: i32, b: i32):\n"
       "    for i in range(n):\n"
       "        for j in range(a, b):\n"
       "            x[i] += 1.0\n"
       "        for p, q in ndrange(a, b):\n"
       "            x[i] += 1.0\n",
       "for j%4 in range(a%0, b%1):", "for p%5 in range(0, a%0):", "  for q%6 in range(0, b%1):");
    /* static loops are unrolled with the variable a constant */
    IR("kernel k(x: f32[n]):\n"
       "    for i in range(n):\n"
       "        for k in static(range(1, 3)):\n"
       "            x[i] += x[k] * k\n",
       "ATOMADDF x[i%1], MULF(x[1], 1f)", "ATOMADDF x[i%1], MULF(x[2], 2f)");
}

static void test_parallel_structure(void) {
    IR("kernel k(x: f32[n], m: f32[r, c], s: f32):\n"
       "    t = s * 2.0\n"
       "    for i in range(2, n):\n"
       "        x[i] = t\n"
       "    for a, b in ndrange(r, c):\n"
       "        m[a, b] = t\n"
       "    for w in ndrange(n):\n"
       "        x[w] = 0.0\n"
       "    for k in static(range(2)):\n"
       "        x[k] = 1.0\n"
       "    u = t + 1.0\n",
       "%4 t: f32 global", "%5 i: i32 pindex", "%6 a: i32 pindex", "%7 b: i32 pindex", "%9 u: f32 global",
       "serial  @2:5\n    t%4 = MULF(s%0, 2f)", "parallel i%5 in range(2, n%1):  @3:5", "parallel a%6, b%7 in ndrange(r%2, c%3):",
       "parallel w%8 in range(n%1):", "serial  @10:9\n    x[0] = 1f", "serial  @10:9\n    x[1] = 1f", "serial  @11:5\n    u%9 = ADDF(t%4, 1f)");
    /* a stop that needs a helper's statements: they run serially before the loop */
    IR("def half(v: i32) -> i32:\n"
       "    w = v // 2\n"
       "    return w\n"
       "kernel k(x: f32[n]):\n"
       "    for i in range(half(n)):\n"
       "        x[i] = 1.0\n",
       "%1 w: i32 global", "serial  @2:5\n    w%1 = DIVI(n%0, 2)", "parallel i%2 in range(w%1):");
    /* continue directly in a parallel loop: a flag guards the rest of the body */
    IR("kernel k(x: f32[n]):\n"
       "    for i in range(n):\n"
       "        if x[i] < 0.0:\n"
       "            continue\n"
       "        x[i] = 1.0\n",
       "continue%2 = False", "if LTF(x[i%1], 0f):", "continue%2 = True", "if NOT(continue%2):", "x[i%1] = 1f");
}

static void test_helpers(void) {
    /* arguments evaluated once into fresh locals when the helper assigns them or they are not simple */
    IR("def f(a: f32, b: i32) -> f32:\n"
       "    a = a * 2.0\n"
       "    return a + b\n"
       "kernel k(x: f32[n]):\n"
       "    for i in range(n):\n"
       "        x[i] = f(x[i], i + 1)\n",
       "f.a%2 = x[i%1]", "f.b%3 = ADDI(i%1, 1)", "f.a%2 = MULF(f.a%2, 2f)", "x[i%1] = ADDF(f.a%2, I2F(f.b%3))");
    /* array parameters and shape symbols of helpers */
    IR("def total(v: f32[m]) -> f32:\n"
       "    s = 0.0\n"
       "    for j in range(m):\n"
       "        s += v[j]\n"
       "    return s\n"
       "kernel k(x: f32[n], y: f32[1]):\n"
       "    y[0] = total(x)\n",
       "s%1 = 0f", "for j%2 in range(0, n%0):", "s%1 = ADDF(s%1, x[j%2])", "y[0] = s%1");
    /* return in the middle: a result variable and a done flag */
    IR("def f(a: f32) -> f32:\n"
       "    if a < 0.0:\n"
       "        return 0.0\n"
       "    b = a * 2.0\n"
       "    return b\n"
       "kernel k(x: f32[n]):\n"
       "    for i in range(n):\n"
       "        x[i] = f(x[i])\n",
       "f.done%4 = False", "if LTF(f.a%2, 0f):", "f.return%3 = 0f", "f.done%4 = True", "if NOT(f.done%4):", "b%5 = MULF(f.a%2, 2f)",
       "f.return%3 = b%5", "x[i%1] = f.return%3");
    /* helpers calling helpers; a helper call as a statement; helper in a lazy operand */
    IR("def g(a: f32) -> f32:\n"
       "    t = a + 1.0\n"
       "    return t\n"
       "def h(a: f32) -> f32:\n"
       "    return g(a) * 2.0\n"
       "kernel k(x: f32[n]):\n"
       "    for i in range(n):\n"
       "        x[i] = h(x[i])\n"
       "        ok = x[i] > 0.0 and g(x[i]) > 1.0\n"
       "        h(1.0)\n",
       "h.a%2 = x[i%1]", "t%3 = ADDF(h.a%2, 1f)", "x[i%1] = MULF(t%3, 2f)", "and%6 = LTF(0f, x[i%1])", "if and%6:", "g.a%4 = x[i%1]",
       "t%5 = ADDF(g.a%4, 1f)", "and%6 = LTF(1f, t%5)", "ok%7 = and%6", "t%8 = ADDF(1f, 1f)");
    /* a while condition that needs statements is re-evaluated on every iteration */
    IR("def g(a: i32) -> i32:\n"
       "    t = a + 1\n"
       "    return t\n"
       "kernel k(x: f32[n]):\n"
       "    j = 0\n"
       "    while g(j) < 5:\n"
       "        j += 1\n",
       "while True:", "t%2 = ADDI(j%1, 1)", "if NOT(LTI(t%2, 5)):", "break", "j%1 = ADDI(j%1, 1)");
}

static void test_semantic_errors(void) {
    ERR("kernel k(x: f32[n]):\n    x[0] = y\n", "2:12", "unknown name 'y'");
    ERR("kernel k(x: f32[n]):\n    for i in range(n):\n        v = 1\n        v = 2.5\n", "4:9", "'v' is f32 here but was declared i32 at 3:9");
    ERR("kernel k(x: f32[n, n]):\n    x[0] = 1.0\n", "2:5", "array 'x' has rank 2 but 1 index was given");
    ERR("kernel k(x: f32[n]):\n    break\n", "2:5", "'break' outside a loop");
    ERR("def f(a: f32) -> f32:\n    return f(a)\nkernel k(x: f32[n]):\n    x[0] = f(1.0)\n", "2:12", "helper 'f' calls itself");
    ERR("kernel k(x: f32[n]):\n    pass\nkernel k(x: f32[n]):\n    pass\n", "3:8", "kernel 'k' is defined twice (first at 1:8)");
    ERR("kernel k(x: f32[n], s: f32):\n    s = 1.0\n", "2:5", "cannot assign to parameter 's'");
    ERR("kernel k(x: f32[n]):\n    n = 1\n", "2:5", "cannot assign to the shape symbol 'n'");
    ERR("kernel k(x: f32[n]):\n    t = 0.0\n    for i in range(n):\n        t = x[i]\n", "4:9", "cannot assign to 't' inside a parallel loop");
    ERR("kernel k(x: f32[n]):\n    for i in range(n):\n        x[i] *= 2.0\n", "3:9", "only += and -= on array elements");
    ERR("kernel k(x: f32[n]):\n    for i in range(n):\n        if x[i] > 0.0:\n            v = 1.0\n        x[i] = v\n", "5:16",
        "'v' is not defined here: its first assignment (4:13) is inside a block that has ended");
    ERR("kernel k(x: f32[n]):\n    x[1.0] = 1.0\n", "2:7", "the index for axis 0 of 'x' must be i32, got f32");
    ERR("kernel k(x: i32[n]):\n    x[0] = 1.5\n", "2:12", "cannot store f32 into 'x', an i32 array");
    ERR("kernel k(x: f32[n]):\n    if 1:\n        pass\n", "2:8", "the if condition must be bool, got i32");
    ERR("kernel k(x: f32[n]):\n    while x[0]:\n        pass\n", "2:11", "the while condition must be bool, got f32");
    ERR("kernel k(x: f32[n]):\n    a = 1 + True\n", "2:11", "operator '+' needs f32 or i32 operands, got i32 and bool");
    ERR("kernel k(x: f32[n]):\n    a = not 1\n", "2:9", "'not' needs a bool operand, got i32");
    ERR("kernel k(x: f32[n]):\n    a = True < False\n", "2:14", "bool values cannot be ordered");
    ERR("kernel k(x: f32[n]):\n    a = sin(1.0, 2.0)\n", "2:9", "sin takes 1 argument but 2 were given");
    ERR("kernel k(x: f32[n]):\n    a = foo(1.0)\n", "2:9", "unknown function 'foo'");
    ERR("kernel k(x: f32[n]):\n    a = atomic_max(x[0], 1.0)\n", "2:9", "atomic_max(...) is a statement and has no value");
    ERR("kernel k(x: f32[n]):\n    return 1.0\n", "2:5", "'return' outside a helper");
    ERR("def f(a: f32) -> f32:\n    if a > 0.0:\n        return a\nkernel k(x: f32[n]):\n    pass\n", "1:5",
        "helper 'f' can reach the end of its body without returning a value");
    ERR("def f(a: f32) -> i32:\n    return a\nkernel k(x: f32[n]):\n    x[0] = f(1.0)\n", "2:12", "helper 'f' returns f32 but is declared '-> i32'");
    ERR("def f(a: i32) -> i32:\n    return a\nkernel k(x: f32[n]):\n    x[0] = f(1.0)\n", "4:14", "argument 1 of 'f' ('a') must be i32, got f32");
    ERR("def f(a: i32) -> i32:\n    return a\nkernel k(x: f32[n]):\n    x[0] = f(1, 2)\n", "4:12", "helper 'f' takes 1 argument but 2 were given");
    ERR("def f(v: f32[m]) -> f32:\n    v[0] = 1.0\n    return 1.0\nkernel k(x: f32[n]):\n    x[0] = f(x)\n", "2:5",
        "helper 'f' cannot write array 'v'");
    ERR("def f(a: f32) -> f32:\n    return a + z\nkernel k(x: f32[n], z: f32):\n    x[0] = f(1.0)\n", "2:16", "unknown name 'z'");
    ERR("def f(a: f32) -> f32:\n    return g(a)\ndef g(a: f32) -> f32:\n    return f(a)\nkernel k(x: f32[n]):\n    x[0] = f(1.0)\n", "4:12",
        "helper 'f' calls itself through 'g'");
    ERR("kernel k(x: f32[n]):\n    for i in range(n):\n        break\n", "3:9", "'break' cannot leave a parallel loop");
    ERR("kernel k(x: f32[n]):\n    for i in range(n):\n        for k in static(range(3)):\n            continue\n", "4:13",
        "'continue' inside static(range(...)) is not supported");
    ERR("kernel k(x: f32[n]):\n    for i, j in range(n):\n        pass\n", "2:9", "range has one loop variable but 2 were given");
    ERR("kernel k(x: f32[n]):\n    for i, j in ndrange(n):\n        pass\n", "2:9", "ndrange has 1 extent but 2 loop variables were given");
    ERR("kernel k(x: f32[n]):\n    for i in range(1.5):\n        pass\n", "2:20", "a range bound must be i32, got f32");
    ERR("kernel k(x: f32[n]):\n    for i in range(n):\n        for i in range(3):\n            pass\n", "3:13", "loop variable 'i' is already defined at 2:9");
    ERR("kernel k(x: f32[n]):\n    for i in range(n):\n        for j in range(3):\n            j = 1\n", "4:13", "cannot assign to the loop variable 'j'");
    ERR("kernel k(x: f32[n]):\n    for i in range(n):\n        i = 1\n", "3:9", "cannot assign to the parallel loop index 'i'");
    ERR("kernel k(x: f32[n]):\n    x = 1.0\n", "2:5", "cannot assign to array 'x'");
    ERR("kernel k(x: f32[n]):\n    a = x\n", "2:9", "'x' is an array; read an element with x[i]");
    ERR("kernel k(x: f32[n]):\n    a = x.shape[1]\n", "2:17", "axis 1 is out of range for 'x' of rank 1");
    ERR("kernel k(x: f32[n]):\n    a = x.grad\n", "2:9", "unknown attribute 'grad'");
    ERR("kernel k(x: f32[n], x: f32):\n    pass\n", "1:21", "'x' is declared twice in kernel 'k'");
    ERR("kernel k(x: f32[n], n: i32):\n    pass\n", "1:17", "'n' names both a shape symbol and a parameter");
    ERR("kernel k(x: f32[n]):\n    a = \"s\"\n", "2:9", "strings are only allowed as assert messages");
    ERR("kernel k(x: f32[n]):\n    x[0] + 1.0\n", "2:5", "this expression does nothing");
    ERR("kernel k(x: f32[n]):\n    for k in static(range(n)):\n        pass\n", "2:27", "must be integer literals");
    ERR("kernel k(x: f32[n]):\n    a = 1 if True else False\n", "2:11", "both sides of 'a if c else b' must have the same type");
    ERR("kernel k(x: f32[n]):\n    v += 1\n", "2:5", "unknown name 'v'");
    ERR("def f(a: f32) -> f32:\n    return a\nkernel k(x: f32[n]):\n    x[0] = k(1.0)\n", "4:12", "'k' is a kernel; only helpers (def) can be called");
    ERR("kernel k(x: f32[n]):\n    i = 1\n    i /= 2\n", "3:5", "'i' is f32 here but was declared i32 at 2:5");
    expect_error(__LINE__, "# nothing\n", "t.dvk: error: ", "no kernel found");
    /* a helper that no kernel calls is checked too */
    ERR("def f(a: f32, v: f32[m]) -> f32:\n    return a + v[0] + w\nkernel k(x: f32[n]):\n    pass\n", "2:23", "unknown name 'w'");
    /* races the compiler sees: every iteration writes one element that the loop reads */
    ERR("kernel k(x: f32[n], acc: f32[1], out: f32[n]):\n    for i in range(n):\n        acc[0] += x[i]\n"
        "        out[i] = acc[0] * x[i]\n", "4:18", "'acc' is read in a parallel loop whose every iteration updates its element at 3:9");
    ERR("kernel k(x: f32[n], s: f32[2], m: i32):\n    for i in range(n):\n        if s[m] > 0.0:\n"
        "            x[i] = 1.0\n        s[m] = x[i]\n", "3:12", "every iteration stores to its element at 5:9");
    /* not races: each iteration its own element, and a read in the next statement */
    IR("kernel k(x: f32[n], acc: f32[n]):\n    for i in range(n):\n        acc[i] += x[i]\n        x[i] = acc[i]\n"
       "    for i in range(n):\n        x[i] = acc[0]\n", "kernel k");
    IR("def f(a: f32, v: f32[m], b: bool) -> f32:\n    return a + v[m - 1] if b else 0.0\nkernel k(x: f32[n]):\n    pass\n", "kernel k");
    /* limits: long operator chains, huge unrolling */
    {
        char *src = malloc(20000);
        if (!src) abort();
        strcpy(src, "kernel k(y: f32[n]):\n    y[0] = 1.0");
        for (int i = 0; i < 1000; i++) strcat(src, " + 1.0");
        strcat(src, "\n");
        ERR(src, "2:3004", "expression is nested too deeply");
        free(src);
    }
    ERR("kernel k(y: f32[n]):\n    for a in static(range(4096)):\n        for b in static(range(4096)):\n            y[0] = 1.0\n", "4:13",
        "kernel 'k' is too large after unrolling");
}

/* A large kernel (60 dynamic loops, 60 inlined helper calls) goes through the front end.
 * Its compile time is measured by bench/bench_cpu, not here: tests are never timed. */
static void test_large_kernel(void) {
    char *src = malloc(1 << 16);
    if (!src) abort();
    strcpy(src, "def step(v: f32, rate: f32) -> f32:\n    return v * rate + 0.01\n");
    strcat(src, "kernel big(x: f32[n], steps: i32[n], y: f32[1], rate: f32):\n    for i in range(n):\n        v = x[i]\n");
    for (int i = 0; i < 60; i++) strcat(src, "        for _ in range(steps[i]):\n            v = step(v, rate) + sin(v) * 0.5\n");
    strcat(src, "        y[0] += v\n");
    dvm_arena *a = dvm_arena_create();
    dvm_diags d;
    dvm_diags_init(&d, "t.dvk", src, strlen(src));
    ir_module *m = dvm_front(a, src, strlen(src), "t.dvk", &d);
    checks++;
    if (!m || m->nkernels != 1) {
        failures++;
        char *msg = dvm_diags_take(&d);
        fprintf(stderr, "test_front.c:%d: the large kernel failed to compile:\n%s\n", __LINE__, msg);
        free(msg);
    }
    dvm_diags_free(&d);
    dvm_arena_destroy(a);
    free(src);
}

/* Out of memory is reported as such, at any point of the front end: never as a syntax error
 * from tokens the lexer dropped, never as success. */
static void test_out_of_memory(void) {
    size_t cap = 1 << 20, n = 0;
    char *src = malloc(cap);
    if (!src) abort();
    n += (size_t)sprintf(src, "kernel k(x: f32[n], y: f32[n]):\n    for i in range(n):\n        v = x[i]\n");
    for (int i = 0; n + 100 < cap; i++) n += (size_t)sprintf(src + n, "        v = v * 1.5 + alpha%d_beta\n", i % 5000);
    for (size_t limit = 65536; limit <= ((size_t)40 << 20); limit += limit / 8) {
        dvm_arena *a = dvm_arena_create();
        dvm_arena_set_limit(a, limit);
        dvm_diags d;
        dvm_diags_init(&d, "t.dvk", src, n);
        ir_module *m = dvm_front(a, src, n, "t.dvk", &d);
        char *msg = dvm_diags_take(&d);
        checks++;
        /* names alpha%d_beta are undefined: with enough memory that is the error */
        int ok = m == NULL && msg && (strstr(msg, "out of memory") || strstr(msg, "unknown name 'alpha0_beta'"));
        int syntax = msg && (strstr(msg, "expected") || strstr(msg, "syntax"));
        if (!ok || syntax) {
            failures++;
            fprintf(stderr, "test_front.c:%d: with %zu bytes of arena: expected 'out of memory' (or the undefined name), got:\n%s\n",
                    __LINE__, limit, msg ? msg : "(nothing)");
        }
        free(msg);
        dvm_diags_free(&d);
        dvm_arena_destroy(a);
    }
    free(src);
}

/* Vectors, matrices and tuples: lowered to scalar IR (a vec3 local is three f32 variables,
 * x: vec3[n] an f32 array of rank 2), and the error for each misuse. */
static void test_vectors(void) {
    IR("kernel k(x: vec3[n], m: mat2[4]):\n"
       "    for i in range(n):\n"
       "        v = x[i]\n"
       "        v = vec3(v.y, v.x, v.z)\n"
       "        for k in static(range(3)):\n"
       "            x[i][k] = v[(k + 1) % 3] * m[0, 1, 0]\n",
       "kernel k(x: f32[n, 3], m: f32[4, 2, 2])", "v.x: f32 local", "v.y: f32 local", "v.z: f32 local",
       "v.x%2 = x[i%1, 0]", "v.y%3 = x[i%1, 1]", "v.z%4 = x[i%1, 2]",
       /* the swap reads every component before it writes one */
       "tmp%5 = v.y%3", "tmp%6 = v.x%2", "tmp%7 = v.z%4", "v.x%2 = tmp%5", "v.y%3 = tmp%6", "v.z%4 = tmp%7",
       /* (k + 1) % 3 of a static k is a constant index */
       "x[i%1, 0] = MULF(v.y%3, m[0, 1, 0])", "x[i%1, 1] = MULF(v.z%4, m[0, 1, 0])", "x[i%1, 2] = MULF(v.x%2, m[0, 1, 0])");
    ERR("kernel k(x: vec3[n], m: mat3[n]):\n    for i in range(n):\n        a = x[i] + m[i]\n",
        "3:18", "cannot add vec3 and mat3");
    ERR("kernel k(x: vec3[n]):\n    for i in range(n):\n        a = x + 1.0\n",
        "3:13", "'x' is vec3[n]: index it once (x[i]) to get a vec3");
    ERR("kernel k(x: vec3[n]):\n    for i in range(n):\n        a = x[i].w\n",
        "3:13", "vec3 has no component '.w' (it has x y z)");
    ERR("kernel k(x: vec3[n]):\n    for i in range(n):\n        v = x[i]\n        a = v.w\n",
        "4:13", "vec3 has no component '.w' (it has x y z)");
    ERR("kernel k(x: vec3[n], y: f32[n]):\n    for i in range(n):\n        v = x[i]\n        y[i] = v[i]\n",
        "4:18", "the index of a vec3 must be an integer literal or a static(range(...)) loop variable, got ");
    ERR("kernel k(x: vec3[n], y: f32[n]):\n    for i in range(n):\n        v = x[i]\n        y[i] = v[3]\n",
        "4:18", "index 3 is out of range for a vec3 (0..2)");
    ERR("kernel k(x: vec3[n], y: f32[n]):\n    for i in range(n):\n        y[i] = x[i]\n",
        "3:16", "cannot store vec3 into 'y', an f32 array");
    ERR("kernel k(x: vec3[n], y: f32[n]):\n    for i in range(n):\n        x[i] = y[i]\n",
        "3:16", "cannot store f32 into an element of 'x' that is a vec3 ('x' is vec3[n])");
    ERR("kernel k(x: vec3[n], y: f32[n]):\n    for i in range(n):\n        y[i] = x[i, 0, 1]\n",
        "3:16", "'x' is vec3[n]: x[i] is a vec3, with one more index an f32; got 3 indices");
    ERR("kernel k(x: mat3[n, m, p]):\n    pass\n",
        "1:10", "'x: mat3[n, m, p]' has 5 axes with the mat3's own; arrays have at most 4");
    ERR("kernel k(x: vec3):\n    pass\n",
        "1:13", "a kernel's scalar parameters are f32 or i32; pass a vec3 as an array (x: vec3[1]) and read");
    ERR("kernel k(x: vec3[n], y: f32[n]):\n    for i in range(n):\n        y[i] = dot(x[i], 1.0)\n",
        "3:16", "dot takes two vectors of the same size, got vec3 and f32");
    ERR("kernel k(x: vec2[n], y: f32[n]):\n    for i in range(n):\n        y[i] = cross(x[i], x[i]).x\n",
        "3:16", "cross takes two vec3, got vec2 and vec2");
    ERR("kernel k(x: vec3[n], y: f32[n]):\n    for i in range(n):\n        y[i] = determinant(x[i])\n",
        "3:16", "determinant takes a matrix, got vec3");
    ERR("kernel k(x: vec3[n], y: f32[n]):\n    for i in range(n):\n        y[i] = sin(x[i]).x\n",
        "3:16", "sin takes f32 or i32, got vec3 (only abs, min, max, clamp and select work componentwise)");
    ERR("kernel k(x: vec3[n], m: mat2[n], y: vec3[n]):\n    for i in range(n):\n        y[i] = m[i] @ x[i]\n",
        "3:21", "cannot multiply mat2 by vec3 with '@': their sizes differ");
    ERR("kernel k(x: vec3[n], y: vec3[n]):\n    for i in range(n):\n        y[i] = x[i] @ x[i]\n",
        "3:21", "'@' of two vectors (vec3 and vec3) is not defined: use dot(a, b) or outer(a, b)");
    ERR("kernel k(x: vec3[n], y: vec3[n]):\n    for i in range(n):\n        y[i] = vec3(1.0, 2.0)\n",
        "3:16", "vec3(...) takes 3 components (or one value for all of them), got fewer");
    ERR("kernel k(x: vec3[n], y: vec3[n]):\n    for i in range(n):\n        y[i] = x[i] % 2.0\n",
        "3:21", "operator '%' is not defined on vec3 and f32 (vectors and matrices take + - * / componentwi");
    ERR("kernel k(x: vec3[n], y: vec3[n]):\n    for i in range(n):\n        v = x[i]\n        v = 1.0\n",
        "4:9", "'v' is f32 here but was declared vec3 at 3:9");
    ERR("kernel k(x: vec3[n], y: vec3[n]):\n    for i in range(n):\n        y[i] = x[i] < x[i]\n",
        "3:21", "cannot compare vec3 with vec3");
    ERR("def f(v: vec3) -> (f32, vec3):\n    return v.x, v\nkernel k(x: vec3[n], y: vec3[n]):\n    for i in range(n):\n        y[i] = f(x[i])\n",
        "5:16", "this helper returns 2 values: unpack them first (a, b = f(...))");
    ERR("def f(v: vec3) -> (f32, vec3):\n    return v.x, v\nkernel k(x: vec3[n], y: vec3[n]):\n    for i in range(n):\n        a, b, c = f(x[i])\n",
        "5:19", "this call returns 2 values but 3 targets are given");
    ERR("def f(v: vec3) -> (f32, vec3):\n    return v, v.x\nkernel k(x: vec3[n], y: vec3[n]):\n    for i in range(n):\n        a, b = f(x[i])\n",
        "2:12", "value 1 that helper 'f' returns is vec3 but is declared '-> (f32, vec3)'");
    ERR("def f(v: vec3) -> vec3:\n    return v.x\nkernel k(x: vec3[n], y: vec3[n]):\n    for i in range(n):\n        y[i] = f(x[i])\n",
        "2:12", "helper 'f' returns f32 but is declared '-> vec3'");
    ERR("kernel k(x: vec3[n], y: vec3[n]):\n    for i in range(n):\n        a, b = x[i]\n",
        "3:16", "only a call of a helper that returns several values can be unpacked into 2 targets; this i");
    ERR("def f(x: vec3[n], i: i32) -> vec3:\n    x[i] = vec3(0.0)\n    return x[i]\nkernel k(x: vec3[n], y: vec3[n]):\n    for i in range(n):\n        y[i] = f(x, i)\n",
        "2:5", "helper 'f' cannot write array 'x' (helpers only read arrays)");
    ERR("kernel k(x: vec3[n], y: vec3[n]):\n    for i in range(n):\n        y[i] *= x[i]\n",
        "3:9", "'y[...] *= e' is not supported: only += and -= on array elements (they are atomic adds)");
    ERR("kernel k(x: vec3[n], y: f32[n]):\n    for i in range(n):\n        atomic_max(x[i], 1.0)\n",
        "3:20", "'x' is vec3[n]: an element of one f32 takes 2 indices here (x[i, k]), got 1");
    ERR("kernel k(x: vec3[n], y: vec3[n]):\n    for i in range(n):\n        y[i] = mat3(1.0).x\n",
        "3:16", "mat3(...) takes 3 rows (vec3) or 9 values, row by row; got fewer");
    ERR("kernel k(x: vec3[n], y: vec3[n]):\n    for i in range(n):\n        y[i] = x[i] if True else 1.0\n",
        "3:21", "both sides of 'a if c else b' must have the same type, got vec3 and f32");
    ERR("kernel k(x: vec3[n], y: f32[n]):\n    for i in range(n):\n        y[i] = f32(x[i])\n",
        "3:16", "f32 takes f32 or i32, got vec3 (only abs, min, max, clamp and select work componentwise)");
    ERR("kernel k(x: mat3[n], y: f32[n]):\n    for i in range(n):\n        m = x[i]\n        y[i] = m.x\n",
        "4:16", "mat3 has no component '.x': index it, m[i, j] (a row: m[i])");
    ERR("kernel k(x: f32[n], y: f32[n]):\n    for i in range(n):\n        y[i] = x[i].y\n",
        "3:16", "f32 has no components");
    ERR("kernel k(x: vec3[n], y: f32[n]):\n    v = x[0]\n    for i in range(n):\n        v.x = 1.0\n",
        "4:9", "cannot assign to 'v.x' inside a parallel loop: it was declared at 2:5 outside the loop, an");
    ERR("kernel k(x: vec3[n], y: f32[n]):\n    for i in range(n):\n        y[i] = -x[i] ** 2.0\n",
        "3:22", "operator '**' is not defined on vec3 and f32 (vectors and matrices take + - * / componentw");
    ERR("kernel k(x: vec3[n], y: vec2[n]):\n    for i in range(n):\n        y[i] = x[i].xy\n", "3:16",
        "swizzles such as '.xy' are not supported; build the vector from components (vec2(v.x, v.y))");
    ERR("kernel k(x: vec3[n], y: vec2[n]):\n    for i in range(n):\n        v = x[i]\n        v.xz = y[i]\n", "4:9",
        "swizzles such as '.xz' are not supported");
    /* helpers that no kernel calls are checked with their vector parameters */
    ERR("def h(v: vec3) -> vec3:\n    return v.w\n\nkernel k(x: f32[n]):\n    pass\n", "2:12", "vec3 has no component '.w' (it has x y z)");
    ERR("def h(v: vec3) -> f32:\n    return v.x, v.y\n\nkernel k(x: f32[n]):\n    pass\n", "2:12",
        "helper 'h' returns 2 values but is declared '-> f32'");
    ERR("def h(v: vec3) -> (f32, f32):\n    return v.x\n\nkernel k(x: vec3[n]):\n    for i in range(n):\n        a, b = h(x[i])\n", "2:12",
        "helper 'h' returns f32 but is declared '-> (f32, f32)' (return several values: return a, b)");
    ERR("kernel k(x: mat3[n], y: f32[n]):\n    for i in range(n):\n        y[i] = inverse(x[i])[0].w\n", "3:16",
        "vec3 has no component '.w' (it has x y z)");
    /* a component of any vector value; a helper with several values and branches, never called */
    IR("def h(v: vec3, m: mat3, a: vec3[k]) -> (f32, vec3):\n    if v.x > 0.0:\n        return dot(v, a[0]), m @ v\n    return 1.0, v\n\n"
       "kernel k(x: vec3[n], y: f32[n]):\n    for i in range(n):\n        y[i] = x[i][0] + vec3(1.0, 2.0, 3.0)[1] + (x[i] * 2.0).z\n",
       "y[i%1] = ADDF(ADDF(x[i%1, 0], 2f), MULF(x[i%1, 2], 2f))");
}

int main(void) {
    test_out_of_memory();
    test_spec_example();
    test_lexer();
    test_parser_errors();
    test_expressions();
    test_statements();
    test_parallel_structure();
    test_helpers();
    test_semantic_errors();
    test_vectors();
    test_large_kernel();
    if (failures) {
        fprintf(stderr, "test_front: %d of %d checks failed\n", failures, checks);
        return 1;
    }
    printf("test_front: all %d checks passed\n", checks);
    return 0;
}
