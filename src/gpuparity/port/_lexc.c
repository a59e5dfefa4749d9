/* The lexer of lexer.py (`lex_python`, the reference) compiled: the same tokens, some ten
 * times faster. Built at install when a C compiler and Python's headers are there
 * (pyproject.toml, optional); without it lexer.py runs the Python one. Every branch below
 * mirrors one alternative of lexer._LEX, tried in the same order; tests compare the two
 * lexers on generated text (hypothesis) and on the corpora. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

static PyTypeObject *token_type;  /* lexer.Token, set by configure() */
static PyObject *k_id, *k_num, *k_str, *k_chr, *k_comment, *k_punct, *k_pp, *k_header, *empty;

typedef struct {
    const Py_UCS4 *data;  /* the text as UCS-4: one read per character whatever its storage */
    Py_ssize_t n;
} Src;

/* The character at i, or -1 past the end (a NUL in the text is a character like any other). */
static inline long at(const Src *s, Py_ssize_t i) {
    return (i >= 0 && i < s->n) ? (long)s->data[i] : -1;
}

static inline int is_blank(long c) { return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v'; }
/* re's \w and \d on str patterns: Unicode alphanumerics and '_', Unicode decimal digits. */
static inline int is_word(long c) {
    if (c < 0) return 0;
    if (c < 128) return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    return Py_UNICODE_ISALNUM((Py_UCS4)c);
}
static inline int is_digit(long c) {
    if (c < 0) return 0;
    if (c < 128) return c >= '0' && c <= '9';
    return Py_UNICODE_ISDECIMAL((Py_UCS4)c);
}
static inline int is_id_start(long c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == '$';
}
static inline int is_ascii_id_start(long c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }

static Py_ssize_t count_newlines(const Src *s, Py_ssize_t a, Py_ssize_t b) {
    Py_ssize_t k = 0;
    for (Py_ssize_t i = a; i < b; i++)
        if (s->data[i] == '\n') k++;
    return k;
}

/* Where the prefix (?:u8|[uUL])? may end, in the order the regex tries them: up to three. */
static int prefixes(const Src *s, Py_ssize_t p, Py_ssize_t out[3]) {
    int k = 0;
    long c = at(s, p);
    if (c == 'u' && at(s, p + 1) == '8') out[k++] = p + 2;
    if (c == 'u' || c == 'U' || c == 'L') out[k++] = p + 1;
    out[k++] = p;
    return k;
}

/* R"delim( ... )delim" at r; its end, or -1. */
static Py_ssize_t raw_at(const Src *s, Py_ssize_t r) {
    if (at(s, r) != 'R' || at(s, r + 1) != '"') return -1;
    Py_ssize_t d0 = r + 2, d = d0;
    for (;;) {
        long c = at(s, d);
        if (c < 0 || c == '(' || c == ')' || c == '\\' || c == '"' || Py_UNICODE_ISSPACE((Py_UCS4)c)) break;
        d++;
        if (d - d0 > 16) return -1;
    }
    if (at(s, d) != '(') return -1;
    Py_ssize_t len = d - d0;
    for (Py_ssize_t e = d + 1; e + len + 1 < s->n + 1; e++) {
        if (at(s, e) != ')') continue;
        Py_ssize_t k = 0;
        while (k < len && at(s, e + 1 + k) == at(s, d0 + k)) k++;
        if (k == len && at(s, e + 1 + len) == '"') return e + len + 2;
    }
    return -1;
}

/* A "..." or '...' literal opened at q (the quote): its end (unterminated: where it stops). */
static Py_ssize_t quoted(const Src *s, Py_ssize_t q, long quote) {
    Py_ssize_t e = q + 1;
    for (;;) {
        long c = at(s, e);
        if (c == '\\' && e + 1 < s->n) { e += 2; continue; }
        if (c < 0 || c == quote || c == '\\' || c == '\n') break;
        e++;
    }
    return at(s, e) == quote ? e + 1 : e;
}

/* The punctuator at p, in _LEX's order; its length. */
static Py_ssize_t punct_len(const Src *s, Py_ssize_t p) {
    long a = at(s, p), b = at(s, p + 1), c = at(s, p + 2);
    if (a == '<' && b == '<' && c == '<') return 3;
    if (a == '>' && b == '>' && c == '>') return 3;
    if (a == '-' && b == '>') return c == '*' ? 3 : 2;
    if (a == ':' && b == ':') return 2;
    if (a == '.' && b == '.' && c == '.') return 3;
    if (a == '<' && b == '<' && c == '=') return 3;
    if (a == '>' && b == '>' && c == '=') return 3;
    if (a == '<' && b == '=' && c == '>') return 3;
    if (b == '=' && a > 0 && a < 128 && strchr("-+*/%&|^!=<>", (int)a)) return 2;
    if ((a == '<' || a == '>' || a == '&' || a == '|' || a == '+' || a == '-' || a == '#') && b == a) return 2;
    return 1;
}

typedef struct {
    PyObject *tokens, *kinds, *texts, *directives;
    PyObject *text;
    Py_ssize_t base;
    /* the last line number and end offset made, reused while they repeat (most tokens share
       their line with the one before, and many start where it ended) */
    PyObject *line_obj, *end_obj;
    Py_ssize_t line_val, end_val;
} Out;

/* A new reference to the int v, reusing *cache when it holds v. */
static PyObject *cached_int(PyObject **cache, Py_ssize_t *cached, Py_ssize_t v) {
    if (*cache == NULL || *cached != v) {
        PyObject *obj = PyLong_FromSsize_t(v);
        if (!obj) return NULL;
        Py_XDECREF(*cache);
        *cache = obj;
        *cached = v;
    }
    Py_INCREF(*cache);
    return *cache;
}

static int emit_text(Out *o, PyObject *kind, PyObject *piece, Py_ssize_t a, Py_ssize_t b, Py_ssize_t line);

static int emit(Out *o, PyObject *kind, Py_ssize_t a, Py_ssize_t b, Py_ssize_t line) {
    PyObject *piece = PyUnicode_Substring(o->text, a, b);
    if (!piece) return -1;
    int rc = emit_text(o, kind, piece, a, b, line);
    Py_DECREF(piece);
    return rc;
}

/* emit() for a token whose text is not the source between a and b ("#define" for "#  define"). */
static int emit_text(Out *o, PyObject *kind, PyObject *piece, Py_ssize_t a, Py_ssize_t b, Py_ssize_t line) {
    PyObject *tok = token_type->tp_alloc(token_type, 6);
    if (!tok) return -1;
    PyObject *start = cached_int(&o->end_obj, &o->end_val, o->base + a);
    PyObject *end = cached_int(&o->end_obj, &o->end_val, o->base + b);
    PyObject *ln = cached_int(&o->line_obj, &o->line_val, line);
    if (!start || !end || !ln) { Py_XDECREF(start); Py_XDECREF(end); Py_XDECREF(ln); Py_DECREF(tok); return -1; }
    Py_INCREF(kind); PyTuple_SET_ITEM(tok, 0, kind);
    Py_INCREF(piece); PyTuple_SET_ITEM(tok, 1, piece);
    PyTuple_SET_ITEM(tok, 2, start);
    PyTuple_SET_ITEM(tok, 3, end);
    PyTuple_SET_ITEM(tok, 4, ln);
    Py_INCREF(empty); PyTuple_SET_ITEM(tok, 5, empty);
    int rc = PyList_Append(o->tokens, tok) | PyList_Append(o->kinds, kind) | PyList_Append(o->texts, piece);
    Py_DECREF(tok);
    return rc ? -1 : 0;
}

static int is_include(const Src *s, Py_ssize_t a, Py_ssize_t b) {
    static const char *names[] = {"include", "include_next", "import"};
    for (int k = 0; k < 3; k++) {
        Py_ssize_t len = (Py_ssize_t)strlen(names[k]);
        if (b - a != len) continue;
        Py_ssize_t i = 0;
        while (i < len && at(s, a + i) == names[k][i]) i++;
        if (i == len) return 1;
    }
    return 0;
}

/* The `#` at p begins a directive: its token (merged with the name), and an #include's header
 * name read whole. Returns where lexing goes on, or -1 on error. */
static Py_ssize_t directive(Out *o, const Src *s, Py_ssize_t p, Py_ssize_t line) {
    Py_ssize_t e = p + 1;
    while (at(s, e) == ' ' || at(s, e) == '\t') e++;
    Py_ssize_t name0 = e;
    if (is_ascii_id_start(at(s, e))) {
        e++;
        while (is_word(at(s, e))) e++;
    }
    Py_ssize_t name1 = e;
    PyObject *name = PyUnicode_Substring(o->text, name0, name1);
    if (!name) return -1;
    PyObject *piece = PyUnicode_FromFormat("#%U", name);
    Py_DECREF(name);
    if (!piece) return -1;
    PyObject *index = PyLong_FromSsize_t(PyList_GET_SIZE(o->tokens));
    int rc = index ? PyList_Append(o->directives, index) : -1;
    Py_XDECREF(index);
    if (rc || emit_text(o, k_pp, piece, p, e, line)) { Py_DECREF(piece); return -1; }
    Py_DECREF(piece);
    if (name1 > name0 && is_include(s, name0, name1)) {
        Py_ssize_t h = e;
        while (at(s, h) == ' ' || at(s, h) == '\t') h++;
        long open = at(s, h);
        if (open == '<' || open == '"') {
            long close = open == '<' ? '>' : '"';
            Py_ssize_t k = h + 1;
            while (at(s, k) >= 0 && at(s, k) != close && at(s, k) != '\n') k++;
            if (at(s, k) == close) {
                if (emit(o, k_header, h, k + 1, line)) return -1;
                e = k + 1;
            }
        }
    }
    return e;
}

static PyObject *configure(PyObject *self, PyObject *args) {
    PyObject *type;
    if (!PyArg_ParseTuple(args, "O!", &PyType_Type, &type)) return NULL;
    if (!PyType_IsSubtype((PyTypeObject *)type, &PyTuple_Type)) {
        PyErr_SetString(PyExc_TypeError, "Token must be a tuple type");
        return NULL;
    }
    Py_XDECREF(token_type);
    Py_INCREF(type);
    token_type = (PyTypeObject *)type;
    Py_RETURN_NONE;
}

/* lex(text, base, line, in_directive, line_start, launches) ->
 *   (tokens, kinds, texts, directives, launches): lexer.lex_python's tokens, with their kinds,
 *   texts and the indices of the directives, and the count of `<<<` still open. */
static PyObject *lex(PyObject *self, PyObject *args) {
    PyObject *text;
    Py_ssize_t base, line, launches;
    int in_directive, line_start;
    if (!PyArg_ParseTuple(args, "Unnppn", &text, &base, &line, &in_directive, &line_start, &launches)) return NULL;
    if (!token_type) {
        PyErr_SetString(PyExc_RuntimeError, "_lexc.configure(Token) was not called");
        return NULL;
    }
    Py_UCS4 *chars = PyUnicode_AsUCS4Copy(text);
    if (!chars) return NULL;
    Src s = {chars, PyUnicode_GET_LENGTH(text)};
    Out o = {PyList_New(0), PyList_New(0), PyList_New(0), PyList_New(0), text, base, NULL, NULL, 0, 0};
    if (!o.tokens || !o.kinds || !o.texts || !o.directives) goto fail;
    int at_line_start = line_start && !in_directive;
    Py_ssize_t pos = 0, n = s.n;
    while (pos < n) {
        Py_ssize_t p = pos;
        while (p < n && is_blank(at(&s, p))) p++;
        if (p >= n) break;
        long c = at(&s, p), c1 = at(&s, p + 1);
        if (c == '\n') { line++; at_line_start = !in_directive; pos = p + 1; continue; }
        if (c == '\\' && c1 == '\n') { line++; pos = p + 2; continue; }
        if (c == '\\' && c1 == '\r' && at(&s, p + 2) == '\n') { line++; pos = p + 3; continue; }
        Py_ssize_t e = -1;
        PyObject *kind = NULL;
        if (c == '/' && c1 == '/') {
            e = p + 2;
            for (;;) {
                long d = at(&s, e);
                if (d == '\\' && at(&s, e + 1) == '\n') e += 2;
                else if (d == '\\' && at(&s, e + 1) == '\r' && at(&s, e + 2) == '\n') e += 3;
                else if (d >= 0 && d != '\n') e++;
                else break;
            }
            kind = k_comment;
        } else if (c == '/' && c1 == '*') {
            e = n;
            for (Py_ssize_t k = p + 2; k + 1 < n; k++)
                if (at(&s, k) == '*' && at(&s, k + 1) == '/') { e = k + 2; break; }
            kind = k_comment;
        } else if (c == 'u' || c == 'U' || c == 'L' || c == 'R' || c == '"' || c == '\'') {
            Py_ssize_t ends[3];
            int k = prefixes(&s, p, ends);
            for (int j = 0; j < k && e < 0; j++) e = raw_at(&s, ends[j]);  /* raw strings first */
            if (e >= 0) kind = k_str;
            for (int j = 0; j < k && e < 0; j++)
                if (at(&s, ends[j]) == '"') { e = quoted(&s, ends[j], '"'); kind = k_str; }
            /* a number cannot start here: character literals come next in _LEX's order */
            for (int j = 0; j < k && e < 0; j++)
                if (at(&s, ends[j]) == '\'') { e = quoted(&s, ends[j], '\''); kind = k_chr; }
        }
        if (e < 0 && (is_digit(c) || (c == '.' && is_digit(c1)))) {
            e = p + (c == '.' ? 2 : 1);
            for (;;) {
                long d = at(&s, e), d1 = at(&s, e + 1);
                if ((d == 'e' || d == 'E' || d == 'p' || d == 'P') && (d1 == '+' || d1 == '-')) e += 2;
                else if (d == '\'' && (is_word(d1) || d1 == '.')) e += 2;
                else if (is_word(d) || d == '.') e++;
                else break;
            }
            kind = k_num;
        }
        if (e < 0 && is_id_start(c)) {
            e = p + 1;
            while (is_word(at(&s, e)) || at(&s, e) == '$') e++;
            if (emit(&o, k_id, p, e, line)) goto fail;
            at_line_start = 0;
            pos = e;
            continue;
        }
        if (e >= 0) {
            if (emit(&o, kind, p, e, line)) goto fail;
            if (kind != k_comment) at_line_start = 0;
            if (kind == k_comment || kind == k_str) line += count_newlines(&s, p, e);
            pos = e;
            continue;
        }
        e = p + punct_len(&s, p);
        if (c == '#' && e == p + 1 && at_line_start) {
            Py_ssize_t next = directive(&o, &s, p, line);
            if (next < 0) goto fail;
            at_line_start = 0;
            pos = next;
            continue;
        }
        if (e == p + 3 && c == '<' && c1 == '<' && at(&s, p + 2) == '<') {
            launches++;
        } else if (e == p + 3 && c == '>' && c1 == '>' && at(&s, p + 2) == '>') {
            if (launches) {
                launches--;
            } else {  /* `a<b<c<int>>>`: template closers, not a launch */
                if (emit(&o, k_punct, p, p + 2, line) || emit(&o, k_punct, p + 2, e, line)) goto fail;
                at_line_start = 0;
                pos = e;
                continue;
            }
        }
        if (emit(&o, k_punct, p, e, line)) goto fail;
        at_line_start = 0;
        pos = e;
    }
    PyMem_Free(chars);
    Py_XDECREF(o.line_obj);
    Py_XDECREF(o.end_obj);
    return Py_BuildValue("NNNNn", o.tokens, o.kinds, o.texts, o.directives, launches);
fail:
    PyMem_Free(chars);
    Py_XDECREF(o.line_obj);
    Py_XDECREF(o.end_obj);
    Py_XDECREF(o.tokens);
    Py_XDECREF(o.kinds);
    Py_XDECREF(o.texts);
    Py_XDECREF(o.directives);
    return NULL;
}

static PyMethodDef methods[] = {
    {"configure", configure, METH_VARARGS, "configure(Token): the tuple type tokens are made of."},
    {"lex", lex, METH_VARARGS, "lex(text, base, line, in_directive, line_start, launches)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_lexc", "lexer.py's lexer, compiled.", -1, methods};

PyMODINIT_FUNC PyInit__lexc(void) {
    k_id = PyUnicode_InternFromString("id");
    k_num = PyUnicode_InternFromString("num");
    k_str = PyUnicode_InternFromString("str");
    k_chr = PyUnicode_InternFromString("chr");
    k_comment = PyUnicode_InternFromString("comment");
    k_punct = PyUnicode_InternFromString("punct");
    k_pp = PyUnicode_InternFromString("pp");
    k_header = PyUnicode_InternFromString("header");
    empty = PyUnicode_InternFromString("");
    if (!k_id || !k_num || !k_str || !k_chr || !k_comment || !k_punct || !k_pp || !k_header || !empty) return NULL;
    return PyModule_Create(&module);
}
