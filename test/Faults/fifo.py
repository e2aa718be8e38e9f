"""FIFOs with a process at the other end, for cases that name a FIFO as an
input or an output. A FIFO with nobody at the other end blocks whoever
opens it, as it does for any Unix tool (`cat fifo`); what the suite asks is
that a tool given a FIFO with a peer either streams it or refuses it, and
never replaces it with a regular file."""
import os
import subprocess


class FifoPeer:
    """`cat` at the other end of `path`: reading from it (an output FIFO)
    or writing `source` into it (an input FIFO). stop() ends it, whether
    or not the tool ever opened the FIFO."""

    def __init__(self, path, source=None):
        self.path = path
        self.source = source
        self.proc = None

    def start(self):
        if not os.path.exists(self.path):
            os.mkfifo(self.path)
        if self.source is None:
            cmd = 'exec cat "$1" > /dev/null'
        else:
            cmd = 'exec cat "$2" > "$1"'
        self.proc = subprocess.Popen(
            ["sh", "-c", cmd, "fifo-peer", self.path, self.source or ""],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
        if self.proc:
            self.proc.wait()
