/*
 * Gearhash chunk boundary scan for XET-GEARHASH-BLAKE3 (spec: "Content-Defined Chunking").
 *
 * One function, scan(table, data, h, pos, min, max, mask) -> (cuts, h, pos):
 *   table  2048 bytes: the 256 gear constants as native-endian uint64 (passed in from Python,
 *          so the table has a single source, arkfs/xet/gear_table.py)
 *   data   any contiguous buffer
 *   h      the rolling hash of the stream so far, never reset (see below)
 *   pos    the bytes already in the open chunk
 * cuts lists the offsets in data where a chunk ends (exclusive). The scan runs without the GIL.
 *
 * Why the hash is never reset: h = (h << 1) + table[byte] shifts each byte's term out after
 * 64 bytes, so h depends only on the last 64 bytes. The spec resets h to 0 at each cut but
 * first tests a boundary min_size (>= 64) bytes later, when the reset hash and the never-reset
 * hash are equal. So the scan works in two passes: find every position whose 64-byte window
 * hash passes the mask (independent of where chunks start, so four stretches of the buffer
 * are hashed at once, interleaved, and the CPU overlaps their dependency chains), then walk
 * those candidates in order applying min_size and max_size.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define LANES 4
#define LANE_MIN 4096 /* below LANES * LANE_MIN bytes, one lane does all the hashing */
#define SLICE (1 << 20) /* bytes whose candidates are found before they are resolved */

/* A growable list of candidate offsets. */
typedef struct {
    Py_ssize_t *at;
    Py_ssize_t len, cap;
} Offsets;

static int
offsets_push(Offsets *o, Py_ssize_t v)
{
    if (o->len == o->cap) {
        Py_ssize_t cap = o->cap ? o->cap * 2 : 256;
        Py_ssize_t *at = PyMem_RawRealloc(o->at, sizeof(Py_ssize_t) * (size_t)cap);
        if (!at) return -1;
        o->at = at;
        o->cap = cap;
    }
    o->at[o->len++] = v;
    return 0;
}

#define STEP(k)                                                                          \
    do {                                                                                 \
        h##k = (h##k << 1) + table[p##k[j]];                                             \
        if (!(h##k & mask) && offsets_push(&lane[k], base##k + j) < 0) goto oom;         \
    } while (0)

/* Every offset i in [from, to) of data whose window hash passes the mask, in order, into out.
   *h_io is the hash before data[from] on entry, after data[to - 1] on return.
   Returns -1 when out of memory. */
static int
candidates(const uint64_t *table, const uint8_t *data, Py_ssize_t from, Py_ssize_t to,
           uint64_t *h_io, uint64_t mask, Offsets *out)
{
    Offsets lane[LANES];
    memset(lane, 0, sizeof lane);
    Py_ssize_t n = to - from;
    Py_ssize_t seg = n >= LANES * LANE_MIN ? n / LANES : 0;
    uint64_t h0 = *h_io, h1 = 0, h2 = 0, h3 = 0;
    Py_ssize_t base0 = from, base1 = from + seg, base2 = from + 2 * seg, base3 = from + 3 * seg, j;
    if (seg) {
        /* Lanes 1-3 start with the hash of the 64 bytes before their stretch. */
        for (j = base1 - 64; j < base1; j++) h1 = (h1 << 1) + table[data[j]];
        for (j = base2 - 64; j < base2; j++) h2 = (h2 << 1) + table[data[j]];
        for (j = base3 - 64; j < base3; j++) h3 = (h3 << 1) + table[data[j]];
        const uint8_t *p0 = data + base0, *p1 = data + base1, *p2 = data + base2, *p3 = data + base3;
        for (j = 0; j < seg; j++) {
            STEP(0);
            STEP(1);
            STEP(2);
            STEP(3);
        }
    }
    /* The rest (all of it when the stretch is small) continues the last lane. */
    int last = seg ? LANES - 1 : 0;
    uint64_t h = seg ? h3 : h0;
    for (j = from + LANES * seg; j < to; j++) {
        h = (h << 1) + table[data[j]];
        if (!(h & mask) && offsets_push(&lane[last], j) < 0) goto oom;
    }
    *h_io = h;
    for (int k = 0; k < LANES; k++) {
        for (Py_ssize_t c = 0; c < lane[k].len; c++)
            if (offsets_push(out, lane[k].at[c]) < 0) goto oom;
        PyMem_RawFree(lane[k].at);
        lane[k].at = NULL;
    }
    return 0;
oom:
    for (int k = 0; k < LANES; k++) PyMem_RawFree(lane[k].at);
    return -1;
}

/* Append to cuts the cuts up to offset `to`, given the candidates before it. *start is where
   the open chunk began (negative when it began before data), updated as chunks are cut. */
static int
resolve(const Offsets *cand, Py_ssize_t to, Py_ssize_t *start, uint64_t min_size,
        uint64_t max_size, Offsets *cuts)
{
    Py_ssize_t c = 0;
    for (;;) {
        /* A boundary at offset i makes a chunk of i - start + 1 bytes: at least min_size. */
        Py_ssize_t first = *start + (Py_ssize_t)min_size - 1;
        Py_ssize_t forced = *start + (Py_ssize_t)max_size; /* the cut at max_size */
        while (c < cand->len && cand->at[c] < first) c++;
        Py_ssize_t cut;
        if (c < cand->len && cand->at[c] + 1 <= forced)
            cut = cand->at[c] + 1;
        else if (forced <= to)
            cut = forced;
        else
            return 0;
        if (offsets_push(cuts, cut) < 0) return -1;
        *start = cut;
    }
}

/* The whole scan, in slices of SLICE bytes so that the candidates of even the most
   boundary-dense data take little memory. Returns -1 when out of memory. */
static int
scan_buffer(const uint64_t *table, const uint8_t *data, Py_ssize_t n, uint64_t *h_io,
            uint64_t *pos_io, uint64_t min_size, uint64_t max_size, uint64_t mask, Offsets *cuts)
{
    Offsets cand = {0};
    Py_ssize_t start = -(Py_ssize_t)*pos_io;
    for (Py_ssize_t from = 0; from < n; from += SLICE) {
        Py_ssize_t to = n - from > SLICE ? from + SLICE : n;
        cand.len = 0;
        if (candidates(table, data, from, to, h_io, mask, &cand) < 0 ||
            resolve(&cand, to, &start, min_size, max_size, cuts) < 0) {
            PyMem_RawFree(cand.at);
            return -1;
        }
    }
    PyMem_RawFree(cand.at);
    *pos_io = (uint64_t)(n - start);
    return 0;
}

static PyObject *
gearcut_scan(PyObject *self, PyObject *args)
{
    Py_buffer table, data;
    unsigned long long h, pos, min_size, max_size, mask;
    if (!PyArg_ParseTuple(args, "y*y*KKKKK", &table, &data, &h, &pos, &min_size, &max_size, &mask))
        return NULL;
    PyObject *result = NULL;
    Offsets cuts = {0};
    if (table.len != 256 * 8) {
        PyErr_SetString(PyExc_ValueError, "gear table must be 2048 bytes");
        goto done;
    }
    if (min_size < 64 || max_size < min_size) {
        PyErr_SetString(PyExc_ValueError, "need 64 <= min_size <= max_size");
        goto done;
    }
    uint64_t hh = h, pp = pos;
    int failed;
    Py_BEGIN_ALLOW_THREADS
    failed = scan_buffer((const uint64_t *)table.buf, (const uint8_t *)data.buf, data.len, &hh,
                         &pp, min_size, max_size, mask, &cuts);
    Py_END_ALLOW_THREADS
    if (failed) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t ncuts = cuts.len;
    PyObject *list = PyList_New(ncuts);
    if (!list) goto done;
    for (Py_ssize_t k = 0; k < ncuts; k++) {
        PyObject *v = PyLong_FromSsize_t(cuts.at[k]);
        if (!v) {
            Py_DECREF(list);
            goto done;
        }
        PyList_SET_ITEM(list, k, v);
    }
    result = Py_BuildValue("(NKK)", list, (unsigned long long)hh, (unsigned long long)pp);
done:
    PyMem_RawFree(cuts.at);
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
