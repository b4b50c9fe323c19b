#!/usr/bin/env bash
# Builds the libFuzzer targets in Fuzz/ (swiftc -sanitize=fuzzer,address)
# and runs them. See usage below and Fuzz/README.md.
set -euo pipefail

usage() {
  cat <<'USAGE'
usage: scripts/fuzz.sh [--smoke] [--runs N | --time S] [TARGET...]
       scripts/fuzz.sh --list | --check | --build-only [TARGET...]

Builds each target (default: every target in Fuzz/targets.list) into
.build-fuzz/ and runs it on its seeds in Fuzz/corpus/TARGET/.

  --smoke       short run (about 25 s in all); nothing is written back
  --runs N      run each target for N inputs
  --time S      run each target for S seconds (default 60; smoke: 25 s shared)
  --build-only  build, do not run
  --list        print the target names
  --check       exit 0 when the toolchain has the libFuzzer runtime, else 1

A run that is not --smoke keeps its working corpus in .build-fuzz/corpus/
and then merges inputs that add coverage into Fuzz/corpus/TARGET/.
Exits non-zero when a target crashes (or an invariant fails), printing the
path of the crashing input (under .build-fuzz/artifacts/). Reproduce with
.build-fuzz/bin/TARGET PATH. Fuzzers run under nice -n 10.
Exit status: 0 all ran clean, 1 a target crashed, 2 usage, build or
toolchain error.
USAGE
}

die() { echo "fuzz: ERROR: $*" >&2; exit 2; }
log() { echo "fuzz: $*" >&2; }

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
OUT="$ROOT/.build-fuzz"
LIST="Fuzz/targets.list"

smoke=0 runs="" seconds="" action=run
targets=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --smoke) smoke=1 ;;
    --runs) [[ $# -ge 2 && "$2" =~ ^[0-9]+$ ]] || die "--runs needs a number"; runs="$2"; shift ;;
    --time) [[ $# -ge 2 && "$2" =~ ^[0-9]+$ ]] || die "--time needs a number of seconds"; seconds="$2"; shift ;;
    --build-only) action=build ;;
    --list) action=list ;;
    --check) action=check ;;
    -h|--help) usage; exit 0 ;;
    -*) usage >&2; die "unknown option $1" ;;
    *) targets+=("$1") ;;
  esac
  shift
done
[[ -n "$runs" && -n "$seconds" ]] && die "--runs and --time exclude each other"

# NAME -> "SOURCES|FLAGS", from the list file (comments and blank lines skipped).
declare -A SOURCES FLAGS
ALL=()
while IFS='|' read -r name sources flags; do
  name="$(echo "$name" | xargs)"
  [[ -z "$name" || "$name" == \#* ]] && continue
  [[ -f "Fuzz/Targets/$name.swift" ]] || die "$LIST names $name but Fuzz/Targets/$name.swift is missing"
  ALL+=("$name")
  SOURCES[$name]="$(echo "$sources" | xargs)"
  FLAGS[$name]="$(echo "${flags:-}" | xargs)"
done < <(sed 's/#.*//' "$LIST")

if [[ "$action" == list ]]; then printf '%s\n' "${ALL[@]}"; exit 0; fi

# The runtime ships with the Swift toolchain, next to the sanitizers.
fuzzer_runtime() {
  local resource
  resource="$(dirname "$(dirname "$(command -v swiftc)")")/lib/swift/clang/lib/linux"
  ls "$resource"/libclang_rt.fuzzer-*.a 2>/dev/null | head -n 1
}
command -v swiftc >/dev/null 2>&1 || { log "swiftc not found"; [[ "$action" == check ]] && exit 1; exit 2; }
if [[ -z "$(fuzzer_runtime)" ]]; then
  log "the Swift toolchain has no libFuzzer runtime (libclang_rt.fuzzer); cannot fuzz"
  [[ "$action" == check ]] && exit 1
  exit 2
fi
if [[ "$action" == check ]]; then echo "libFuzzer runtime: $(fuzzer_runtime)"; exit 0; fi

[[ ${#targets[@]} -eq 0 ]] && targets=("${ALL[@]}")
for t in "${targets[@]}"; do
  [[ -n "${SOURCES[$t]+x}" ]] || die "unknown target $t (targets: ${ALL[*]})"
done

# A smoke run (the test suite's) builds unoptimised, into its own folder: it
# compiles in 16 s a target instead of 40 (each target compiles its sources
# whole), and 25 s of inputs still run; long runs keep their optimised build.
OPT=-O BIN="$OUT/bin"
if [[ $smoke -eq 1 ]]; then OPT=-Onone BIN="$OUT/bin-smoke"; fi
SWIFTC_FLAGS=(-swift-version 6 -package-name httpcache -parse-as-library "$OPT" -g
              -sanitize=fuzzer,address -use-ld=lld)

# Rebuilds only when the sources, the flags or the compiler changed.
build() {
  local t="$1" files=() s
  for s in ${SOURCES[$t]}; do
    if [[ -d "$s" ]]; then
      while IFS= read -r f; do files+=("$f"); done < <(find "$s" -name '*.swift' | sort)
    elif [[ -f "$s" ]]; then
      files+=("$s")
    else
      die "$t: source $s does not exist"
    fi
  done
  files+=(Fuzz/Support/*.swift "Fuzz/Targets/$t.swift")
  local bin="$BIN/$t" stamp="$BIN/$t.stamp" key
  key="$( { swiftc --version 2>&1; echo "${SWIFTC_FLAGS[*]}"; cat "${files[@]}"; } | sha256sum | cut -d' ' -f1)"
  if [[ -x "$bin" && -f "$stamp" && "$(cat "$stamp")" == "$key" ]]; then
    return 0
  fi
  log "building $t (${#files[@]} files)"
  mkdir -p "$BIN" "$OUT/modules/$t$OPT"
  rm -f "$stamp"
  swiftc "${SWIFTC_FLAGS[@]}" -module-name "Fuzz_${t//-/_}" -module-cache-path "$OUT/modules/$t$OPT" \
    "${files[@]}" -o "$bin" || die "$t: build failed"
  echo "$key" >"$stamp"
}

# Every target compiles its sources whole (-O, instrumented): build them a
# core each at once, then report the first failure.
jobs=$(nproc 2>/dev/null || echo 2)
pids=() names=()
for t in "${targets[@]}"; do
  while [[ $(jobs -rp | wc -l) -ge $jobs ]]; do wait -n || true; done
  ( build "$t" ) & pids+=($!) names+=("$t")
done
failed=""
for i in "${!pids[@]}"; do wait "${pids[$i]}" || failed="${failed:-${names[$i]}}"; done
[[ -z "$failed" ]] || die "$failed: build failed"
[[ "$action" == build ]] && exit 0

# Time per target: a smoke run shares about 25 s among the targets.
if [[ -z "$runs" && -z "$seconds" ]]; then
  if [[ $smoke -eq 1 ]]; then
    seconds=$(( 25 / ${#targets[@]} )); [[ $seconds -lt 2 ]] && seconds=2
  else
    seconds=60
  fi
fi

# Swift's own crash backtracer would read memory under ASan and bury the
# report; libFuzzer prints the stack itself.
export SWIFT_BACKTRACE=enable=no

status=0
for t in "${targets[@]}"; do
  seeds="Fuzz/corpus/$t"
  mkdir -p "$seeds" "$OUT/artifacts/$t" "$OUT/logs"
  if [[ $smoke -eq 1 ]]; then
    work="$(mktemp -d "${TMPDIR:-/tmp}/httpcache-fuzz-$t.XXXXXX")"
  else
    work="$OUT/corpus/$t"; mkdir -p "$work"
  fi
  limit=(-max_total_time="$seconds")
  [[ -n "$runs" ]] && limit=(-runs="$runs")
  # A smoke run (the test suite) must not clobber the log of a long run going on.
  logfile="$OUT/logs/$t.log"
  [[ $smoke -eq 1 ]] && logfile="$OUT/logs/$t.smoke.log"
  started=$(date +%s)
  # libFuzzer writes new inputs to the first corpus folder only: the seeds stay as they are.
  rc=0
  # shellcheck disable=SC2086 # FLAGS is a list of words
  nice -n 10 "$BIN/$t" "${limit[@]}" ${FLAGS[$t]} -print_final_stats=1 \
    -artifact_prefix="$OUT/artifacts/$t/" "$work" "$seeds" >"$logfile" 2>&1 || rc=$?
  elapsed=$(( $(date +%s) - started ))
  executed="$(grep -ao 'stat::number_of_executed_units: *[0-9]*' "$logfile" | grep -o '[0-9]*$' | tail -n 1 || true)"
  if [[ $rc -ne 0 ]]; then
    status=1
    crash="$(grep -ao 'Test unit written to .*' "$logfile" | sed 's/Test unit written to //' | tail -n 1 || true)"
    grep -aE 'fuzz invariant failed|ERROR: AddressSanitizer|Fatal error|SUMMARY' "$logfile" | head -n 5 >&2 || true
    echo "fuzz: $t: CRASH after ${executed:-?} inputs in ${elapsed} s (exit $rc); input: ${crash:-unknown}; log: $logfile"
  else
    echo "fuzz: $t: ok, ${executed:-0} inputs in ${elapsed} s"
  fi
  if [[ $smoke -eq 1 ]]; then
    rm -rf "$work"
  elif [[ $rc -eq 0 ]]; then
    before=$(find "$seeds" -type f | wc -l)
    # shellcheck disable=SC2086
    nice -n 10 "$BIN/$t" -set_cover_merge=1 ${FLAGS[$t]} "$seeds" "$work" >>"$logfile" 2>&1 \
      || { status=1; echo "fuzz: $t: merging into $seeds failed; log: $logfile"; }
    log "$t: $(( $(find "$seeds" -type f | wc -l) - before )) new inputs merged into $seeds"
  fi
done
exit "$status"
