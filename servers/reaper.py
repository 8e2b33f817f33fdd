"""The reaper: a small process that outlives a killed harness just long enough to kill its servers.

Why: a harness killed with SIGKILL (or by the out-of-memory killer) runs no ``atexit``, no ``finally``
and no signal handler. Each server leader gets ``PR_SET_PDEATHSIG`` = SIGKILL, so the kernel kills the
leader when the harness dies, but that signal is not inherited across ``fork``: the leader's workers,
and any double-forked daemon, would live on. The reaper kills them.

How: the first server a harness process starts also starts one reaper (``servers.reaper.main`` in a new Python,
in its own session so the terminal's Ctrl-C does not reach it). The harness keeps the write end of a
pipe and tells the reaper, one line per event, ``+ TOKEN`` (a server is starting; its processes
carry ``GATECHECK_SERVER_TOKEN=TOKEN``) and ``- TOKEN`` (it was stopped normally); ``@ PATH`` names a temporary
folder to remove after the harness is gone unless ``# PATH`` says it was removed; ``! ID {json}`` asks for a
command to run once the harness is gone unless ``~ ID`` cancels it first (the conformance session uses this to
finish its results files when it is killed before it can: :func:`after_death`). When the pipe reaches end of file (the
harness exited, however it died) or the reaper's parent changes, the reaper SIGKILLs every process that carries a token
still open and was created after the harness, checking each one's create time just before the signal, and exits. (Create
times are only compared with others read by the same process: psutil derives them from a boot time that moves with the
wall clock, so ``time.time()`` is not comparable with them.) A harness that exits normally has no open token, so its
reaper just exits. After the kills, the reaper runs the commands still registered (each with a deadline), removes the
folders still named, then exits.

Limits: a server process that clears its environment is invisible to the reaper (the harness itself
also finds such a process by its recorded PID and create time, or as the listener on the server's
port); a reaper killed with SIGKILL itself reaps nothing (then only PDEATHSIG of the leader remains);
a child forked (not exec'd) by the harness inherits the pipe's write end, which delays the end of file
until it exits too; the parent check covers that case.
"""

from __future__ import annotations

import atexit
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import threading

import psutil

from .tree import kill_if_ours, token_bearers, wait_gone

__all__ = ["watch", "forget", "after_death", "cancel", "remove_after_death", "removed"]

_ENTRY = "import sys; from gatecheck.servers.reaper import main; sys.exit(main(sys.argv[1:]))"
_lock = threading.Lock()
_pipe: dict = {}  # harness pid -> (write fd, reaper Popen): a forked harness starts its own


def _writer() -> int | None:
    """The write end of this process's reaper pipe, starting the reaper on first use."""
    me = os.getpid()
    if me in _pipe:
        return _pipe[me][0]
    read_fd, write_fd = os.pipe()
    # The reaper is the harness's own interpreter and sees what the harness sees (it imports gatecheck.servers
    # and psutil; in a checkout gatecheck is importable through IMPORT_ROOT); it runs in "/", holding no
    # directory of ours.
    from gatecheck import IMPORT_ROOT as root

    env = {**os.environ, "PYTHONPATH": os.pathsep.join([root] + [p for p in [os.environ.get("PYTHONPATH")] if p])}
    try:
        proc = subprocess.Popen(
            [sys.executable, "-c", _ENTRY, str(read_fd), str(me)],
            pass_fds=(read_fd,),
            start_new_session=True,
            cwd="/",
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
        )
    except OSError:  # pragma: no cover - the harness still stops its servers itself
        os.close(write_fd)
        return None
    finally:
        os.close(read_fd)
    _pipe[me] = (write_fd, proc)
    return write_fd


def _send(line: str) -> None:
    with _lock:
        fd = _writer()
        if fd is None:
            return
        try:
            os.write(fd, (line + "\n").encode())
        except OSError:  # pragma: no cover - the reaper died; the harness still stops its servers
            pass


def watch(token: str) -> None:
    """Ask the reaper to kill every process carrying ``token`` if this process dies first."""
    _send(f"+ {token}")


def forget(token: str) -> None:
    """The server with ``token`` was stopped: nothing for the reaper to do about it."""
    _send(f"- {token}")


def after_death(job: str, argv: list, env: dict | None = None, cwd: str | None = None) -> None:
    """Run ``argv`` (with ``env`` added to the reaper's environment) after this process dies, unless
    :func:`cancel` withdraws ``job`` first. ``job`` is one word; the command gets 60 s."""
    _send(f"! {job} " + json.dumps({"argv": list(argv), "env": dict(env or {}), "cwd": cwd}))


def cancel(job: str) -> None:
    """Withdraw a command registered with :func:`after_death` (its work was done normally)."""
    _send(f"~ {job}")


def remove_after_death(path: str) -> None:
    """Remove the folder ``path`` (a temporary one of this process) after this process dies, unless
    :func:`removed` says it was removed normally first."""
    _send(f"@ {os.path.abspath(path)}")


def removed(path: str) -> None:
    """The folder ``path`` was removed by its owner: nothing for the reaper to do about it."""
    _send(f"# {os.path.abspath(path)}")


def _close() -> None:
    """At a normal exit (after ``stop_all``): close our end; the reaper sees end of file and exits."""
    entry = _pipe.pop(os.getpid(), None)
    if entry is None:
        return
    write_fd, proc = entry
    os.close(write_fd)
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:  # pragma: no cover - it is still killing; leave it to finish
        pass


atexit.register(_close)  # registered before process.py registers stop_all, so it runs after it


# -- the reaper process ----------------------------------------------------------------------------


def _read_until_orphaned(read_fd: int, harness: int) -> tuple:
    """Follow the harness's lines until its end of the pipe closes; return the tokens still open, the
    commands still registered (id -> command) and the folders still to remove."""
    open_tokens: set = set()
    jobs: dict = {"": set()}  # "": the folders
    pending = b""
    while True:  # what the harness wrote is read to its end even if it died before we got here
        ready, _, _ = select.select([read_fd], [], [], 0.5)
        if not ready:
            if os.getppid() != harness:  # orphaned, yet someone else holds the pipe open
                break
            continue
        chunk = os.read(read_fd, 65536)
        if not chunk:
            break
        pending += chunk
        *lines, pending = pending.split(b"\n")
        for line in lines:
            _follow(line.decode("utf-8", "replace"), open_tokens, jobs)
    folders = jobs.pop("")
    return open_tokens, jobs, folders


def _follow(line: str, open_tokens: set, jobs: dict) -> None:
    parts = line.split(" ", 2)
    if len(parts) == 2 and parts[0] == "+":
        open_tokens.add(parts[1])
    elif len(parts) == 2 and parts[0] == "-":
        open_tokens.discard(parts[1])
    elif len(parts) == 3 and parts[0] == "!":
        try:
            jobs[parts[1]] = json.loads(parts[2])
        except ValueError:
            pass
    elif len(parts) == 2 and parts[0] == "~":
        jobs.pop(parts[1], None)
    elif parts[0] in ("@", "#") and len(parts) > 1:  # a folder path may hold spaces
        path = line[2:]
        (jobs[""].add if parts[0] == "@" else jobs[""].discard)(path)


def run_jobs(jobs: dict, timeout: float = 60.0) -> None:
    """Run each registered command in turn; a failing or hanging one does not stop the others."""
    for job in jobs.values():
        try:
            subprocess.run(
                job["argv"],
                env={**os.environ, **job.get("env", {})},
                cwd=job.get("cwd"),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                timeout=timeout,
                check=False,
            )
        except (OSError, subprocess.SubprocessError, KeyError, TypeError):
            continue


def reap(open_tokens: set, since: float, rounds: int = 5) -> None:
    """SIGKILL every process carrying one of ``open_tokens`` and created at or after ``since`` (in
    psutil's create-time clock, as read by this process), until none is left."""
    for _ in range(rounds):
        targets: dict = {}
        for token in open_tokens:
            targets.update(token_bearers(token, since))
        if not targets:
            return
        for pid, created in targets.items():
            kill_if_ours(pid, created)
        wait_gone(targets, timeout=2.0)


def main(argv: list) -> int:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    read_fd, harness = int(argv[0]), int(argv[1])
    try:  # every token bearer was created after the harness; create times are compared in one clock
        since = psutil.Process(harness).create_time()
    except psutil.Error:
        since = 0.0
    open_tokens, jobs, folders = _read_until_orphaned(read_fd, harness)
    reap(open_tokens, since)
    run_jobs(jobs)
    for path in sorted(folders):  # after the jobs: a job may read what is in them
        shutil.rmtree(path, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
