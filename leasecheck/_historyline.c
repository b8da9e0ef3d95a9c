/* leasecheck._historyline: the history's commonest lines read in one pass.
 *
 * record(line) -> tuple or None
 *
 *   `line` a bytes: one line of history.jsonl as the checker reads it (its newline, when it has
 *   one, included). For a compact JSON object (no whitespace, each key once) whose keys are all
 *   among the fields of the typed records (checkers/read/records.py: time, index, process, type,
 *   attempt, key, f, value, sent, fence, aborted), whose strings are ASCII without escapes, whose
 *   numbers are integers of at most 18 digits, whose `type` names a record (invoke, ok, fail,
 *   job_start, job_end, effect) and whose `f` names one of the four calls (a call's event) or is
 *   absent (a job event): the record as a tuple,
 *
 *       (kind, time, index, process, attempt, key, f, value, sent, fence, aborted)
 *
 *   with msgspec's UNSET for a field the line does not have or the record of its type does not
 *   keep (an invocation keeps no value, sent or fence; only a job_end keeps aborted), `kind` and
 *   `f` the interned constants of leasecheck.events, `sent` a list of tuples. Any other line:
 *   None, and the checker reads it its own way (the typed decoder, then a dict).
 *
 * Exactly the tuple checkers/read/records.py's `as_tuple(decode(line))` makes of the same line,
 * which it replaces where this module is built and the checker runs compiled;
 * tests/checkers/test_history_native.py holds the two together.
 *
 * Strings of the same text come back as one object while they are in a small table (a few
 * thousand entries, replaced as they collide): the attempt, key and process of one call's
 * events, which later dict look-ups then find by identity, with the hash the string keeps.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

#define MAX_DIGITS 18
#define MAX_SENT 64           /* a completion that sent more commands is left to the decoder */
#define MAX_ENTRY 8           /* items of one `sent` entry */
#define CACHE_BITS 12
#define CACHE_SIZE (1 << CACHE_BITS)
#define CACHE_MAX_LEN 200     /* longer strings are made afresh */

enum { F_KIND, F_TIME, F_INDEX, F_PROCESS, F_ATTEMPT, F_KEY, F_F, F_VALUE, F_SENT, F_FENCE, F_ABORTED,
       N_FIELDS };

enum { K_INVOKE, K_OK, K_FAIL, K_JOB_START, K_JOB_END, K_EFFECT, N_KINDS };

static const char *KIND_NAMES[N_KINDS] = {"invoke", "ok", "fail", "job_start", "job_end", "effect"};
static const char *CALL_NAMES[4] = {"acquire", "release", "renew", "effect"};

/* which fields each kind's record keeps (bit per field) */
#define BIT(x) (1u << (x))
#define BASE (BIT(F_TIME) | BIT(F_INDEX) | BIT(F_PROCESS) | BIT(F_ATTEMPT) | BIT(F_KEY))
static const unsigned KEEPS[N_KINDS] = {
    BASE | BIT(F_F),                                                   /* invoke */
    BASE | BIT(F_F) | BIT(F_VALUE) | BIT(F_SENT) | BIT(F_FENCE),       /* ok */
    BASE | BIT(F_F) | BIT(F_VALUE) | BIT(F_SENT) | BIT(F_FENCE),       /* fail */
    BASE,                                                              /* job_start */
    BASE | BIT(F_ABORTED),                                             /* job_end */
    BASE,                                                              /* effect */
};

static PyObject *UNSET = NULL;
static PyObject *KINDS[N_KINDS];
static PyObject *CALLS[4];

typedef struct { Py_ssize_t len; PyObject *str; } Entry;
static Entry cache[CACHE_SIZE];

#define ASCII_DATA(o) ((char *)(((PyASCIIObject *)(o)) + 1))   /* a compact ASCII str's characters */

/* a new ASCII str of the `len` characters at `p` */
static PyObject *
ascii(const char *p, Py_ssize_t len)
{
    PyObject *out = PyUnicode_New(len, 127);
    if (out != NULL)
        memcpy(ASCII_DATA(out), p, (size_t)len);
    return out;
}

/* a str of the `len` ASCII characters at `p` whose hash (FNV-1a) is `h`: the table's, when it
   holds the same text */
static PyObject *
text(const char *p, Py_ssize_t len, unsigned h)
{
    if (len > CACHE_MAX_LEN)
        return ascii(p, len);
    Entry *e = &cache[(h ^ (h >> CACHE_BITS)) & (CACHE_SIZE - 1)];
    if (e->str != NULL && e->len == len && memcmp(ASCII_DATA(e->str), p, (size_t)len) == 0) {
        Py_INCREF(e->str);
        return e->str;
    }
    PyObject *out = ascii(p, len);
    if (out == NULL)
        return NULL;
    Py_XSETREF(e->str, Py_NewRef(out));
    e->len = len;
    return out;
}

typedef struct { const char *s; Py_ssize_t i, end; } Cursor;

/* a string's bounds: c->s[*from:*to], the cursor past its closing quote, `*hash` its FNV-1a
   hash; 0 when it is not an ASCII string without escapes or control characters */
static inline int
string_at(Cursor *c, Py_ssize_t *from, Py_ssize_t *to, unsigned *hash)
{
    if (c->i >= c->end || c->s[c->i] != '"')
        return 0;
    Py_ssize_t j = c->i + 1, end = c->end;
    const unsigned char *s = (const unsigned char *)c->s;
    unsigned h = 2166136261u;
    for (; j < end; j++) {
        unsigned char ch = s[j];
        if (ch == '"')
            break;
        if (ch < 0x20 || ch >= 0x80 || ch == '\\')
            return 0;
        h = (h ^ ch) * 16777619u;
    }
    if (j >= end)
        return 0;
    *from = c->i + 1;
    *to = j;
    *hash = h;
    c->i = j + 1;
    return 1;
}

/* an integer of at most MAX_DIGITS digits, as JSON writes one; 0 when it is not one */
static int
integer_at(Cursor *c, long long *out)
{
    Py_ssize_t j = c->i;
    int negative = 0;
    if (j < c->end && c->s[j] == '-') {
        negative = 1;
        j++;
    }
    Py_ssize_t first = j;
    long long v = 0;
    while (j < c->end && c->s[j] >= '0' && c->s[j] <= '9') {
        if (j - first >= MAX_DIGITS)
            return 0;
        v = v * 10 + (c->s[j] - '0');
        j++;
    }
    if (j == first || (c->s[first] == '0' && j - first > 1))
        return 0;
    if (j < c->end && (c->s[j] == '.' || c->s[j] == 'e' || c->s[j] == 'E'))
        return 0;
    *out = negative ? -v : v;
    c->i = j;
    return 1;
}

static int
word_at(Cursor *c, const char *w, Py_ssize_t n)
{
    if (c->end - c->i >= n && memcmp(c->s + c->i, w, (size_t)n) == 0) {
        c->i += n;
        return 1;
    }
    return 0;
}

/* a scalar: a string (`cached`: through the table), an integer, true, false or null; a new
   reference, or NULL with `*bad` set when it is none of these (NULL without: an error) */
static PyObject *
scalar(Cursor *c, int *bad)
{
    if (c->i >= c->end) {
        *bad = 1;
        return NULL;
    }
    char ch = c->s[c->i];
    if (ch == '"') {
        Py_ssize_t from, to;
        unsigned h;
        if (!string_at(c, &from, &to, &h)) {
            *bad = 1;
            return NULL;
        }
        return text(c->s + from, to - from, h);
    }
    if (ch == '-' || (ch >= '0' && ch <= '9')) {
        long long v;
        if (!integer_at(c, &v)) {
            *bad = 1;
            return NULL;
        }
        return PyLong_FromLongLong(v);
    }
    if (word_at(c, "true", 4))
        Py_RETURN_TRUE;
    if (word_at(c, "false", 5))
        Py_RETURN_FALSE;
    if (word_at(c, "null", 4))
        Py_RETURN_NONE;
    *bad = 1;
    return NULL;
}

/* `sent`: null, or an array of arrays of scalars (each a tuple); as `scalar` */
static PyObject *
sent_at(Cursor *c, int *bad)
{
    if (word_at(c, "null", 4))
        Py_RETURN_NONE;
    if (c->i >= c->end || c->s[c->i] != '[') {
        *bad = 1;
        return NULL;
    }
    c->i++;
    PyObject *entries[MAX_SENT];
    Py_ssize_t n = 0;
    PyObject *out = NULL;
    if (c->i < c->end && c->s[c->i] == ']')
        c->i++;
    else {
        for (;;) {
            if (n == MAX_SENT || c->i >= c->end || c->s[c->i] != '[') {
                *bad = 1;
                goto done;
            }
            c->i++;
            PyObject *items[MAX_ENTRY];
            Py_ssize_t k = 0;
            int ok = 1;
            if (c->i < c->end && c->s[c->i] == ']')
                c->i++;
            else {
                for (;;) {
                    if (k == MAX_ENTRY) {
                        ok = 0;
                        *bad = 1;
                        break;
                    }
                    PyObject *x = scalar(c, bad);
                    if (x == NULL) {
                        ok = 0;
                        break;
                    }
                    items[k++] = x;
                    if (c->i < c->end && c->s[c->i] == ',') {
                        c->i++;
                        continue;
                    }
                    if (c->i < c->end && c->s[c->i] == ']') {
                        c->i++;
                        break;
                    }
                    ok = 0;
                    *bad = 1;
                    break;
                }
            }
            PyObject *entry = ok ? PyTuple_New(k) : NULL;
            for (Py_ssize_t m = 0; m < k; m++) {
                if (entry != NULL)
                    PyTuple_SET_ITEM(entry, m, items[m]);
                else
                    Py_DECREF(items[m]);
            }
            if (entry == NULL)
                goto done;
            entries[n++] = entry;
            if (c->i < c->end && c->s[c->i] == ',') {
                c->i++;
                continue;
            }
            if (c->i < c->end && c->s[c->i] == ']') {
                c->i++;
                break;
            }
            *bad = 1;
            goto done;
        }
    }
    out = PyList_New(n);
    if (out != NULL) {
        for (Py_ssize_t m = 0; m < n; m++)
            PyList_SET_ITEM(out, m, entries[m]);
        return out;
    }
done:
    for (Py_ssize_t m = 0; m < n; m++)
        Py_DECREF(entries[m]);
    return NULL;
}

/* the field a key names, or -1 */
static int
field_of(const char *k, Py_ssize_t n)
{
    switch (n) {
    case 1:
        return k[0] == 'f' ? F_F : -1;
    case 3:
        return memcmp(k, "key", 3) == 0 ? F_KEY : -1;
    case 4:
        if (memcmp(k, "time", 4) == 0) return F_TIME;
        if (memcmp(k, "type", 4) == 0) return F_KIND;
        if (memcmp(k, "sent", 4) == 0) return F_SENT;
        return -1;
    case 5:
        if (memcmp(k, "index", 5) == 0) return F_INDEX;
        if (memcmp(k, "value", 5) == 0) return F_VALUE;
        if (memcmp(k, "fence", 5) == 0) return F_FENCE;
        return -1;
    case 7:
        if (memcmp(k, "process", 7) == 0) return F_PROCESS;
        if (memcmp(k, "attempt", 7) == 0) return F_ATTEMPT;
        if (memcmp(k, "aborted", 7) == 0) return F_ABORTED;
        return -1;
    }
    return -1;
}

/* the position of the interned name spelled by s[from:to] in `names`, or -1 */
static int
name_of(const char *const *names, int count, const char *p, Py_ssize_t len)
{
    for (int j = 0; j < count; j++)
        if ((Py_ssize_t)strlen(names[j]) == len && memcmp(names[j], p, (size_t)len) == 0)
            return j;
    return -1;
}

static PyObject *
record(PyObject *self, PyObject *line)
{
    if (!PyBytes_Check(line)) {
        PyErr_SetString(PyExc_TypeError, "record() takes bytes");
        return NULL;
    }
    Cursor c = {PyBytes_AS_STRING(line), 0, PyBytes_GET_SIZE(line)};
    if (c.end > 0 && c.s[c.end - 1] == '\n')
        c.end--;
    if (c.end < 2 || c.s[0] != '{' || c.s[c.end - 1] != '}')
        Py_RETURN_NONE;
    c.i = 1;
    c.end--;                  /* the closing brace: the fields end before it */

    PyObject *fields[N_FIELDS] = {NULL};
    int kind = -1, call = -1, bad = 0;
    unsigned seen = 0;
    while (c.i < c.end) {
        Py_ssize_t kfrom, kto;
        unsigned h;
        if (!string_at(&c, &kfrom, &kto, &h) || c.i >= c.end || c.s[c.i] != ':')
            goto fallback;
        c.i++;
        int f = field_of(c.s + kfrom, kto - kfrom);
        if (f < 0 || (seen & BIT(f)))
            goto fallback;
        seen |= BIT(f);
        PyObject *v = NULL;
        if (f == F_KIND || f == F_F) {
            Py_ssize_t from, to;
            if (!string_at(&c, &from, &to, &h))
                goto fallback;
            if (f == F_KIND) {
                kind = name_of(KIND_NAMES, N_KINDS, c.s + from, to - from);
                if (kind < 0)
                    goto fallback;
            }
            else {
                call = name_of(CALL_NAMES, 4, c.s + from, to - from);
                if (call < 0)
                    goto fallback;
            }
        }
        else if (f == F_TIME) {
            long long t;
            if (!integer_at(&c, &t))
                goto fallback;
            v = PyLong_FromLongLong(t);
        }
        else if (f == F_SENT) {
            v = sent_at(&c, &bad);
        }
        else {
            v = scalar(&c, &bad);
            /* index and fence: an integer or null; process, attempt, key: a string or null;
               value and aborted: any scalar */
            if (v != NULL && (((f == F_INDEX || f == F_FENCE) && !(PyLong_CheckExact(v) || v == Py_None))
                              || ((f == F_PROCESS || f == F_ATTEMPT || f == F_KEY)
                                  && !(PyUnicode_CheckExact(v) || v == Py_None)))) {
                Py_DECREF(v);
                goto fallback;
            }
        }
        if (f != F_KIND && f != F_F) {
            if (v == NULL)
                goto fallback;
            fields[f] = v;
        }
        if (c.i < c.end) {
            if (c.s[c.i] != ',' || c.i + 1 >= c.end)
                goto fallback;
            c.i++;
        }
    }
    if (kind < 0 || fields[F_TIME] == NULL)
        goto fallback;
    int is_call = kind == K_INVOKE || kind == K_OK || kind == K_FAIL;
    if (is_call ? call < 0 : (seen & BIT(F_F)) != 0)
        goto fallback;

    PyObject *out = PyTuple_New(N_FIELDS);
    if (out == NULL)
        goto error;
    unsigned keeps = KEEPS[kind];
    Py_INCREF(KINDS[kind]);
    PyTuple_SET_ITEM(out, F_KIND, KINDS[kind]);
    for (int f = F_TIME; f < N_FIELDS; f++) {
        PyObject *v;
        if (f == F_F)
            v = is_call ? Py_NewRef(CALLS[call]) : Py_NewRef(UNSET);
        else if (fields[f] != NULL && (keeps & BIT(f)))
            v = Py_NewRef(fields[f]);
        else
            v = Py_NewRef(UNSET);
        PyTuple_SET_ITEM(out, f, v);
    }
    for (int f = 0; f < N_FIELDS; f++)
        Py_XDECREF(fields[f]);
    return out;

fallback:
    for (int f = 0; f < N_FIELDS; f++)
        Py_XDECREF(fields[f]);
    if (PyErr_Occurred())
        return NULL;
    Py_RETURN_NONE;
error:
    for (int f = 0; f < N_FIELDS; f++)
        Py_XDECREF(fields[f]);
    return NULL;
}

static PyMethodDef methods[] = {
    {"record", record, METH_O,
     "record(line) -> (kind, time, index, process, attempt, key, f, value, sent, fence, aborted) of the "
     "history's commonest lines, or None"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "leasecheck._historyline", "The history's commonest lines read in one pass.", -1,
    methods,
};

PyMODINIT_FUNC
PyInit__historyline(void)
{
    PyObject *msgspec = PyImport_ImportModule("msgspec");
    if (msgspec == NULL)
        return NULL;
    UNSET = PyObject_GetAttrString(msgspec, "UNSET");
    Py_DECREF(msgspec);
    if (UNSET == NULL)
        return NULL;
    for (int j = 0; j < N_KINDS; j++)
        if ((KINDS[j] = PyUnicode_InternFromString(KIND_NAMES[j])) == NULL)
            return NULL;
    for (int j = 0; j < 4; j++)
        if ((CALLS[j] = PyUnicode_InternFromString(CALL_NAMES[j])) == NULL)
            return NULL;
    return PyModule_Create(&module);
}
