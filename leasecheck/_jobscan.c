/* leasecheck._jobscan: the job lines of a chunk of history, found in one pass.
 *
 * jobs(chunk) -> [(time, +1 or -1, key), ...] or None
 *
 *   `chunk` a bytes of whole history lines (harness/run/live_stats.py reads them from the workers'
 *   files as they grow). Each occurrence of the token `"type":"job_` must sit in a line in the
 *   writer's shape (leasecheck.harness.record.history), at the line's start
 *
 *       {"time":<digits>,"process":"<text>","type":"job_start" or "job_end","attempt":"<text>","key":"<key>"
 *
 *   where no <text> or <key> holds a quote, a backslash or a newline, and <digits> are at most 18:
 *   then each such line gives (time, +1 for a start or -1 for an end, the key's bytes), in the
 *   chunk's order. If any occurrence is not in that shape: None, and the caller looks at each line
 *   its own way.
 *
 * Exactly what live_stats._jobs's regular expression (`_JOB_LINE`) finds in a chunk whose job
 * tokens it all accounts for, and None where it does not account for them all (a time of more than
 * 18 digits included): tests/harness/test_jobscan.py holds the two together. It replaces that scan
 * where live_stats runs compiled and setup.py built it: the live progress reads every byte the
 * workers write, and the regular expression tried every line.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

#define MAX_DIGITS 18

static const char TOKEN[] = "\"type\":\"job_";
#define TOKEN_LEN ((Py_ssize_t)(sizeof(TOKEN) - 1))
static const char HEAD[] = "{\"time\":";
#define HEAD_LEN ((Py_ssize_t)(sizeof(HEAD) - 1))
static const char PROCESS[] = ",\"process\":\"";
#define PROCESS_LEN ((Py_ssize_t)(sizeof(PROCESS) - 1))
static const char ATTEMPT[] = ",\"attempt\":\"";
#define ATTEMPT_LEN ((Py_ssize_t)(sizeof(ATTEMPT) - 1))
static const char KEY[] = "\",\"key\":\"";
#define KEY_LEN ((Py_ssize_t)(sizeof(KEY) - 1))

/* the end of a text that holds no quote, backslash or newline, starting at `i`: the position of
   its closing quote, or -1 */
static Py_ssize_t
text_end(const char *s, Py_ssize_t i, Py_ssize_t end)
{
    for (; i < end; i++) {
        char c = s[i];
        if (c == '"')
            return i;
        if (c == '\\' || c == '\n')
            return -1;
    }
    return -1;
}

static int
at(const char *s, Py_ssize_t i, Py_ssize_t end, const char *w, Py_ssize_t n)
{
    return end - i >= n && memcmp(s + i, w, (size_t)n) == 0;
}

static PyObject *
jobs(PyObject *self, PyObject *chunk)
{
    if (!PyBytes_Check(chunk)) {
        PyErr_SetString(PyExc_TypeError, "jobs() takes bytes");
        return NULL;
    }
    const char *s = PyBytes_AS_STRING(chunk);
    Py_ssize_t size = PyBytes_GET_SIZE(chunk);
    PyObject *out = PyList_New(0);
    if (out == NULL)
        return NULL;
    Py_ssize_t from = 0;
    for (;;) {
        const char *hit = size - from >= TOKEN_LEN
            ? memmem(s + from, (size_t)(size - from), TOKEN, (size_t)TOKEN_LEN) : NULL;
        if (hit == NULL)
            return out;
        Py_ssize_t t = hit - s;
        /* the line's start: just after the previous newline, or the chunk's start */
        Py_ssize_t line = t;
        while (line > 0 && s[line - 1] != '\n')
            line--;
        /* {"time":<digits>,"process":"<text>", then the token */
        Py_ssize_t i = line;
        if (!at(s, i, t, HEAD, HEAD_LEN))
            goto other;
        i += HEAD_LEN;
        Py_ssize_t digits = i;
        long long when = 0;
        while (i < t && s[i] >= '0' && s[i] <= '9') {
            if (i - digits >= MAX_DIGITS)
                goto other;
            when = when * 10 + (s[i] - '0');
            i++;
        }
        if (i == digits || !at(s, i, t, PROCESS, PROCESS_LEN))
            goto other;
        i = text_end(s, i + PROCESS_LEN, t);
        if (i < 0 || i + 2 != t || s[i + 1] != ',')
            goto other;
        /* job_start" or job_end", then ,"attempt":"<text>","key":"<key>" */
        i = t + TOKEN_LEN;
        int delta;
        if (at(s, i, size, "start\"", 6)) {
            delta = 1;
            i += 6;
        }
        else if (at(s, i, size, "end\"", 4)) {
            delta = -1;
            i += 4;
        }
        else
            goto other;
        if (!at(s, i, size, ATTEMPT, ATTEMPT_LEN))
            goto other;
        i = text_end(s, i + ATTEMPT_LEN, size);
        if (i < 0 || !at(s, i, size, KEY, KEY_LEN))
            goto other;
        Py_ssize_t key = i + KEY_LEN;
        Py_ssize_t key_end = text_end(s, key, size);
        if (key_end < 0)
            goto other;
        PyObject *entry = Py_BuildValue("(Liy#)", when, delta, s + key, key_end - key);
        if (entry == NULL || PyList_Append(out, entry) < 0) {
            Py_XDECREF(entry);
            Py_DECREF(out);
            return NULL;
        }
        Py_DECREF(entry);
        from = key_end + 1;
    }
other:
    Py_DECREF(out);
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"jobs", jobs, METH_O,
     "jobs(chunk) -> [(time, +1 or -1, key), ...] of the chunk's job lines in the writer's shape, or None"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "leasecheck._jobscan", "The job lines of a chunk of history, found in one pass.", -1,
    methods,
};

PyMODINIT_FUNC
PyInit__jobscan(void)
{
    return PyModule_Create(&module);
}
