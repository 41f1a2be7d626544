#!/bin/bash
# The forward-algorithm and scoring tests against the mutated copy in /tmp/crwork/main.
cd /tmp/crwork/main
export PYTHONPATH=/tmp/crwork/main NUMBA_DISABLE_JIT=1
exec nice -n 15 "${BAYESFA_PYTHON:-python}" -m pytest -x -q -p no:cacheprovider \
  tests/test_forward.py tests/test_scoring.py >/dev/null 2>&1
