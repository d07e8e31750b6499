#!/usr/bin/env bash
# lab.sh: start, stop and use the S3 test lab by hand (tests use lab_client.py).
#
#   tests/lab/lab.sh start [--delay-ms N]   start in $VT_LAB_DIR (default <repo>/.lab)
#   tests/lab/lab.sh env [h1|h2|h1tls]      print export lines: eval "$(tests/lab/lab.sh env h2)"
#   tests/lab/lab.sh env gcs-h1|gcs-h2|az-h1|az-h2 [MODE]   the same for /vsigs/ or /vsiaz/
#                                           (starts the family; MODE: lib/gcs.js, lib/azure.js)
#   tests/lab/lab.sh status                 endpoints, connection counts, request counts
#   tests/lab/lab.sh log                    the request log (JSON)
#   tests/lab/lab.sh stop
# Exit status: 0 ok, 1 failure (message on stderr), 2 usage.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
DIR=${VT_LAB_DIR:-$ROOT/.lab}
PY=/usr/bin/python3

die() { echo "lab.sh: $*" >&2; exit 1; }
field() { "$PY" -c "import json,sys; d=json.load(open('$DIR/lab.json')); print(eval(sys.argv[1]))" "$1"; }
running() { [ -f "$DIR/lab.json" ] && kill -0 "$(field "d['pid']")" 2>/dev/null; }

cmd=${1:-}
[ $# -gt 0 ] && shift
case "$cmd" in
  start)
    running && die "a lab is already running in $DIR (lab.sh stop first)"
    [ -d "$HERE/node_modules/s3rver" ] || die "npm packages missing: run 'npm ci' in $HERE"
    mkdir -p "$DIR"
    rm -f "$DIR/lab.json"
    nohup node "$HERE/labd.js" --dir "$DIR" --detached "$@" </dev/null >"$DIR/labd.out" 2>"$DIR/labd.stderr" &
    pid=$!
    for _ in $(seq 1 150); do
      grep -q '^READY' "$DIR/labd.out" 2>/dev/null && break
      kill -0 "$pid" 2>/dev/null || die "labd exited: $(tail -5 "$DIR/labd.stderr")"
      sleep 0.1
    done
    grep -q '^READY' "$DIR/labd.out" || { kill "$pid" 2>/dev/null; die "labd not ready within 15 s"; }
    echo "lab running (pid $pid) in $DIR; control API $(field "d['control']['url']")"
    echo "use it: eval \"\$($0 env h1)\"   (endpoints: h1, h2, h1tls)"
    ;;
  env)
    ep=${1:-h1}
    case "$ep" in
      h1|h2|h1tls) running || die "no lab running in $DIR (lab.sh start)"; cat "$DIR/env-$ep.sh";;
      gcs-h1|gcs-h2|az-h1|az-h2)
        running || die "no lab running in $DIR (lab.sh start)"
        "$PY" - "$(field "d['control']['url']")" "$ep" "${2:-}" <<'PYEOF'
import json, shlex, sys, urllib.request
url, ep, mode = sys.argv[1:4]
req = urllib.request.Request(url + "/family", data=json.dumps({"name": ep.split("-")[0]}).encode(),
                             method="POST", headers={"Content-Type": "application/json"})
envs = json.load(urllib.request.urlopen(req, timeout=60))["endpoints"][ep]["envs"]
if mode and mode not in envs:
    sys.exit(f"lab.sh: unknown mode '{mode}' for {ep} ({', '.join(envs)})")
print(f"# vsitune lab endpoint {ep}, {mode or next(iter(envs))}")
for k, v in envs[mode or next(iter(envs))].items():
    print(f"export {k}={shlex.quote(v)}")
PYEOF
        ;;
      *) echo "lab.sh: unknown endpoint '$ep' (h1, h2, h1tls, gcs-h1, gcs-h2, az-h1, az-h2)" >&2; exit 2;;
    esac
    ;;
  status)
    running || die "no lab running in $DIR"
    url=$(field "d['control']['url']")
    "$PY" - "$url" <<'PYEOF'
import json, sys, urllib.request
url = sys.argv[1]
get = lambda p: json.load(urllib.request.urlopen(url + p, timeout=10))
info = get("/info")
for name, ep in info["endpoints"].items():
    print(f"{name:6} 127.0.0.1:{ep['port']:<6} {'https' if ep['https'] else 'http '} alpn={','.join(ep['alpn'])}")
print("connections:", json.dumps(get("/connections")))
print("requests:   ", json.dumps(get("/counts")))
PYEOF
    ;;
  log)
    running || die "no lab running in $DIR"
    "$PY" -c "import sys,urllib.request; sys.stdout.write(urllib.request.urlopen(sys.argv[1]+'/log',timeout=10).read().decode())" "$(field "d['control']['url']")"
    echo
    ;;
  stop)
    running || { echo "no lab running in $DIR"; exit 0; }
    pid=$(field "d['pid']")
    kill -TERM "$pid"
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && kill -KILL "$pid"
    echo "lab stopped"
    ;;
  *)
    echo "usage: $0 start [--delay-ms N] | env [h1|h2|h1tls|gcs-h1|gcs-h2|az-h1|az-h2 [MODE]] | status | log | stop" >&2
    exit 2
    ;;
esac
