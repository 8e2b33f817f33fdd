#!/bin/bash
# The run-to-run spread experiment of docs/load/README.md (2026-11-28): N server starts x M 10 s oha runs each.
# Paths are this machine's (checkout /work/main, its tox env); PREFIX="env PYTHONHASHSEED=0 setarch -R" for the second run.
# N instances x M 10 s runs of oha against one granian instance each
OHA=~/.cache/gatecheck/oha-1.16.0/bin/oha; [ -x $OHA ] || OHA=$(ls ~/.cache/gatecheck/oha-1.16.0/*/oha ~/.cache/gatecheck/oha-1.16.0/oha 2>/dev/null | head -1)
TARGET=${TARGET:-granian:rsgi:h1?loop=uvloop&ws=off}; ROUTE=${ROUTE:-b100k}; C=${C:-64}
cd /work/main
for inst in $(seq 1 ${N:-3}); do
  PORT=$((41000+inst))
  PYTHONPATH=/work/main $PREFIX taskset -c 0 .tox/granian/bin/python -m gatecheck.servers run "$TARGET" --port $PORT > /work/s26/srv$inst.log 2>&1 &
  SP=$!
  for i in $(seq 1 50); do curl -s -o /dev/null http://127.0.0.1:$PORT/$ROUTE && break; sleep 0.2; done
  taskset -c 1 $OHA --no-tui -c 8 -z 4s --no-color http://127.0.0.1:$PORT/$ROUTE > /dev/null
  taskset -c 1 $OHA --no-tui -c $C -z 3s --no-color http://127.0.0.1:$PORT/$ROUTE > /dev/null
  for run in $(seq 1 ${M:-5}); do
    sleep 1
    R=$(taskset -c 1 $OHA --no-tui --output-format json -c $C -z 10s -w --worker-threads 1 --no-color http://127.0.0.1:$PORT/$ROUTE | python3 -c "import json,sys; print(round(json.load(sys.stdin)['summary']['requestsPerSec']))")
    echo "inst $inst run $run rps $R load $(cut -d' ' -f1 /proc/loadavg)"
  done
  kill -INT $SP; wait $SP
done
