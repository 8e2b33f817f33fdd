"""Summarise a threads.py output (default per-thread.jsonl; python summary.py versions.jsonl for the versions run):
per row, the server's CPU per request over all its threads and that of its busiest single thread; per round,
ASGI's over RSGI's for the same row shape (the two ran minutes apart, so the host's drift between rounds cancels
in part); per row, the median RPS of each Python version."""
import json
import statistics as st
import sys
from collections import defaultdict

rows = [json.loads(line) for line in open(sys.argv[1] if len(sys.argv) > 1 else "per-thread.jsonl")]
invocation, last_round = 0, -1
for r in rows:  # one threads.py run per case set: a new one starts where the round number falls back
    invocation += r["round"] < last_round
    r["invocation"], last_round = invocation, r["round"]
errors = [r for r in rows if "error" in r]
runs = defaultdict(list)


def version(python: str) -> str:
    """3.10 from /work/s27/py310/bin/python, 3.11 from the tox env (.tox/granian: Python 3.11.7) or from 3.11.7."""
    if "/" not in python:
        return python[:4]
    env = python.split("/")[-3]
    return "3.11" if env == "granian" else env.replace("py3", "3.")


for r in rows:
    if "error" not in r:
        runs[(version(r["python"]), r["label"])].append(r)


def span(values, fmt="{:.1f}"):
    lo, hi = min(values), max(values)
    return fmt.format(lo) if lo == hi else f"{fmt.format(lo)}-{fmt.format(hi)}"


print("| Python | row | runs | RPS | all threads (µs per request) | busiest thread (µs) | busiest thread's name | threads with CPU |")
print("| --- | --- | ---: | ---: | ---: | ---: | --- | ---: |")
for (python, label), rs in runs.items():
    print(f"| {python} | {label} | {len(rs)} | {span([r['rps'] for r in rs], '{:,}')} | {span([r['total_us'] for r in rs])} "
          f"| {span([r['threads'][0][1] for r in rs])} | {', '.join(sorted({r['threads'][0][0] for r in rs}))} "
          f"| {span([r['busy_threads'] for r in rs], '{}')} |")
print()
print("ASGI over RSGI, the same round of one threads.py run (all threads; busiest thread):")
by_round = {(r["invocation"], r["round"], r["label"]): r for r in rows if "error" not in r}
for (inv, rnd, label), a in sorted(by_round.items()):
    if label.startswith("ASGI"):
        b = by_round.get((inv, rnd, "RSGI" + label[4:]))
        if b:
            print(f"- {label[5:]} (round {rnd}): {a['total_us'] / b['total_us']:.2f}; "
                  f"{a['threads'][0][1] / b['threads'][0][1]:.2f}")
print()
print("Median RPS per Python version (each version's runs of the row):")
for label in sorted({label for _, label in runs}):
    medians = {python: st.median(r["rps"] for r in rs) for (python, lab), rs in sorted(runs.items()) if lab == label}
    if len(medians) > 1:
        print(f"- {label}: " + ", ".join(f"{python} {m:,.0f}" for python, m in medians.items()))
print()
print(f"Runs that gave no number ({len(errors)}):", *(f"\n- {r['label']} (round {r['round']}): {r['error']}" for r in errors))
