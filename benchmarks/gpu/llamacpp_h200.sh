#!/usr/bin/env bash
# llama.cpp's CUDA server on the lent H200: build, a random-weight GGUF of a catalog model, step times, a real server.
#
#   run (device tool), carry [".gpu", ".whl"]:  bash benchmarks/gpu/llamacpp_h200.sh steps      # call 1
#                                               bash benchmarks/gpu/llamacpp_h200.sh openloop   # call 2 (and B)
#                                               bash benchmarks/gpu/llamacpp_h200.sh fit        # call A
#
# .gpu/ holds llama.cpp's source as vendored in the llama-cpp-python 0.3.36 sdist (docs, models, tests and benches
# left out: `tar czf .gpu/llama.cpp-src.tar.gz --exclude=...`) and models/ggml-vocab-llama-bpe.gguf from the same
# sdist (Llama 3's tokenizer); .whl/ holds pydantic's wheels for the machine's Python 3.12 (the project itself
# travels as the working tree). Everything measured lands in $OUT (results.tar.gz, log.txt) with the commands.
#
# Rebuilding the carry on a fresh machine (PyPI only; `/.gpu/` is in .git/info/exclude, .whl/ is ignored):
#   pip download llama-cpp-python==0.3.36 --no-binary :all: --no-deps   # the sdist; unpack it, then from vendor/:
#   tar czf .gpu/llama.cpp-src.tar.gz --exclude=llama.cpp/{docs,models,tests,benches,media} llama.cpp
#   xz -c llama.cpp/models/ggml-vocab-llama-bpe.gguf > .gpu/ggml-vocab-llama-bpe.gguf.xz
#   pip download --only-binary=:all: --python-version 3.12 --platform manylinux2014_x86_64 \
#     --platform manylinux_2_17_x86_64 --platform manylinux_2_28_x86_64 --implementation cp -d .whl \
#     pydantic pydantic-core annotated-types typing-extensions typing-inspection rich markdown-it-py mdurl pygments \
#     psutil nvidia-ml-py PyYAML Jinja2 MarkupSafe
# The first call of a session builds llama-server (~280 s; the doctor phase packs the build into $OUT as
# lcbin.part-* before its trials); for later calls replace .gpu/llama.cpp-src.tar.gz by a tar of llama.cpp/gguf-py
# (llama.cpp-gguf-py.tar.gz) and the parts by `cat lcbin.part-* | gunzip | xz > .gpu/lcbin.tar.xz`, which keeps the
# carry under the device's 64 MiB (59.7 MiB on 2026-12-04): `python benchmarks/gpu/carry_size.py .gpu .whl
# --without benchmarks/results`. Move benchmarks/results/ aside for each call (it would count against the carry).
#
# steps:    llama-batched-bench over prompt lengths x parallel sequences (prefill and decode step times at each batch),
#           f16 and Q4_K_M; the plan's own emitted serve.sh started on the GGUF and the project's `bench` closed loop
#           at concurrency 1 and 4 (batch-1 TTFT, the per-request cost, batch-1 decode); grouped MoE GEMMs in torch.
# openloop: the plan's own emitted serve.sh and `bench --request-rate` Poisson levels, from light load to past
#           saturation; the plan's predictions for the same levels are written before the first request is sent.
# doctor:   real start-up failures of the server (doctor_trials.py: too long a context, another process's memory),
#           each read by `infer-advisor doctor` from its own log, the first edit that it says starts applied and started
# fit:      data for refitting the llama.cpp GPU terms with the plan's command (`--parallel 4 --kv-unified
#           --cache-ram 0`): llama-batched-bench with the unified KV cache (-kvu) at 1-4 and 8 sequences; the server
#           in closed loops at 1-4 clients (and 6: more clients than slots, the wait for a free slot) with 1000-word
#           and 100-word prompts, 200 answer tokens; the server's own per-request timings from its log.
#
# A warm machine keeps /tmp/lc: the source, the build and the GGUF are reused when already there.
set -uo pipefail
PHASE="${1:-steps}"
MODEL="${MODEL:-meta-llama/Llama-3.1-8B}"
IN_TOK="${IN_TOK:-1000}"
OUT_TOK="${OUT_TOK:-200}"
PLAN_IN="${PLAN_IN:-1137}"  # the bench's 1000 synthetic words are 1,137 Llama-3 tokens (call 1: server usage)
FRACTIONS="${FRACTIONS:-0.35,0.65,0.85,1.0,1.15,1.35}"  # levels as fractions of the predicted highest sustainable rate
# openloop: MODEL (default Llama-3.1-8B; any catalog Llama-family model, a random-weight GGUF of its shape), BATCH1=N
#           (a closed loop of one client, N prompts, before the levels: batch-1 decode in the server log);
#           BUDGET_S (default 560) is the phase's whole time; LEVEL_MAX_S (default 60) caps each level's arrivals;
#           LEVEL_S fixes each level's seconds of arrivals instead: then the bench seed is picked before the run so
#           that every level delivers its asked rate within SEED_TOL (default 0.03), and each level is also predicted
#           at the rate its seeded schedule delivers (predict_levels.py --pick-seed, --level-seconds)
OUT="${OUT:-/tmp/out}"
W=/tmp/lc
REPO="$(pwd)"
rm -rf "$W/res"; mkdir -p "$OUT" "$W/res"  # a warm machine: the last call's results went back with it
exec > >(tee -a "$OUT/log.txt") 2>&1
T0=$(date +%s)
say() { echo "[$(( $(date +%s) - T0 ))s] $*"; }
trap 'tar czf "$OUT/results.tar.gz" -C "$W" res 2>/dev/null' EXIT  # what was measured comes back even if cut short

python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH="/tmp/site:$REPO/src:$REPO" HF_HUB_OFFLINE=1
IA() { python3 -m infer_advisor.cli "$@"; }
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm,clocks.max.mem --format=csv | tee "$W/res/nvidia-smi.csv"
nproc; python3 -c 'import torch; print("torch", torch.__version__, torch.cuda.get_device_name(0))'

TARGETS="llama-server"
[ "$PHASE" = openloop ] || [ "$PHASE" = doctor ] || TARGETS="$TARGETS llama-batched-bench"
[ "$PHASE" = steps ] && TARGETS="$TARGETS llama-quantize"
unxz() { python3 -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), sys.stdout.buffer)' "$1"; }
if [ ! -x "$W/build/bin/llama-server" ] && [ -f .gpu/lcbin.tar.xz ]; then
  # the same build repacked with xz here (and without batched-bench) so that it fits the 64 MiB the tree may carry
  mkdir -p "$W/build" && unxz .gpu/lcbin.tar.xz | tar xf - -C "$W/build" && say "llama.cpp binaries from .gpu/lcbin.tar.xz"
fi
if [ ! -x "$W/build/bin/llama-server" ] && compgen -G ".gpu/lcbin.part-*" >/dev/null; then
  # the build of an earlier call (fit packs it): same path as it was built at, so its RPATH holds
  mkdir -p "$W/build" && cat .gpu/lcbin.part-* | tar xzf - -C "$W/build" && say "llama.cpp binaries from .gpu/lcbin.part-*"
fi
NEED_BUILD=0
for t in $TARGETS; do [ -x "$W/build/bin/$t" ] || NEED_BUILD=1; done
say "unpack + configure + build (background, needed: $NEED_BUILD); GGUF written meanwhile"
if [ ! -d "$W/llama.cpp" ]; then  # the whole source to build; gguf-py alone when the build travels
  if [ -f .gpu/llama.cpp-src.tar.gz ]; then tar xzf .gpu/llama.cpp-src.tar.gz -C "$W"
  else tar xzf .gpu/llama.cpp-gguf-py.tar.gz -C "$W"; fi
fi
VOCAB=.gpu/ggml-vocab-llama-bpe.gguf
if [ ! -f "$VOCAB" ] && [ -f "$VOCAB.xz" ]; then unxz "$VOCAB.xz" >"$W/vocab.gguf"; VOCAB="$W/vocab.gguf"; fi
BUILD_PID=""
if [ "$NEED_BUILD" = 1 ]; then
  # shellcheck disable=SC2086  # TARGETS is a list of words
  ( cmake -S "$W/llama.cpp" -B "$W/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGGML_CUDA=ON \
      -DCMAKE_CUDA_ARCHITECTURES=90 -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
      >"$W/res/cmake.log" 2>&1 \
    && cmake --build "$W/build" --target $TARGETS -j 16 >"$W/res/build.log" 2>&1; echo $? >"$W/build.rc" ) &
  BUILD_PID=$!
else
  echo 0 >"$W/build.rc"; echo "build kept from an earlier call" >"$W/res/build.log"
fi
if [ -s "$W/model-f16.gguf.json" ] && ! grep -q "\"model\": \"$MODEL\"" "$W/model-f16.gguf.json"; then
  rm -f "$W/model-f16.gguf" "$W/model-f16.gguf.json"  # a warm machine's GGUF is another model's: write this one
fi
if [ ! -s "$W/model-f16.gguf.json" ]; then
  PYTHONPATH="$W/llama.cpp/gguf-py" python3 benchmarks/gpu/random_gguf.py --model "$MODEL" \
    --vocab "$VOCAB" --out "$W/model-f16.gguf" >"$W/model-f16.gguf.json.tmp" \
    && mv "$W/model-f16.gguf.json.tmp" "$W/model-f16.gguf.json"
fi
cp "$W/model-f16.gguf.json" "$W/res/gguf.json"; cat "$W/res/gguf.json"
say "GGUF ready"
[ -n "$BUILD_PID" ] && wait "$BUILD_PID"
say "build rc=$(cat "$W/build.rc")"; tail -3 "$W/res/build.log"
[ "$(cat "$W/build.rc")" = 0 ] || { tar czf "$OUT/results.tar.gz" -C "$W" res; exit 1; }
export PATH="$W/build/bin:$PATH"
BUILT_HERE=$NEED_BUILD

pack_build() {  # llama-server and its shared libraries, stripped, in <= 6 parts of 15 MiB for the next call's .gpu/
  local stage="$W/pack"; rm -rf "$stage"; mkdir -p "$stage/bin"
  cp -a "$W/build/bin/llama-server" "$W"/build/bin/*.so* "$stage/bin/" 2>/dev/null
  strip --strip-unneeded "$stage"/bin/* 2>/dev/null
  tar czf "$W/lcbin.tgz" -C "$stage" bin
  local size parts; size=$(stat -c %s "$W/lcbin.tgz")
  if [ "$size" -le $(( 90 * 1024 * 1024 )) ]; then
    split -b 15M -a 2 "$W/lcbin.tgz" "$OUT/lcbin.part-"; parts=("$OUT"/lcbin.part-*); say "packed build: $size bytes -> ${#parts[@]} parts"
  else
    say "packed build: $size bytes, over 90 MiB: not sent back"
  fi
}

start_server() {  # the plan's own serve.sh, the GGUF put where it expects it
  local deploy="$1"; shift
  rm -rf "$deploy"
  IA plan --model "$MODEL" --gpu H200 --engine llama.cpp --quantization gguf-f16 --input-tokens "$PLAN_IN" \
     --output-tokens "$OUT_TOK" "$@" --emit script --out "$deploy" >"$W/res/plan-$(basename "$deploy").txt" 2>&1
  local gguf; gguf=$(grep -o 'models/[^ ]*\.gguf' "$deploy/serve.sh" | head -1)
  mkdir -p "$deploy/$(dirname "$gguf")"; ln -sf "$W/model-f16.gguf" "$deploy/$gguf"
  cp "$deploy/serve.sh" "$W/res/serve-$(basename "$deploy").sh"
  setsid bash "$deploy/serve.sh" >"$W/res/server-$(basename "$deploy").log" 2>&1 &
  SERVER_PID=$!  # serve.sh execs llama-server: this is the server's own process (and group, by setsid)
  for _ in $(seq 1 120); do curl -sf http://127.0.0.1:8080/health >/dev/null && break; sleep 1; done
  say "server up: $(curl -s http://127.0.0.1:8080/health)"
}
stop_server() { kill -- "-$SERVER_PID" 2>/dev/null || kill "$SERVER_PID"; wait "$SERVER_PID" 2>/dev/null; sleep 1; }
closed_loop() {  # name, words in, concurrency list, prompts per level
  timeout 150 python3 -m infer_advisor.cli bench --engine openai --url http://127.0.0.1:8080 --model "$MODEL" \
    --workload throughput --input-tokens "$2" --output-tokens "$OUT_TOK" --concurrency "$3" --num-prompts "$4" \
    --ignore-eos --out "$W/res/$1" --json >"$W/res/$1.json" 2>"$W/res/$1.err"
  tail -4 "$W/res/$1.err"
}

if [ "$PHASE" = doctor ]; then
  [ "$BUILT_HERE" = 1 ] && pack_build  # first, so that the build comes back even if the trials are cut short
  say "doctor trials: real start-up failures, the doctor's first edit applied and started (doctor_trials.py)"
  python3 benchmarks/gpu/doctor_trials.py --gguf "$W/model-f16.gguf" --model "$MODEL" --out "$W/res/doctor" \
    --set "${TRIAL_SET:-a}" --only "${TRIALS:-}" 2>&1 | tail -20
  cp "$W/res/doctor/trials.json" "$OUT/" 2>/dev/null
elif [ "$PHASE" = steps ]; then
  say "batched-bench f16"
  timeout 150 llama-batched-bench -m "$W/model-f16.gguf" -c 40960 -b 2048 -ub 512 -ngl 99 -fa on \
    -npp 128,1000 -ntg 128 -npl 1,2,4,8,16,32 --output-format jsonl >"$W/res/batched-f16.jsonl" 2>"$W/res/batched-f16.log"
  tail -14 "$W/res/batched-f16.log"
  say "server (plan's command) + closed loop"
  start_server "$W/deploy-steps" --rate 1
  timeout 120 python3 -m infer_advisor.cli bench --engine openai --url http://127.0.0.1:8080 --model "$MODEL" \
    --workload throughput --input-tokens "$IN_TOK" --output-tokens "$OUT_TOK" --concurrency 1,4 --num-prompts 8 \
    --ignore-eos --out "$W/res/closed" --json >"$W/res/closed.json" 2>"$W/res/closed.err"
  tail -5 "$W/res/closed.err"
  grep -E "prompt eval time|eval time|n_ctx|kv_unified|n_slots" "$W/res/server-deploy-steps.log" | tail -12
  stop_server
  say "quantize Q4_K_M + batched-bench"
  if [ $(( $(date +%s) - T0 )) -lt 420 ]; then
    timeout 100 llama-quantize "$W/model-f16.gguf" "$W/model-q4km.gguf" Q4_K_M 16 >"$W/res/quantize.log" 2>&1
    timeout 60 llama-batched-bench -m "$W/model-q4km.gguf" -c 40960 -b 2048 -ub 512 -ngl 99 -fa on \
      -npp 128,1000 -ntg 128 -npl 1,4,16,32 --output-format jsonl >"$W/res/batched-q4km.jsonl" 2>"$W/res/batched-q4km.log"
    tail -8 "$W/res/batched-q4km.log"
  fi
  say "MoE grouped GEMMs"
  [ $(( $(date +%s) - T0 )) -lt 520 ] && timeout 60 python3 benchmarks/gpu/moe_gemm.py --out "$W/res/moe_gemm.json"
elif [ "$PHASE" = fit ]; then
  [ "$BUILT_HERE" = 1 ] && pack_build
  # llama-batched-bench as the server runs (unified KV, flash attention on, 2048/512 batch): 1137-token prompts
  # (the bench's 1000 words) and 128; decode over 128 steps at 1, 2, 3, 4 and 8 sequences.
  say "batched-bench f16, unified KV"
  timeout 120 llama-batched-bench -m "$W/model-f16.gguf" -c 32768 -b 2048 -ub 512 -ngl 99 -fa on -kvu \
    -npp 128,1137 -ntg 128 -npl 1,2,3,4,8 --output-format jsonl >"$W/res/batched-f16-kvu.jsonl" 2>"$W/res/batched-f16-kvu.log"
  tail -12 "$W/res/batched-f16-kvu.log"
  say "batched-bench f16, one KV stream per sequence (call 1's setting)"
  timeout 60 llama-batched-bench -m "$W/model-f16.gguf" -c 32768 -b 2048 -ub 512 -ngl 99 -fa on \
    -npp 1137 -ntg 128 -npl 1,2,3,4 --output-format jsonl >"$W/res/batched-f16-split.jsonl" 2>"$W/res/batched-f16-split.log"
  tail -6 "$W/res/batched-f16-split.log"
  NSYS=$(command -v nsys); for n in /usr/local/cuda/bin/nsys /opt/nvidia/nsight-systems/*/bin/nsys; do [ -z "$NSYS" ] && [ -x "$n" ] && NSYS=$n; done
  if [ -n "$NSYS" ]; then  # GPU kernel time of one decode step at one sequence (the rest of the step is the host's):
    # two runs that differ only by 64 decode steps (-ntg 1 vs 65); the difference of their kernel sums / 64
    say "nsys: kernels of batched-bench decode, 1 sequence ($NSYS)"
    for tg in 1 65; do
      timeout 60 "$NSYS" profile -t cuda --cuda-graph-trace=node -o "$W/res/nsys-tg$tg" -f true llama-batched-bench \
        -m "$W/model-f16.gguf" -c 8192 -b 2048 -ub 512 -ngl 99 -fa on -kvu -npp 1137 -ntg $tg -npl 1 >"$W/res/nsys-tg$tg.log" 2>&1
      timeout 40 "$NSYS" stats -r cuda_gpu_kern_sum -f csv -o "$W/res/nsys-tg$tg" "$W/res/nsys-tg$tg.nsys-rep" >/dev/null 2>&1
      rm -f "$W/res/nsys-tg$tg.nsys-rep" "$W/res/nsys-tg$tg.sqlite"
    done
    ls "$W"/res/nsys-*
  else
    say "no nsys on this machine"
  fi
  say "server (plan's command) + closed loops"
  start_server "$W/deploy-fit" --rate 1 --no-headroom
  grep -E "n_slots|kv_unified|n_ctx|cache_ram|flash_attn" "$W/res/server-deploy-fit.log" | head -12
  # 1000-word prompts at 1-4 clients and 6 (two clients always wait for a slot): TTFT, ITL, throughput
  closed_loop closed-long "$IN_TOK" 1,2,3,4,6 16
  say "short prompts"
  # 100-word prompts: decode steps at 1, 2 and 4 busy slots with little prefill in between; batch-1 TTFT
  closed_loop closed-short 100 1,2,4 12
  grep -cE "prompt eval time" "$W/res/server-deploy-fit.log"
  grep -E "prompt eval time|       eval time" "$W/res/server-deploy-fit.log" | tail -6
  stop_server
else
  say "plan predictions for every level, written before the first request"
  FIXED_S=()
  [ -n "${LEVEL_S:-}" ] && FIXED_S=(--level-seconds "$LEVEL_S" --pick-seed "${SEED_TOL:-0.03}")
  PYTHONPATH="$PYTHONPATH" python3 benchmarks/gpu/predict_levels.py --model "$MODEL" --input-tokens "$PLAN_IN" \
    --output-tokens "$OUT_TOK" --fractions "$FRACTIONS" ${FIXED_S[@]+"${FIXED_S[@]}"} --out "$W/res/predictions.json" \
    | tee "$W/res/predictions.txt"
  [ -s "$W/res/predictions.json" ] || { say "no predictions: nothing run"; exit 1; }
  RATES=$(python3 -c "import json; print(','.join(f'{r:.3g}' for r in json.load(open('$W/res/predictions.json'))['rates']))")
  SEED=$(python3 -c "import json; print(json.load(open('$W/res/predictions.json')).get('bench_seed', 0))")
  cp "$W/res/predictions.json" "$OUT/predictions.json"
  say "levels: $RATES (bench seed $SEED)"
  start_server "$W/deploy-open" --rate 1 --no-headroom
  if [ -n "${BATCH1:-}" ]; then  # batch-1 decode: one client, BATCH1 prompts, before the levels (the server log has it)
    say "closed loop of one client, $BATCH1 prompts"
    closed_loop batch1 "$IN_TOK" 1 "$BATCH1"
  fi
  # seconds of arrivals per level: what is left of ~9.5 minutes after the server is up, over the levels, each level
  # then draining its queue (past saturation a level drains for about (1 - served/offered) of its length)
  N_LEVELS=$(echo "$RATES" | tr ',' '\n' | wc -l)
  LEFT=$(( ${BUDGET_S:-560} - ($(date +%s) - T0) ))
  if [ -z "${LEVEL_S:-}" ]; then
    LEVEL_S=$(( LEFT * 10 / 13 / N_LEVELS )); [ "$LEVEL_S" -gt "${LEVEL_MAX_S:-60}" ] && LEVEL_S=${LEVEL_MAX_S:-60}
  fi
  PROMPTS=$(python3 -c "print(int(max(float(r) for r in '$RATES'.split(',')) * $LEVEL_S * 1.6) + 10)")
  say "open loop: $N_LEVELS levels x $LEVEL_S s of arrivals, at most $PROMPTS requests each, ${LEFT}s left"
  timeout $(( LEFT - 15 )) python3 -m infer_advisor.cli bench --engine openai --url http://127.0.0.1:8080 --model "$MODEL" \
    --input-tokens "$IN_TOK" --output-tokens "$OUT_TOK" --request-rate "$RATES" --num-prompts "$PROMPTS" --seed "$SEED" \
    --max-duration "$LEVEL_S" --ignore-eos --out "$W/res/open" --json >"$W/res/open.json" 2>"$W/res/open.err"
  tail -8 "$W/res/open.err"
  stop_server
fi
say "done"
