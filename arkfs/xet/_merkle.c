/*
 * The Merkle root of XET hashes in C (spec: "Merkle Tree Construction", "Root Computation",
 * "Internal Node Hash Function"), so a file hash over ~16,000 chunk hashes, or a xorb hash,
 * costs about a millisecond instead of tens of them in Python, and without the GIL.
 *
 * root(key, hashes, ends, mean_branching, max_children) -> bytes: hashes holds n >= 1
 * hashes of 32 bytes, ends n native u64 (array 'Q'): where each node ends if their
 * sizes are laid end to end from 0, as footers and file maps keep them. Each node's line is
 * "{hash string} : {size}\n" (hash_to_string: four little-endian u64, 16 hex digits
 * each); a group ends after a node whose last u64 % mean_branching == 0, from its third
 * node on, or at max_children nodes; a level of two nodes or fewer is one group. hashing.py
 * (merkle_root) holds the rule in Python terms and calls this.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "blake3/blake3.h"

static uint64_t
load64(const uint8_t *p)
{
    uint64_t w = 0;
    for (int k = 7; k >= 0; k--)
        w = (w << 8) | p[k];
    return w;
}

/* The node's "{hash string} : {size}\n" into line (at least 88 bytes); its length. */
static size_t
node_line(char *line, const uint8_t *h, uint64_t size)
{
    static const char hex[] = "0123456789abcdef";
    char *p = line;
    for (int w = 0; w < 4; w++)
        for (int k = 7; k >= 0; k--) {
            *p++ = hex[h[8 * w + k] >> 4];
            *p++ = hex[h[8 * w + k] & 15];
        }
    *p++ = ' ';
    *p++ = ':';
    *p++ = ' ';
    char digits[20];
    int d = 0;
    do {
        digits[d++] = (char)('0' + size % 10);
        size /= 10;
    } while (size);
    while (d)
        *p++ = digits[--d];
    *p++ = '\n';
    return (size_t)(p - line);
}

static Py_ssize_t
next_cut(const uint8_t *hashes, Py_ssize_t start, Py_ssize_t n, uint64_t mean, Py_ssize_t max)
{
    Py_ssize_t left = n - start;
    if (left <= 2)
        return left;
    Py_ssize_t end = left < max ? left : max;
    for (Py_ssize_t i = 2; i < end; i++)
        if (load64(hashes + 32 * (start + i) + 24) % mean == 0)
            return i + 1;
    return end;
}

/* Reduce n nodes in place to the root, left in hashes[0..32). */
static void
reduce(const uint8_t *key, uint8_t *hashes, uint64_t *sizes, Py_ssize_t n, uint64_t mean,
       Py_ssize_t max)
{
    char line[128];
    while (n > 1) {
        Py_ssize_t m = 0;
        for (Py_ssize_t i = 0; i < n;) {
            Py_ssize_t cut = i + next_cut(hashes, i, n, mean, max);
            blake3_hasher hasher;
            blake3_hasher_init_keyed(&hasher, key);
            uint64_t total = 0;
            for (Py_ssize_t j = i; j < cut; j++) {
                size_t len = node_line(line, hashes + 32 * j, sizes[j]);
                blake3_hasher_update(&hasher, line, len);
                total += sizes[j];
            }
            /* m <= i: nodes i..cut are read before node m is written. */
            blake3_hasher_finalize(&hasher, hashes + 32 * m, 32);
            sizes[m++] = total;
            i = cut;
        }
        n = m;
    }
}

static PyObject *
root(PyObject *self, PyObject *args)
{
    Py_buffer key, hashes, ends;
    unsigned long long mean;
    Py_ssize_t max;
    if (!PyArg_ParseTuple(args, "y*y*y*Kn", &key, &hashes, &ends, &mean, &max))
        return NULL;
    PyObject *out = NULL;
    Py_ssize_t n = hashes.len / 32;
    if (key.len != BLAKE3_KEY_LEN || n < 1 || hashes.len != 32 * n || ends.len != 8 * n ||
        mean < 1 || max < 3) {
        PyErr_SetString(PyExc_ValueError, "root: a 32-byte key, n >= 1 hashes and n ends");
        goto done;
    }
    uint8_t *h = PyMem_RawMalloc((size_t)hashes.len);
    uint64_t *s = PyMem_RawMalloc((size_t)ends.len);
    if (h == NULL || s == NULL) {
        PyMem_RawFree(h);
        PyMem_RawFree(s);
        PyErr_NoMemory();
        goto done;
    }
    memcpy(h, hashes.buf, (size_t)hashes.len);
    const uint64_t *e = (const uint64_t *)ends.buf;
    for (Py_ssize_t i = 0; i < n; i++)
        s[i] = e[i] - (i ? e[i - 1] : 0);
    Py_BEGIN_ALLOW_THREADS
    reduce((const uint8_t *)key.buf, h, s, n, (uint64_t)mean, max);
    Py_END_ALLOW_THREADS
    out = PyBytes_FromStringAndSize((const char *)h, 32);
    PyMem_RawFree(h);
    PyMem_RawFree(s);
done:
    PyBuffer_Release(&key);
    PyBuffer_Release(&hashes);
    PyBuffer_Release(&ends);
    return out;
}

static PyMethodDef methods[] = {
    {"root", root, METH_VARARGS, "The Merkle root of hashes and their ends (see the file)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_merkle", "The Merkle root of XET hashes in C.", -1, methods,
};

PyMODINIT_FUNC
PyInit__merkle(void)
{
    return PyModule_Create(&module);
}
