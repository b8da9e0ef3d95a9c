/* leasecheck._auditline: the commonest audit line read in one pass.
 *
 * command(raw) -> (time, db, addr, argv) or None
 *
 *   `raw` a str: one line of the store's MONITOR output as the checker reads it, newline and all.
 *   For an ASCII line `<sec>.<frac> [<db> <addr>] "A" "B" ...\n` whose arguments hold no
 *   backslash (no escapes), with at most 22 digits after the dot and the time's digits below 2**53
 *   as one integer, at most 18 digits of db and at most 64 arguments: the time as a float (the digits as an integer N,
 *   k of them after the dot, N / 10**k: two exact doubles, one correctly rounded division — the
 *   float `float()` makes of the decimal), the db as an int, the address and the arguments (split
 *   at each `" "`, as str.split does, quotes stripped) as str. Any other line: None, and the
 *   checker reads it its own way.
 *
 * Exactly the record checkers/read/audit.py's in-place path makes of the same line (`_stamp_time`,
 * `_number`, then `split('" "')`, its quotes counted), which it replaces where this module is built
 * and the checker runs compiled; tests/checkers/test_audit_native.py holds the two together.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

static const double POW10[23] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
                                 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
#define EXACT (1ULL << 53)
#define MAX_PIECES 64      /* a command of more arguments is left to the checker's other reads */

/* a str of `len` ASCII characters at `p`, without looking for the widest character first */
static PyObject *
ascii(const char *p, Py_ssize_t len)
{
    PyObject *out = PyUnicode_New(len, 127);
    if (out != NULL)
        memcpy(PyUnicode_1BYTE_DATA(out), p, (size_t)len);
    return out;
}

static PyObject *
command(PyObject *self, PyObject *raw)
{
    if (!PyUnicode_Check(raw)) {
        PyErr_SetString(PyExc_TypeError, "command() takes a str");
        return NULL;
    }
    if (PyUnicode_READY(raw) < 0)
        return NULL;
    if (!PyUnicode_IS_ASCII(raw))
        Py_RETURN_NONE;
    const char *s = (const char *)PyUnicode_1BYTE_DATA(raw);
    Py_ssize_t size = PyUnicode_GET_LENGTH(raw);

    /* the time: digits, one dot, a space */
    unsigned long long digits = 0;
    Py_ssize_t i = 0, dot = -1;
    for (; i < size && s[i] != ' '; i++) {
        char c = s[i];
        if (c >= '0' && c <= '9') {
            digits = digits * 10 + (unsigned long long)(c - '0');
            if (digits >= EXACT)
                Py_RETURN_NONE;
        }
        else if (c == '.' && dot < 0)
            dot = i;
        else
            Py_RETURN_NONE;
    }
    Py_ssize_t s1 = i;
    if (s1 >= size || s1 == 0 || dot <= 0 || dot >= s1 - 1 || s1 - 1 - dot > 22)
        Py_RETURN_NONE;
    double t = (double)digits / POW10[s1 - 1 - dot];

    /* "[<db> <addr>] " */
    if (s1 + 1 >= size || s[s1 + 1] != '[')
        Py_RETURN_NONE;
    Py_ssize_t s2 = s1 + 2;
    long long db = 0;
    for (; s2 < size && s[s2] != ' '; s2++) {
        char c = s[s2];
        if (c < '0' || c > '9' || s2 - (s1 + 2) >= 18)
            Py_RETURN_NONE;
        db = db * 10 + (c - '0');
    }
    if (s2 >= size || s2 == s1 + 2)
        Py_RETURN_NONE;
    Py_ssize_t s3 = s2 + 1;
    while (s3 < size && s[s3] != ' ')
        s3++;
    if (s3 >= size || s3 - s2 <= 2 || s[s3 - 1] != ']' || size - s3 <= 3 || s[s3 + 1] != '"'
            || s[size - 2] != '"' || s[size - 1] != '\n')
        Py_RETURN_NONE;

    /* the arguments: no backslash and no newline before the last character; every quote the
       opening one, the closing one (at size - 2) or one of a separator `" "`, found left to right
       as str.split finds them (any other quote: the in-place read's count of them fails) */
    Py_ssize_t start = s3 + 2, end = size - 2, pieces = 1;
    if (memchr(s + s3 + 1, '\\', (size_t)(size - 1 - (s3 + 1))) != NULL
            || memchr(s + s3 + 1, '\n', (size_t)(size - 1 - (s3 + 1))) != NULL)
        Py_RETURN_NONE;
    Py_ssize_t bounds[MAX_PIECES];
    for (Py_ssize_t j = start; j < end; ) {
        const char *q = memchr(s + j, '"', (size_t)(end - j));
        if (q == NULL)
            break;
        Py_ssize_t at = q - s;
        if (at + 2 >= end || s[at + 1] != ' ' || s[at + 2] != '"' || pieces == MAX_PIECES)
            Py_RETURN_NONE;
        bounds[pieces - 1] = at;
        pieces++;
        j = at + 3;
    }

    PyObject *argv = PyList_New(pieces);
    if (argv == NULL)
        return NULL;
    Py_ssize_t from = start;
    for (Py_ssize_t n = 0; n < pieces; n++) {
        Py_ssize_t to = n < pieces - 1 ? bounds[n] : end;
        PyObject *piece = ascii(s + from, to - from);
        if (piece == NULL) {
            Py_DECREF(argv);
            return NULL;
        }
        PyList_SET_ITEM(argv, n, piece);
        from = to + 3;
    }
    PyObject *addr = ascii(s + s2 + 1, s3 - 1 - (s2 + 1));
    PyObject *when = PyFloat_FromDouble(t);
    PyObject *which = PyLong_FromLongLong(db);
    PyObject *out = PyTuple_New(4);
    if (addr == NULL || when == NULL || which == NULL || out == NULL) {
        Py_XDECREF(addr);
        Py_XDECREF(when);
        Py_XDECREF(which);
        Py_XDECREF(out);
        Py_DECREF(argv);
        return NULL;
    }
    PyTuple_SET_ITEM(out, 0, when);
    PyTuple_SET_ITEM(out, 1, which);
    PyTuple_SET_ITEM(out, 2, addr);
    PyTuple_SET_ITEM(out, 3, argv);
    return out;
}

static PyMethodDef methods[] = {
    {"command", command, METH_O, "command(raw) -> (time, db, addr, argv) of the commonest audit line, or None"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "leasecheck._auditline", "The commonest audit line read in one pass.", -1, methods,
};

PyMODINIT_FUNC
PyInit__auditline(void)
{
    return PyModule_Create(&module);
}
