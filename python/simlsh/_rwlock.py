"""The readers-writer lock every simlsh object holds (docs/python.md, "Threads").

ctypes releases the GIL during each library call, so without a lock two
Python threads could be inside the C library on one handle at once, and the
library allows that only for reads (include/simlsh.h, ``Threads:`` lines).
Each object therefore takes its lock around every call: shared for reads
(queries, saving, pickling), exclusive for writes (insert, remove, update,
clear, load into, merge into, set).

The lock prefers writers (a waiting writer holds back new readers, so a
stream of queries cannot starve an insert) and is reentrant per thread: a
thread that holds it, shared or exclusive, may take it again shared, so a
method may call another. Asking for the exclusive lock while holding only
the shared one would wait for itself; it raises RuntimeError instead.

Calls that touch several objects (``sig.update_shingles(s)`` writes the
signature and reads the shingle set) take their locks through :func:`hold`,
in one global order, so two threads never wait for each other in a cycle.
Signatures are copy-on-write (_core.Signature): reading one needs no lock,
so ``index.insert(key, sig)`` and ``index.query(sig)`` lock the index only.
"""

from __future__ import annotations

import threading
from typing import Any, Dict, Iterable, List, Optional, Tuple

_ident = threading.get_ident


class RWLock:
    """Shared/exclusive lock: writer-preferring, reentrant per thread."""

    __slots__ = ("_mu", "_cond", "_readers", "_writer", "_depth", "_waiting")

    def __init__(self) -> None:
        # Every object has one, so the uncontended path is kept to one plain
        # mutex; the condition variable is made on the first wait.
        self._mu = threading.Lock()
        self._cond: Optional[threading.Condition] = None
        self._readers: Dict[int, int] = {}  # thread id -> nesting depth
        self._writer: Optional[int] = None
        self._depth = 0  # nesting depth of the writer (its reads included)
        self._waiting = 0  # writers waiting

    # Made per use rather than stored: a stored one would point back at the
    # lock, and the cycle would leave every lock to the garbage collector.
    @property
    def read(self) -> "_Side":
        """``with lock.read:`` holds the shared side."""
        return _Side(self.acquire_read, self.release_read)

    @property
    def write(self) -> "_Side":
        """``with lock.write:`` holds the exclusive side."""
        return _Side(self.acquire_write, self.release_write)

    def _wait(self) -> None:
        if self._cond is None:
            self._cond = threading.Condition(self._mu)
        self._cond.wait()

    def _wake(self) -> None:
        if self._cond is not None:
            self._cond.notify_all()

    # The read side is the hot path (every query takes it, with the GIL
    # held): the uncontended case is one `with` on the mutex and one dict
    # update; anything else goes to the slow paths.
    def acquire_read(self) -> None:
        me = _ident()
        with self._mu:
            if self._writer is None and not self._waiting:
                readers = self._readers
                readers[me] = readers.get(me, 0) + 1
                return
            self._acquire_read_slow(me)

    def _acquire_read_slow(self, me: int) -> None:
        if self._writer == me:
            self._depth += 1
            return
        d = self._readers.get(me)
        if d:  # already reading: never wait for a writer that waits for us
            self._readers[me] = d + 1
            return
        while self._writer is not None or self._waiting:
            self._wait()
        self._readers[me] = 1

    def release_read(self) -> None:
        me = _ident()
        with self._mu:
            readers = self._readers
            d = readers.get(me)
            if d is None:  # a read inside this thread's write
                self._depth -= 1
            elif d > 1:
                readers[me] = d - 1
            else:
                del readers[me]
                if not readers and self._cond is not None:
                    self._cond.notify_all()

    def acquire_write(self) -> None:
        me = _ident()
        mu = self._mu
        mu.acquire()
        try:
            if self._writer == me:
                self._depth += 1
                return
            if me in self._readers:
                raise RuntimeError("simlsh: a write on an object this thread is reading "
                                   "(for example from a callback during a query)")
            self._waiting += 1
            try:
                while self._writer is not None or self._readers:
                    self._wait()
            finally:
                self._waiting -= 1
                if self._writer is None and not self._readers:
                    # a waiting writer gone (interrupted) may have been
                    # holding back readers
                    self._wake()
            self._writer = me
            self._depth = 1
        finally:
            mu.release()

    def release_write(self) -> None:
        mu = self._mu
        mu.acquire()
        try:
            self._depth -= 1
            if self._depth == 0:
                self._writer = None
                if self._cond is not None:
                    self._cond.notify_all()
        finally:
            mu.release()


class _Side:
    """``with lock.read:``: acquire and release one side of a lock."""

    __slots__ = ("_acquire", "_release")

    def __init__(self, acquire: Any, release: Any) -> None:
        self._acquire = acquire
        self._release = release

    def __enter__(self) -> None:
        self._acquire()

    def __exit__(self, *exc: Any) -> None:
        self._release()


class hold:
    """``with hold(write=[a], read=[b, c]):`` the locks of several objects
    (anything with a ``_lock``), taken in one global order (that of the
    locks' ids) and released in reverse. An object named twice is taken
    once, exclusively if it is in ``write``. None entries are skipped."""

    __slots__ = ("_plan",)

    def __init__(self, write: Iterable[Any] = (), read: Iterable[Any] = ()) -> None:
        plan: Dict[int, Tuple[RWLock, bool]] = {}
        for o in read:
            if o is not None:
                plan[id(o._lock)] = (o._lock, False)
        for o in write:
            if o is not None:
                plan[id(o._lock)] = (o._lock, True)
        self._plan: List[Tuple[RWLock, bool]] = [plan[k] for k in sorted(plan)]

    def __enter__(self) -> None:
        done: List[Tuple[RWLock, bool]] = []
        try:
            for lock, w in self._plan:
                if w:
                    lock.acquire_write()
                else:
                    lock.acquire_read()
                done.append((lock, w))
        except BaseException:
            for lock, w in reversed(done):
                if w:
                    lock.release_write()
                else:
                    lock.release_read()
            raise

    def __exit__(self, *exc: Any) -> None:
        for lock, w in reversed(self._plan):
            if w:
                lock.release_write()
            else:
                lock.release_read()
