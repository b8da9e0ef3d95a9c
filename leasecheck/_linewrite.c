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
 *   + segments[n + 1] at `pos`, moves `pos` past it and returns t. Every segment is a bytes
 *   object; a value is bytes, written as it is, or a list or tuple (a call's `sent`), written as
 *   JSON byte for byte as orjson writes it (None, booleans, 64-bit ints, str, lists and tuples of
 *   them: anything else raises TypeError and the writer hands the value to orjson). When the sink
 *   is unmapped or the line would end past `end` it writes nothing and returns None: the writer
 *   then takes the lock, reserves more and writes the line its own way. With `clock` (a test's),
 *   t is clock() - t0.
 *
 *   lines(lines, *values) -> t or None: `line` for each segments tuple of `lines` in turn, all
 *   with the same values (bytes only), each stamped with its own clock read, under one hold of
 *   the lock; t is the first's. None, nothing written, when they might not all fit.
 *
 * Lock(): threading.Lock's acquire(), release() and `with` (a Sink is one), without their
 *   arguments parsed on every call: the slots' send trackers' lock.
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
} LockObject;

typedef struct {
    LockObject lk;          /* a Sink is a Lock: the history writer's */
    Py_buffer view;         /* the map; view.obj NULL while unmapped */
    long long base, end, pos, t0;
    PyObject *clock;        /* NULL: the monotonic clock */
} SinkObject;

static int
lock_take(LockObject *self)
{
    if (self->lock == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "Lock: not initialised");
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
lock_give(LockObject *self)
{
    self->locked = 0;
    PyThread_release_lock(self->lock);
}

static int
lock_setup(LockObject *self)
{
    if (self->lock == NULL) {
        self->lock = PyThread_allocate_lock();
        if (self->lock == NULL) {
            PyErr_SetString(PyExc_MemoryError, "cannot allocate a lock");
            return -1;
        }
    }
    return 0;
}

static int
lock_init(LockObject *self, PyObject *args, PyObject *kwds)
{
    if (PyTuple_GET_SIZE(args) || (kwds && PyDict_GET_SIZE(kwds))) {
        PyErr_SetString(PyExc_TypeError, "Lock() takes no arguments");
        return -1;
    }
    return lock_setup(self);
}

static void
lock_free(LockObject *self)
{
    if (self->lock != NULL) {
        if (self->locked)
            PyThread_release_lock(self->lock);
        PyThread_free_lock(self->lock);
        self->lock = NULL;
    }
}

static void
lock_dealloc(LockObject *self)
{
    lock_free(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *
lock_acquire(LockObject *self, PyObject *Py_UNUSED(ignored))
{
    if (lock_take(self) < 0)
        return NULL;
    Py_RETURN_TRUE;
}

static PyObject *
lock_release(LockObject *self, PyObject *Py_UNUSED(ignored))
{
    if (!self->locked) {
        PyErr_SetString(PyExc_RuntimeError, "release unlocked lock");
        return NULL;
    }
    lock_give(self);
    Py_RETURN_NONE;
}

static PyObject *
lock_exit(LockObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)args;
    (void)nargs;
    return lock_release(self, NULL);
}

static PyObject *
lock_locked(LockObject *self, PyObject *Py_UNUSED(ignored))
{
    return PyBool_FromLong(self->locked);
}

static PyMethodDef lock_methods[] = {
    {"acquire", (PyCFunction)lock_acquire, METH_NOARGS, "take the lock (waiting without the GIL)"},
    {"release", (PyCFunction)lock_release, METH_NOARGS, "let go of the lock"},
    {"locked", (PyCFunction)lock_locked, METH_NOARGS, "whether the lock is held"},
    {"__enter__", (PyCFunction)lock_acquire, METH_NOARGS, NULL},
    {"__exit__", (PyCFunction)(void (*)(void))lock_exit, METH_FASTCALL, NULL},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject LockType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "leasecheck._linewrite.Lock",
    .tp_basicsize = sizeof(LockObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "Lock(): threading.Lock's acquire(), release() and `with`, without their arguments' parsing",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)lock_init,
    .tp_dealloc = (destructor)lock_dealloc,
    .tp_methods = lock_methods,
};

/* The decimal digits of v at the end of out[24] (a sign first when negative): returns where they
 * start; they run to out + DIGITS. */
#define DIGITS 24

static char *
decimal(long long v, char out[DIGITS])
{
    char *at = out + DIGITS;
    unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
    do {
        *--at = (char)('0' + (int)(u % 10));
        u /= 10;
    } while (u);
    if (v < 0)
        *--at = '-';
    return at;
}

/* -- JSON for the lines' list values (a call's `sent`), byte for byte as orjson writes them -- */

typedef struct {
    char *p;
    Py_ssize_t len, cap;
    char stack[512];
} Scratch;

static int
scratch_grow(Scratch *s, Py_ssize_t n)
{
    Py_ssize_t cap = (s->len + n) * 2;
    char *p = s->p == s->stack ? PyMem_Malloc((size_t)cap) : PyMem_Realloc(s->p, (size_t)cap);
    if (p == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    if (s->p == s->stack)
        memcpy(p, s->stack, (size_t)s->len);
    s->p = p;
    s->cap = cap;
    return 0;
}

static inline int
scratch_put(Scratch *s, const char *bytes, Py_ssize_t n)
{
    if (s->len + n > s->cap && scratch_grow(s, n) < 0)
        return -1;
    memcpy(s->p + s->len, bytes, (size_t)n);
    s->len += n;
    return 0;
}

static inline int
scratch_put1(Scratch *s, char c)
{
    if (s->len + 1 > s->cap && scratch_grow(s, 1) < 0)
        return -1;
    s->p[s->len++] = c;
    return 0;
}

static void
scratch_free(Scratch *s)
{
    if (s->p != s->stack)
        PyMem_Free(s->p);
}

#define UNSUPPORTED 1

/* 0: written; UNSUPPORTED: a value this does not write as orjson does (no exception set); -1: an
 * exception set */
static int
json_value(Scratch *s, PyObject *o, int depth)
{
    if (o == Py_None)
        return scratch_put(s, "null", 4);
    if (o == Py_True)
        return scratch_put(s, "true", 4);
    if (o == Py_False)
        return scratch_put(s, "false", 5);
    if (PyLong_CheckExact(o)) {
        int overflow = 0;
        long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
        if (v == -1 && PyErr_Occurred())
            return -1;
        if (overflow)
            return UNSUPPORTED;
        char digits[DIGITS];
        char *at = decimal(v, digits);
        return scratch_put(s, at, digits + DIGITS - at);
    }
    if (PyUnicode_CheckExact(o)) {
        Py_ssize_t n;
        const char *u = PyUnicode_AsUTF8AndSize(o, &n);
        if (u == NULL) {            /* a lone surrogate: orjson refuses it too, in its own words */
            PyErr_Clear();
            return UNSUPPORTED;
        }
        if (scratch_put1(s, '"') < 0)
            return -1;
        Py_ssize_t from = 0;
        for (Py_ssize_t i = 0; i < n; i++) {
            unsigned char c = (unsigned char)u[i];
            if (c >= 0x20 && c != '"' && c != '\\')
                continue;
            if (i > from && scratch_put(s, u + from, i - from) < 0)
                return -1;
            from = i + 1;
            char esc[8];
            int len = 2;
            esc[0] = '\\';
            switch (c) {
            case '"': esc[1] = '"'; break;
            case '\\': esc[1] = '\\'; break;
            case '\b': esc[1] = 'b'; break;
            case '\t': esc[1] = 't'; break;
            case '\n': esc[1] = 'n'; break;
            case '\f': esc[1] = 'f'; break;
            case '\r': esc[1] = 'r'; break;
            default:
                len = snprintf(esc, sizeof esc, "\\u%04x", c);
            }
            if (scratch_put(s, esc, len) < 0)
                return -1;
        }
        if (scratch_put(s, u + from, n - from) < 0)
            return -1;
        return scratch_put1(s, '"');
    }
    if (PyList_CheckExact(o) || PyTuple_CheckExact(o)) {
        if (depth > 16)
            return UNSUPPORTED;
        if (scratch_put1(s, '[') < 0)
            return -1;
        /* a list's items read by index each time: a list cannot change under this loop (the GIL
         * is held and nothing here runs Python code) */
        Py_ssize_t n = PyList_CheckExact(o) ? PyList_GET_SIZE(o) : PyTuple_GET_SIZE(o);
        for (Py_ssize_t i = 0; i < n; i++) {
            if (i && scratch_put1(s, ',') < 0)
                return -1;
            PyObject *item = PyList_CheckExact(o) ? PyList_GET_ITEM(o, i) : PyTuple_GET_ITEM(o, i);
            int r = json_value(s, item, depth + 1);
            if (r)
                return r;
        }
        return scratch_put1(s, ']');
    }
    return UNSUPPORTED;
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
    if (lock_setup(&self->lk) < 0)
        return -1;
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
    lock_free(&self->lk);
    Py_TYPE(self)->tp_free((PyObject *)self);
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

/* The bytes of `segments`, which must be a tuple of `nvalues` + 2 bytes objects, added to `*length`;
 * -1 with an exception set (naming `who`) when they are not. */
static int
segments_length(PyObject *segments, Py_ssize_t nvalues, long long *length, const char *who)
{
    if (!PyTuple_CheckExact(segments) || PyTuple_GET_SIZE(segments) != nvalues + 2) {
        PyErr_Format(PyExc_ValueError, "%s: segments must be a tuple of len(values) + 2 bytes", who);
        return -1;
    }
    for (Py_ssize_t i = 0; i < nvalues + 2; i++) {
        PyObject *seg = PyTuple_GET_ITEM(segments, i);
        if (!PyBytes_CheckExact(seg)) {
            PyErr_Format(PyExc_TypeError, "%s: segments must be bytes", who);
            return -1;
        }
        *length += PyBytes_GET_SIZE(seg);
    }
    return 0;
}

/* One line at `out`: segments[0], the time's digits, then each value after its segment, and the
 * last segment; returns where the line ends. (value i: `size[i]` bytes at `at[i]`) */
static char *
put_line(char *out, PyObject *segments, const char *digits, Py_ssize_t ndigits,
         const char *const *at, const Py_ssize_t *size, Py_ssize_t nvalues)
{
    PyObject *seg = PyTuple_GET_ITEM(segments, 0);
    memcpy(out, PyBytes_AS_STRING(seg), (size_t)PyBytes_GET_SIZE(seg));
    out += PyBytes_GET_SIZE(seg);
    memcpy(out, digits, (size_t)ndigits);
    out += ndigits;
    for (Py_ssize_t i = 0; i < nvalues; i++) {
        seg = PyTuple_GET_ITEM(segments, i + 1);
        memcpy(out, PyBytes_AS_STRING(seg), (size_t)PyBytes_GET_SIZE(seg));
        out += PyBytes_GET_SIZE(seg);
        memcpy(out, at[i], (size_t)size[i]);
        out += size[i];
    }
    seg = PyTuple_GET_ITEM(segments, nvalues + 1);
    memcpy(out, PyBytes_AS_STRING(seg), (size_t)PyBytes_GET_SIZE(seg));
    return out + PyBytes_GET_SIZE(seg);
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
    if (nvalues > MAX_VALUES) {
        PyErr_SetString(PyExc_ValueError, "line: segments must be a tuple of len(values) + 2 bytes");
        return NULL;
    }
    long long length = 0;
    if (segments_length(segments, nvalues, &length, "line") < 0)
        return NULL;
    /* each value: bytes as they are, a list or tuple as JSON (into scratch, before the lock) */
    Scratch scratch = {.len = 0, .cap = sizeof scratch.stack};
    scratch.p = scratch.stack;
    Py_ssize_t from[MAX_VALUES], size[MAX_VALUES];
    for (Py_ssize_t i = 0; i < nvalues; i++) {
        PyObject *v = args[1 + i];
        if (PyBytes_CheckExact(v)) {
            size[i] = PyBytes_GET_SIZE(v);
        } else if (PyList_CheckExact(v) || PyTuple_CheckExact(v)) {
            from[i] = scratch.len;
            int r = json_value(&scratch, v, 0);
            if (r) {
                scratch_free(&scratch);
                if (r == UNSUPPORTED)
                    PyErr_Format(PyExc_TypeError, "line: value %zd holds what only orjson writes", i);
                return NULL;
            }
            size[i] = scratch.len - from[i];
        } else {
            scratch_free(&scratch);
            PyErr_Format(PyExc_TypeError, "line: value %zd is %.80s, not bytes or a list", i, Py_TYPE(v)->tp_name);
            return NULL;
        }
        length += size[i];
    }

    if (lock_take(&self->lk) < 0) {
        scratch_free(&scratch);
        return NULL;
    }
    long long t;
    if (sink_now(self, &t) < 0) {
        lock_give(&self->lk);
        scratch_free(&scratch);
        return NULL;
    }
    char digits[DIGITS];
    char *first = decimal(t, digits);
    Py_ssize_t ndigits = digits + DIGITS - first;
    length += ndigits;
    if (self->view.obj == NULL || self->pos < self->base || length > self->end - self->pos) {
        lock_give(&self->lk);
        scratch_free(&scratch);
        Py_RETURN_NONE;
    }
    const char *at[MAX_VALUES];
    for (Py_ssize_t i = 0; i < nvalues; i++)
        at[i] = PyBytes_CheckExact(args[1 + i]) ? PyBytes_AS_STRING(args[1 + i]) : scratch.p + from[i];
    put_line((char *)self->view.buf + (self->pos - self->base), segments, first, ndigits, at, size, nvalues);
    self->pos += length;
    lock_give(&self->lk);
    scratch_free(&scratch);
    return PyLong_FromLongLong(t);
}

/* lines(lines, *values): several lines of one slot, one after the other, each line's segments a
 * tuple in `lines` (a tuple), each written with the same values (bytes only) and stamped with its
 * own clock read, all under one hold of the lock; returns the first line's time, or None, with
 * nothing written, when they might not all fit (or unmapped). */
static PyObject *
sink_lines(SinkObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs < 1 || !PyTuple_CheckExact(args[0]) || PyTuple_GET_SIZE(args[0]) < 1) {
        PyErr_SetString(PyExc_TypeError, "lines(lines, *values): lines a non-empty tuple of segment tuples");
        return NULL;
    }
    PyObject *lines = args[0];
    Py_ssize_t nlines = PyTuple_GET_SIZE(lines), nvalues = nargs - 1;
    if (nvalues > MAX_VALUES) {
        PyErr_SetString(PyExc_ValueError, "lines: segments must be a tuple of len(values) + 2 bytes");
        return NULL;
    }
    const char *at[MAX_VALUES];
    Py_ssize_t size[MAX_VALUES];
    long long values_length = 0, length = 0;
    for (Py_ssize_t i = 0; i < nvalues; i++) {
        if (!PyBytes_CheckExact(args[1 + i])) {
            PyErr_Format(PyExc_TypeError, "lines: value %zd is %.80s, not bytes", i, Py_TYPE(args[1 + i])->tp_name);
            return NULL;
        }
        at[i] = PyBytes_AS_STRING(args[1 + i]);
        size[i] = PyBytes_GET_SIZE(args[1 + i]);
        values_length += size[i];
    }
    for (Py_ssize_t j = 0; j < nlines; j++) {
        if (segments_length(PyTuple_GET_ITEM(lines, j), nvalues, &length, "lines") < 0)
            return NULL;
        length += values_length + DIGITS;   /* at most DIGITS digits of time each */
    }
    if (lock_take(&self->lk) < 0)
        return NULL;
    if (self->view.obj == NULL || self->pos < self->base || length > self->end - self->pos) {
        lock_give(&self->lk);
        Py_RETURN_NONE;
    }
    long long first_t = 0;
    char *out = (char *)self->view.buf + (self->pos - self->base), *start = out;
    for (Py_ssize_t j = 0; j < nlines; j++) {
        long long t;
        if (sink_now(self, &t) < 0) {   /* (a test's clock raised) the lines so far are kept */
            self->pos += out - start;
            lock_give(&self->lk);
            return NULL;
        }
        if (j == 0)
            first_t = t;
        char digits[DIGITS];
        char *first = decimal(t, digits);
        out = put_line(out, PyTuple_GET_ITEM(lines, j), first, digits + DIGITS - first, at, size, nvalues);
    }
    self->pos += out - start;
    lock_give(&self->lk);
    return PyLong_FromLongLong(first_t);
}

static PyMemberDef sink_members[] = {
    {"pos", T_LONGLONG, offsetof(SinkObject, pos), 0, "the file offset of the next line"},
    {"t0", T_LONGLONG, offsetof(SinkObject, t0), 0, "the run's start, CLOCK_MONOTONIC ns"},
    {"base", T_LONGLONG, offsetof(SinkObject, base), READONLY, "the file offset of the map's first byte (0 unmapped)"},
    {"end", T_LONGLONG, offsetof(SinkObject, end), READONLY, "the file offset where the reservation ends (0 unmapped)"},
    {NULL, 0, 0, 0, NULL},
};

static PyMethodDef sink_methods[] = {
    {"map", (PyCFunction)(void (*)(void))sink_map, METH_FASTCALL,
     "map(buffer, base, end): write lines into buffer, the file from base to end; map(None): nowhere"},
    {"line", (PyCFunction)(void (*)(void))sink_line, METH_FASTCALL,
     "line(segments, *values) -> the line's time, written at pos; None when it does not fit "
     "(or unmapped): nothing written"},
    {"lines", (PyCFunction)(void (*)(void))sink_lines, METH_FASTCALL,
     "lines(lines, *values) -> the first line's time: each of lines (segment tuples) written with "
     "values, one after the other under one hold of the lock; None when they might not fit: nothing written"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject SinkType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "leasecheck._linewrite.Sink",
    .tp_base = &LockType,
    .tp_basicsize = sizeof(SinkObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Sink(t0=0, clock=None): a history file's lock, map and next line's place",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)sink_init,
    .tp_dealloc = (destructor)sink_dealloc,
    .tp_methods = sink_methods,
    .tp_members = sink_members,
};

static struct PyModuleDef linewrite_module = {
    PyModuleDef_HEAD_INIT, "leasecheck._linewrite",
    "A history file's lock, map and next line's place; a claim loop's line written straight into the map.",
    -1, NULL,
};

PyMODINIT_FUNC
PyInit__linewrite(void)
{
    if (PyType_Ready(&LockType) < 0 || PyType_Ready(&SinkType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&linewrite_module);
    if (m == NULL)
        return NULL;
    Py_INCREF(&LockType);
    if (PyModule_AddObject(m, "Lock", (PyObject *)&LockType) < 0) {
        Py_DECREF(&LockType);
        Py_DECREF(m);
        return NULL;
    }
    Py_INCREF(&SinkType);
    if (PyModule_AddObject(m, "Sink", (PyObject *)&SinkType) < 0) {
        Py_DECREF(&SinkType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
