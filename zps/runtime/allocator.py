"""Keep large freed buffers in the heap so the next one of the same size costs no page faults.

glibc serves blocks above its mmap threshold (128 KB, adapting up to 32 MB) with fresh mappings
and unmaps them on free, so every large temporary (a received 64 MB tensor, an MLP activation)
is page-faulted in again on each step. Raising the mmap and trim thresholds keeps freed blocks for
reuse: an allocate-and-fill of 64 MB drops from ~17 ms to ~10 ms on the 2-core reference machine.
The cost is that the process keeps its peak heap (RSS does not shrink after a peak; but see
:func:`trim` below for one-off peaks).

The thresholds alone only help the main thread: glibc gives other threads arenas of their own,
made of heaps of at most 64 MB, so a 64 MB block allocated on such a thread (the transport's I/O
thread receives tensors into fresh arrays) never fits one and is mmap'd (and page-faulted) anew
each time whatever the thresholds say. One arena for the whole process (M_ARENA_MAX = 1) serves
every thread from the main heap, where freed blocks are reused; its lock is uncontended in
practice, as Python threads allocate under the GIL. Threads that already allocated keep their
arenas, so this must run early (zps runs it at import).

A one-off peak (a variable's initializer, a restore) would then stay resident for the life of
the process, so after a plan's first run :func:`trim` gives the heap's free pages back
(``malloc_trim``) if the heap grew by more than ``TRIM_GROWTH_BYTES`` since the last trim (the
heap's end, ``sbrk(0)``, costs ~1 us to read; a trim 4-60 ms): the heap then grows to the steady
state of the steps that follow and keeps that.

Set ZPS_MALLOC_TUNING=0 to leave the allocator alone.
"""

import ctypes
import ctypes.util
import os

_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
_M_ARENA_MAX = -8
ARENA_MAX = 1
MMAP_THRESHOLD_BYTES = 1 << 30
TRIM_THRESHOLD_BYTES = 1 << 31
TRIM_GROWTH_BYTES = 64 << 20

_tuned = None
_malloc_trim = None
_sbrk = None
_trimmed_at = 0   # the heap's end after the last trim


def tune():
    """Apply the tuning once per process; returns True if the allocator was tuned."""
    global _tuned
    if _tuned is not None:
        return _tuned
    _tuned = False
    if os.environ.get("ZPS_MALLOC_TUNING", "1") == "0":
        return False
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False  # not glibc (musl, macOS): nothing to tune
    _tuned = bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES)) and \
        bool(mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES)) and \
        bool(mallopt(_M_ARENA_MAX, ARENA_MAX))
    if _tuned:
        global _malloc_trim, _sbrk, _trimmed_at
        _malloc_trim, _sbrk = libc.malloc_trim, libc.sbrk
        _malloc_trim.argtypes, _sbrk.argtypes = (ctypes.c_size_t,), (ctypes.c_ssize_t,)
        _sbrk.restype = ctypes.c_void_p
        _trimmed_at = _sbrk(0) or 0
    return _tuned


def trim():
    """Return the heap's free pages to the system if the heap grew by ``TRIM_GROWTH_BYTES``
    since the last trim. A no-op unless :func:`tune` tuned the allocator."""
    global _trimmed_at
    if _malloc_trim is None:
        return
    if (_sbrk(0) or 0) - _trimmed_at > TRIM_GROWTH_BYTES:
        _malloc_trim(0)
        _trimmed_at = _sbrk(0) or 0
