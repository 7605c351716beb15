"""Running a command with stderr on a real pseudo-terminal (progress lines and bars draw only on one)."""

from __future__ import annotations

import fcntl
import os
import pty
import struct
import subprocess
import termios
import threading
from pathlib import Path


def run_on_a_terminal(argv: list[str], cwd: Path) -> tuple[int, bytes, bytes]:
    """(exit code, stdout, stderr) with stderr on a 100x30 pseudo-terminal and stdout a pipe.

    The size matters: tqdm draws nothing on a terminal 0 columns wide.
    """
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
    proc = subprocess.Popen(argv, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=slave)
    os.close(slave)
    seen = bytearray()

    def drain() -> None:
        while True:
            try:
                data = os.read(master, 4096)
            except OSError:  # EIO: the other side is closed
                return
            if not data:
                return
            seen.extend(data)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    out, _ = proc.communicate(timeout=120)
    reader.join(timeout=10)
    os.close(master)
    return proc.returncode, out, bytes(seen)
