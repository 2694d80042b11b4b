#!/bin/sh
# vit eval under mpirun (2 and 3 ranks, one thread each) against one process on the same folder:
# the report, the JSON document and the predictions identical but for the timings. The folder:
# 30 images of ../shared's imagenet-sample-100 and two unreadable files, so the skipped list's
# order is checked too. vit embed of texts over 2 and 3 ranks against one process, byte for byte.
# vit train of images, texts, tagged words and scores: 2 processes against one.
# Skips loudly without ../shared, mpirun or an MPI build. Prints a
# cmocka-style summary for tests/run.
set -u
cd "$(dirname "$0")/.." || exit 1
vit=${VIT_BIN:-bin/vit}
skip() {
    echo "SKIP mpi: $*"
    echo "[  SKIPPED ] 1 test(s), listed below:"
    exit 0
}
fail() {
    echo "mpi: $*"
    echo "[  FAILED  ] 1 test(s), listed below:"
    exit 1
}
shared=${VIT_SHARED:-../shared}
[ -d "$shared/data/imagenet-sample-100" ] || skip "$shared/data/imagenet-sample-100 not found"
command -v mpirun >/dev/null || skip "mpirun not installed (openmpi-bin)"
"$vit" info -m models/fashion-vit | grep -q '^mpi: *Open MPI' || skip "this vit has no MPI built in"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 # CI runs as root
# Under `make asan`: OpenMPI's own allocations at exit are reported as leaks by LeakSanitizer
# (its plugins are unloaded before the report, so they cannot be suppressed by name): leak
# detection off for the processes mpirun starts; the address and UB checks stay on.
mpirun() { env ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" mpirun "$@"; }
dir=$(mktemp -d /tmp/vit-mpi-XXXXXX)
trap 'rm -rf "$dir"' EXIT
# vit embed of texts: the batches dealt out among 2 and 3 ranks give process 0 the same rows as
# one process (each batch holds the same texts, so each row is the same computation), and the
# files are identical byte for byte: .npy, .safetensors and the list of inputs beside them, and
# the lines of '-'. 300 SST-2 sentences (a TSV's column by its header name) in batches of 16 (19,
# the last short); a sentence-transformers folder with a prompt and Matryoshka dimensions; a file
# that cannot be read is reported once and left out, by one process as by three.
head -n 301 "$shared/data/sst2/train.tsv" >"$dir/sst-embed.tsv"
bert="-m $shared/models/bert-sst2-tiny -t 1 -b 16 --column sentence $dir/sst-embed.tsv"
cut -f 1 "$dir/sst-embed.tsv" | tail -n +2 >"$dir/sst-lines.txt"
st="-m tests/data/st-prompt-micro -t 1 -b 8 --prompt query --dimensions 4 $dir/sst-lines.txt $dir/none.txt"
embed() { # ranks (0: no mpirun), the output, the arguments
    n=$1 out=$2 && shift 2
    if [ "$n" = 0 ]; then
        "$vit" embed "$@" -o "$out" >"$dir/embed.out" 2>"$dir/embed.err"
    else
        mpirun -np "$n" --oversubscribe "$vit" embed "$@" -o "$out" >"$dir/embed.out" 2>"$dir/embed.err"
    fi
}
for n in 0 2 3; do
    for f in npy safetensors; do
        # shellcheck disable=SC2086
        embed "$n" "$dir/e$n.$f" $bert || fail "embed, $n ranks, .$f: $(cat "$dir/embed.err")"
        mv "$dir/e$n.txt" "$dir/e$n-$f.txt"
    done
    # shellcheck disable=SC2086
    embed "$n" - $bert || fail "embed, $n ranks, -: $(cat "$dir/embed.err")"
    mv "$dir/embed.out" "$dir/e$n.lines"
    # shellcheck disable=SC2086
    embed "$n" "$dir/s$n.npy" $st && fail "embed, $n ranks: a missing file was not reported (exit 0)"
    [ "$(grep -c 'none.txt' "$dir/embed.err")" = 1 ] ||
        fail "embed, $n ranks: the missing file: $(cat "$dir/embed.err")"
    [ "$n" = 0 ] && continue
    for f in e$n.npy e$n.safetensors e$n-npy.txt e$n-safetensors.txt e$n.lines s$n.npy s$n.txt; do
        cmp -s "$dir/$f" "$dir/$(echo "$f" | sed "s/^\([es]\)$n/\10/")" || fail "embed, $n ranks: $f differs"
    done
done
if [ "$(wc -l <"$dir/e0.lines")" != 300 ] || [ "$(grep -c . "$dir/s0.txt")" != 300 ]; then
    fail "embed: not 300 rows: $(wc -l <"$dir/e0.lines") $(wc -l <"$dir/s0.txt")"
fi
mpirun -np 2 --oversubscribe "$vit" embed examples/photos -o "$dir/i.npy" >/dev/null 2>"$dir/i.err" &&
    fail "vit embed of images under mpirun was not refused"
[ "$(grep -c 'images are embedded by one process' "$dir/i.err")" = 1 ] || fail "images: $(cat "$dir/i.err")"
# a model that fails on one process only: each exits 1 with a message of its own, within a minute
mkdir "$dir/broken-embed" && printf '{not json' >"$dir/broken-embed/config.json"
timeout 60 env ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" mpirun --tag-output \
    --oversubscribe -np 1 "$vit" embed -m tests/data/st-mean-micro "$dir/sst-lines.txt" -o "$dir/x.npy" : \
    -np 1 "$vit" embed -m "$dir/broken-embed" "$dir/sst-lines.txt" -o "$dir/x.npy" >"$dir/fail.out" 2>&1
status=$?
[ $status = 124 ] && fail "embed, a broken model on rank 1: still running after 60 s"
[ $status != 0 ] || fail "embed, a broken model on rank 1: exit 0"
for rank in 0 1; do
    grep -q "^\[1,$rank\]<stderr>:vit embed: " "$dir/fail.out" ||
        fail "embed, a broken model on rank 1: rank $rank said nothing: $(cat "$dir/fail.out")"
done
echo "mpi: embed of 300 texts (2 models, .npy, .safetensors, -) with 2 and 3 ranks: the same bytes as one process"
for d in $(ls "$shared/data/imagenet-sample-100" | head -n 30); do
    mkdir -p "$dir/data/$d"
    cp "$shared/data/imagenet-sample-100/$d"/* "$dir/data/$d/"
done
first=$(ls "$dir/data" | head -n 1)
last=$(ls "$dir/data" | tail -n 1)
printf 'not an image' >"$dir/data/$first/broken.jpg"
head -c 100 "$shared/data/imagenet-sample-100/$last"/*.JPEG >"$dir/data/$last/cut.JPEG"
run() { # ranks (0: no mpirun), output prefix
    set -- "$1" "$dir/out$1"
    args="eval -t 1 -b 4 --class-map $shared/data/imagenet-wnids.txt --json-file $2.json --predictions $2.tsv $dir/data"
    if [ "$1" = 0 ]; then
        # shellcheck disable=SC2086
        "$vit" $args >"$2.txt" 2>"$2.err"
    else
        # shellcheck disable=SC2086
        mpirun -np "$1" --oversubscribe "$vit" $args >"$2.txt" 2>"$2.err"
    fi
}
# The same files, true and predicted classes, and probabilities within 1e-5: a rank's batches hold
# other images than one process's, and where the GEMM kernels' rounding depends on the rows beside
# a row (OpenBLAS's and oneDNN's AVX2 kernels; not their AVX-512 ones) the probabilities differ in
# the 6th digit (measured: 2e-6 at most on a Zen 3).
same_predictions() {
    paste "$1" "$2" | awk -F '\t' 'NF != 8 || $1 != $5 || $2 != $6 || $3 != $7 { exit 1 }
        NR > 1 { d = $4 - $8; if (d > 1e-5 || d < -1e-5) exit 1 }' &&
        [ "$(wc -l <"$1")" = "$(wc -l <"$2")" ]
}
untimed() { grep -v -e '^time:' -e '"seconds"' -e '"images_per_second"' "$1"; }
run 0 || fail "one process: $(cat "$dir/out0.err")"
grep -q 'skipped' "$dir/out0.txt" || fail "the folder's two bad files were not skipped"
for n in 2 3; do
    run "$n" || fail "$n ranks: exit $?: $(cat "$dir/out$n.err")"
    same_predictions "$dir/out0.tsv" "$dir/out$n.tsv" || fail "$n ranks: predictions differ"
    untimed "$dir/out0.txt" >"$dir/a" && untimed "$dir/out$n.txt" >"$dir/b"
    cmp -s "$dir/a" "$dir/b" || fail "$n ranks: the report differs: $(diff "$dir/a" "$dir/b")"
    untimed "$dir/out0.json" >"$dir/a" && untimed "$dir/out$n.json" >"$dir/b"
    cmp -s "$dir/a" "$dir/b" || fail "$n ranks: the JSON differs: $(diff "$dir/a" "$dir/b")"
done
# a TSV is one process's work: refused once, not once per rank
mpirun -np 2 --oversubscribe "$vit" eval "$shared/data/sst2/dev.tsv" >/dev/null 2>"$dir/tsv.err" &&
    fail "a TSV under mpirun was not refused"
[ "$(grep -c 'evaluated by one process' "$dir/tsv.err")" = 1 ] || fail "TSV refusal: $(cat "$dir/tsv.err")"
# any other command is refused, once
mpirun -np 2 --oversubscribe "$vit" classify examples/photos/cat.jpg >/dev/null 2>"$dir/c.err" &&
    fail "vit classify under mpirun was not refused"
[ "$(grep -c "runs in one process" "$dir/c.err")" = 1 ] || fail "refusal: $(cat "$dir/c.err")"

# a failure on one process only (a broken model on rank 1; rank 0's --predictions path that
# cannot be written): every process exits with a message of its own, within a minute, and none
# calls MPI_Abort
mkdir "$dir/broken" && printf '{not json' >"$dir/broken/config.json"
one_fails() { # what, then mpirun's arguments
    what=$1 && shift
    timeout 60 env ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
        mpirun --tag-output --oversubscribe "$@" >"$dir/fail.out" 2>&1
    status=$?
    [ $status = 124 ] && fail "$what: still running after 60 s"
    [ $status != 0 ] || fail "$what: exit 0"
    ! grep -q MPI_ABORT "$dir/fail.out" || fail "$what: MPI_Abort: $(cat "$dir/fail.out")"
    for rank in 0 1; do
        grep -q "^\[1,$rank\]<stderr>:vit eval: " "$dir/fail.out" ||
            fail "$what: rank $rank said nothing: $(cat "$dir/fail.out")"
    done
    echo "mpi: $what: both processes exit 1 with a message: $(grep -c '<stderr>:vit' "$dir/fail.out") lines"
}
wnids="--class-map $shared/data/imagenet-wnids.txt"
# shellcheck disable=SC2086 # $wnids: two words
one_fails "a broken model on rank 1" -np 1 "$vit" eval -t 1 $wnids "$dir/data" : \
    -np 1 "$vit" eval -t 1 -m "$dir/broken" $wnids "$dir/data"
# shellcheck disable=SC2086
one_fails "rank 0's output unwritable" -np 2 "$vit" eval -t 1 $wnids \
    --predictions "$dir/none/p.tsv" "$dir/data"

# training: 2 processes with a global batch of 32 against one with 32, dropout and augmentation
# on: the same losses (printed to 4 places) and the same weights up to float32 summation order
# (the two halves' gradients are summed by MPI, not inside one product). Adam turns a rounding
# difference in a near-zero gradient into a step of up to the learning rate either way, so the
# bound on the largest difference is 2 x lr (1e-3) x steps, and differences grow as training goes
# on (measured: mean 1.2e-7 after 3 steps, 9.4e-6 after 400); the mean must stay below 5e-7 per
# step.
check_dw() { # dir1 dir2 steps what
    set -- "$(max_dw "$1" "$2")" "$3" "$4"
    [ -n "$1" ] || fail "$3: cannot compare the weights"
    awk -v m="${1% *}" -v a="${1#* }" -v s="$2" 'BEGIN {exit !(m <= 2e-3 * s && a <= 5e-7 * s)}' ||
        fail "$3: weights differ by max/mean $1 (allowed $(awk -v s="$2" 'BEGIN {print 2e-3 * s, 5e-7 * s}'))"
    echo "mpi: $3: max/mean |dw| $1"
}
rm "$dir/data/$first/broken.jpg" "$dir/data/$last/cut.JPEG" # training needs every image whole
train="--train $dir/data --val-split 0 --batch 32 --image-size 32 --patch 8 --hidden 32 --layers 2
       --heads 2 --mlp 64 --dropout 0.1 --attention-dropout 0.1 -t 1"
max_dw() {
    /usr/bin/python3 - "$1" "$2" <<'PY' 2>/dev/null || "$vit" info -m "$1" >/dev/null
import json, struct, sys
def load(p):
    d = open(p + "/model.safetensors", "rb").read()
    n = struct.unpack("<Q", d[:8])[0]
    h = json.loads(d[8:8 + n])
    return {k: struct.unpack("<%df" % ((v["data_offsets"][1] - v["data_offsets"][0]) // 4),
                             d[8 + n + v["data_offsets"][0]:8 + n + v["data_offsets"][1]])
            for k, v in h.items() if k != "__metadata__"}
a, b = load(sys.argv[1]), load(sys.argv[2])
d = [abs(x - y) for k in a for x, y in zip(a[k], b[k])]
print("%.3g %.3g" % (max(d), sum(d) / len(d)))
PY
}
# shellcheck disable=SC2086
"$vit" train $train --epochs 3 --out "$dir/one" >"$dir/one.log" 2>&1 || fail "one process: $(cat "$dir/one.log")"
# shellcheck disable=SC2086
mpirun -np 2 --oversubscribe "$vit" train $train --epochs 3 --out "$dir/two" >"$dir/two.log" 2>&1 ||
    fail "2 processes: $(cat "$dir/two.log")"
grep '^epoch' "$dir/one.log" | sed 's/, [0-9.]* s (.*//' >"$dir/a"
grep '^epoch' "$dir/two.log" | sed 's/, [0-9.]* s (.*//' >"$dir/b"
cmp -s "$dir/a" "$dir/b" || fail "losses differ: $(paste "$dir/a" "$dir/b")"
check_dw "$dir/one" "$dir/two" 3 "train 1 vs 2 processes, 3 steps, losses equal"
# Mixup and CutMix: each process mixes its part with partners from the other's (the batch
# reversed), drawn as one process would
# shellcheck disable=SC2086
"$vit" train $train --mixup 0.8 --cutmix 1 --epochs 3 --out "$dir/one-mixed" >"$dir/one-mixed.log" 2>&1 ||
    fail "one process, mixed: $(cat "$dir/one-mixed.log")"
# shellcheck disable=SC2086
mpirun -np 2 --oversubscribe "$vit" train $train --mixup 0.8 --cutmix 1 --epochs 3 --out "$dir/two-mixed" \
    >"$dir/two-mixed.log" 2>&1 || fail "2 processes, mixed: $(cat "$dir/two-mixed.log")"
grep '^epoch' "$dir/one-mixed.log" | sed 's/, [0-9.]* s (.*//' >"$dir/a"
grep '^epoch' "$dir/two-mixed.log" | sed 's/, [0-9.]* s (.*//' >"$dir/b"
cmp -s "$dir/a" "$dir/b" || fail "mixed losses differ: $(paste "$dir/a" "$dir/b")"
grep '^epoch' "$dir/one.log" | sed 's/, [0-9.]* s (.*//' | cmp -s - "$dir/a" && fail "--mixup and --cutmix changed nothing"
check_dw "$dir/one-mixed" "$dir/two-mixed" 3 "train 1 vs 2 processes mixed, 3 steps, losses equal"
# text: a new BERT on 300 SST-2 sentences, 2 epochs of 9 steps (batches padded to their longest
# sentence: each process's part to the whole batch's), dropout and word dropout on
head -n 301 "$shared/data/sst2/train.tsv" >"$dir/sst.tsv"
text="--train $dir/sst.tsv --val-split 0 --vocab $shared/models/bert-sst2-tiny/vocab.txt --hidden 32
      --layers 2 --heads 2 --mlp 64 --max-len 64 --epochs 2 --batch 32 --dropout 0.1
      --attention-dropout 0.1 --token-dropout 0.1 -t 1"
# shellcheck disable=SC2086
"$vit" train $text --out "$dir/t1" >"$dir/t1.log" 2>&1 || fail "text, one process: $(cat "$dir/t1.log")"
# Every process builds the tokenizer in memory: none writes a file outside the run's folders. With
# strace installed, the processes' file creations are traced (OpenMPI's session files go to
# TMPDIR, inside $dir) and any under /tmp but outside $dir fails the test.
tracer=
if command -v strace >/dev/null; then
    mkdir "$dir/tmp" "$dir/trace"
    tracer="strace -f -qq -e trace=mkdir,mkdirat,creat,open,openat -ff -o $dir/trace/t"
fi
# shellcheck disable=SC2086
TMPDIR="$dir/tmp" mpirun -np 2 --oversubscribe $tracer "$vit" train $text --out "$dir/t2" \
    >"$dir/t2.log" 2>&1 || fail "text, 2 processes: $(cat "$dir/t2.log")"
if [ -n "$tracer" ]; then
    written=$(cat "$dir"/trace/t.* | grep -E '^(mkdir|creat)|O_CREAT' | grep -v '= -1' |
        grep '"/tmp/' | grep -v "\"$dir/")
    [ -z "$written" ] || fail "text, 2 processes: files created outside the run's folders: $written"
    echo "mpi: text, 2 processes: no file created under /tmp but in the run's own folders (strace)"
fi
grep '^epoch' "$dir/t1.log" | sed 's/, [0-9.]* s (.*//' >"$dir/a"
grep '^epoch' "$dir/t2.log" | sed 's/, [0-9.]* s (.*//' >"$dir/b"
cmp -s "$dir/a" "$dir/b" || fail "text losses differ: $(paste "$dir/a" "$dir/b")"
check_dw "$dir/t1" "$dir/t2" 18 "text, 1 vs 2 processes, 18 steps, losses equal"
# tagged words (--tags, the token cross-entropy over the whole batch's labelled tokens) and scores
# of pairs (--regression, MSE): fine-tuning the micro models, 1 vs 2 processes, dropout on
for _ in 1 2 3 4; do
    printf 'the O\ncat B-PER\nsat O\non O\nthe O\nmat B-LOC\n\na O\ndog B-PER\nran O\nfar O\naway B-LOC\n\n'
    printf 'the O\nzebra B-PER\nslept O\n\nthe O\ndog B-PER\nsat O\non O\nthe O\nmat B-LOC\n\n'
done >"$dir/tags.conll"
printf 'a\tb\tscore\nthe cat sat\tthe cat sat\t5\nthe cat sat\ta dog ran\t1\nit was very good\tit was good\t4.2
the zebra slept\tthe mat\t0.4\na dog ran far away\ta dog ran\t3.5\nthe mat\tthe mat\t5
it was good\tthe zebra slept\t0\nthe cat ran\tthe cat sat\t3.1\n' >"$dir/sts.tsv"
for task in tags regression; do
    case $task in
    tags) args="--init tests/data/bert-tok-micro --tags --train $dir/tags.conll --batch 8" ;;
    regression) args="--init tests/data/bert-pair-micro --pair --regression --train $dir/sts.tsv --batch 4" ;;
    esac
    # 16 sentences in batches of 8, 8 pairs in batches of 4: 2 steps an epoch
    args="$args --val-split 0 --epochs 3 --dropout 0.1 --attention-dropout 0.1 --seed 3 -t 1"
    # shellcheck disable=SC2086
    "$vit" train $args --out "$dir/$task-1" >"$dir/$task-1.log" 2>&1 ||
        fail "$task, one process: $(cat "$dir/$task-1.log")"
    # shellcheck disable=SC2086
    mpirun -np 2 --oversubscribe "$vit" train $args --out "$dir/$task-2" >"$dir/$task-2.log" 2>&1 ||
        fail "$task, 2 processes: $(cat "$dir/$task-2.log")"
    grep '^epoch' "$dir/$task-1.log" | sed 's/, [0-9.]* s (.*//' >"$dir/a"
    grep '^epoch' "$dir/$task-2.log" | sed 's/, [0-9.]* s (.*//' >"$dir/b"
    [ -s "$dir/a" ] || fail "$task: no epoch line: $(cat "$dir/$task-1.log")"
    cmp -s "$dir/a" "$dir/b" || fail "$task losses differ: $(paste "$dir/a" "$dir/b")"
    check_dw "$dir/$task-1" "$dir/$task-2" 6 "--$task, 1 vs 2 processes, 6 steps, losses equal"
done

# stopped under 2 processes (SIGINT after the first epoch), resumed by one: as the run above, at
# 64x64 with hidden 64 so that a step takes long enough for the signal to land mid-run on a quiet
# machine (at 32x32 the 100 steps could end before it arrived)
long="$train --image-size 64 --hidden 64 --mlp 128"
# shellcheck disable=SC2086
# (env execs mpirun: $! is mpirun's pid, which must get the signal)
env ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
    mpirun -np 2 --oversubscribe "$vit" train $long --epochs 300 --out "$dir/stop" >"$dir/stop.log" 2>&1 &
pid=$!
for _ in $(seq 600); do [ -s "$dir/stop/train_log.jsonl" ] && break; sleep 0.05; done
kill -INT $pid
wait $pid
[ -f "$dir/stop/train_state.safetensors" ] || fail "no checkpoint after SIGINT: $(tail -n 3 "$dir/stop.log")"
stopped=$(grep -c . "$dir/stop/train_log.jsonl")
"$vit" train --out "$dir/stop" --resume -t 1 >"$dir/resume.log" 2>&1 || fail "resume: $(cat "$dir/resume.log")"
# shellcheck disable=SC2086
"$vit" train $long --epochs 300 --out "$dir/whole" >/dev/null 2>&1 || fail "the uninterrupted run"
check_dw "$dir/whole" "$dir/stop" 300 "stopped under 2 processes at step $stopped, resumed by 1, 300 steps, against one uninterrupted"
echo "mpi: eval of 32 files (2 unreadable) with 2 and 3 ranks equals one process's report, JSON and predictions"
echo "[  PASSED  ] 1 test(s)."
