/* leasecheck._linewrite: a claim loop's history line, formatted straight into the history's
 * memory map.
 *
 * write(buffer, offset, limit, segments, t, v1, ..., vn) -> int
 *
 * The line is segments[0] + the decimal digits of t + segments[1] + v1 + segments[2] + v2 + ...
 * + vn + segments[n + 1]: every segment and value a bytes object, t an int. It is copied into
 * the writable buffer (the history's mmap) at offset when it ends at or before limit, and its
 * length returned; otherwise nothing is written and minus its length is returned (the writer then
 * reserves more and writes the line its own way). The same bytes as
 * leasecheck.harness.record.history's `%` templates, without a bytes object made for the line,
 * a format string parsed per line, or a slice made to store it: on a worker's hot path a line
 * cost about 2,900 instructions that way (bench/RESULTS.md). Built by setup.py with the compiled
 * modules; where it is not built, the writer formats and stores each line in Python.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

#define MAX_VALUES 16

static PyObject *
linewrite_write(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs < 5) {
        PyErr_SetString(PyExc_TypeError, "write(buffer, offset, limit, segments, t, *values)");
        return NULL;
    }
    Py_ssize_t offset = PyLong_AsSsize_t(args[1]);
    if (offset == -1 && PyErr_Occurred())
        return NULL;
    Py_ssize_t limit = PyLong_AsSsize_t(args[2]);
    if (limit == -1 && PyErr_Occurred())
        return NULL;
    PyObject *segments = args[3];
    Py_ssize_t nvalues = nargs - 5;
    if (!PyTuple_CheckExact(segments) || PyTuple_GET_SIZE(segments) != nvalues + 2 || nvalues > MAX_VALUES) {
        PyErr_SetString(PyExc_ValueError, "write: segments must be a tuple of len(values) + 2 bytes");
        return NULL;
    }
    int overflow = 0;
    long long t = PyLong_AsLongLongAndOverflow(args[4], &overflow);
    if (t == -1 && PyErr_Occurred())
        return NULL;
    if (overflow) {
        PyErr_SetString(PyExc_OverflowError, "write: t does not fit in 64 bits");
        return NULL;
    }

    /* the digits of t, last first */
    char digits[24];
    int ndigits = 0;
    unsigned long long u = t < 0 ? 0ULL - (unsigned long long)t : (unsigned long long)t;
    do {
        digits[ndigits++] = (char)('0' + (int)(u % 10));
        u /= 10;
    } while (u);
    if (t < 0)
        digits[ndigits++] = '-';

    Py_ssize_t total = ndigits;
    for (Py_ssize_t i = 0; i < nvalues + 2; i++) {
        PyObject *seg = PyTuple_GET_ITEM(segments, i);
        if (!PyBytes_CheckExact(seg)) {
            PyErr_SetString(PyExc_TypeError, "write: segments must be bytes");
            return NULL;
        }
        total += PyBytes_GET_SIZE(seg);
    }
    for (Py_ssize_t i = 0; i < nvalues; i++) {
        if (!PyBytes_CheckExact(args[5 + i])) {
            PyErr_Format(PyExc_TypeError, "write: value %zd is %.80s, not bytes", i, Py_TYPE(args[5 + i])->tp_name);
            return NULL;
        }
        total += PyBytes_GET_SIZE(args[5 + i]);
    }
    if (offset < 0 || offset > limit || total > limit - offset)
        return PyLong_FromSsize_t(-total);

    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_WRITABLE) < 0)
        return NULL;
    if (limit > view.len) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_ValueError, "write: limit past the end of the buffer");
        return NULL;
    }
    char *out = (char *)view.buf + offset;
    PyObject *seg = PyTuple_GET_ITEM(segments, 0);
    memcpy(out, PyBytes_AS_STRING(seg), (size_t)PyBytes_GET_SIZE(seg));
    out += PyBytes_GET_SIZE(seg);
    while (ndigits)
        *out++ = digits[--ndigits];
    for (Py_ssize_t i = 0; i < nvalues; i++) {
        seg = PyTuple_GET_ITEM(segments, i + 1);
        memcpy(out, PyBytes_AS_STRING(seg), (size_t)PyBytes_GET_SIZE(seg));
        out += PyBytes_GET_SIZE(seg);
        PyObject *v = args[5 + i];
        memcpy(out, PyBytes_AS_STRING(v), (size_t)PyBytes_GET_SIZE(v));
        out += PyBytes_GET_SIZE(v);
    }
    seg = PyTuple_GET_ITEM(segments, nvalues + 1);
    memcpy(out, PyBytes_AS_STRING(seg), (size_t)PyBytes_GET_SIZE(seg));
    PyBuffer_Release(&view);
    return PyLong_FromSsize_t(total);
}

static PyMethodDef linewrite_methods[] = {
    {"write", (PyCFunction)(void (*)(void))linewrite_write, METH_FASTCALL,
     "write(buffer, offset, limit, segments, t, *values) -> length written, or minus the length "
     "when the line would end past limit (nothing written)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef linewrite_module = {
    PyModuleDef_HEAD_INIT, "leasecheck._linewrite",
    "A claim loop's history line formatted straight into the history's memory map.", -1, linewrite_methods,
};

PyMODINIT_FUNC
PyInit__linewrite(void)
{
    return PyModule_Create(&linewrite_module);
}
