/* The hot loop of the W&B run file reader (steptable/ingest/readers/wandb.py), in C: walk the file's chunks (the
 * parts of a record split over blocks joined), check each one's CRC-32, pass over the record kinds no row comes
 * from, and write each history record of the usual layout as one JSON object line. Anything else (a bad checksum or
 * header, a record not all in the bytes yet, any other record kind or layout) stops the walk at that chunk for the
 * Python reader, which reads and reports it as it reads every chunk without this module. So this module only ever
 * takes work off the Python reader: the rows it writes are the ones the Python reader writes for the same records
 * (tests/ingest/readers/test_wandbwalk.py).
 *
 * Optional: built where a C compiler is (setuptools' optional extension); the reader runs without it. Its parts:
 * crc32.c (the chunk checksum), ranks.c (the keys' order), line.c (a record as a line); here the framing and the
 * Python type. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "crc32.h"
#include "line.h"
#include "wire.h"

#define BLOCK 32768
#define CHUNK_HEADER 7
#define FULL 1
#define FIRST 2
#define MIDDLE 3
#define LAST 4

/* why a walk stopped: at a chunk the Python reader must read; at the end of the bytes (a chunk not all there);
 * with its budget of rows or bytes spent and bytes left */
enum { AT_CHUNK = 0, AT_END = 1, AT_BUDGET = 2 };

typedef struct {
    PyObject_HEAD
    Lines lines;  /* the keys' ranks, one record's items */
    unsigned char *joined;  /* one record's parts joined (FIRST, MIDDLE..., LAST) */
    size_t joined_cap;
    int busy;
} Walker;

/* the chunk header at data[*at] (file offset base + *at), *at moved past a block's zero tail first where the bytes
 * hold it: its kind, data and length in *kind, *rec, *length, and where the chunk after it starts; -1 when the bytes
 * end first, -2 for a header or checksum the Python reader must report */
static Py_ssize_t chunk(const unsigned char *data, Py_ssize_t n, Py_ssize_t *at, Py_ssize_t base, int *kind,
                        const unsigned char **rec, Py_ssize_t *length) {
    Py_ssize_t i = *at, left = BLOCK - (base + i) % BLOCK;
    if (left < CHUNK_HEADER) {  /* a block's tail too short for a chunk header: zero padding */
        if (n - i < left)
            return -1;
        *at = i += left;
        left = BLOCK;
    }
    if (n - i < CHUNK_HEADER)
        return -1;
    const unsigned char *h = data + i;
    *length = (Py_ssize_t)h[4] | ((Py_ssize_t)h[5] << 8);
    *kind = h[6];
    if (*kind < FULL || *kind > LAST || *length > left - CHUNK_HEADER)
        return -2;
    if (*length > n - i - CHUNK_HEADER)
        return -1;
    *rec = h + CHUNK_HEADER;
    unsigned char type = (unsigned char)*kind;
    if (ww_crc32(ww_crc32(0, &type, 1), *rec, (size_t)*length) != le32(h))
        return -2;
    return i + CHUNK_HEADER + *length;
}

/* the record whose FIRST part starts at data[i]: its parts joined in w->joined (*rec, *length); the offset after its
 * LAST part, -1 when the bytes end first, -2 for anything the Python reader must read (a part out of order, a bad
 * checksum, no memory) */
static Py_ssize_t joined(Walker *w, const unsigned char *data, Py_ssize_t n, Py_ssize_t i, Py_ssize_t base,
                         const unsigned char **rec, Py_ssize_t *length) {
    size_t size = 0;
    for (int first = 1;; first = 0) {
        int kind;
        const unsigned char *part;
        Py_ssize_t len, next = chunk(data, n, &i, base, &kind, &part, &len);
        if (next < 0)
            return next;
        if (kind != (first ? FIRST : kind == LAST ? LAST : MIDDLE))
            return -2;
        if (size + (size_t)len > w->joined_cap) {
            size_t cap = w->joined_cap ? w->joined_cap : BLOCK;
            while (cap < size + (size_t)len)
                cap *= 2;
            unsigned char *grown = realloc(w->joined, cap);
            if (grown == NULL)
                return -2;
            w->joined = grown;
            w->joined_cap = cap;
        }
        if (len > 0) {  /* (a FIRST part may be empty: a header in a block's last 7 bytes; joined is NULL yet) */
            memcpy(w->joined + size, part, (size_t)len);
            size += (size_t)len;
        }
        i = next;
        if (kind == LAST)
            break;
    }
    *rec = w->joined;
    *length = (Py_ssize_t)size;
    return i;
}

PyDoc_STRVAR(walk_doc,
"walk(data, i, base, max_rows, max_bytes) -> (i, lines, rows, why)\n\n"
"Walk the chunks of a W&B run file's bytes ``data`` from index ``i`` (file offset ``base + i``, the start of a chunk\n"
"or of a block's zero tail; no part of a record read before it): history records of the usual layout become\n"
"``lines`` (JSON object lines joined by newlines, none at the end; ``rows`` of them), records no row comes from are\n"
"passed over. Stops (``i``: where) at a chunk the Python reader must read (``why`` 0), at the end of ``data`` or a\n"
"record not all in it (1), or once ``max_rows`` rows or ``max_bytes`` bytes of lines are written with bytes left\n"
"(2). The keys of each line come in the order given to :meth:`order`, or in the record's order where it holds a\n"
"key not given (one walker per file).");

static PyObject *Walker_walk(Walker *w, PyObject *args) {
    Py_buffer view;
    Py_ssize_t i, base, max_rows, max_bytes;
    if (!PyArg_ParseTuple(args, "y*nnnn", &view, &i, &base, &max_rows, &max_bytes))
        return NULL;
    const unsigned char *data = view.buf;
    Py_ssize_t n = view.len;
    if (i < 0 || i > n || base < 0 || w->busy) {
        PyBuffer_Release(&view);
        PyErr_SetString(w->busy ? PyExc_RuntimeError : PyExc_ValueError,
                        w->busy ? "walk: already walking" : "walk: i out of range");
        return NULL;
    }
    /* a line is never longer than its record (+2: the record's tags take more); the walk stops once max_bytes are
     * written, and takes a record only where its line fits */
    Py_ssize_t room = n - i + 2;
    if (max_bytes >= 0 && max_bytes < room - BLOCK - 2)
        room = max_bytes + BLOCK + 2;
    PyObject *lines = PyBytes_FromStringAndSize(NULL, room);
    if (lines == NULL) {
        PyBuffer_Release(&view);
        return NULL;
    }
    char *out = PyBytes_AS_STRING(lines);
    Py_ssize_t used = 0, rows = 0;
    int why = AT_CHUNK;
    w->busy = 1;
    Py_BEGIN_ALLOW_THREADS
    for (;;) {
        int kind;
        const unsigned char *rec;
        Py_ssize_t length, next = chunk(data, n, &i, base, &kind, &rec, &length);  /* (i: past a zero tail) */
        if (next >= 0 && kind == FIRST) {
            next = joined(w, data, n, i, base, &rec, &length);
            if (next == -1)
                next = -2;  /* (a record not all here yet: the Python reader holds its first parts meanwhile) */
        } else if (next >= 0 && kind != FULL)
            next = -2;
        if (next < 0) {
            why = next == -1 ? AT_END : AT_CHUNK;
            break;
        }
        /* Record.num (a varint) first, then the tag of the record's kind (as the Python reader finds it) */
        if (length < 3 || rec[0] != 0x08)
            break;
        Py_ssize_t j = 1;
        while (j < length && rec[j] > 0x7f && j < 11)
            j++;
        if (j + 1 >= length)
            break;
        unsigned char tag = rec[j + 1];
        /* summary, output, stats...: no row. A metric record (12, define_metric's) tells the Python reader which
         * step the rows are keyed by: left to it, as are the few of them a run writes */
        if ((tag & 7) == 2 && (tag >> 3) >= 3 && (tag >> 3) <= 13 && (tag >> 3) != 12) {
            i = next;
            continue;
        }
        if (tag != 0x12)
            break;
        uint64_t hlen;
        const unsigned char *hist = varint(rec + j + 2, rec + length, &hlen);
        if (hist == NULL || hlen > (uint64_t)(rec + length - hist) || (Py_ssize_t)hlen + 2 > room - used)
            break;
        size_t wrote = ww_history_line(&w->lines, hist, hist + hlen, out + used);
        if (wrote == 0)
            break;
        used += (Py_ssize_t)wrote;
        rows++;
        i = next;
        if ((rows >= max_rows || used >= max_bytes) && i < n) {
            why = AT_BUDGET;
            break;
        }
    }
    Py_END_ALLOW_THREADS
    w->busy = 0;
    PyBuffer_Release(&view);
    if (used > 0)
        used--;  /* (no newline after the last line) */
    if (_PyBytes_Resize(&lines, used) < 0)
        return NULL;
    return Py_BuildValue("nNni", i, lines, rows, why);
}

PyDoc_STRVAR(order_doc,
"order(keys)\n\n"
"Rank ``keys`` (a list of bytes: keys the rows have shown), in their order: the lines of the next walks write them\n"
"in it (the order a JSON decoder of the rows reads fastest); a line holding another key comes in its record's order.");

static PyObject *Walker_order(Walker *w, PyObject *keys) {
    if (w->busy) {
        PyErr_SetString(PyExc_RuntimeError, "order: walking");
        return NULL;
    }
    PyObject *seq = PySequence_Fast(keys, "order: a list of bytes");
    if (seq == NULL)
        return NULL;
    ww_forget(&w->lines.ranks);
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    for (Py_ssize_t k = 0; k < n; k++) {
        char *key;
        Py_ssize_t len;
        if (PyBytes_AsStringAndSize(PySequence_Fast_GET_ITEM(seq, k), &key, &len) < 0) {
            Py_DECREF(seq);
            return NULL;
        }
        if (ww_rank(&w->lines.ranks, (const unsigned char *)key, (size_t)len) == UINT32_MAX) {
            if (w->lines.ranks.count >= MAX_KEYS)
                break;  /* (the rest are ranked as they are seen: past MAX_KEYS, none is) */
            Py_DECREF(seq);
            return PyErr_NoMemory();
        }
    }
    Py_DECREF(seq);
    w->lines.confirmed = (uint32_t)w->lines.ranks.count;
    Py_RETURN_NONE;
}

static void Walker_dealloc(Walker *w) {
    ww_lines_free(&w->lines);
    free(w->joined);
    Py_TYPE(w)->tp_free((PyObject *)w);
}

static PyMethodDef Walker_methods[] = {
    {"walk", (PyCFunction)Walker_walk, METH_VARARGS, walk_doc},
    {"order", (PyCFunction)Walker_order, METH_O, order_doc},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject WalkerType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "steptable.ingest.readers._wandbwalk.Walker",
    .tp_doc = PyDoc_STR("Walker(): one W&B run file's chunk walk, with its keys' ranks (see order)."),
    .tp_basicsize = sizeof(Walker),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_dealloc = (destructor)Walker_dealloc,
    .tp_methods = Walker_methods,
};

PyDoc_STRVAR(crc32_doc, "crc32(data, value=0) -> int\n\nzlib.crc32's CRC-32 of ``data``, continuing from ``value``.");

static PyObject *crc32(PyObject *self, PyObject *args) {
    Py_buffer view;
    unsigned int value = 0;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*|I", &view, &value))
        return NULL;
    uint32_t c = ww_crc32(value, view.buf, (size_t)view.len);
    PyBuffer_Release(&view);
    return PyLong_FromUnsignedLong(c);
}

static PyMethodDef methods[] = {
    {"crc32", crc32, METH_VARARGS, crc32_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_wandbwalk",
    "The W&B run file reader's chunk walk in C (steptable.ingest.readers.wandb).", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__wandbwalk(void) {
    ww_crc32_init();
    if (PyType_Ready(&WalkerType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    Py_INCREF(&WalkerType);
    if (PyModule_AddObject(m, "Walker", (PyObject *)&WalkerType) < 0) {
        Py_DECREF(&WalkerType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
