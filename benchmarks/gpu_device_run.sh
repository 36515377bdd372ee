#!/usr/bin/env bash
# Issue 17's device checks in one command on a GPU machine (no network needed: the machine's
# python3 with numba-cuda, NumPy, SciPy, pandas, PyArrow, Matplotlib and tqdm; riskset from src/).
#
#     bash benchmarks/gpu_device_run.sh            # logs under $OUT (default ./gpu_logs)
#
# At once, each under its own time limit:
#   * the GPU checks on hardware (tests/gpu_checks.py: every simulator check, the replicate
#     paths, and the device-only whole-grid checks) in three processes, and the PTX tests;
#   * the CPU baseline, one thread, at N = 1,000,000 (bench_gpu.py --backends cpu);
#   * the GPU benchmark: fit and pass tables at N = 100,000 (single fits over the whole grid
#     and in one block), then the Cox, Fine-Gray and logistic fits at 1,000,000 (whole grid,
#     float64 and float32), each under cProfile, then 10-fold x 10 cross-validation of Cox at
#     1,000,000 as one device batch.
# Seconds per stage: SECS_CHECKS, SECS_CPU (0: no CPU baseline), SECS_SMALL, SECS_BIG, SECS_CV;
# bench_gpu.py arguments: CPU_ARGS, SMALL_ARGS, BIG_ARGS (environment; defaults below).
set -u
OUT=${OUT:-gpu_logs}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD/src:$PWD/tests:${PYTHONPATH:-}"
PY=${PY:-python3}
B=benchmarks/bench_gpu.py

{
  date -u
  nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.max.sm,driver_version --format=csv
  $PY - <<'PYEOF'
import sys, numba, numpy, scipy, pandas
from numba import cuda
print(sys.version.split()[0], "numba", numba.__version__, "numpy", numpy.__version__, "scipy", scipy.__version__,
      "pandas", pandas.__version__)
try:
    import numba_cuda
    print("numba-cuda", numba_cuda.__version__)
except ImportError:
    print("numba-cuda: not installed (numba's own numba.cuda)")
print("cuda available:", cuda.is_available(), cuda.get_current_device().name, cuda.get_current_device().compute_capability)
PYEOF
} 2>&1 | tee "$OUT/bench.log"

checks() {  # name, check names...
  local name=$1; shift
  timeout "${SECS_CHECKS:-240}" $PY tests/gpu_checks.py "$OUT/checks_$name.json" "$@" 2>&1 | sed -u "s/^/[$name] /"
}
names() { $PY tests/gpu_checks.py --list | $PY -c "import json,sys,re; print(' '.join(n for n in json.load(sys.stdin) if re.search(sys.argv[1], n)))" "$1"; }
{
  checks A $(names '^(grid_scans|sweep|fit|ccd|unsupported|conditional_limits|float32)') &
  checks B $(names '^(replicates|profile|cross_validation|bootstrap)') &
  checks C $(names '^whole_grid') &
  timeout "${SECS_CHECKS:-240}" $PY -m pytest -q -p no:cacheprovider tests/test_gpu.py -k "ptx or cli or pooled or dtype or no_device" 2>&1 | sed -u 's/^/[pytest] /' &
  wait
} >"$OUT/checks.log" 2>&1 &

if [ "${SECS_CPU:-300}" != 0 ]; then  # SECS_CPU=0: no CPU baseline
  NUMBA_NUM_THREADS=1 timeout "${SECS_CPU:-300}" $PY $B --backends cpu --n 1000000 --repeat 1 \
    ${CPU_ARGS:---models cox fine_gray logistic} >"$OUT/cpu.log" 2>&1 &
fi

timeout "${SECS_SMALL:-150}" $PY $B --n 100000 ${SMALL_ARGS:---skip profile cv} 2>&1 | tee -a "$OUT/bench.log"
timeout "${SECS_BIG:-200}" $PY $B --n 1000000 --layouts grid --backends gpu --skip pass cv --repeat 1 \
  ${BIG_ARGS:---models cox fine_gray logistic} 2>&1 | tee "$OUT/big.log"
timeout "${SECS_CV:-150}" $PY $B --n 1000000 --cv-n 1000000 --models cox --dtypes float64 --no-cv-cpu \
  --skip fit profile pass 2>&1 | tee "$OUT/cv.log"
wait
echo "== checks =="
$PY - "$OUT" <<'PYEOF'
import glob, json, sys
for path in sorted(glob.glob(f"{sys.argv[1]}/checks_*.json")):
    res = json.load(open(path))
    bad = {k: v for k, v in res.items() if v != "ok"}
    print(path, len(res), "ran,", len(bad), "failed")
    for k, v in bad.items():
        print(" ", k, "|", v.strip().splitlines()[-1][:300])
PYEOF
tail -3 "$OUT/checks.log"
cat "$OUT/cpu.log" 2>/dev/null
