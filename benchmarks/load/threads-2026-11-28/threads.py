"""Per-thread CPU of a Granian server under oha: where each request's CPU goes (Python thread vs Rust threads).

Usage: python threads.py ROUNDS [SET] [PYTHON]  (run from /work/main; server pinned to CPU 0, oha to CPU 1, as the
load runner pins). SET: interfaces (default), event_loops, echo (RSGI/WSGI echo 1KB and the three 100KB iterated
echo rows) or get (RSGI and WSGI get 1KB); PYTHON: the server's interpreter, or several
separated by commas, run in turn within each round (default the tox env's 3.11).
Prints one JSON line per run: label, RPS, the CPU microseconds per request per thread name (``us_per_req``: a
name can be several threads) and of the busiest single threads (``threads``); a run without a number is a line
with its ``error``.
"""
import json, os, signal, subprocess, sys, time, urllib.request
from pathlib import Path

import psutil

from gatecheck.servers.tree import descendants

OHA = str(next(Path.home().joinpath(".cache/gatecheck/oha-1.16.0").rglob("oha")))
PYTHONS = sys.argv[3].split(",") if len(sys.argv) > 3 else ["/work/main/.tox/granian/bin/python"]
TICK = os.sysconf("SC_CLK_TCK")
SETS = {"interfaces": [
    ("RSGI get 1KB", "granian:rsgi:h1?loop=uvloop&runtime-blocking-threads=1&ws=off", "b1k", 128, None),
    ("ASGI get 1KB", "granian:asgi:h1?loop=uvloop&runtime-blocking-threads=1&ws=off", "b1k", 128, None),
    ("WSGI get 1KB", "granian:wsgi:h1?blocking-threads=1&ws=off", "b1k", 64, None),
    ("RSGI echo 1KB", "granian:rsgi:h1?loop=uvloop&runtime-blocking-threads=1&ws=off", "echo", 128, 1024),
    ("ASGI echo 1KB", "granian:asgi:h1?loop=uvloop&runtime-blocking-threads=1&ws=off", "echo", 128, 1024),
], "event_loops": [
    ("ASGI asyncio get 10KB", "granian:asgi:h1?loop=asyncio&ws=off", "b10k", 128, None),
    ("RSGI asyncio get 10KB", "granian:rsgi:h1?loop=asyncio&ws=off", "b10k", 128, None),
    ("ASGI uvloop get 10KB", "granian:asgi:h1?loop=uvloop&ws=off", "b10k", 128, None),
    ("RSGI uvloop get 10KB", "granian:rsgi:h1?loop=uvloop&ws=off", "b10k", 128, None),
], "echo": [
    ("RSGI echo 1KB", "granian:rsgi:h1?loop=uvloop&runtime-blocking-threads=1&ws=off", "echo", 128, 1024),
    ("WSGI echo 1KB", "granian:wsgi:h1?blocking-threads=1&ws=off", "echo", 64, 1024),
    ("RSGI echo 100KB (iter)", "granian:rsgi:h1?loop=uvloop&ws=off", "echo_iter", 64, 102400),
    ("ASGI echo 100KB (iter)", "granian:asgi:h1?loop=uvloop&ws=off", "echo_iter", 64, 102400),
    ("WSGI echo 100KB (iter)", "granian:wsgi:h1?ws=off", "echo_iter", 64, 102400),
], "get": [
    ("RSGI get 1KB", "granian:rsgi:h1?loop=uvloop&runtime-blocking-threads=1&ws=off", "b1k", 128, None),
    ("WSGI get 1KB", "granian:wsgi:h1?blocking-threads=1&ws=off", "b1k", 64, None),
]}


def threads(root):
    cpu = {}
    for p in [root] + [child.pid for child in descendants(psutil.Process(root))]:  # the server's process tree
        for t in Path(f"/proc/{p}/task").iterdir():
            try:
                fields = (t / "stat").read_text().rsplit(")", 1)[1].split()
                name = (t / "comm").read_text().strip()
            except OSError:
                continue
            cpu[(p, int(t.name), name)] = (int(fields[11]) + int(fields[12])) / TICK
    return cpu


def oha(url, c, secs, body):
    argv = ["taskset", "-c", "1", OHA, "--no-tui", "--output-format", "json", "-c", str(c), "-z", f"{secs}s", "-w",
            "--worker-threads", "1", "--no-color"]
    if body:
        argv += ["-m", "POST", "-d", "x" * body]
    res = json.loads(subprocess.run(argv + [url], capture_output=True, text=True, timeout=secs + 30).stdout)
    ok = sum(v for k, v in res["statusCodeDistribution"].items() if k.startswith("2"))
    if not ok:
        raise RuntimeError(f"no 2xx from {url} at c{c}: {res['statusCodeDistribution']} {res.get('errorDistribution')}")
    return res["summary"]["requestsPerSec"], ok


def one(label, target, route, c, body, port, py):
    srv = subprocess.Popen(["taskset", "-c", "0", py, "-m", "gatecheck.servers", "run", target, "--port", str(port)],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        url = f"http://127.0.0.1:{port}/{route}"
        for _ in range(100):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/b1k", timeout=1).read(); break
            except OSError:
                time.sleep(0.1)
        else:
            raise RuntimeError(f"{target} did not answer on port {port} within 10 s")
        oha(url, 8, 4, body); oha(url, c, 3, body)
        before = threads(srv.pid)
        rps, ok = oha(url, c, 10, body)
        after = threads(srv.pid)
        per, single = {}, []
        for key, v in after.items():
            d = v - before.get(key, 0.0)
            name = key[2] if not key[2].startswith("python") else "python(main)" if key[0] == key[1] else key[2]
            per[name] = per.get(name, 0.0) + d
            if d > 0:
                single.append((round(d / ok * 1e6, 2), name))
        single.sort(reverse=True)
        return {"label": label, "rps": round(rps), "ok": ok,
                "us_per_req": {k: round(v / ok * 1e6, 2) for k, v in sorted(per.items(), key=lambda kv: -kv[1]) if v > 0},
                "threads": [[name, us] for us, name in single[:6]],  # the busiest single threads (a name can be many)
                "busy_threads": len(single), "total_us": round(sum(per.values()) / ok * 1e6, 2),
                "load": os.getloadavg()[0]}
    finally:
        os.killpg(srv.pid, signal.SIGINT)
        try:
            srv.wait(15)
        except subprocess.TimeoutExpired:
            os.killpg(srv.pid, signal.SIGKILL); srv.wait()


if __name__ == "__main__":
    port = 42100 + 100 * (os.getpid() % 50)  # a fresh range per invocation
    for r in range(int(sys.argv[1])):
        for py in PYTHONS:
            python = sys.version.split()[0] if len(sys.argv) < 4 else py
            for case in SETS[sys.argv[2] if len(sys.argv) > 2 else "interfaces"]:
                port += 1
                try:
                    print(json.dumps({"round": r, "python": python, **one(*case, port, py)}), flush=True)
                except (RuntimeError, subprocess.TimeoutExpired) as exc:  # recorded, never a number
                    print(json.dumps({"round": r, "python": python, "label": case[0], "error": str(exc)}), flush=True)
