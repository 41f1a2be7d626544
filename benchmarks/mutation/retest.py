"""Re-run a cosmic-ray session's surviving mutants against further tests.

    python retest.py SESSION.sqlite WORKDIR [--lines L1,L2,...] -- PYTEST_ARGS...

``WORKDIR`` holds ``main/`` (a copy of the repository at the commit the session mutated, with
the tests to try copied in). For each survivor the mutation is applied there
(``cosmic_ray.mutating.use_mutation``, which restores the file afterwards; a session's
absolute path into its own work copy is mapped to ``WORKDIR/main``), pytest runs with
``NUMBA_DISABLE_JIT=1`` as in the session, and the line ``killed|survived OPERATOR OCCURRENCE
LINE: code`` is printed. ``--lines``: only the survivors on these lines of the mutated module.
"""
import os
import subprocess
import sys
from pathlib import Path

from cosmic_ray.mutating import use_mutation
from cosmic_ray.plugins import get_operator
from cosmic_ray.work_db import WorkDB, use_db
from cosmic_ray.work_item import TestOutcome


def _in_workdir(module: Path, workdir: Path) -> Path:
    """The mutated module's file in ``WORKDIR/main``: sessions made by ``run.py`` record absolute
    paths into their own work copy, which must never be mutated from here (its session may be
    running, and its tests would see the mutant); a relative path is taken from ``workdir``."""
    if not module.is_absolute():
        return workdir / module
    parts = module.parts
    if "bayesfa" not in parts:
        sys.exit(f"retest.py: {module}: not a file under bayesfa/")
    return workdir / "main" / Path(*parts[parts.index("bayesfa"):])


def main() -> None:
    session, workdir = sys.argv[1], Path(sys.argv[2]).resolve()
    args = sys.argv[sys.argv.index("--") + 1:]
    lines = None
    if "--lines" in sys.argv[:sys.argv.index("--")]:
        lines = {int(x) for x in sys.argv[sys.argv.index("--lines") + 1].split(",")}
    env = {**os.environ, "NUMBA_DISABLE_JIT": "1", "PYTHONPATH": str(workdir / "main"),
           "PYTHONDONTWRITEBYTECODE": "1"}
    with use_db(session, WorkDB.Mode.open) as db:
        survivors = [(item, result) for item, result in db.completed_work_items
                     if result.test_outcome == TestOutcome.SURVIVED]
    os.chdir(workdir)
    for item, _ in sorted(survivors, key=lambda x: (x[0].mutations[0].start_pos, x[0].job_id)):
        spec = item.mutations[0]
        if lines is not None and spec.start_pos[0] not in lines:
            continue
        operator = get_operator(spec.operator_name)()
        module = _in_workdir(Path(spec.module_path), workdir)
        with use_mutation(module, operator, spec.occurrence):
            code = subprocess.call([sys.executable, "-m", "pytest", "-x", "-q", "-p",
                                    "no:cacheprovider", *args], cwd=workdir / "main", env=env,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            line = module.read_text().splitlines()[spec.start_pos[0] - 1].strip()
        print("killed" if code else "survived", spec.operator_name.split("/")[-1], spec.occurrence,
              f"{spec.start_pos[0]}: {line}", flush=True)


if __name__ == "__main__":
    main()
