"""dvm commands through one `dvm batch` process (docs/cli.md, "batch"), for the harnesses'
--batch option: a device is opened once per process instead of once per command (on
lavapipe that is about a second of pipeline building per command).

Batch.call(args, cwd, timeout) gives what subprocess.run([dvm] + args, cwd=cwd, text=True,
capture_output=True, timeout=timeout) gives: (exit status, stdout, stderr), the same text,
subprocess.TimeoutExpired after the timeout. A command that ends the batch process (a
crash) gets the process's status (negative: a signal) and, as its message, what the same
command prints when run alone. Batch.close() ends the process and returns a list of
problems: the process must exit with the highest status of its commands, so that what
ends it badly (a leak report of LeakSanitizer at exit) is a failure of the test."""
import locale
import os
import re
import select
import shlex
import signal
import subprocess
import time

HEAD = re.compile(rb'dvm batch: line (\d+): exit (\d+), stdout (\d+) bytes, stderr (\d+) bytes\n')


def text(data):
    """Bytes as subprocess.run(text=True) decodes them (locale encoding, universal newlines)."""
    return data.decode(locale.getpreferredencoding(False)).replace('\r\n', '\n').replace('\r', '\n')


def status_text(rc):
    if rc < 0:
        try:
            return f'signal {signal.Signals(-rc).name}'
        except ValueError:
            return f'signal {-rc}'
    return f'exit status {rc}'


class Batch:
    def __init__(self, dvm):
        self.dvm = dvm
        self.p = None
        self.problems = []
        self.commands = 0  # run through batch processes, in all

    def _start(self):
        self.p = subprocess.Popen([self.dvm, 'batch'], stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
        self.cwd, self.line, self.buf, self.worst = None, 0, b'', 0

    def _kill(self):
        self.p.kill()
        self.p.wait()
        self.p.stdin.close()
        self.p.stdout.close()
        self.p = None

    def _fill(self, enough, deadline, args):
        """Reads until enough(buffer) or the end of file (False); TimeoutExpired at the deadline."""
        while not enough(self.buf):
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.p.stdout], [], [], left)[0]:
                raise subprocess.TimeoutExpired([self.dvm] + args, deadline)
            chunk = os.read(self.p.stdout.fileno(), 65536)
            if not chunk:
                return False
            self.buf += chunk
        return True

    def _one(self, args, deadline, timeout):
        if not args or any('\n' in a for a in args):
            raise ValueError(f'no batch line holds an empty command or a newline: {args!r}')
        self.line += 1
        try:
            self.p.stdin.write((' '.join(shlex.quote(a) for a in args) + '\n').encode())
            self.p.stdin.flush()
        except BrokenPipeError:
            pass  # it ended: the read below finds the end of file
        m, body = None, b''
        try:
            if self._fill(lambda b: b'\n' in b, deadline, args):
                head, self.buf = self.buf.split(b'\n', 1)
                head += b'\n'
                m = HEAD.fullmatch(head)
                n = int(m.group(3)) + int(m.group(4)) if m else 0
                if m and self._fill(lambda b: len(b) >= n, deadline, args):
                    body, self.buf = self.buf[:n], self.buf[n:]
                else:
                    m = None  # the end of file within the record
            else:
                head = self.buf
        except subprocess.TimeoutExpired:
            self._kill()
            raise subprocess.TimeoutExpired([self.dvm] + args, timeout) from None
        if not m or int(m.group(1)) != self.line:
            return self._died(args, head, deadline)
        rc, no = int(m.group(2)), int(m.group(3))
        self.worst = max(self.worst, rc)
        self.commands += args[0] != 'cd'
        return rc, text(body[:no]), text(body[no:])

    def _died(self, args, head, deadline):
        """The process ended (or wrote what is not a record) during args: its status, and the
        message of the same command run alone (the batch's own stderr went to ours)."""
        try:
            self.p.wait(timeout=max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            pass
        rc = self.p.returncode if self.p.returncode is not None else -signal.SIGKILL
        if self.p.returncode is None:
            self.p.kill()
            self.p.wait()
        cwd = self.cwd
        self.p.stdin.close()
        self.p.stdout.close()
        self.p = None
        if rc == 0:  # a clean exit without the record is a broken protocol: a failure too
            rc = -1
        if args[0] == 'cd':
            return rc, '', f'dvm batch ended with {status_text(rc)} during `cd {args[1]}`\n'
        try:
            alone = subprocess.run([self.dvm] + args, cwd=cwd, capture_output=True, text=True,
                                   timeout=max(1.0, deadline - time.monotonic()))
            again = f'run alone it exited {alone.returncode}: {(alone.stderr + alone.stdout).strip()}'
        except subprocess.TimeoutExpired:
            again = 'run alone it timed out'
        note = f' (it wrote {head[:200]!r} instead of a record)' if head else ''
        return rc, '', f'dvm batch ended with {status_text(rc)} during this command{note}; {again}\n'

    def call(self, args, cwd, timeout):
        deadline = time.monotonic() + timeout
        if self.p is None:
            self._start()
        cwd = os.path.abspath(cwd)
        if cwd != self.cwd:
            rc, so, se = self._one(['cd', cwd], deadline, timeout)
            if rc != 0:
                return rc, so, se
            self.cwd = cwd
        return self._one(args, deadline, timeout)

    def close(self):
        """Ends the process; returns the problems found (an empty list: none)."""
        if self.p is not None:
            p, worst = self.p, self.worst
            p.stdin.close()
            try:
                rest = p.stdout.read()
                rc = p.wait(timeout=120)
            except subprocess.TimeoutExpired:
                self._kill()
                self.problems.append('dvm batch did not end within 120 s of its input closing')
                return self.problems
            p.stdout.close()
            self.p = None
            if rest:
                self.problems.append(f'dvm batch wrote {rest[:200]!r} after its last record')
            if rc != worst:
                self.problems.append(f'dvm batch ended with {status_text(rc)} after its last command, expected '
                                     f'exit status {worst} (the highest of its commands): see its stderr above')
        return self.problems


class Dvm:
    """Runs dvm commands, each in a process of its own or (batch=True) through one Batch;
    run() returns a subprocess.CompletedProcess (text stdout and stderr) either way."""

    def __init__(self, dvm, batch=False):
        self.dvm, self.batch = dvm, Batch(dvm) if batch else None

    def run(self, args, cwd=None, timeout=120):
        if self.batch is None:
            return subprocess.run([self.dvm] + args, cwd=cwd, capture_output=True, text=True, timeout=timeout)
        rc, so, se = self.batch.call(args, cwd or os.getcwd(), timeout)
        return subprocess.CompletedProcess([self.dvm] + args, rc, so, se)

    def serve(self, label, fn):
        """Runs fn(self), then close(label): fn's status, or 1 when the batch had problems."""
        try:
            rc = fn(self)
        finally:
            bad = self.close(label)
        return 1 if bad else rc

    def close(self, label):
        """Ends the batch process: 0, or 1 after printing its problems (FAIL lines)."""
        if self.batch is None:
            return 0
        problems = self.batch.close()
        print(f'{label}: {self.batch.commands} commands through dvm batch')
        for e in problems:
            print(f'FAIL {label}: {e}')
        return 1 if problems else 0
