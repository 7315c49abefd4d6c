#!/bin/sh
# Read-only check of the real NVML path on a machine with an NVIDIA GPU: what the
# driver reports (nvidia-smi), then what Bulkhead's NVML backend reads
# (`bulkhead-agent --check-gpus`: inventory, MIG mode, instances, and every MIG
# profile's id, instance count and placements against Bulkhead's tables).
# Nothing here changes the GPU: no MIG mode or layout change, no clocks, no reset.
# Usage: xtask/nvml-check.sh [path/to/bulkhead-agent]   (cargo xtask nvml-check builds it)
set -u
agent=${1:-target/release/bulkhead-agent}
rc=0
echo "== nvidia-smi"
if command -v nvidia-smi >/dev/null 2>&1; then
    nvidia-smi -L
    nvidia-smi --query-gpu=index,name,uuid,memory.total,mig.mode.current --format=csv
    echo "-- GPU instance profiles (nvidia-smi mig -lgip)"
    nvidia-smi mig -lgip 2>&1 | head -60
    echo "-- their placements (nvidia-smi mig -lgipp)"
    nvidia-smi mig -lgipp 2>&1 | head -60
    echo "-- GPU instances (nvidia-smi mig -lgi)"
    nvidia-smi mig -lgi 2>&1 | head -40
    echo "-- compute processes"
    nvidia-smi --query-compute-apps=pid,gpu_uuid,used_memory --format=csv 2>&1 | head -20
else
    echo "nvidia-smi not found"
fi
echo "== /proc/driver/nvidia-caps/mig-minors (first lines)"
head -5 /proc/driver/nvidia-caps/mig-minors 2>&1
grep nvidia /proc/devices
echo "== bulkhead-agent --check-gpus ($agent)"
if [ -x "$agent" ]; then
    "$agent" --check-gpus || rc=$?
else
    echo "$agent is not built: cargo build --release -p bulkhead-agent"
    rc=2
fi
echo "nvml_check_rc=$rc"
exit $rc
