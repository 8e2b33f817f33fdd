# count iterations of a fixed loop per 1 s slice, for N slices; prints CV of the slices
import sys, time, statistics
n = int(sys.argv[1]); out = []
for _ in range(n):
    end = time.perf_counter() + 1.0; k = 0
    while time.perf_counter() < end:
        for i in range(10000): pass
        k += 1
    out.append(k)
print(sys.argv[2], "slices", n, "mean", round(statistics.mean(out)), "min", min(out), "max", max(out), "cv%", round(100*statistics.stdev(out)/statistics.mean(out),2))
print(sys.argv[2], out)
