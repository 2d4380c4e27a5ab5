/*
 * Gearhash chunk boundary scan for XET-GEARHASH-BLAKE3 (spec: "Content-Defined Chunking").
 *
 * One function, scan(table, data, h, pos, min, max, mask) -> (cuts, h, pos):
 *   table  2048 bytes: the 256 gear constants as native-endian uint64 (passed in from Python,
 *          so the table has a single source, arkfs/xet/gear_table.py)
 *   data   any contiguous buffer
 *   h, pos the rolling hash and the bytes already in the current chunk, carried between calls
 * cuts lists the offsets in data where a chunk ends (exclusive). The scan runs without the GIL.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

static Py_ssize_t
scan_buffer(const uint64_t *table, const uint8_t *data, Py_ssize_t n, uint64_t *h_io,
            uint64_t *pos_io, uint64_t min_size, uint64_t max_size, uint64_t mask,
            Py_ssize_t *cuts, Py_ssize_t max_cuts)
{
    uint64_t h = *h_io, pos = *pos_io;
    Py_ssize_t i = 0, ncuts = 0;
    /* The hash window is 64 bytes: bytes before min_size - 64 cannot influence any test. */
    uint64_t skip_to = min_size > 64 ? min_size - 64 : 0;
    while (i < n) {
        if (pos < skip_to) {
            uint64_t jump = skip_to - pos;
            if ((uint64_t)(n - i) < jump) jump = (uint64_t)(n - i);
            i += (Py_ssize_t)jump;
            pos += jump;
            h = 0;
            continue;
        }
        /* Hash up to the first position where a boundary may be tested. */
        if (pos + 1 < min_size) {
            Py_ssize_t stop = i + (Py_ssize_t)(min_size - 1 - pos);
            if (stop > n) stop = n;
            pos += (uint64_t)(stop - i);
            for (; i < stop; i++) h = (h << 1) + table[data[i]];
            if (i == n) break;
        }
        /* Test every byte up to the forced cut at max_size or the end of the data. */
        Py_ssize_t stop = i + (Py_ssize_t)(max_size - pos);
        int forced = stop <= n;
        if (!forced) stop = n;
        const uint8_t *p = data + i, *end = data + stop;
        int found = 0;
        while (p < end) {
            h = (h << 1) + table[*p++];
            if ((h & mask) == 0) {
                found = 1;
                break;
            }
        }
        pos += (uint64_t)(p - (data + i));
        i = p - data;
        if (found || forced) {
            cuts[ncuts++] = i;
            h = 0;
            pos = 0;
        }
        if (ncuts == max_cuts) break;
    }
    *h_io = h;
    *pos_io = pos;
    return i == n ? ncuts : -1;
}

static PyObject *
gearcut_scan(PyObject *self, PyObject *args)
{
    Py_buffer table, data;
    unsigned long long h, pos, min_size, max_size, mask;
    if (!PyArg_ParseTuple(args, "y*y*KKKKK", &table, &data, &h, &pos, &min_size, &max_size, &mask))
        return NULL;
    PyObject *result = NULL;
    Py_ssize_t *cuts = NULL;
    if (table.len != 256 * 8) {
        PyErr_SetString(PyExc_ValueError, "gear table must be 2048 bytes");
        goto done;
    }
    if (min_size == 0 || max_size < min_size) {
        PyErr_SetString(PyExc_ValueError, "need 0 < min_size <= max_size");
        goto done;
    }
    /* A chunk is at least min_size bytes, except the first one, which may finish an open chunk. */
    Py_ssize_t max_cuts = data.len / (Py_ssize_t)min_size + 2;
    cuts = PyMem_Malloc(sizeof(Py_ssize_t) * (size_t)max_cuts);
    if (!cuts) {
        PyErr_NoMemory();
        goto done;
    }
    uint64_t hh = h, pp = pos;
    Py_ssize_t ncuts;
    Py_BEGIN_ALLOW_THREADS
    ncuts = scan_buffer((const uint64_t *)table.buf, (const uint8_t *)data.buf, data.len, &hh, &pp,
                        min_size, max_size, mask, cuts, max_cuts);
    Py_END_ALLOW_THREADS
    if (ncuts < 0) {
        PyErr_SetString(PyExc_RuntimeError, "gear scan produced more cuts than possible");
        goto done;
    }
    PyObject *list = PyList_New(ncuts);
    if (!list) goto done;
    for (Py_ssize_t k = 0; k < ncuts; k++) {
        PyObject *v = PyLong_FromSsize_t(cuts[k]);
        if (!v) {
            Py_DECREF(list);
            goto done;
        }
        PyList_SET_ITEM(list, k, v);
    }
    result = Py_BuildValue("(NKK)", list, (unsigned long long)hh, (unsigned long long)pp);
done:
    PyMem_Free(cuts);
    PyBuffer_Release(&table);
    PyBuffer_Release(&data);
    return result;
}

static PyMethodDef gearcut_methods[] = {
    {"scan", gearcut_scan, METH_VARARGS,
     "scan(table, data, h, pos, min_size, max_size, mask) -> (cuts, h, pos)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef gearcut_module = {
    PyModuleDef_HEAD_INIT, "_gearcut", "Gearhash chunk boundary scan (C).", -1, gearcut_methods,
};

PyMODINIT_FUNC
PyInit__gearcut(void)
{
    return PyModule_Create(&gearcut_module);
}
