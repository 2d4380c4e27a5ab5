/*
 * A manifest's tree in C: its check (manifest.py, Entries._check), its children index
 * (Entries.children) and its listings' columns.
 *
 * parents(paths, ends, dirs) -> (parents, fault, at). paths holds every
 * path, entry i's ending at ends[i] (uint32); dirs maps each directory's path (bytes) to
 * its position, b"" to -1. parents holds each entry's parent position as int32, in
 * order. fault says what is wrong with entry at, the first at fault (0: nothing):
 * FAULT_ENDS its end does not follow the one before or passes the paths' end,
 * FAULT_ORDER its path does not sort after the one before, FAULT_NAME its last name is
 * empty, `.` or `..` (by induction through the parents, so is every name before it),
 * FAULT_PARENT its parent directory is not in dirs. The whole-list passes in Python
 * made a bytes object per path and three more per name: most of the time a mount took
 * to load a 100,000-entry manifest. Here a parent is looked up once per run of entries
 * that share it.
 *
 * And by_parent(parents) -> bytes: the positions ordered by parent, then by position
 * (int32), as a stable sort by parent gives them: a counting sort, one pass to count and
 * one to place, where sorted() with a key took 10 ms per 100,000 entries.
 *
 * And, for a directory listing (Entries.child_names, Entries.stats), columns of the
 * entries at positions (int32), each in one pass: names(paths, ends, positions, cut) ->
 * each path past its first cut bytes; stats(kinds, modes, sizes, mtimes, positions,
 * type_bits) -> (st_mode, size and mtime lists, the kinds as bytes). A mount opens every
 * directory it lists: in Python these passes cost 60 ms per `find` of 100,000 files.
 *
 * And extremes(column) -> (lowest, highest) of an array of B, H, I, i or q (None if
 * empty): the range checks of a manifest's columns, where min() and max() took 9 ms per
 * 100,000 entries at every mount's first look at an archive.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

enum { FAULT_NONE, FAULT_ENDS, FAULT_ORDER, FAULT_NAME, FAULT_PARENT };

/* Whether a sorts strictly before b, as bytes compare. */
static int
before(const char *a, Py_ssize_t na, const char *b, Py_ssize_t nb)
{
    int c = memcmp(a, b, (size_t)(na < nb ? na : nb));
    return c < 0 || (c == 0 && na < nb);
}

/* Whether the name is empty, "." or "..". */
static int
dots(const char *name, Py_ssize_t n)
{
    return n == 0 || (n == 1 && name[0] == '.') || (n == 2 && name[0] == '.' && name[1] == '.');
}

static PyObject *
parents(PyObject *self, PyObject *args)
{
    Py_buffer paths, ends;
    PyObject *dirs, *result = NULL;
    if (!PyArg_ParseTuple(args, "y*y*O!", &paths, &ends, &PyDict_Type, &dirs))
        return NULL;
    Py_ssize_t count = ends.len / (Py_ssize_t)sizeof(uint32_t);
    PyObject *out = PyBytes_FromStringAndSize(NULL, count * (Py_ssize_t)sizeof(int32_t));
    if (out == NULL)
        goto done;
    const char *text = (const char *)paths.buf;
    const uint32_t *end = (const uint32_t *)ends.buf;
    int32_t *parent = (int32_t *)PyBytes_AS_STRING(out);
    const char *head = NULL; /* the parent path of the entry before, and its position */
    Py_ssize_t head_len = -1;
    int32_t head_at = 0;
    Py_ssize_t start = 0, prev = 0, prev_len = -1, i;
    int fault = FAULT_NONE;
    for (i = 0; i < count; i++) {
        Py_ssize_t stop = (Py_ssize_t)end[i];
        if (stop < start || stop > paths.len) {
            fault = FAULT_ENDS;
            break;
        }
        const char *path = text + start;
        Py_ssize_t len = stop - start;
        if (prev_len >= 0 && !before(text + prev, prev_len, path, len)) {
            fault = FAULT_ORDER;
            break;
        }
        Py_ssize_t cut = len; /* the last slash, or -1 */
        while (--cut >= 0 && path[cut] != '/')
            ;
        if (dots(path + cut + 1, len - cut - 1)) {
            fault = FAULT_NAME;
            break;
        }
        Py_ssize_t hlen = cut < 0 ? 0 : cut;
        if (hlen != head_len || memcmp(head, path, (size_t)hlen) != 0) {
            PyObject *key = PyBytes_FromStringAndSize(path, hlen);
            if (key == NULL)
                goto fail;
            PyObject *found = PyDict_GetItemWithError(dirs, key); /* borrowed */
            Py_DECREF(key);
            if (found == NULL) {
                if (PyErr_Occurred())
                    goto fail;
                fault = FAULT_PARENT;
                break;
            }
            long at = PyLong_AsLong(found);
            if (at == -1 && PyErr_Occurred())
                goto fail;
            head = path;
            head_len = hlen;
            head_at = (int32_t)at;
        }
        parent[i] = head_at;
        prev = start;
        prev_len = len;
        start = stop;
    }
    result = Py_BuildValue("Nin", out, fault, fault ? i : (Py_ssize_t)0);
    out = NULL;
fail:
    Py_XDECREF(out);
done:
    PyBuffer_Release(&paths);
    PyBuffer_Release(&ends);
    return result;
}

static PyObject *
by_parent(PyObject *self, PyObject *arg)
{
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    const int32_t *parent = (const int32_t *)view.buf;
    Py_ssize_t count = view.len / (Py_ssize_t)sizeof(int32_t), i;
    PyObject *out = NULL;
    /* start[p + 1]: where the children of p begin; the root's (-1) at 0 */
    Py_ssize_t *start = PyMem_Calloc((size_t)count + 2, sizeof(Py_ssize_t));
    if (start == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (i = 0; i < count; i++) {
        if (parent[i] < -1 || parent[i] >= count) {
            PyErr_Format(PyExc_ValueError, "entry %zd has parent %d of %zd", i, parent[i], count);
            goto done;
        }
        start[parent[i] + 2]++;
    }
    for (i = 1; i < count + 2; i++)
        start[i] += start[i - 1];
    out = PyBytes_FromStringAndSize(NULL, count * (Py_ssize_t)sizeof(int32_t));
    if (out == NULL)
        goto done;
    int32_t *order = (int32_t *)PyBytes_AS_STRING(out);
    for (i = 0; i < count; i++)
        order[start[parent[i] + 1]++] = (int32_t)i;
done:
    PyMem_Free(start);
    PyBuffer_Release(&view);
    return out;
}

/* Position k of pos, checked against count (ValueError, -1, if out of range). */
static Py_ssize_t
position(const Py_buffer *pos, Py_ssize_t k, Py_ssize_t count)
{
    int32_t p = ((const int32_t *)pos->buf)[k];
    if (p < 0 || p >= count) {
        PyErr_Format(PyExc_ValueError, "position %d of %zd entries", p, count);
        return -1;
    }
    return p;
}

static PyObject *
names(PyObject *self, PyObject *args)
{
    Py_buffer paths, ends, pos;
    Py_ssize_t cut;
    if (!PyArg_ParseTuple(args, "y*y*y*n", &paths, &ends, &pos, &cut))
        return NULL;
    Py_ssize_t count = ends.len / (Py_ssize_t)sizeof(uint32_t);
    Py_ssize_t n = pos.len / (Py_ssize_t)sizeof(int32_t), k;
    const uint32_t *end = (const uint32_t *)ends.buf;
    PyObject *out = PyList_New(n);
    for (k = 0; out != NULL && k < n; k++) {
        Py_ssize_t p = position(&pos, k, count);
        if (p < 0)
            goto fail;
        Py_ssize_t start = (p ? (Py_ssize_t)end[p - 1] : 0) + cut, stop = (Py_ssize_t)end[p];
        if (start > stop || stop > paths.len) {
            PyErr_Format(PyExc_ValueError, "entry %zd has no name past byte %zd", p, cut);
            goto fail;
        }
        PyObject *name = PyBytes_FromStringAndSize((const char *)paths.buf + start, stop - start);
        if (name == NULL)
            goto fail;
        PyList_SET_ITEM(out, k, name);
    }
    goto done;
fail:
    Py_CLEAR(out);
done:
    PyBuffer_Release(&paths);
    PyBuffer_Release(&ends);
    PyBuffer_Release(&pos);
    return out;
}

static PyObject *
stats(PyObject *self, PyObject *args)
{
    Py_buffer kinds, modes, sizes, mtimes, pos;
    PyObject *type_bits, *result = NULL, *lists[3] = {NULL, NULL, NULL}, *codes = NULL;
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*O!", &kinds, &modes, &sizes, &mtimes, &pos,
                          &PyTuple_Type, &type_bits))
        return NULL;
    Py_ssize_t count = kinds.len, n = pos.len / (Py_ssize_t)sizeof(int32_t), k, j;
    if (modes.len != count * 2 || sizes.len != count * 8 || mtimes.len != count * 8) {
        PyErr_SetString(PyExc_ValueError, "the columns are not of one length");
        goto done;
    }
    for (j = 0; j < 3; j++)
        if ((lists[j] = PyList_New(n)) == NULL)
            goto done;
    if ((codes = PyBytes_FromStringAndSize(NULL, n)) == NULL)
        goto done;
    const uint8_t *kind = (const uint8_t *)kinds.buf;
    for (k = 0; k < n; k++) {
        Py_ssize_t p = position(&pos, k, count);
        if (p < 0)
            goto done;
        if (kind[p] >= PyTuple_GET_SIZE(type_bits)) {
            PyErr_Format(PyExc_ValueError, "entry %zd has kind %d", p, kind[p]);
            goto done;
        }
        long bits = PyLong_AsLong(PyTuple_GET_ITEM(type_bits, kind[p]));
        if (bits == -1 && PyErr_Occurred())
            goto done;
        PyObject *mode = PyLong_FromLong(bits | ((const uint16_t *)modes.buf)[p]);
        PyObject *size = PyLong_FromLongLong(((const int64_t *)sizes.buf)[p]);
        PyObject *mtime = PyLong_FromLongLong(((const int64_t *)mtimes.buf)[p]);
        PyList_SET_ITEM(lists[0], k, mode);
        PyList_SET_ITEM(lists[1], k, size);
        PyList_SET_ITEM(lists[2], k, mtime);
        if (mode == NULL || size == NULL || mtime == NULL)
            goto done;
        PyBytes_AS_STRING(codes)[k] = (char)kind[p];
    }
    result = PyTuple_Pack(4, lists[0], lists[1], lists[2], codes);
done:
    for (j = 0; j < 3; j++)
        Py_XDECREF(lists[j]);
    Py_XDECREF(codes);
    PyBuffer_Release(&kinds);
    PyBuffer_Release(&modes);
    PyBuffer_Release(&sizes);
    PyBuffer_Release(&mtimes);
    PyBuffer_Release(&pos);
    return result;
}

/* lo and hi: the lowest and highest of the view's values, read as type. */
#define EXTREMES(type)                                           \
    do {                                                         \
        const type *v = (const type *)view.buf;                  \
        Py_ssize_t i, n = view.len / (Py_ssize_t)sizeof(type);   \
        lo = hi = v[0];                                          \
        for (i = 1; i < n; i++) {                                \
            if (v[i] < lo)                                       \
                lo = v[i];                                       \
            if (v[i] > hi)                                       \
                hi = v[i];                                       \
        }                                                        \
    } while (0)

static PyObject *
extremes(PyObject *self, PyObject *arg)
{
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_FORMAT | PyBUF_C_CONTIGUOUS) < 0)
        return NULL;
    PyObject *out = NULL;
    const char *format = view.format ? view.format : "B";
    long long lo = 0, hi = 0;
    if (strcmp(format, "B") != 0 && strcmp(format, "H") != 0 && strcmp(format, "I") != 0 &&
        strcmp(format, "i") != 0 && strcmp(format, "q") != 0)
        PyErr_Format(PyExc_TypeError, "extremes of an array of '%s'", format);
    else if (view.len == 0)
        out = Py_NewRef(Py_None);
    else {
        switch (format[0]) {
        case 'B': EXTREMES(uint8_t); break;
        case 'H': EXTREMES(uint16_t); break;
        case 'I': EXTREMES(uint32_t); break;
        case 'i': EXTREMES(int32_t); break;
        default: EXTREMES(int64_t); break;
        }
        out = Py_BuildValue("(LL)", lo, hi);
    }
    PyBuffer_Release(&view);
    return out;
}

static PyMethodDef methods[] = {
    {"parents", parents, METH_VARARGS,
     "Each entry's parent position (int32 bytes), the first fault and the entry at fault."},
    {"by_parent", by_parent, METH_O,
     "The positions (int32 bytes) ordered by parent, then by position."},
    {"extremes", extremes, METH_O, "The lowest and highest value of an array (None if empty)."},
    {"names", names, METH_VARARGS, "The paths at positions (int32), each past its first cut bytes."},
    {"stats", stats, METH_VARARGS,
     "st_mode, size and mtime of the entries at positions (int32), as lists, and their kinds."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_tree",
    "A manifest's tree in C: its check, its children index and its listings' columns.", -1,
    methods,
};

PyMODINIT_FUNC
PyInit__tree(void)
{
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    if (PyModule_AddIntConstant(m, "FAULT_ENDS", FAULT_ENDS) < 0 ||
        PyModule_AddIntConstant(m, "FAULT_ORDER", FAULT_ORDER) < 0 ||
        PyModule_AddIntConstant(m, "FAULT_NAME", FAULT_NAME) < 0 ||
        PyModule_AddIntConstant(m, "FAULT_PARENT", FAULT_PARENT) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
