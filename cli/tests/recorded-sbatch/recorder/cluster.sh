#!/bin/bash
# Starts or stops the private Slurm 22.05 that record.py records from:
# munged, slurmctld and 4 slurmd (n1..n4) on loopback, everything under
# /tmp/slurmrec. Needs root and Debian's slurm-wlm, slurmctld, slurmd,
# slurm-client and munge (`apt-get install --no-install-recommends ...`, with a
# policy-rc.d that keeps the packages' own daemons from starting).
#   cluster.sh start   then   python3 record.py [FIRST [LAST]]   then   cluster.sh stop
# The configuration expects the host to be named `vm` (SlurmctldHost and
# NodeHostname in slurm.conf); edit both on another host.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=/tmp/slurmrec
export SLURM_CONF=$ROOT/slurm.conf

stop() {
  local f p
  for f in "$ROOT"/run/slurmd-*.pid "$ROOT"/run/slurmctld.pid "$ROOT"/munge/munged.pid; do
    [ -f "$f" ] || continue
    p=$(cat "$f")
    # only a daemon this script started: its command line names our files
    if tr '\0' ' ' < "/proc/$p/cmdline" 2>/dev/null | grep -q "$ROOT"; then
      kill "$p" 2>/dev/null || true
      for _ in $(seq 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    fi
    rm -f "$f"
  done
}

start() {
  stop
  rm -rf "$ROOT/state" "$ROOT/spool"
  mkdir -p "$ROOT"/{munge,state,run,log,dev,work,cases}
  chmod 755 "$ROOT"
  chmod 711 "$ROOT/munge"
  for i in $(seq 0 10); do [ -e "$ROOT/dev/gpu$i" ] || : > "$ROOT/dev/gpu$i"; done
  cp "$HERE/slurm.conf" "$HERE/gres.conf" "$HERE/cases_def.py" "$ROOT/"
  [ -f "$ROOT/munge/munge.key" ] || {
    dd if=/dev/urandom of="$ROOT/munge/munge.key" bs=1024 count=1 status=none
    chmod 400 "$ROOT/munge/munge.key"
  }
  munged --socket="$ROOT/munge/munge.sock" --key-file="$ROOT/munge/munge.key" \
    --pid-file="$ROOT/munge/munged.pid" --log-file="$ROOT/munge/munged.log" \
    --seed-file="$ROOT/munge/munged.seed"
  for _ in $(seq 100); do [ -S "$ROOT/munge/munge.sock" ] && break; sleep 0.05; done
  slurmctld -i -f "$SLURM_CONF"
  for n in 1 2 3 4; do
    mkdir -p "$ROOT/spool/n$n"
    slurmd -f "$SLURM_CONF" -N "n$n"
  done
  for _ in $(seq 300); do
    st=$(sinfo -h -N -p batch -o '%t' 2>/dev/null | sort | uniq -c | xargs || true)
    [ "$st" = "4 idle" ] && { echo "slurm up: $st"; return 0; }
    sleep 0.2
  done
  echo "nodes not idle: '$st'" >&2
  tail -20 "$ROOT/log/slurmctld.log" >&2
  exit 1
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  *) echo "usage: $0 start|stop" >&2; exit 2 ;;
esac
