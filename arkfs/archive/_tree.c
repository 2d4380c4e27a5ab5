/*
 * A manifest's tree in C: its check (manifest.py, Entries._check) and its children index
 * (Entries.children).
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

static PyMethodDef methods[] = {
    {"parents", parents, METH_VARARGS,
     "Each entry's parent position (int32 bytes), the first fault and the entry at fault."},
    {"by_parent", by_parent, METH_O,
     "The positions (int32 bytes) ordered by parent, then by position."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_tree", "A manifest's tree in C: its check and its children index.", -1, methods,
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
