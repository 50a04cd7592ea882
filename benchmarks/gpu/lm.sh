#!/usr/bin/env bash
# On a lent GPU machine (device tool), in the repo root, with .gpu/lm/ carried: the tokenized corpus a CPU run of
# `python -m training lm` wrote to <out>/corpus/ (train.npy, val.npy, tokenizer.json; nothing else travels, the GPU
# image has no `datasets`). Trains the next-word model from scratch for MINUTES minutes (the schedule runs its course
# by then: --anneal-by-time) with SNAPSHOTS snapshots, scores every head's induction at each snapshot there, and
# brings the run back under $OUT, packed to the device tool's limits (8 files of 16 MiB): the best model in fp16, the
# snapshots in int8 (transformer/quantize.py), the logs and JSON records. benchmarks/gpu/lm_unpack.py rebuilds the run
# folder here; `python -m training.ship lm --run ... --snapshots-dtype int8` bundles it.
#   MINUTES  training minutes; default 5.5      SMOKE=1  a rehearsal on a CPU: a few steps
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:?}
MINUTES=${MINUTES:-5.5}
PY=${PY:-python3}
W=${WORK:-/tmp/gpu-lm}
exec > >(tee -a "$OUT/log.txt") 2>&1
t0=$(date +%s)
stamp() { echo "== $(( $(date +%s) - t0 )) s: $*"; }
stamp start; nvidia-smi -L 2>/dev/null
mkdir -p "$W/run" && cp -r .gpu/lm/corpus "$W/run/" || exit 1
ARGS=(--out "$W/run" --epochs 40 --max-minutes "$MINUTES" --anneal-by-time --snapshots "${SNAPSHOTS:-12}"
      --save-every-min 2 --batch-size 256 --max-tokens 65536 --lr 2e-3 --warmup 0.03
      --d-model 256 --n-heads 8 --n-kv-heads 2 --n-layers 6 --d-ff 704 --seq-len 256 --patience 100)
[ "${SMOKE:-0}" = 1 ] && ARGS+=(--max-steps 4 --threads 2)
stamp training
$PY -m training lm "${ARGS[@]}" > "$W/train.log" 2>&1
echo "exit $?"; tr '\r' '\n' < "$W/train.log" | grep -a -E '^(epoch [0-9]+:|\{|Traceback|[A-Za-z]*Error|  File|CausalLM|training on)' | tail -60
stamp packing
$PY -m benchmarks.gpu.lm_pack "$W/run" "$OUT"
stamp done; ls -la "$OUT"
