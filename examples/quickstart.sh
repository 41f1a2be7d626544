#!/usr/bin/env bash
# The main job on bundled data: PAutomaC problem 24 (a 6-state PDFA over 5 letters).
# Fit CGS-PFA, predict the test set, score it against the true probabilities, diagnose.
#
# The budget is chosen so that the diagnosis is clean: with beta = 0.5 and this seed all four
# chains reach the main mode within the 2,500 burn-in sweeps (the slowest at about 2,300) and
# then collect over 100 effective draws each in 2,500 more. Chains from random starts can stay
# in poorer modes for thousands of sweeps (Shibata & Yoshinaka 2013, Fig. 12); with another
# seed or smaller budget `bayesfa diagnose` says which it is (a chain still drifting: more
# sweeps; chains converged in different modes: prediction averages over them, more chains).
# 2% of the training strings are held out of sampling (--holdout) to give the label-invariant
# heldout_log_pred that diagnose reports beside the log joint.
set -euo pipefail
cd "$(dirname "$0")/.."
D=bayesfa/data/pautomac
OUT=${1:-runs/quickstart}
mkdir -p "$OUT"
bayesfa fit "$D/24.pautomac.train" --method cgs-pfa --states 8 --beta 0.5 \
    --iterations 5000 --burn-in 2500 --period 5 --chains 4 --jobs 2 --seed 1 --out "$OUT/run"
bayesfa predict "$OUT/run" "$D/24.pautomac.test" --out "$OUT/pred.txt"
bayesfa score "$OUT/pred.txt" "$D/24.pautomac_solution.txt"
bayesfa diagnose "$OUT/run" --plot "$OUT/plots"
# The true machine, for comparison: exact probabilities from the model file.
bayesfa prob "$D/24.pautomac_model.txt" "$D/24.pautomac.test" --out "$OUT/exact.txt"
bayesfa score --json "$OUT/exact.txt" "$D/24.pautomac_solution.txt"
