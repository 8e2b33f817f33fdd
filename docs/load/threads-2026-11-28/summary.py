"""Summarise per-thread.jsonl (the runs of threads.py that record single threads): per row, the server's CPU per
request over all its threads and that of its busiest single thread; per round, ASGI's over RSGI's for the same
row shape (the two ran minutes apart, so the host's drift between rounds cancels in part)."""
import json
import statistics as st
from collections import defaultdict

rows = [json.loads(line) for line in open("per-thread.jsonl")]
invocation, last_round = 0, -1
for r in rows:  # one threads.py run per case set: a new one starts where the round number falls back
    invocation += r["round"] < last_round
    r["invocation"], last_round = invocation, r["round"]
errors = [r for r in rows if "error" in r]
runs = defaultdict(list)
for r in rows:
    if "error" not in r:
        python = r["python"].split("/")[-3].replace("py3", "3.") if "/" in r["python"] else r["python"][:4]
        runs[(python, r["label"])].append(r)


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
print(f"Runs that gave no number ({len(errors)}):", *(f"\n- {r['label']} (round {r['round']}): {r['error']}" for r in errors))
