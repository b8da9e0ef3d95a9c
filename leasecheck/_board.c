/* leasecheck._board: one slot's record on the slot board, written in place by C.
 *
 * Record(buffer, i): record i of a writable buffer (the board's map) laid out as
 * leasecheck.harness.run.slot_board.RECORD ("=BBHIqqqIIII16x", 64 bytes):
 *
 *     0 call u8, 1 holding u8, 2 sent u16, 4 number u32, 8 entered i64, 16 since i64,
 *     24 renewed i64, 32 won u32, 36 lost u32, 40 unknown u32, 44 nothing u32, 48 padding
 *
 * (one record per 64-byte cache line of the page-aligned map: two slots' stores never contend for
 * a line)
 *
 * with the methods of slot_board.SlotRecord (its docstrings say what each stores): enter(call),
 * leave(outcome=0), hold(holding), sent(), sent_count(), call(), fields(), release(). The same
 * bytes as that class's typed memory views store (tests/harness/test_slot_board.py runs both), at
 * about a tenth of the instructions: through a memory view each field stored cost some 290
 * (bench/RESULTS.md, "Item 2 ... ninth session"). The call's code is stored last on entry and
 * cleared first on exit (a release store), as SlotRecord does, for a reader in another process.
 * Times are CLOCK_MONOTONIC nanoseconds, as time.monotonic_ns() reads them. Built by setup.py with
 * the compiled modules; where it is not built, the board uses SlotRecord.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define RECORD_SIZE 64

typedef struct {
    PyObject_HEAD
    Py_buffer view;     /* view.obj NULL once released */
    char *rec;
} RecordObject;

static long long
now_ns(void)
{
#if PY_VERSION_HEX >= 0x030D0000
    PyTime_t t;
    if (PyTime_MonotonicRaw(&t) < 0)
        return 0;
    return (long long)t;
#else
    return (long long)_PyTime_GetMonotonicClock();
#endif
}

/* loads and stores of the record's fields (memcpy: one move each, whatever the alignment) */
#define FIELD(type, name) \
    static inline type get_##name(const char *r, Py_ssize_t at) { type v; memcpy(&v, r + at, sizeof v); return v; } \
    static inline void set_##name(char *r, Py_ssize_t at, type v) { memcpy(r + at, &v, sizeof v); }
FIELD(uint8_t, u8)
FIELD(uint16_t, u16)
FIELD(uint32_t, u32)
FIELD(int64_t, i64)

static char *
record_of(RecordObject *self)
{
    if (self->rec == NULL)
        PyErr_SetString(PyExc_ValueError, "the slot record was released");
    return self->rec;
}

static int
record_init(RecordObject *self, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"buffer", "i", NULL};
    PyObject *buffer;
    Py_ssize_t i;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "On:Record", kwlist, &buffer, &i))
        return -1;
    Py_buffer view;
    if (PyObject_GetBuffer(buffer, &view, PyBUF_WRITABLE) < 0)
        return -1;
    if (i < 0 || (i + 1) * RECORD_SIZE > view.len) {
        PyBuffer_Release(&view);
        PyErr_Format(PyExc_IndexError, "Record: record %zd is not in a buffer of %zd bytes", i, view.len);
        return -1;
    }
    if (self->view.obj != NULL)
        PyBuffer_Release(&self->view);
    self->view = view;
    self->rec = (char *)view.buf + i * RECORD_SIZE;
    return 0;
}

static void
record_dealloc(RecordObject *self)
{
    if (self->view.obj != NULL)
        PyBuffer_Release(&self->view);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *
record_enter(RecordObject *self, PyObject *arg)
{
    char *r = record_of(self);
    if (r == NULL)
        return NULL;
    long call = PyLong_AsLong(arg);
    if (call == -1 && PyErr_Occurred())
        return NULL;
    if (call < 0 || call > 255) {
        PyErr_SetString(PyExc_ValueError, "enter: a call's code is 0 to 255");
        return NULL;
    }
    set_u16(r, 2, 0);
    set_u32(r, 4, get_u32(r, 4) + 1);   /* wraps at 2 ** 32, as the Python record's mask does */
    set_i64(r, 8, now_ns());
    __atomic_store_n((uint8_t *)r, (uint8_t)call, __ATOMIC_RELEASE);
    Py_RETURN_NONE;
}

static PyObject *
record_leave(RecordObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    char *r = record_of(self);
    if (r == NULL)
        return NULL;
    if (nargs > 1) {
        PyErr_SetString(PyExc_TypeError, "leave(outcome=0)");
        return NULL;
    }
    long outcome = 0;
    if (nargs == 1) {
        outcome = PyLong_AsLong(args[0]);
        if (outcome == -1 && PyErr_Occurred())
            return NULL;
        if (outcome < 0 || outcome > 4) {
            PyErr_SetString(PyExc_ValueError, "leave: an outcome is 0 to 4");
            return NULL;
        }
    }
    __atomic_store_n((uint8_t *)r, (uint8_t)0, __ATOMIC_RELEASE);
    if (outcome) {
        Py_ssize_t at = 28 + 4 * outcome;   /* won at 32, lost 36, unknown 40, nothing 44 */
        set_u32(r, at, get_u32(r, at) + 1);
    }
    Py_RETURN_NONE;
}

static PyObject *
record_hold(RecordObject *self, PyObject *arg)
{
    char *r = record_of(self);
    if (r == NULL)
        return NULL;
    int holding = PyObject_IsTrue(arg);
    if (holding < 0)
        return NULL;
    if (holding) {
        long long now = now_ns();
        if (get_u8(r, 1)) {
            set_i64(r, 24, now);
        } else {
            set_i64(r, 16, now);
            set_i64(r, 24, now);
            set_u8(r, 1, 1);
        }
    } else {
        set_u8(r, 1, 0);
    }
    Py_RETURN_NONE;
}

static PyObject *
record_sent(RecordObject *self, PyObject *Py_UNUSED(ignored))
{
    char *r = record_of(self);
    if (r == NULL)
        return NULL;
    set_u16(r, 2, (uint16_t)(get_u16(r, 2) + 1));
    Py_RETURN_NONE;
}

static PyObject *
record_sent_count(RecordObject *self, PyObject *Py_UNUSED(ignored))
{
    char *r = record_of(self);
    if (r == NULL)
        return NULL;
    return PyLong_FromLong(get_u16(r, 2));
}

static PyObject *
record_call(RecordObject *self, PyObject *Py_UNUSED(ignored))
{
    char *r = record_of(self);
    if (r == NULL)
        return NULL;
    return Py_BuildValue("(kkL)", (unsigned long)get_u8(r, 0), (unsigned long)get_u32(r, 4), (long long)get_i64(r, 8));
}

static PyObject *
record_fields(RecordObject *self, PyObject *Py_UNUSED(ignored))
{
    char *r = record_of(self);
    if (r == NULL)
        return NULL;
    return Py_BuildValue("(kkkkLLLkkkk)", (unsigned long)get_u8(r, 0), (unsigned long)get_u8(r, 1),
                         (unsigned long)get_u16(r, 2), (unsigned long)get_u32(r, 4), (long long)get_i64(r, 8),
                         (long long)get_i64(r, 16), (long long)get_i64(r, 24), (unsigned long)get_u32(r, 32),
                         (unsigned long)get_u32(r, 36), (unsigned long)get_u32(r, 40), (unsigned long)get_u32(r, 44));
}

static PyObject *
record_release(RecordObject *self, PyObject *Py_UNUSED(ignored))
{
    if (self->view.obj != NULL)
        PyBuffer_Release(&self->view);
    self->rec = NULL;
    Py_RETURN_NONE;
}

static PyMethodDef record_methods[] = {
    {"enter", (PyCFunction)record_enter, METH_O,
     "enter(call): sent back to 0, number up by one, entered now, the call's code written last"},
    {"leave", (PyCFunction)(void (*)(void))record_leave, METH_FASTCALL,
     "leave(outcome=0): the code cleared first, then the outcome counted (0: nothing)"},
    {"hold", (PyCFunction)record_hold, METH_O,
     "hold(holding): True while already holding is a renewal (renewed moves, since stays)"},
    {"sent", (PyCFunction)record_sent, METH_NOARGS, "one more command sent by the slot's client"},
    {"sent_count", (PyCFunction)record_sent_count, METH_NOARGS,
     "the commands sent since the slot entered its current (or last) call"},
    {"call", (PyCFunction)record_call, METH_NOARGS, "(code of the call the slot is inside, its number, entered ns)"},
    {"fields", (PyCFunction)record_fields, METH_NOARGS, "the record's fields now, in RECORD's order"},
    {"release", (PyCFunction)record_release, METH_NOARGS,
     "let go of the buffer (writing after this raises ValueError)"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject RecordType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "leasecheck._board.Record",
    .tp_basicsize = sizeof(RecordObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Record(buffer, i): slot record i of the board's buffer, written in place",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)record_init,
    .tp_dealloc = (destructor)record_dealloc,
    .tp_methods = record_methods,
};

static struct PyModuleDef board_module = {
    PyModuleDef_HEAD_INIT, "leasecheck._board", "One slot's record on the slot board, written in place by C.",
    -1, NULL,
};

PyMODINIT_FUNC
PyInit__board(void)
{
    if (PyType_Ready(&RecordType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&board_module);
    if (m == NULL)
        return NULL;
    Py_INCREF(&RecordType);
    if (PyModule_AddObject(m, "Record", (PyObject *)&RecordType) < 0) {
        Py_DECREF(&RecordType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
