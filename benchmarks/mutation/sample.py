"""Keep a seeded random sample of a cosmic-ray session's jobs; mark the rest SKIPPED."""
import sys
import numpy as np
from cosmic_ray.work_db import WorkDB, use_db
from cosmic_ray.work_item import WorkResult, WorkerOutcome
path, k, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
with use_db(path, WorkDB.Mode.open) as db:
    items = sorted(db.pending_work_items, key=lambda x: x.job_id)
    keep = set(np.random.default_rng(seed).choice(len(items), size=min(k, len(items)), replace=False).tolist())
    for i, item in enumerate(items):
        if i not in keep:
            db.set_result(item.job_id, WorkResult(worker_outcome=WorkerOutcome.SKIPPED,
                                                  output="not in the random sample"))
    print(len(items), "jobs,", len(keep), "kept")
