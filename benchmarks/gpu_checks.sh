#!/usr/bin/env bash
# Issue 43's checks on a GPU machine, prepared to run in the few minutes such a machine is lent (one command is
# allowed 10 minutes there, so the steps can be split over two: `tests model`, then `generation`):
#   tests       the `gpu` tests: cuda's bytes against the CPU's for every recipe that runs on the device (~2 min);
#   generation  benchmarks/gpu_generation.py at $STORIES (5,000 and 50,000): the machine's CPU cores, the GPU, and
#               Ray with $RAY_WORKERS (15) GPU actors; a run past $RUN_TIMEOUT s (200: the model puts 16 cores at
#               160 s for 50,000 stories) is reported as a lower bound (~6 min);
#   model       benchmarks/gpu_model.py's prediction for the same sizes, from one profile of this machine's CPU (~2 min).
# Each step has a time limit, so that one that hangs leaves the others their time; its stdout and stderr go to
# OUT_DIR/STEP.out and STEP.log, and a failed step is reported in one line before the next one runs.
#   usage: benchmarks/gpu_checks.sh OUT_DIR [tests] [generation] [model]   (default: all three; python: $PYTHON)
set -uo pipefail
if [ -z "${1:-}" ]; then echo "usage: benchmarks/gpu_checks.sh OUT_DIR [tests] [generation] [model]" >&2; exit 2; fi
out=$(realpath -m "$1")  # before the cd below
shift
if [ $# -gt 0 ]; then steps=("$@"); else steps=(tests generation model); fi
for step in "${steps[@]}"; do
    case $step in tests | generation | model) ;; *) echo "unknown step $step: choose tests, generation or model" >&2; exit 2 ;; esac
done
python=${PYTHON:-python3}
stories=${STORIES:-5000,50000}
cd "$(dirname "$0")/.."
mkdir -p "$out"

run_step() {  # NAME SECONDS COMMAND...
    local name=$1 limit=$2 started=$SECONDS status
    shift 2
    timeout "$limit" "$@" > "$out/$name.out" 2> "$out/$name.log"
    status=$?
    if [ $status -eq 0 ]; then
        echo "$name: done in $((SECONDS - started)) s"
    else
        echo "$name: failed (exit $status$([ $status -eq 124 ] && echo ", stopped at its ${limit} s limit")) after $((SECONDS - started)) s; see $out/$name.log"
    fi
}

nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv > "$out/gpu.csv" 2>&1 || echo "nvidia-smi: none here" > "$out/gpu.csv"
for step in "${steps[@]}"; do
    case $step in
        tests) run_step tests 240 "$python" -m pytest -m gpu -p no:cacheprovider -q tests/test_corrupt_command.py ;;
        generation) run_step generation 540 "$python" benchmarks/gpu_generation.py --stories "$stories" \
            --ray-workers "${RAY_WORKERS:-15}" --run-timeout "${RUN_TIMEOUT:-200}" --json ;;
        model) run_step model 300 "$python" benchmarks/gpu_model.py --predict "$stories" --repeats 1 --json ;;
    esac
done
