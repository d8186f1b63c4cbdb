/*
 * kgtool.lag._kernel: the lag phase's loops in C (the kernel itself is _lag.h).
 *
 * Every function has a pure-Python twin that the tests hold equal (tests/lag/test_lag_kernel.py,
 * tests/lag/test_lag_owners.py): kgtool.lag.timeline (lag_rows, lag_runs) and kgtool.lag.collector
 * (lag_pick, lag_pick_steps, lag_scatter, lag_unsteps, lag_classic, lag_steps16, lag_members).
 * Optional: without it, or with KGTOOL_PURE_PYTHON, the Python twins run.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "_lag.h"

static PyMethodDef methods[] = {
    {"lag_rows", py_lag_rows, METH_VARARGS, "The lag rows and Burrow statuses of one data partition's sequences."},
    {"lag_runs", py_lag_runs, METH_VARARGS, "The episodes and peaks of one data partition's lag rows."},
    {"lag_scatter", py_lag_scatter, METH_VARARGS, "A counting sort's second pass over lag inputs."},
    {"lag_pick", py_lag_pick, METH_VARARGS, "The lag inputs of one chunk of commits."},
    {"lag_pick_steps", py_lag_pick_steps, METH_VARARGS, "The lag inputs of one chunk of commits, as steps."},
    {"lag_classic", py_lag_classic, METH_VARARGS, "The changes of owner of classic groups' partitions."},
    {"lag_steps16", py_lag_steps16, METH_VARARGS, "The lag inputs' 16-bit steps of each group's commits."},
    {"lag_members", py_lag_members, METH_VARARGS, "The lag owners' flat columns of members-table rows."},
    {"lag_unsteps", py_lag_unsteps, METH_VARARGS, "lag_scatter's pass over a chunk kept as steps."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef moddef = {PyModuleDef_HEAD_INIT, "_kernel", "kgtool lag kernel", -1, methods};

PyMODINIT_FUNC PyInit__kernel(void) { return PyModule_Create(&moddef); }
