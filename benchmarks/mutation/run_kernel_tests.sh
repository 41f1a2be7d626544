#!/bin/bash
# Fast tests of the CGS-PFA kernel against the mutated copy in /tmp/crwork/main; numba's JIT
# is off (each mutant would otherwise recompile every kernel); cheapest tests first, -x.
cd /tmp/crwork/main
export PYTHONPATH=/tmp/crwork/main NUMBA_DISABLE_JIT=1
exec nice -n 15 "${BAYESFA_PYTHON:-python}" -m pytest -x -q -p no:cacheprovider \
  "tests/test_cgs_pfa.py::test_log_joint_equals_eq4" \
  "tests/test_cgs_pfa.py::test_inversion_at_the_top_of_the_unit_interval" \
  "tests/test_cgs_pfa.py::test_counts_stay_consistent_with_z" \
  "tests/test_cgs_pfa.py::test_trace_and_counts_of_a_run" \
  "tests/test_cgs_pfa.py::test_empty_strings" \
  "tests/test_cgs_pfa.py::test_inversion_equals_exact_conditional" \
  "tests/test_cgs_pfa.py::test_conditional_goodness_of_fit" \
  "tests/test_cgs_pfa.py::test_a_sweep_is_its_positions_one_at_a_time" \
  "tests/test_cgs_pfa.py::test_inversion_equals_exact_conditional_at_equal_states" \
  "tests/test_cgs_pfa.py::test_padded_width_is_the_smallest_multiple_of_lanes_holding_every_state" \
  "tests/test_cgs_pfa.py::test_counts_past_the_last_state_are_ignored" \
  "tests/test_cgs_pfa.py::test_sweeps_and_draws_are_sweep_positions_with_one_uniform_block_per_sweep" \
  >/dev/null 2>&1
