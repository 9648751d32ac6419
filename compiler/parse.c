/* parse.c: recursive-descent parser for .dvk. An error abandons the current statement
 * (longjmp to the statement loop), skips to the next line (and the block a broken header
 * opens), and parsing goes on, so one run reports several errors. */
#include <setjmp.h>
#include <string.h>
#include "bytecode/bc.h"
#include "compiler/ast.h"

#define MAX_NEST 500 /* nesting of blocks and expressions (operator chains count too) */
#define MAX_FUNCS 10000 /* kernels and helpers in one source */

typedef struct parser {
    dvm_arena *a;
    dvm_diags *d;
    const char *src;
    const dvm_token *t;
    int n, pos;
    int depth;
    jmp_buf *jb;
} parser;

static const dvm_token *peek(parser *p) { return &p->t[p->pos]; }
static int at(parser *p, int kind) { return p->t[p->pos].kind == kind; }
static const dvm_token *next(parser *p) {
    const dvm_token *t = &p->t[p->pos];
    if (t->kind != TK_EOF) p->pos++;
    return t;
}
static int accept(parser *p, int kind) {
    if (!at(p, kind)) return 0;
    next(p);
    return 1;
}

#if defined(__GNUC__)
__attribute__((noreturn, format(printf, 3, 4)))
#endif
static void fail(parser *p, const dvm_token *t, const char *fmt, ...);

#include <stdarg.h>
#include <stdio.h>
static void fail(parser *p, const dvm_token *t, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    dvm_diag(p->d, t->line, t->col, "%s", msg);
    longjmp(*p->jb, 1);
}

static const char *desc(parser *p, const dvm_token *t) { return dvm_tok_desc(p->a, p->src, t); }

static const dvm_token *expect(parser *p, int kind, const char *what) {
    if (!at(p, kind)) fail(p, peek(p), "expected '%s' %s, got %s", dvm_tok_spelling(kind), what, desc(p, peek(p)));
    return next(p);
}

static void *alloc(parser *p, size_t n) {
    void *m = dvm_arena_alloc(p->a, n);
    if (!m) fail(p, peek(p), "out of memory");
    return m;
}

/* ---- expressions ---- */
static ast_expr *new_expr(parser *p, int kind, const dvm_token *t) {
    ast_expr *e = alloc(p, sizeof *e);
    e->kind = (uint8_t)kind;
    e->line = t->line;
    e->col = t->col;
    e->off = t->off;
    e->end = t->off + t->len;
    return e;
}
static void span_to(parser *p, ast_expr *e) {
    const dvm_token *last = &p->t[p->pos > 0 ? p->pos - 1 : 0];
    if (last->off + last->len > e->end) e->end = last->off + last->len;
}

static ast_expr *parse_expr(parser *p);

typedef struct expr_list {
    ast_expr **v;
    int n, cap;
} expr_list;
static void list_push(parser *p, expr_list *l, ast_expr *e) {
    if (l->n == l->cap) {
        int nc = l->cap ? l->cap * 2 : 4;
        ast_expr **v = dvm_arena_grow(p->a, l->v, (size_t)l->cap * sizeof *v, (size_t)nc * sizeof *v);
        if (!v) fail(p, peek(p), "out of memory");
        l->v = v;
        l->cap = nc;
    }
    l->v[l->n++] = e;
}

/* Arguments up to the closing bracket `close`. */
static void parse_args(parser *p, ast_expr *e, int close, const char *what) {
    expr_list l = {0};
    if (!at(p, close)) {
        for (;;) {
            list_push(p, &l, parse_expr(p));
            if (!accept(p, TK_COMMA)) break;
            if (at(p, close)) break;
        }
    }
    if (!at(p, close))
        fail(p, peek(p), "expected ',' or '%s' in %s, got %s", dvm_tok_spelling(close), what, desc(p, peek(p)));
    next(p);
    e->args = l.v;
    e->nargs = l.n;
}

static ast_expr *parse_atom(parser *p) {
    const dvm_token *t = peek(p);
    ast_expr *e;
    switch (t->kind) {
    case TK_NAME:
        next(p);
        e = new_expr(p, AE_NAME, t);
        e->name = t->name;
        e->str = t->str;
        return e;
    case TK_INT:
        next(p);
        if (t->ival > 2147483647) fail(p, t, "integer literal %lld is out of the i32 range (at most 2147483647)", (long long)t->ival);
        e = new_expr(p, AE_INT, t);
        e->ival = t->ival;
        return e;
    case TK_FLOAT:
        next(p);
        e = new_expr(p, AE_FLOAT, t);
        e->fval = t->fval;
        return e;
    case TK_TRUE:
    case TK_FALSE:
        next(p);
        e = new_expr(p, AE_BOOL, t);
        e->ival = t->kind == TK_TRUE;
        return e;
    case TK_STRING:
        next(p);
        e = new_expr(p, AE_STRING, t);
        e->str = t->str;
        return e;
    case TK_LPAREN: {
        next(p);
        e = parse_expr(p);
        if (at(p, TK_COMMA)) fail(p, peek(p), "tuples are not supported: expected ')', got ','");
        expect(p, TK_RPAREN, "to close '('");
        /* keep the parenthesised span for assert messages */
        if (t->off < e->off) e->off = t->off;
        span_to(p, e);
        return e;
    }
    default:
        fail(p, t, "expected an expression, got %s", desc(p, t));
    }
}

static ast_expr *parse_postfix(parser *p) {
    ast_expr *e = parse_atom(p);
    for (;;) {
        const dvm_token *t = peek(p);
        if (t->kind == TK_LPAREN) {
            if (e->kind != AE_NAME) fail(p, t, "only named functions can be called");
            next(p);
            e->kind = AE_CALL;
            parse_args(p, e, TK_RPAREN, "the arguments of the call");
        } else if (t->kind == TK_LBRACK) {
            next(p);
            ast_expr *x = new_expr(p, AE_INDEX, t);
            x->line = e->line;
            x->col = e->col;
            x->off = e->off;
            x->a = e;
            if (at(p, TK_RBRACK)) fail(p, peek(p), "expected an index, got ']'");
            parse_args(p, x, TK_RBRACK, "the indices");
            e = x;
        } else if (t->kind == TK_DOT) {
            next(p);
            const dvm_token *nm = peek(p);
            if (nm->kind != TK_NAME) fail(p, nm, "expected a name after '.', got %s", desc(p, nm));
            next(p);
            ast_expr *x = new_expr(p, AE_ATTR, nm);
            x->line = e->line;
            x->col = e->col;
            x->off = e->off;
            x->a = e;
            x->name = nm->name;
            x->str = nm->str;
            e = x;
        } else {
            break;
        }
        span_to(p, e);
    }
    return e;
}

static ast_expr *parse_factor(parser *p);

/* A chain `a + b + c ...` builds a left spine as deep as it is long: it counts as nesting,
 * so that no later recursive pass can overflow the stack. */
static void chain_step(parser *p, const dvm_token *t) {
    if (++p->depth > MAX_NEST) fail(p, t, "expression is nested too deeply (or its operator chain is too long)");
}

static ast_expr *parse_power(parser *p) {
    ast_expr *e = parse_postfix(p);
    if (at(p, TK_DSTAR)) {
        const dvm_token *t = next(p);
        chain_step(p, t); /* a ** b ** c nests to the right */
        ast_expr *x = new_expr(p, AE_BINARY, t);
        x->op = TK_DSTAR;
        x->a = e;
        x->b = parse_factor(p); /* right-associative; binds a unary minus on its right */
        x->off = e->off;
        span_to(p, x);
        p->depth--;
        return x;
    }
    return e;
}

static ast_expr *parse_factor(parser *p) {
    const dvm_token *t = peek(p);
    if (t->kind == TK_MINUS || t->kind == TK_PLUS) {
        next(p);
        if (++p->depth > MAX_NEST) fail(p, t, "expression is nested too deeply");
        /* -2147483648 is the one literal that only exists negated */
        if (t->kind == TK_MINUS && at(p, TK_INT) && peek(p)->ival == 2147483648LL &&
            p->t[p->pos + 1].kind != TK_DSTAR) {
            const dvm_token *lit = next(p);
            ast_expr *e = new_expr(p, AE_INT, t);
            e->ival = -2147483648LL;
            e->end = lit->off + lit->len;
            p->depth--;
            return e;
        }
        ast_expr *e = new_expr(p, AE_UNARY, t);
        e->op = (uint8_t)t->kind;
        e->a = parse_factor(p);
        span_to(p, e);
        p->depth--;
        return e;
    }
    return parse_power(p);
}

static int binop_level(int kind) {
    switch (kind) {
    case TK_STAR: case TK_SLASH: case TK_DSLASH: case TK_PERCENT: case TK_AT: return 2;
    case TK_PLUS: case TK_MINUS: return 1;
    default: return 0;
    }
}


static ast_expr *parse_binary(parser *p, int level) {
    int depth = p->depth;
    ast_expr *e = level == 2 ? parse_factor(p) : parse_binary(p, level + 1);
    while (binop_level(peek(p)->kind) == level) {
        const dvm_token *t = next(p);
        chain_step(p, t);
        ast_expr *x = new_expr(p, AE_BINARY, t);
        x->op = (uint8_t)t->kind;
        x->a = e;
        x->b = level == 2 ? parse_factor(p) : parse_binary(p, level + 1);
        x->off = e->off;
        span_to(p, x);
        e = x;
    }
    p->depth = depth;
    return e;
}

static int is_cmp(int k) { return k == TK_EQ || k == TK_NE || k == TK_LT || k == TK_LE || k == TK_GT || k == TK_GE; }

static ast_expr *parse_comparison(parser *p) {
    ast_expr *e = parse_binary(p, 1);
    if (!is_cmp(peek(p)->kind)) return e;
    const dvm_token *t = peek(p);
    ast_expr *x = new_expr(p, AE_COMPARE, t);
    x->off = e->off;
    expr_list l = {0};
    list_push(p, &l, e);
    uint8_t ops[64];
    int nops = 0;
    while (is_cmp(peek(p)->kind)) {
        if (nops == 64) fail(p, peek(p), "comparison chain is too long");
        ops[nops++] = (uint8_t)next(p)->kind;
        list_push(p, &l, parse_binary(p, 1));
    }
    x->args = l.v;
    x->nargs = l.n;
    x->ops = alloc(p, (size_t)nops);
    memcpy(x->ops, ops, (size_t)nops);
    span_to(p, x);
    return x;
}

static ast_expr *parse_not(parser *p) {
    if (at(p, TK_NOT)) {
        const dvm_token *t = next(p);
        if (++p->depth > MAX_NEST) fail(p, t, "expression is nested too deeply");
        ast_expr *e = new_expr(p, AE_UNARY, t);
        e->op = TK_NOT;
        e->a = parse_not(p);
        span_to(p, e);
        p->depth--;
        return e;
    }
    return parse_comparison(p);
}

/* A left-associative chain `a OP b OP c` of `and` or `or` over operands parsed by `sub`. */
static ast_expr *parse_bool_chain(parser *p, int tok, int kind, ast_expr *(*sub)(parser *)) {
    int depth = p->depth;
    ast_expr *e = sub(p);
    while (at(p, tok)) {
        const dvm_token *t = next(p);
        chain_step(p, t);
        ast_expr *x = new_expr(p, kind, t);
        x->a = e;
        x->b = sub(p);
        x->off = e->off;
        span_to(p, x);
        e = x;
    }
    p->depth = depth;
    return e;
}

static ast_expr *parse_and(parser *p) { return parse_bool_chain(p, TK_AND, AE_AND, parse_not); }
static ast_expr *parse_or(parser *p) { return parse_bool_chain(p, TK_OR, AE_OR, parse_and); }

static ast_expr *parse_expr(parser *p) {
    const dvm_token *t0 = peek(p);
    if (++p->depth > MAX_NEST) fail(p, t0, "expression is nested too deeply");
    ast_expr *e = parse_or(p);
    if (at(p, TK_IF)) {
        const dvm_token *t = next(p);
        ast_expr *x = new_expr(p, AE_COND, t);
        x->a = e;
        x->b = parse_or(p);
        expect(p, TK_ELSE, "in the conditional expression 'a if c else b'");
        x->c = parse_expr(p);
        x->off = e->off;
        span_to(p, x);
        e = x;
    }
    p->depth--;
    return e;
}

/* ---- statements ---- */
typedef struct stmt_list {
    ast_stmt **v;
    int n, cap;
} stmt_list;
static void slist_push(parser *p, stmt_list *l, ast_stmt *s) {
    if (l->n == l->cap) {
        int nc = l->cap ? l->cap * 2 : 8;
        ast_stmt **v = dvm_arena_grow(p->a, l->v, (size_t)l->cap * sizeof *v, (size_t)nc * sizeof *v);
        if (!v) fail(p, peek(p), "out of memory");
        l->v = v;
        l->cap = nc;
    }
    l->v[l->n++] = s;
}

static ast_stmt *new_stmt(parser *p, int kind, const dvm_token *t) {
    ast_stmt *s = alloc(p, sizeof *s);
    s->kind = (uint8_t)kind;
    s->line = t->line;
    s->col = t->col;
    return s;
}

/* Skips the rest of a broken line and, when it opened a block, that block. */
static void sync(parser *p) {
    while (!at(p, TK_NEWLINE) && !at(p, TK_EOF)) {
        if (at(p, TK_INDENT) || at(p, TK_DEDENT)) break;
        next(p);
    }
    accept(p, TK_NEWLINE);
    if (at(p, TK_INDENT)) {
        int depth = 0;
        do {
            if (at(p, TK_INDENT)) depth++;
            else if (at(p, TK_DEDENT)) depth--;
            next(p);
        } while (depth > 0 && !at(p, TK_EOF));
    }
}

static void parse_block(parser *p, ast_block *b, const char *what);

static void end_of_simple(parser *p, const char *what) {
    if (!at(p, TK_NEWLINE) && !at(p, TK_EOF))
        fail(p, peek(p), "expected end of line after %s, got %s", what, desc(p, peek(p)));
    accept(p, TK_NEWLINE);
}

/* An if and its elif chain: each elif is an AS_IF alone in the previous one's orelse, built in
 * a loop (a chain may be as long as the file). */
static ast_stmt *parse_if(parser *p, const dvm_token *t) {
    ast_stmt *first = NULL, *prev = NULL;
    int is_elif = 0;
    for (;;) {
        ast_stmt *s = new_stmt(p, AS_IF, t);
        s->is_elif = is_elif;
        if (prev) {
            prev->orelse.s = alloc(p, sizeof(ast_stmt *));
            prev->orelse.s[0] = s;
            prev->orelse.n = 1;
        } else {
            first = s;
        }
        s->value = parse_expr(p);
        expect(p, TK_COLON, is_elif ? "after the elif condition" : "after the if condition");
        parse_block(p, &s->body, is_elif ? "the elif" : "the if");
        if (at(p, TK_ELIF)) {
            t = next(p);
            is_elif = 1;
            prev = s;
            continue;
        }
        if (at(p, TK_ELSE)) {
            next(p);
            expect(p, TK_COLON, "after 'else'");
            parse_block(p, &s->orelse, "the else");
        }
        return first;
    }
}

static ast_stmt *parse_stmt(parser *p) {
    const dvm_token *t = peek(p);
    ast_stmt *s;
    switch (t->kind) {
    case TK_INDENT: fail(p, t, "unexpected indentation");
    case TK_KERNEL:
    case TK_DEF:
        fail(p, t, "'%s' is only allowed at the top level of the file, not inside a body", dvm_tok_spelling(t->kind));
    case TK_IF:
        next(p);
        return parse_if(p, t);
    case TK_ELIF:
    case TK_ELSE: fail(p, t, "'%s' without a matching 'if'", dvm_tok_spelling(t->kind));
    case TK_WHILE:
        next(p);
        s = new_stmt(p, AS_WHILE, t);
        s->value = parse_expr(p);
        expect(p, TK_COLON, "after the while condition");
        parse_block(p, &s->body, "the while loop");
        return s;
    case TK_FOR: {
        next(p);
        s = new_stmt(p, AS_FOR, t);
        expr_list l = {0};
        for (;;) {
            const dvm_token *nm = peek(p);
            if (nm->kind != TK_NAME) fail(p, nm, "expected a loop variable name after 'for', got %s", desc(p, nm));
            next(p);
            ast_expr *v = new_expr(p, AE_NAME, nm);
            v->name = nm->name;
            v->str = nm->str;
            list_push(p, &l, v);
            if (!accept(p, TK_COMMA)) break;
        }
        s->targets = l.v;
        s->ntargets = l.n;
        expect(p, TK_IN, "after the loop variables");
        s->value = parse_expr(p);
        expect(p, TK_COLON, "after the loop range");
        parse_block(p, &s->body, "the for loop");
        return s;
    }
    case TK_BREAK:
    case TK_CONTINUE:
    case TK_PASS:
        next(p);
        s = new_stmt(p, t->kind == TK_BREAK ? AS_BREAK : t->kind == TK_CONTINUE ? AS_CONTINUE : AS_PASS, t);
        end_of_simple(p, dvm_tok_spelling(t->kind));
        return s;
    case TK_RETURN:
        next(p);
        s = new_stmt(p, AS_RETURN, t);
        if (at(p, TK_NEWLINE) || at(p, TK_EOF)) fail(p, peek(p), "expected a value after 'return' (helpers return a value)");
        s->value = parse_expr(p);
        if (at(p, TK_COMMA)) { /* return a, b: a tuple */
            expr_list l = {0};
            ast_expr *tup = new_expr(p, AE_TUPLE, t);
            tup->line = s->value->line;
            tup->col = s->value->col;
            list_push(p, &l, s->value);
            while (accept(p, TK_COMMA)) {
                if (l.n == DVM_MAX_TUPLE) fail(p, peek(p), "a helper returns at most %d values", DVM_MAX_TUPLE);
                list_push(p, &l, parse_expr(p));
            }
            tup->args = l.v;
            tup->nargs = l.n;
            s->value = tup;
        }
        end_of_simple(p, "the returned value");
        return s;
    case TK_ASSERT:
        next(p);
        s = new_stmt(p, AS_ASSERT, t);
        s->value = parse_expr(p);
        s->text = dvm_arena_strndup(p->a, p->src + s->value->off, s->value->end - s->value->off);
        if (accept(p, TK_COMMA)) {
            const dvm_token *m = peek(p);
            if (m->kind != TK_STRING) fail(p, m, "expected a string message after 'assert COND,', got %s", desc(p, m));
            next(p);
            s->msg = m->str;
        }
        end_of_simple(p, "the assert");
        return s;
    default: break;
    }
    ast_expr *e = parse_expr(p);
    const dvm_token *op = peek(p);
    switch (op->kind) {
    case TK_ASSIGN:
        next(p);
        s = new_stmt(p, AS_ASSIGN, t);
        s->target = e;
        s->value = parse_expr(p);
        if (at(p, TK_ASSIGN)) fail(p, peek(p), "chained assignment 'a = b = c' is not supported");
        if (at(p, TK_COMMA)) fail(p, peek(p), "tuple values are not supported: 'a, b = f(...)' unpacks the values of one helper call");
        end_of_simple(p, "the assignment");
        return s;
    case TK_PLUSEQ:
    case TK_MINUSEQ:
    case TK_STAREQ:
    case TK_SLASHEQ:
        next(p);
        s = new_stmt(p, AS_AUG, t);
        s->op = op->kind == TK_PLUSEQ ? TK_PLUS : op->kind == TK_MINUSEQ ? TK_MINUS : op->kind == TK_STAREQ ? TK_STAR : TK_SLASH;
        s->target = e;
        s->value = parse_expr(p);
        end_of_simple(p, "the assignment");
        return s;
    case TK_COMMA: { /* a, b = f(...): unpacks the values a helper returns */
        expr_list l = {0};
        list_push(p, &l, e);
        while (accept(p, TK_COMMA)) {
            if (l.n == DVM_MAX_TUPLE) fail(p, peek(p), "at most %d targets may be unpacked", DVM_MAX_TUPLE);
            list_push(p, &l, parse_expr(p));
        }
        if (!at(p, TK_ASSIGN)) fail(p, peek(p), "expected '=' after the targets 'a, b', got %s", desc(p, peek(p)));
        next(p);
        s = new_stmt(p, AS_ASSIGN, t);
        s->targets = l.v;
        s->ntargets = l.n;
        s->target = e;
        s->value = parse_expr(p);
        if (at(p, TK_COMMA)) fail(p, peek(p), "tuple values are not supported: 'a, b = f(...)' unpacks the values of one helper call");
        if (at(p, TK_ASSIGN)) fail(p, peek(p), "chained assignment 'a = b = c' is not supported");
        end_of_simple(p, "the assignment");
        return s;
    }
    default:
        s = new_stmt(p, AS_EXPR, t);
        s->value = e;
        end_of_simple(p, "the expression");
        return s;
    }
}

/* One statement, recovering from errors inside it. NULL when it failed. */
static ast_stmt *parse_stmt_safe(parser *p) {
    jmp_buf jb, *saved = p->jb;
    p->jb = &jb;
    int depth = p->depth;
    ast_stmt *s = NULL;
    if (setjmp(jb) == 0) {
        s = parse_stmt(p);
    } else {
        p->depth = depth;
        sync(p);
    }
    p->jb = saved;
    return s;
}

static void parse_block(parser *p, ast_block *b, const char *what) {
    stmt_list l = {0};
    if (!at(p, TK_NEWLINE)) {
        /* `if c: stmt` on one line */
        if (at(p, TK_EOF)) fail(p, peek(p), "expected the body of %s, got end of file", what);
        ast_stmt *s = parse_stmt(p);
        slist_push(p, &l, s);
        b->s = l.v;
        b->n = l.n;
        return;
    }
    next(p);
    if (!at(p, TK_INDENT))
        fail(p, peek(p), "expected an indented block for the body of %s, got %s", what, desc(p, peek(p)));
    next(p);
    if (++p->depth > MAX_NEST) fail(p, peek(p), "blocks are nested too deeply");
    while (!at(p, TK_DEDENT) && !at(p, TK_EOF)) {
        ast_stmt *s = parse_stmt_safe(p);
        if (s) slist_push(p, &l, s);
    }
    accept(p, TK_DEDENT);
    p->depth--;
    b->s = l.v;
    b->n = l.n;
}

static int parse_type(parser *p, int allow_bool) {
    const dvm_token *t = peek(p);
    if (t->kind == TK_NAME) {
        if (strcmp(t->str, "f32") == 0) { next(p); return DVM_T_F32; }
        if (strcmp(t->str, "i32") == 0) { next(p); return DVM_T_I32; }
        if (allow_bool && strcmp(t->str, "bool") == 0) { next(p); return DVM_T_BOOL; }
        if ((t->str[0] == 'v' && !strncmp(t->str, "vec", 3)) || (t->str[0] == 'm' && !strncmp(t->str, "mat", 3)))
            if (t->str[3] >= '2' && t->str[3] <= '4' && t->str[4] == 0) {
                next(p);
                return (t->str[0] == 'v' ? DVM_T_VEC2 : DVM_T_MAT2) + (t->str[3] - '2');
            }
    }
    fail(p, t, "expected a type (%s), got %s", allow_bool ? "f32, i32, bool, vec2..vec4 or mat2..mat4" : "f32, i32, vec2..vec4 or mat2..mat4", desc(p, t));
}

static void parse_param(parser *p, ast_param *pa, int is_kernel) {
    const dvm_token *nm = peek(p);
    if (nm->kind != TK_NAME) fail(p, nm, "expected a parameter name, got %s", desc(p, nm));
    next(p);
    pa->name = nm->name;
    pa->str = nm->str;
    pa->line = nm->line;
    pa->col = nm->col;
    expect(p, TK_COLON, "and a type after the parameter name");
    const dvm_token *tt = peek(p);
    pa->type = (uint8_t)parse_type(p, 1);
    if (accept(p, TK_LBRACK)) {
        if (pa->type == DVM_T_BOOL) fail(p, tt, "arrays of bool are not supported (element types: f32, i32)");
        pa->is_array = 1;
        for (;;) {
            const dvm_token *d = peek(p);
            if (pa->rank == DVM_MAX_RANK) fail(p, d, "arrays have at most %d dimensions", DVM_MAX_RANK);
            ast_dim *dm = &pa->dim[pa->rank++];
            dm->line = d->line;
            dm->col = d->col;
            if (d->kind == TK_NAME) {
                dm->is_sym = 1;
                dm->name = d->name;
                dm->str = d->str;
            } else if (d->kind == TK_INT) {
                if (d->ival > 2147483647) fail(p, d, "extent %lld is out of the i32 range", (long long)d->ival);
                dm->value = d->ival;
            } else {
                fail(p, d, "expected a shape symbol or an integer extent, got %s", desc(p, d));
            }
            next(p);
            if (!accept(p, TK_COMMA)) break;
        }
        expect(p, TK_RBRACK, "to close the array shape");
    } else if (is_kernel && pa->type == DVM_T_BOOL) {
        fail(p, tt, "kernel parameters are f32 or i32, not bool");
    } else if (is_kernel && pa->type >= DVM_T_VEC2) {
        fail(p, tt, "a kernel's scalar parameters are f32 or i32; pass a %.4s as an array (%s: %.4s[1]) and read %s[0]", p->src + tt->off,
             pa->str, p->src + tt->off, pa->str);
    }
}

static ast_func *parse_func(parser *p) {
    const dvm_token *t = next(p);
    ast_func *f = alloc(p, sizeof *f);
    f->is_kernel = t->kind == TK_KERNEL;
    const dvm_token *nm = peek(p);
    if (nm->kind != TK_NAME) fail(p, nm, "expected a %s name after '%s', got %s", f->is_kernel ? "kernel" : "helper", dvm_tok_spelling(t->kind), desc(p, nm));
    next(p);
    f->name = nm->name;
    f->str = nm->str;
    f->line = nm->line;
    f->col = nm->col;
    expect(p, TK_LPAREN, "after the name");
    ast_param tmp[256];
    int n = 0;
    while (!at(p, TK_RPAREN)) {
        if (n == 256) fail(p, peek(p), "too many parameters (at most 256)");
        memset(&tmp[n], 0, sizeof tmp[n]);
        parse_param(p, &tmp[n++], f->is_kernel);
        if (!accept(p, TK_COMMA)) break;
    }
    if (!at(p, TK_RPAREN)) fail(p, peek(p), "expected ',' or ')' in the parameter list, got %s", desc(p, peek(p)));
    next(p);
    f->params = alloc(p, sizeof(ast_param) * (size_t)(n ? n : 1));
    memcpy(f->params, tmp, sizeof(ast_param) * (size_t)n);
    f->nparams = n;
    if (f->is_kernel) {
        if (at(p, TK_ARROW)) fail(p, peek(p), "a kernel returns nothing: it writes its results into arrays");
    } else {
        expect(p, TK_ARROW, "and the return type after the helper's parameters (def f(...) -> f32:)");
        if (accept(p, TK_LPAREN)) { /* -> (f32, vec3): several values */
            f->ret = DVM_T_TUPLE;
            for (;;) {
                if (f->nrets == DVM_MAX_TUPLE) fail(p, peek(p), "a helper returns at most %d values", DVM_MAX_TUPLE);
                f->rets[f->nrets++] = (uint8_t)parse_type(p, 1);
                if (!accept(p, TK_COMMA)) break;
            }
            expect(p, TK_RPAREN, "to close the return types");
            if (f->nrets == 1) f->ret = f->rets[0];
        } else {
            f->ret = (uint8_t)parse_type(p, 1);
        }
    }
    expect(p, TK_COLON, "to start the body");
    parse_block(p, &f->body, f->is_kernel ? "the kernel" : "the helper");
    return f;
}

ast_module *dvm_parse(dvm_arena *a, const char *src, const dvm_lexed *lx, dvm_diags *d) {
    parser P;
    memset(&P, 0, sizeof P);
    P.a = a;
    P.d = d;
    P.src = src;
    P.t = lx->toks;
    P.n = lx->ntoks;
    ast_module *m = dvm_arena_alloc(a, sizeof *m);
    if (!m) return NULL;
    int cap = 0;
    while (!at(&P, TK_EOF)) {
        jmp_buf jb;
        P.jb = &jb;
        P.depth = 0;
        if (setjmp(jb) == 0) {
            const dvm_token *t = peek(&P);
            if (t->kind == TK_NEWLINE) {
                next(&P);
                continue;
            }
            if (t->kind != TK_KERNEL && t->kind != TK_DEF) {
                if (t->kind == TK_INDENT) fail(&P, t, "unexpected indentation at the top level");
                fail(&P, t, "expected 'kernel' or 'def' at the top level, got %s", desc(&P, t));
            }
            if (m->nfuncs == MAX_FUNCS) /* each costs tens of KiB and some 100 us to compile */
                fail(&P, t, "too many kernels and helpers in one source (at most %d)", MAX_FUNCS);
            ast_func *f = parse_func(&P);
            if (m->nfuncs == cap) {
                int nc = cap ? cap * 2 : 8;
                ast_func **v = dvm_arena_grow(a, m->funcs, (size_t)cap * sizeof *v, (size_t)nc * sizeof *v);
                if (!v) return NULL;
                m->funcs = v;
                cap = nc;
            }
            m->funcs[m->nfuncs++] = f;
        } else {
            sync(&P);
            /* skip to the next top-level declaration */
            while (!at(&P, TK_EOF) && !at(&P, TK_KERNEL) && !at(&P, TK_DEF)) {
                if (at(&P, TK_INDENT)) sync(&P);
                else next(&P);
            }
        }
    }
    return m;
}
