/* leasecheck._linewrite: a history file's place for lines (its lock, its memory map, where the
 * next line goes), and a claim loop's history line stamped and formatted straight into the map.
 *
 * Sink(t0, clock=None): one history file's.
 *
 *   The lock: acquire(), release(), `with sink:` (the history writer's lock: every line goes into
 *   the file in the order of its time, stamped and appended while the lock is held).
 *   map(buffer, base, end) / map(None): the writable map of the file from offset `base` (the
 *   buffer's first byte) to `end` (the reservation's end, `end - base` <= the buffer's length),
 *   held until replaced or unmapped; pos: the file offset of the next line (read and set by the
 *   writer under the lock); base, end: as mapped (0 unmapped); t0: the run's start on
 *   CLOCK_MONOTONIC, nanoseconds.
 *
 *   line(segments, v1, ..., vn) -> t or None:
 *   under the lock, reads the clock (t = monotonic ns - t0, as time.monotonic_ns() reads it) and
 *   writes segments[0] + the decimal digits of t + segments[1] + v1 + segments[2] + v2 + ... + vn
 *   + segments[n + 1] at `pos` (every segment and value a bytes object), moves `pos` past it and
 *   returns t. When the sink is unmapped or the line would end past `end` it writes nothing and
 *   returns None: the writer then takes the lock, reserves more and writes the line its own way.
 *   With `clock` (a test's), t is clock() - t0.
 *
 * The same bytes as leasecheck.harness.record.history's `%` templates (tests/harness/
 * test_history.py holds the two together), in one call of the workers' hot path instead of a
 * lock's acquire and release, a clock read, the map's offsets as Python ints and a write: about
 * 1,600 instructions a line fewer (bench/RESULTS.md, "Item 2 ... ninth session"). Built by setup.py
 * with the compiled modules; where it is not built, the writer formats and stores each line in
 * Python under a threading.Lock.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <string.h>

#define MAX_VALUES 16

typedef struct {
    PyObject_HEAD
    PyThread_type_lock lock;
    char locked;
    Py_buffer view;         /* the map; view.obj NULL while unmapped */
    long long base, end, pos, t0;
    PyObject *clock;        /* NULL: the monotonic clock */
} SinkObject;

static int
sink_lock(SinkObject *self)
{
    if (self->lock == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "Sink: not initialised");
        return -1;
    }
    if (!PyThread_acquire_lock(self->lock, NOWAIT_LOCK)) {
        Py_BEGIN_ALLOW_THREADS
        PyThread_acquire_lock(self->lock, WAIT_LOCK);
        Py_END_ALLOW_THREADS
    }
    self->locked = 1;
    return 0;
}

static void
sink_unlock(SinkObject *self)
{
    self->locked = 0;
    PyThread_release_lock(self->lock);
}

static int
sink_now(SinkObject *self, long long *t)
{
    if (self->clock != NULL) {
        PyObject *r = PyObject_CallNoArgs(self->clock);
        if (r == NULL)
            return -1;
        long long v = PyLong_AsLongLong(r);
        Py_DECREF(r);
        if (v == -1 && PyErr_Occurred())
            return -1;
        *t = v - self->t0;
        return 0;
    }
#if PY_VERSION_HEX >= 0x030D0000
    PyTime_t now;
    if (PyTime_MonotonicRaw(&now) < 0)
        return -1;
    *t = (long long)now - self->t0;
#else
    *t = (long long)_PyTime_GetMonotonicClock() - self->t0;
#endif
    return 0;
}

static int
sink_init(SinkObject *self, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"t0", "clock", NULL};
    long long t0 = 0;
    PyObject *clock = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "|LO:Sink", kwlist, &t0, &clock))
        return -1;
    if (self->lock == NULL) {
        self->lock = PyThread_allocate_lock();
        if (self->lock == NULL) {
            PyErr_SetString(PyExc_MemoryError, "Sink: cannot allocate a lock");
            return -1;
        }
    }
    self->t0 = t0;
    Py_CLEAR(self->clock);
    if (clock != Py_None) {
        Py_INCREF(clock);
        self->clock = clock;
    }
    return 0;
}

static void
sink_dealloc(SinkObject *self)
{
    if (self->view.obj != NULL)
        PyBuffer_Release(&self->view);
    Py_CLEAR(self->clock);
    if (self->lock != NULL) {
        if (self->locked)
            PyThread_release_lock(self->lock);
        PyThread_free_lock(self->lock);
    }
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *
sink_acquire(SinkObject *self, PyObject *Py_UNUSED(ignored))
{
    if (sink_lock(self) < 0)
        return NULL;
    Py_RETURN_TRUE;
}

static PyObject *
sink_release(SinkObject *self, PyObject *Py_UNUSED(ignored))
{
    if (!self->locked) {
        PyErr_SetString(PyExc_RuntimeError, "release unlocked lock");
        return NULL;
    }
    sink_unlock(self);
    Py_RETURN_NONE;
}

static PyObject *
sink_exit(SinkObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)args;
    (void)nargs;
    return sink_release(self, NULL);
}

static PyObject *
sink_locked(SinkObject *self, PyObject *Py_UNUSED(ignored))
{
    return PyBool_FromLong(self->locked);
}

static PyObject *
sink_map(SinkObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 1 && nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "map(buffer, base, end) or map(None)");
        return NULL;
    }
    if (args[0] == Py_None) {
        if (self->view.obj != NULL)
            PyBuffer_Release(&self->view);
        self->base = self->end = 0;
        Py_RETURN_NONE;
    }
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "map(buffer, base, end)");
        return NULL;
    }
    long long base = PyLong_AsLongLong(args[1]);
    if (base == -1 && PyErr_Occurred())
        return NULL;
    long long end = PyLong_AsLongLong(args[2]);
    if (end == -1 && PyErr_Occurred())
        return NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_WRITABLE) < 0)
        return NULL;
    if (base < 0 || end < base || end - base > (long long)view.len) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_ValueError, "map: end - base must be within the buffer");
        return NULL;
    }
    if (self->view.obj != NULL)
        PyBuffer_Release(&self->view);
    self->view = view;
    self->base = base;
    self->end = end;
    Py_RETURN_NONE;
}

static PyObject *
sink_line(SinkObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs < 1) {
        PyErr_SetString(PyExc_TypeError, "line(segments, *values)");
        return NULL;
    }
    PyObject *segments = args[0];
    Py_ssize_t nvalues = nargs - 1;
    if (!PyTuple_CheckExact(segments) || PyTuple_GET_SIZE(segments) != nvalues + 2 || nvalues > MAX_VALUES) {
        PyErr_SetString(PyExc_ValueError, "line: segments must be a tuple of len(values) + 2 bytes");
        return NULL;
    }
    long long length = 0;
    for (Py_ssize_t i = 0; i < nvalues + 2; i++) {
        PyObject *seg = PyTuple_GET_ITEM(segments, i);
        if (!PyBytes_CheckExact(seg)) {
            PyErr_SetString(PyExc_TypeError, "line: segments must be bytes");
            return NULL;
        }
        length += PyBytes_GET_SIZE(seg);
    }
    for (Py_ssize_t i = 0; i < nvalues; i++) {
        if (!PyBytes_CheckExact(args[1 + i])) {
            PyErr_Format(PyExc_TypeError, "line: value %zd is %.80s, not bytes", i, Py_TYPE(args[1 + i])->tp_name);
            return NULL;
        }
        length += PyBytes_GET_SIZE(args[1 + i]);
    }

    if (sink_lock(self) < 0)
        return NULL;
    long long t;
    if (sink_now(self, &t) < 0) {
        sink_unlock(self);
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
    length += ndigits;
    if (self->view.obj == NULL || self->pos < self->base || length > self->end - self->pos) {
        sink_unlock(self);
        Py_RETURN_NONE;
    }
    char *out = (char *)self->view.buf + (self->pos - self->base);
    PyObject *seg = PyTuple_GET_ITEM(segments, 0);
    memcpy(out, PyBytes_AS_STRING(seg), (size_t)PyBytes_GET_SIZE(seg));
    out += PyBytes_GET_SIZE(seg);
    while (ndigits)
        *out++ = digits[--ndigits];
    for (Py_ssize_t i = 0; i < nvalues; i++) {
        seg = PyTuple_GET_ITEM(segments, i + 1);
        memcpy(out, PyBytes_AS_STRING(seg), (size_t)PyBytes_GET_SIZE(seg));
        out += PyBytes_GET_SIZE(seg);
        PyObject *v = args[1 + i];
        memcpy(out, PyBytes_AS_STRING(v), (size_t)PyBytes_GET_SIZE(v));
        out += PyBytes_GET_SIZE(v);
    }
    seg = PyTuple_GET_ITEM(segments, nvalues + 1);
    memcpy(out, PyBytes_AS_STRING(seg), (size_t)PyBytes_GET_SIZE(seg));
    self->pos += length;
    sink_unlock(self);
    return PyLong_FromLongLong(t);
}

static PyObject *
sink_get_pos(SinkObject *self, void *Py_UNUSED(closure))
{
    return PyLong_FromLongLong(self->pos);
}

static int
sink_set_pos(SinkObject *self, PyObject *value, void *Py_UNUSED(closure))
{
    if (value == NULL) {
        PyErr_SetString(PyExc_AttributeError, "pos cannot be deleted");
        return -1;
    }
    long long pos = PyLong_AsLongLong(value);
    if (pos == -1 && PyErr_Occurred())
        return -1;
    self->pos = pos;
    return 0;
}

static PyObject *
sink_get_t0(SinkObject *self, void *Py_UNUSED(closure))
{
    return PyLong_FromLongLong(self->t0);
}

static int
sink_set_t0(SinkObject *self, PyObject *value, void *Py_UNUSED(closure))
{
    if (value == NULL) {
        PyErr_SetString(PyExc_AttributeError, "t0 cannot be deleted");
        return -1;
    }
    long long t0 = PyLong_AsLongLong(value);
    if (t0 == -1 && PyErr_Occurred())
        return -1;
    self->t0 = t0;
    return 0;
}

static PyObject *
sink_get_base(SinkObject *self, void *Py_UNUSED(closure))
{
    return PyLong_FromLongLong(self->base);
}

static PyObject *
sink_get_end(SinkObject *self, void *Py_UNUSED(closure))
{
    return PyLong_FromLongLong(self->end);
}

static PyGetSetDef sink_getset[] = {
    {"pos", (getter)sink_get_pos, (setter)sink_set_pos, "the file offset of the next line", NULL},
    {"t0", (getter)sink_get_t0, (setter)sink_set_t0, "the run's start, CLOCK_MONOTONIC ns", NULL},
    {"base", (getter)sink_get_base, NULL, "the file offset of the map's first byte (0 unmapped)", NULL},
    {"end", (getter)sink_get_end, NULL, "the file offset where the reservation ends (0 unmapped)", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMethodDef sink_methods[] = {
    {"acquire", (PyCFunction)sink_acquire, METH_NOARGS, "take the lock (waiting without the GIL)"},
    {"release", (PyCFunction)sink_release, METH_NOARGS, "let go of the lock"},
    {"locked", (PyCFunction)sink_locked, METH_NOARGS, "whether the lock is held"},
    {"__enter__", (PyCFunction)sink_acquire, METH_NOARGS, NULL},
    {"__exit__", (PyCFunction)(void (*)(void))sink_exit, METH_FASTCALL, NULL},
    {"map", (PyCFunction)(void (*)(void))sink_map, METH_FASTCALL,
     "map(buffer, base, end): write lines into buffer, the file from base to end; map(None): nowhere"},
    {"line", (PyCFunction)(void (*)(void))sink_line, METH_FASTCALL,
     "line(segments, *values) -> the line's time, written at pos; None when it does not fit "
     "(or unmapped): nothing written"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject SinkType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "leasecheck._linewrite.Sink",
    .tp_basicsize = sizeof(SinkObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Sink(t0=0, clock=None): a history file's lock, map and next line's place",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)sink_init,
    .tp_dealloc = (destructor)sink_dealloc,
    .tp_methods = sink_methods,
    .tp_getset = sink_getset,
};

static struct PyModuleDef linewrite_module = {
    PyModuleDef_HEAD_INIT, "leasecheck._linewrite",
    "A history file's lock, map and next line's place; a claim loop's line written straight into the map.",
    -1, NULL,
};

PyMODINIT_FUNC
PyInit__linewrite(void)
{
    if (PyType_Ready(&SinkType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&linewrite_module);
    if (m == NULL)
        return NULL;
    Py_INCREF(&SinkType);
    if (PyModule_AddObject(m, "Sink", (PyObject *)&SinkType) < 0) {
        Py_DECREF(&SinkType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
