#!/bin/bash
# context switches and CPU of the server tree over one broadcast run (8 clients x 4000 messages): TARGET PORT
TARGET=$1; PORT=$2
cd /work/main
PYTHONPATH=/work/main taskset -c 0 /work/s26/vsenv/bin/python -m gatecheck.servers run "$TARGET" --port $PORT > /work/s26/perf_srv.log 2>&1 &
RUNNER=$!
sleep 5
tree() { for c in $(ps -o pid= --ppid $1); do echo $c; tree $c; done; }
PIDS=$(tree $RUNNER | tr '\n' ',' | sed 's/,$//')
perf stat -e task-clock,context-switches,cpu-migrations -p $PIDS -o /work/s26/perf_$PORT.txt &
PF=$!
sleep 0.5
PYTHONPATH=/work/main taskset -c 1 .tox/granian/bin/python -m gatecheck.load.run.wsclient ws://127.0.0.1:$PORT/ws_broadcast --clients 8 --messages 4000 --settle 0 | python3 -c "import json,sys; r=json.load(sys.stdin); print('$TARGET combined', round(r['throughput']['combined']), 'delivered', 8*8*4000, 'received by server', 8*4000)"
kill -INT $PF; wait $PF
kill -INT $RUNNER; wait $RUNNER
grep -E "task-clock|context-switches|cpu-migrations|seconds time" /work/s26/perf_$PORT.txt
