/* leasecheck._auditline: the commonest audit line read in one pass.
 *
 * command(raw) -> (time, db, addr, argv) or None
 *
 *   `raw` a str: one line of the store's MONITOR output as the checker reads it, newline and all.
 *   For an ASCII line `<sec>.<frac> [<db> <addr>] "A" "B" ...\n` whose arguments hold no
 *   backslash (no escapes), with at most 22 digits after the dot and the time's digits below 2**53
 *   as one integer, and at most 18 digits of db: the time as a float (the digits as an integer N,
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

static const double POW10[23] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
                                 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
#define EXACT (1ULL << 53)

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

    /* the arguments: no backslash, no newline before the last character, every quote one of a
       piece's two */
    Py_ssize_t start = s3 + 2, end = size - 2, quotes = 0, pieces = 1;
    for (Py_ssize_t j = s3 + 1; j < size - 1; j++) {
        char c = s[j];
        if (c == '\\' || c == '\n')
            Py_RETURN_NONE;
        if (c == '"')
            quotes++;
    }
    for (Py_ssize_t j = start; j + 2 < end; ) {
        if (s[j] == '"' && s[j + 1] == ' ' && s[j + 2] == '"') {
            pieces++;
            j += 3;
        }
        else
            j++;
    }
    if (quotes != 2 * pieces)
        Py_RETURN_NONE;

    PyObject *argv = PyList_New(pieces);
    if (argv == NULL)
        return NULL;
    Py_ssize_t from = start, n = 0;
    for (Py_ssize_t j = start; n < pieces - 1; ) {
        if (s[j] == '"' && s[j + 1] == ' ' && s[j + 2] == '"') {
            PyObject *piece = PyUnicode_FromKindAndData(PyUnicode_1BYTE_KIND, s + from, j - from);
            if (piece == NULL) {
                Py_DECREF(argv);
                return NULL;
            }
            PyList_SET_ITEM(argv, n++, piece);
            j += 3;
            from = j;
        }
        else
            j++;
    }
    PyObject *last = PyUnicode_FromKindAndData(PyUnicode_1BYTE_KIND, s + from, end - from);
    if (last == NULL) {
        Py_DECREF(argv);
        return NULL;
    }
    PyList_SET_ITEM(argv, n, last);
    PyObject *addr = PyUnicode_FromKindAndData(PyUnicode_1BYTE_KIND, s + s2 + 1, s3 - 1 - (s2 + 1));
    if (addr == NULL) {
        Py_DECREF(argv);
        return NULL;
    }
    return Py_BuildValue("(dLNN)", t, db, addr, argv);
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
