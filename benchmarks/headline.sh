#!/usr/bin/env bash
# The headline GPU benchmarks of every study, for a before/after check of a refactor (issue 24), on the device
# machine: bash benchmarks/headline.sh PART [OLD_TREE]. PART a: bec_throughput, orbitals at TiO2-1536 and
# helium through the Run (helium_run_cuda.py); b: atoms_throughput gpu; c: helium_gpu peaks,twins,speed;
# d: orbitals at TiO2-1536 and lattice_chains twin,gpu,cpu1. With OLD_TREE (a copy of an older checkout's
# qmckit/, benchmarks/ and data/) parts a, b and d also run that tree's bec, atoms and orbitals scripts in the
# same call (A/B). Results go to $OUT/PART.tar.gz.
set -uo pipefail
part=$1; old=${2:-}
res=/tmp/res_$part; mkdir -p "$res"
export PYTHONUNBUFFERED=1
ab() {  # run a benchmark script in this tree and, when given, in the old one
  local name=$1; shift
  python benchmarks/$name.py "$@" --out "$res/new" 2>&1 | tee "$res/${name}_new.log"
  if [ -n "$old" ]; then (cd "$old" && python benchmarks/$name.py "$@" --out "$res/old" 2>&1 | tee "$res/${name}_old.log"); fi
}
case $part in
  a) ab bec_throughput
     python benchmarks/orbitals.py --sizes TiO2-1536 --out "$res/new" 2>&1 | tee "$res/orbitals.log"
     python benchmarks/helium_run_cuda.py --out "$res/new" 2>&1 | tee "$res/helium_run_cuda.log" ;;
  b) ab atoms_throughput gpu --tag h100 --budget "${BUDGET:-240}" ;;
  c) python benchmarks/helium_gpu.py --stages peaks,twins,speed --tag h100i24 --budget 480 --out "$res/new" 2>&1 | tee "$res/helium.log" ;;
  d) ab orbitals --sizes TiO2-1536
     python benchmarks/lattice_chains.py --stages twin,gpu,cpu1 --repeats 2 --out "$res/new" 2>&1 | tee "$res/lattice.log" ;;
esac
tar czf "$OUT/$part.tar.gz" -C "$res" .
