"""One writer per result directory: a lock file beside the directory while it is written.

``compare`` and ``sweep`` hold ``.<name>.lock`` next to their output directory ``<name>``
(beside it, not in it, so replacing the directory keeps the lock). The lock is the
kernel's advisory lock on that file (``flock``), which ends with the process that holds
it however that process ends; the file also records the holder's pid, host and start,
for the message a second command gets. So a second command on the same directory refuses
in one line naming the holder, and the lock of a process that was killed is simply free:
a crash never blocks a resume. The holder removes the file when it is done (a file left
by a killed holder is taken over by the next command).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import time
from collections.abc import Iterator
from pathlib import Path

from geosim.errors import GeosimError


def lock_path(directory: str | os.PathLike) -> Path:
    """The lock file of a result directory."""
    path = Path(directory).absolute()
    return path.parent / f".{path.name}.lock"


@contextlib.contextmanager
def hold(directory: str | os.PathLike, command: str) -> Iterator[Path]:
    """Hold the lock of ``directory`` for the ``with`` block.

    Args:
        directory: The result directory about to be written.
        command: What writes it (``"compare"``, ``"sweep"``), for the message.

    Raises:
        GeosimError: Another live process holds the lock (naming its pid and since when).
    """
    lock = lock_path(directory)
    lock.parent.mkdir(parents=True, exist_ok=True)
    fd = _acquire(lock, directory)
    try:
        me = {"pid": os.getpid(), "host": socket.gethostname(), "command": command,
              "since": time.time()}
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(me).encode(), 0)
        yield lock
    finally:
        with contextlib.suppress(OSError):
            lock.unlink()           # while still holding it: a waiting taker retries
        os.close(fd)                # releases the lock


def _acquire(lock: Path, directory: str | os.PathLike) -> int:
    """Open and lock ``lock``; the locked file is the one at that path (not a removed one)."""
    while True:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            message = _held_by(fd)
            os.close(fd)
            raise GeosimError(message, source=str(directory)) from None
        try:
            same = os.stat(lock).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            same = False
        if same:
            return fd
        os.close(fd)                # the holder removed it as we opened it: try again


def _held_by(fd: int) -> str:
    """The message for a lock held by another process (what its file says of it)."""
    try:
        holder = json.loads(os.pread(fd, 4096, 0) or b"{}")
    except ValueError:
        holder = {}
    since = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(holder.get("since", 0))) \
        if holder.get("since") else "?"
    return (f"is being written by another geosim {holder.get('command', 'command')} (pid "
            f"{holder.get('pid', '?')} on {holder.get('host', '?')}, since {since}); wait for "
            "it to finish or use another output directory")
