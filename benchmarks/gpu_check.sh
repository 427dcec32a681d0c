#!/usr/bin/env bash
# The GPU check of the torch notebooks, in one command, for a machine with a CUDA GPU.
#
#   OUT=DIR bash benchmarks/gpu_check.sh
#
# 1. gd_probe at the paper preset with `-p device cuda` (its 18 trainings spread over the worker
#    processes, all on the one GPU); its store entry is exported to DIR/gd_probe_paper_cuda.tar.gz with
#    the archive's SHA-256 beside it, ready for `icl-book import FILE --sha256 HEX` on a checkout of the
#    same commit (the run is keyed with `device=cuda`, so the record's CPU paper key does not take it);
# 2. every notebook with a `domain: device` parameter at the quick preset, once with `-p device cuda`
#    and once on the CPU of the same machine, and the two sets of metrics compared key by key
#    (benchmarks/compare_metrics.py at rtol 1e-12 and at rtol 1e-3: float32 kernels differ in rounding).
#
# Environment: PY (default python3), DEVICE (default cuda), PAPER_PRESET (default paper; `quick` for a
# rehearsal on a machine without a GPU, with DEVICE=cpu), PAPER_TIMEOUT and QUICK_TIMEOUT (seconds),
# NOTEBOOKS (the notebooks of step 2, space-separated; default: all with a device parameter).
# Everything it writes is under $OUT (at most 8 files): env.txt, gpu_check.log, the archive and its
# digest, quick_compare.txt.
set -u
OUT=${OUT:?set OUT to the folder for the results}
PY=${PY:-python3}
DEVICE=${DEVICE:-cuda}
PAPER_PRESET=${PAPER_PRESET:-paper}
mkdir -p "$OUT"
ICL=("$PY" -m iclbook.cli)
stamp() { date -u +%H:%M:%S; }
exec > >(tee "$OUT/gpu_check.log") 2>&1

"$PY" - >"$OUT/env.txt" 2>&1 <<'EOF'
import os, platform
import numpy, scipy, torch
print("python", platform.python_version(), "numpy", numpy.__version__, "scipy", scipy.__version__, "torch", torch.__version__)
print("cuda", torch.cuda.is_available() and torch.cuda.get_device_name(0), "cores", os.cpu_count())
EOF
cat "$OUT/env.txt"

echo "[$(stamp)] gd_probe --preset $PAPER_PRESET -p device $DEVICE"
t0=$(date +%s)
timeout "${PAPER_TIMEOUT:-420}" "${ICL[@]}" run gd_probe --preset "$PAPER_PRESET" -p device "$DEVICE" -j 1
rc=$?
echo "[$(stamp)] gd_probe $PAPER_PRESET on $DEVICE: exit $rc, wall $(( $(date +%s) - t0 )) s"
if [ "$rc" = 0 ]; then
  archive="$OUT/gd_probe_${PAPER_PRESET}_${DEVICE}.tar.gz"
  "${ICL[@]}" export "$archive" gd_probe --preset "$PAPER_PRESET" -p device "$DEVICE" --force
  sha256sum "$archive" | tee "$archive.sha256"
fi

if [ -n "${NOTEBOOKS:-}" ]; then read -r -a NBS <<<"$NOTEBOOKS"; else
  mapfile -t NBS < <(grep -l "domain: device" notebooks/*.py | xargs -n1 basename | sed 's/\.py$//'); fi
Q=$(mktemp -d)
for dev in "$DEVICE" cpu; do
  echo "[$(stamp)] quick preset of ${#NBS[@]} notebooks with -p device $dev"
  t0=$(date +%s)
  timeout "${QUICK_TIMEOUT:-150}" "${ICL[@]}" run "${NBS[@]}" -p device "$dev" --out "$Q/$dev" -j 8 >"$Q/$dev.log" 2>&1
  echo "[$(stamp)] quick on $dev: exit $?, wall $(( $(date +%s) - t0 )) s"
  tail -n 3 "$Q/$dev.log"
done
{
  echo "# quick metrics, -p device $DEVICE against -p device cpu, same machine"
  echo "## rtol 1e-12"; "$PY" benchmarks/compare_metrics.py "$Q/$DEVICE" "$Q/cpu" "${NBS[@]}"
  echo "## rtol 1e-3"; "$PY" benchmarks/compare_metrics.py --rtol 1e-3 "$Q/$DEVICE" "$Q/cpu" "${NBS[@]}"
} >"$OUT/quick_compare.txt" 2>&1
tail -n 40 "$OUT/quick_compare.txt"
echo "[$(stamp)] done"
