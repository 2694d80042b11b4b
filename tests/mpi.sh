#!/bin/sh
# vit eval under mpirun (2 and 3 ranks, one thread each) against one process on the same folder:
# the report, the JSON document and the predictions identical but for the timings. The folder:
# 30 images of ../shared's imagenet-sample-100 and two unreadable files, so the skipped list's
# order is checked too. Skips loudly without ../shared, mpirun or an MPI build. Prints a
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
dir=$(mktemp -d /tmp/vit-mpi-XXXXXX)
trap 'rm -rf "$dir"' EXIT
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
    args="eval -t 1 -b 4 --class-map $shared/data/imagenet-wnids.txt --json $2.json --predictions $2.tsv $dir/data"
    if [ "$1" = 0 ]; then
        # shellcheck disable=SC2086
        "$vit" $args >"$2.txt" 2>"$2.err"
    else
        # shellcheck disable=SC2086
        mpirun -np "$1" --oversubscribe "$vit" $args >"$2.txt" 2>"$2.err"
    fi
}
untimed() { grep -v -e '^time:' -e '"seconds"' -e '"images_per_second"' "$1"; }
run 0 || fail "one process: $(cat "$dir/out0.err")"
grep -q 'skipped' "$dir/out0.txt" || fail "the folder's two bad files were not skipped"
for n in 2 3; do
    run "$n" || fail "$n ranks: exit $?: $(cat "$dir/out$n.err")"
    cmp -s "$dir/out0.tsv" "$dir/out$n.tsv" || fail "$n ranks: predictions differ"
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
mpirun -np 2 --oversubscribe "$vit" train --train "$dir/data" --out "$dir/m" >/dev/null 2>"$dir/train.err" &&
    fail "vit train under mpirun was not refused"
[ "$(grep -c "runs in one process" "$dir/train.err")" = 1 ] || fail "train refusal: $(cat "$dir/train.err")"
[ ! -e "$dir/m" ] || fail "vit train under mpirun wrote $dir/m"
echo "mpi: eval of 32 files (2 unreadable) with 2 and 3 ranks equals one process's report, JSON and predictions"
echo "[  PASSED  ] 1 test(s)."
