#!/bin/bash
# count the server tree's syscalls over one broadcast run (8 clients x 4000 messages): TARGET, PORT
TARGET=$1; PORT=$2
cd /work/main
PYTHONPATH=/work/main taskset -c 0 /work/s26/vsenv/bin/python -m gatecheck.servers run "$TARGET" --port $PORT > /work/s26/sys_srv.log 2>&1 &
RUNNER=$!
sleep 5
tree() { for c in $(ps -o pid= --ppid $1); do echo $c; tree $c; done; }
ARGS=$(for p in $(tree $RUNNER); do printf -- "-p %s " $p; done)
strace -f -c -o /work/s26/strace_$PORT.txt $ARGS 2>/dev/null &
ST=$!
sleep 1
PYTHONPATH=/work/main taskset -c 1 .tox/granian/bin/python -m gatecheck.load.run.wsclient ws://127.0.0.1:$PORT/ws_broadcast --clients 8 --messages 4000 --settle 0 | python3 -c "import json,sys; r=json.load(sys.stdin); print('combined', round(r['throughput']['combined']), 'delivered', 8*8*4000)"
kill -INT $ST; sleep 1
kill -INT $RUNNER; wait $RUNNER
head -12 /work/s26/strace_$PORT.txt
