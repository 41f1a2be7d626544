"""One run-directory format for every method.

A run directory holds

- ``manifest.json``: ``{"format": "bayesfa-run/1", "method", "options", "seed", "versions",
  "train": {"path", "sha256", "format", "separator" (if any), "n_strings", "n_letters",
  "alphabet_size", "alphabet"}, "info", "created"}``; ``train.format`` is a file format or
  ``symbols`` / ``corpus`` (Python data), ``train.alphabet`` the symbols (strings of any
  length, or integers) of letters ``0, 1, ...`` or null;
- ``arrays.npz``: the arrays the method's ``predict_log_prob`` needs;
- ``trace.nc`` (where the method has a trace): a sampler's draws with dims ``(chain, draw)``
  in the NetCDF groups ``posterior`` (model quantities) and ``sample_stats`` (the sampler's
  own statistics), split by :data:`SAMPLE_STATS`, so ``arviz.from_netcdf`` reads it; an
  optimiser's iterations in the group ``optimisation_history`` (dim ``iteration``).

Every file is written to a temporary name and renamed into place, and the manifest is
written last: a directory with a manifest is a finished run. While a fit runs, the directory
holds ``unfinished.json`` (what the run will be: method, options, seed, training data digest)
and the method's work directory ``partial/``; a rerun of the same command finds both and
resumes. :func:`plan_run` decides what ``bayesfa fit --out DIR [--force]`` may do with ``DIR``:
start, resume, say the identical run is already finished, refuse (a non-empty folder that is
not a run, or a run of other data or settings) or, with ``--force``, replace: the new run is
built in the sibling ``.DIR.bayesfa-new`` and swapped in only when complete (an atomic
``renameat2(RENAME_EXCHANGE)`` where the system has it), so the old run stays whole until
then and survives a crash.

Reading never ends in a traceback: a missing, truncated or corrupt ``manifest.json``,
``arrays.npz`` or ``trace.nc`` is an :class:`InputError` naming the file. :func:`load_run`
reads only the manifest; ``Run.arrays`` loads ``arrays.npz`` when first used, so
``diagnose`` needs only ``manifest.json`` and ``trace.nc``.

:func:`jsonable` is the one converter to strict JSON (non-finite numbers become ``null``
with a ``<key>_note`` saying why) for manifests and every ``--json`` output.

The manifest binds the run's other files: ``"files"`` records the SHA-256 of each
(``arrays.npz``, ``trace.nc``, ``predictions.npz``) and ``"fingerprint"`` is the SHA-256 of
the manifest's own canonical JSON (every other key, sorted, compact). A manifest edited by
hand or copied from another run, or a file that is not the one the manifest records, is an
:class:`InputError` in one line (:meth:`Run.verify`).

Every other file bayesfa writes for a user (``predict``/``prob`` solutions, exports, plots,
data splits, selection results) goes through :func:`write_output`: it refuses, in one line, a
directory or an existing file bayesfa did not write, writes to a temporary name and renames
it into place, creates files as ``open()`` does (mode ``0o666`` less the umask), records
what it wrote in the folder's ``.bayesfa-written.json`` (:data:`LEDGER`: file name ->
SHA-256, so a file bayesfa wrote and nobody changed since may be replaced by the next run
of the command), and, where a stream makes sense, takes ``-`` for standard output.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import gc
import hashlib
import json
import lzma
import math
import os
import platform
import secrets
import shutil
import struct
import sys
import tempfile
import time
import zipfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from bayesfa.corpus import TRAIN_FORMATS
from bayesfa.errors import InputError

FORMAT = "bayesfa-run/1"
MANIFEST = "manifest.json"
ARRAYS = "arrays.npz"
TRACE = "trace.nc"
UNFINISHED = "unfinished.json"  # what an unfinished run will be (see plan_run)
WORKDIR = "partial"  # a method's saved pieces of an unfinished fit
STAGING = ".{name}.bayesfa-new"  # sibling where --force builds the replacement run
#: Options that change how a fit runs but not its result (the interleaved kernel is
#: bit-identical to chains run one by one; a sharded fit's result depends on its shards, not
#: on the cluster that sweeps them; replicas swept on threads are those swept one by one):
#: not part of a run's identity.
EXECUTION_OPTIONS = frozenset({"jobs", "checkpoint_every", "interleave", "scheduler", "workers",
                               "replica_threads"})

# What the readers of numpy's zip files and of HDF5 raise on a damaged file: the file is
# untrusted input, and each of these means "cannot be read", not a bug of bayesfa.
_UNREADABLE = (OSError, EOFError, ValueError, KeyError, IndexError, TypeError, AttributeError,
               NotImplementedError, RuntimeError, OverflowError, MemoryError, RecursionError,
               struct.error, zlib.error, zipfile.BadZipFile, lzma.LZMAError)


@dataclass
class Run:
    """A finished run: its manifest (read and checked) and, loaded on first use, its arrays."""

    path: Path
    manifest: dict[str, Any]
    _arrays: dict[str, np.ndarray] | None = field(default=None, repr=False)

    @property
    def arrays(self) -> dict[str, np.ndarray]:
        """The contents of ``arrays.npz`` (read on first use, checked against the manifest's
        record of it; an InputError if unreadable or not this run's)."""
        if self._arrays is None:
            self._arrays = read_arrays(self.verify(ARRAYS))
        return self._arrays

    def verify(self, name: str) -> Path:
        """The path of the run's file ``name``, checked: it is the file the manifest records
        (SHA-256 in ``"files"``). An :class:`InputError` naming the file if it is missing,
        or damaged or copied from another run since the manifest was written."""
        path = self.path / name
        expected = (self.manifest.get("files") or {}).get(name)
        if expected is None:
            if path.exists():
                raise InputError(f"was not written with this run's {MANIFEST} (the manifest "
                                 f"records no {name}): copied from another run? fit again", path)
            raise InputError(f"no such file: this run has no {name}", path)
        if not path.is_file():
            raise InputError("no such file: the run's file is missing", path)
        if file_sha256(path) != expected:
            raise InputError(f"is not the file this run's {MANIFEST} records (SHA-256 differs): "
                             f"damaged, or copied from another run; fit the run again", path)
        return path

    @property
    def method(self) -> str:
        return self.manifest["method"]

    @property
    def options(self) -> dict[str, Any]:
        return self.manifest["options"]

    @property
    def trace_path(self) -> Path | None:
        """``trace.nc`` when the run has one (the manifest records it, or it is there)."""
        p = self.path / TRACE
        return p if p.exists() or TRACE in (self.manifest.get("files") or {}) else None


def versions() -> dict[str, str]:
    """Versions of Python and of the packages a result depends on."""
    from importlib import metadata

    out = {"python": platform.python_version()}
    for name in ("bayesfa", "numpy", "numba", "scipy", "jax", "numpyro"):
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return out


def file_sha256(path: str | os.PathLike) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _new_temp_file(directory: Path, name: str) -> Path:
    """A new empty file ``directory/.name.XXXXXXXX.tmp``, created as ``open()`` creates files
    (mode ``0o666`` less the umask; ``tempfile.mkstemp`` would make it ``0o600``)."""
    for _ in range(100):
        tmp = directory / f".{name}.{secrets.token_hex(4)}.tmp"
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        except FileExistsError:
            continue
        os.close(fd)
        return tmp
    raise FileExistsError(errno.EEXIST, "no free temporary name", str(directory / name))


def atomic_write(path: str | os.PathLike, write) -> None:
    """Call ``write(tmp_path)`` then rename the temporary file onto ``path``.

    The file gets the mode ``open()`` would give it (``0o666`` less the umask). An
    ``OSError`` names ``path`` (or its folder), never the temporary file."""
    path = Path(path)
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = _new_temp_file(path.parent, path.name)
        write(str(tmp))
        os.replace(tmp, path)
    except BaseException as err:
        if tmp is not None and os.path.lexists(tmp):
            os.unlink(tmp)
        if isinstance(err, OSError) and tmp is not None and err.filename is not None \
                and os.fspath(err.filename) == os.fspath(tmp):
            raise OSError(err.errno, err.strerror or str(err), str(path)) from None
        raise


def write_json(path: str | os.PathLike, obj: Any) -> None:
    """Write ``obj`` as strict JSON (:func:`jsonable`), atomically."""
    text = json.dumps(jsonable(obj), indent=2, sort_keys=True, allow_nan=False) + "\n"

    def write(tmp):
        with open(tmp, "w") as f:
            f.write(text)

    atomic_write(path, write)


_NON_FINITE = {"inf": "infinite", "-inf": "minus infinity", "nan": "not a number"}


def jsonable(obj: Any, reasons: dict[str, str] | None = None) -> Any:
    """``obj`` in plain JSON types, with every non-finite float replaced by ``None``.

    In a dict, a key ``k`` whose value is non-finite also gets ``k + "_note"`` saying why:
    ``reasons[k]`` when given, else ``"infinite"``, ``"minus infinity"`` or ``"not a
    number"`` (an existing ``k_note`` is kept). Numpy scalars and arrays, tuples and paths
    become numbers, lists and strings. ``json.dumps(jsonable(x), allow_nan=False)`` never fails
    on numbers, so every ``--json`` output and manifest is JSON.
    """
    reasons = reasons or {}
    if isinstance(obj, dict):
        out: dict[str, Any] = {}
        for k, v in obj.items():
            k = str(k)
            out[k] = jsonable(v, reasons)
            if _is_non_finite(v) and f"{k}_note" not in obj:
                kind = _NON_FINITE[repr(float(v))]
                out[f"{k}_note"] = f"{kind}: {reasons[k]}" if k in reasons else kind
        return out
    if isinstance(obj, (list, tuple)):
        return [jsonable(v, reasons) for v in obj]
    if isinstance(obj, np.ndarray):
        return jsonable(obj.tolist(), reasons)
    if isinstance(obj, (bool, np.bool_)):
        return bool(obj)
    if isinstance(obj, (int, np.integer)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        v = float(obj)
        return v if math.isfinite(v) else None
    if obj is None or isinstance(obj, str):
        return obj
    if isinstance(obj, Path):
        return str(obj)
    return str(obj)


def _is_non_finite(v) -> bool:
    return isinstance(v, (float, np.floating)) and not math.isfinite(float(v))


def dumps_json(obj: Any, reasons: dict[str, str] | None = None) -> str:
    """One line of strict JSON (see :func:`jsonable`)."""
    return json.dumps(jsonable(obj, reasons), allow_nan=False)


def _json_default(obj):
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, Path):
        return str(obj)
    raise TypeError(f"not JSON serialisable: {type(obj).__name__}")


#: The one split of a trace into ArviZ groups (every writer and reader of traces uses it).
#: A trace's variables are ``[chain, draw, ...]`` arrays named as below; the sampler's own
#: statistics (how it moved, not what it drew) go to ``sample_stats``, every other variable
#: (log joint, states or tables in use, hyperparameters; the oracles' ``potential_energy``,
#: the negative log joint density) to ``posterior``. A front that records a new per-draw
#: statistic of its sampler adds its name here. The numba samplers' statistics, float64
#: ``[chain, draw]``, each over the ``period`` sweeps that led to the draw:
#:
#: - ``moved``: the fraction of the positions (tokens) resampled one at a time whose state or
#:   assignment changed, per sweep (every MCMC method's single-site sweep; 0 when nothing can
#:   move, e.g. one state);
#: - ``accept_mh``: the acceptance rate of the Metropolis-Hastings steps that proposed another
#:   value (cgs-pfa's ``alias-mh`` and ``bucket-mh`` kernels, per position; the
#:   random-walk steps of sampled hyperparameters where a method has them);
#: - ``accept_split_merge``: of cgs-pfa's split-merge moves tried (``--split-merge``);
#: - ``accept_swap``: of the swaps of neighbouring replicas tried (cgs-pfa ``--replicas``);
#: - ``accept_entry``, ``accept_table``, ``accept_hyper``: pdfa, pdia and pdia-smoothed's
#:   Metropolis-Hastings moves on a transition ``delta_ij``, on a table's dish (the PDIA) and
#:   the random walks of the sampled hyperparameters;
#:
#: an acceptance rate is NaN in a draw whose sweeps tried no such move. The oracles' NUTS
#: bookkeeping: ``diverging``, ``accept_prob``, ``num_steps``, ``step_size``, ``tree_depth``,
#: ``mean_tree_accept``, ``energy``.
SAMPLE_STATS = frozenset({"diverging", "accept_prob", "num_steps", "step_size", "tree_depth",
                          "mean_tree_accept", "energy",
                          "moved", "accept_mh", "accept_split_merge", "accept_swap",
                          "accept_entry", "accept_table", "accept_hyper"})
#: An optimiser's objective, by trace name: a trace that records one is an optimisation
#: history (one value per iteration, never draws of a posterior) and goes to the group
#: :data:`HISTORY` with the dim ``iteration``. The first one present is the objective
#: reported (CVB0, GCVB0, CVB2 record ``d0`` beside ``log_lik``; HMM-EM ``log_lik``).
OBJECTIVES = {"d0": ("D0", "minimised"), "log_lik": ("training log-likelihood", "maximised")}
HISTORY = "optimisation_history"
#: Names of the dims after ``(chain, draw)`` of the variables that have them (others:
#: ``NAME_dim_0``, ...).
TRACE_DIMS = {"trans": ("letter", "state", "next_state"), "stop": ("state",), "init": ("state",)}
#: ``Run.trace`` adds each draw's plug-in parameters to the posterior of models with at most
#: this many transition parameters (``A * N * N``, letters times states squared).
PLUGIN_MAX = 10_000


def is_history(trace: dict[str, np.ndarray]) -> bool:
    """Whether ``trace`` is an optimiser's history (it records an :data:`OBJECTIVES` name,
    as one ``[1, iteration]`` row) rather than a sampler's draws."""
    return any(name in trace and np.ndim(trace[name]) == 2 and np.shape(trace[name])[0] == 1
               for name in OBJECTIVES)


def trace_datasets(trace: dict[str, np.ndarray]) -> dict[str, Any]:
    """``{group: xarray.Dataset}`` of a trace: ``posterior`` and ``sample_stats`` (dims
    ``chain, draw``; split by :data:`SAMPLE_STATS`) for a sampler, ``optimisation_history``
    (dim ``iteration``) for an optimiser (:func:`is_history`). Empty groups are left out."""
    import xarray as xr

    first = np.asarray(next(iter(trace.values())))
    if first.ndim < 2:
        raise ValueError(f"trace variables must be (chain, draw, ...) arrays, got shape {first.shape}")
    n_chain, n_draw = first.shape[:2]
    history = is_history(trace)
    groups: dict[str, dict] = {}
    for name, values in trace.items():
        values = np.asarray(values)
        if values.shape[:2] != (n_chain, n_draw):
            raise ValueError(f"trace variable {name} has shape {values.shape}, expected (chain, draw, ...)")
        extra = TRACE_DIMS.get(name, ())
        if len(extra) != values.ndim - 2:
            extra = tuple(f"{name}_dim_{i}" for i in range(values.ndim - 2))
        if history:
            group, dims, values = HISTORY, ("iteration",) + extra, values[0]
        else:
            group = "sample_stats" if name in SAMPLE_STATS else "posterior"
            dims = ("chain", "draw") + extra
        groups.setdefault(group, {})[name] = (dims, values)
    coords = ({"iteration": np.arange(n_draw)} if history
              else {"chain": np.arange(n_chain), "draw": np.arange(n_draw)})
    out = {}
    for group, data in groups.items():
        ds = xr.Dataset(data, coords=coords)
        ds.attrs["created_by"] = "bayesfa"
        out[group] = ds
    return out


def write_trace(path: str | os.PathLike, trace: dict[str, np.ndarray]) -> None:
    """Write ``(chain, draw, ...)`` arrays as the groups of :func:`trace_datasets` of one
    NetCDF file (``arviz.from_netcdf`` reads a sampler's)."""
    datasets = trace_datasets(trace)

    def write(tmp):
        for k, (group, ds) in enumerate(datasets.items()):
            ds.to_netcdf(tmp, group=group, engine="h5netcdf", mode="w" if k == 0 else "a")

    atomic_write(path, write)


#: The groups :func:`read_trace` reads (a trace written before the split holds only ``posterior``).
TRACE_GROUPS = ("posterior", "sample_stats", HISTORY)


def _trace_groups(path: Path) -> list[str]:
    import h5netcdf

    with h5netcdf.File(path, "r") as f:
        return [g for g in TRACE_GROUPS if g in f.groups]


def read_trace(path: str | os.PathLike) -> dict[str, np.ndarray]:
    """The ``(chain, draw, ...)`` arrays of a ``trace.nc``, every group in one dict (an
    optimisation history as one ``[1, iteration]`` row, as its method recorded it)."""
    import xarray as xr

    path = Path(path)
    if not path.is_file():
        raise InputError("no such file", path)
    failure = None
    trace: dict[str, np.ndarray] = {}
    with _quiet_h5netcdf_cleanup() as state:
        try:
            for group in _trace_groups(path):
                with xr.open_dataset(path, group=group, engine="h5netcdf") as ds:
                    for name in ds.data_vars:
                        values = np.asarray(ds[name].values)
                        trace[name] = values[None] if group == HISTORY else values
        except _UNREADABLE as err:
            failure = state["failure"] = _reason(err)  # raised below, once the file is collected
    if failure is not None:
        raise InputError(f"not a readable trace (truncated or corrupt NetCDF: {failure})", path)
    shape = None
    for name, values in trace.items():
        if values.ndim < 2 or values.dtype.kind not in "biuf" or (shape or values.shape[:2]) != values.shape[:2]:
            raise InputError(f"trace variable {name!r} is not a numeric (chain, draw) array "
                             f"like the others (shape {values.shape}, dtype {values.dtype})", path)
        shape = values.shape[:2]
    if not trace or 0 in shape:
        raise InputError("the trace holds no draw", path)
    return trace


@contextlib.contextmanager
def _quiet_h5netcdf_cleanup():
    """Collect, with its message silenced, an ``h5netcdf.File`` whose ``__init__`` failed on
    a damaged file: its ``__del__`` then raises ``AttributeError`` (h5netcdf 1.x), which
    Python would print to stderr as an "Exception ignored" traceback whenever it is
    collected. Other unraisable exceptions go to the previous hook as usual."""
    previous = sys.unraisablehook

    def hook(unraisable):
        if not str(getattr(unraisable.object, "__module__", "")).startswith("h5netcdf"):
            previous(unraisable)

    sys.unraisablehook = hook
    state: dict[str, Any] = {}
    try:
        yield state
    finally:
        if state:  # only a failed open leaves such an object (and collecting costs ~0.3 s)
            gc.collect()
        sys.unraisablehook = previous


def _reason(err: BaseException) -> str:
    """One line: the exception's type and the first line of its message."""
    text = str(err).strip().splitlines()
    return f"{type(err).__name__}: {text[0][:200]}" if text else type(err).__name__


def read_arrays(path: str | os.PathLike) -> dict[str, np.ndarray]:
    """The arrays of an ``arrays.npz``; an :class:`InputError` naming the file if it is
    missing, truncated or corrupt."""
    path = Path(path)
    if not path.is_file():
        raise InputError("no such file: the run's arrays are missing", path)
    try:
        with np.load(path, allow_pickle=False) as npz:
            if not isinstance(npz, np.lib.npyio.NpzFile):
                raise ValueError("not a .npz archive")
            arrays = {k: npz[k] for k in npz.files}
    except _UNREADABLE as err:
        raise InputError(f"not a readable .npz archive (truncated or corrupt: {_reason(err)})",
                         path) from None
    for name, values in arrays.items():
        if values.dtype.kind not in "biuf":
            raise InputError(f"array {name!r} has dtype {values.dtype}, expected numbers", path)
    return arrays


def save_run(out: str | os.PathLike, *, method: str, options: dict[str, Any], seed: int | None,
             arrays: dict[str, np.ndarray], trace: dict[str, np.ndarray] | None = None,
             info: dict[str, Any] | None = None, train: dict[str, Any] | None = None) -> Path:
    """Write a run directory (manifest last) and return its path."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    atomic_write(out / ARRAYS, lambda tmp: _save_npz(tmp, arrays))
    if trace:
        write_trace(out / TRACE, trace)
    elif (out / TRACE).exists():
        (out / TRACE).unlink()
    manifest = {
        "format": FORMAT,
        "method": method,
        "options": options,
        "seed": seed,
        "versions": versions(),
        "train": train or {},
        "info": info or {},
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "command": sys.argv,
        # what the manifest binds: every file of the run (predictions.npz of fit --predict too)
        "files": {p.name: file_sha256(p) for p in sorted(out.iterdir())
                  if p.is_file() and p.name not in (MANIFEST, UNFINISHED)
                  and not p.name.startswith(".")},
    }
    manifest = jsonable(manifest)
    manifest["fingerprint"] = manifest_fingerprint(manifest)
    write_json(out / MANIFEST, manifest)
    return out


def manifest_fingerprint(manifest: dict[str, Any]) -> str:
    """SHA-256 of the manifest's canonical JSON: every key but ``"fingerprint"``, sorted, no
    spaces, ASCII. An edit of any value (or a manifest of another run) changes it."""
    body = {k: v for k, v in manifest.items() if k != "fingerprint"}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True,
                      allow_nan=False)
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def _save_npz(tmp: str, arrays: dict[str, np.ndarray]) -> None:
    with open(tmp, "wb") as f:
        np.savez_compressed(f, **arrays)


def read_manifest(path: str | os.PathLike) -> dict[str, Any]:
    """A run's ``manifest.json``, checked: a JSON object of the current format with a
    ``method`` name, an ``options`` object and, if present, a ``train`` object whose fields
    have their types. An :class:`InputError` naming the file otherwise."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise InputError("no such file", path) from None
    except OSError as err:
        raise InputError(f"cannot read: {err.strerror or err}", path) from None
    try:
        manifest = json.loads(raw.decode("utf-8"), parse_constant=_reject_constant)
    except json.JSONDecodeError as err:
        raise InputError(f"manifest is not valid JSON: {err.msg}", path, err.lineno) from None
    except (UnicodeDecodeError, ValueError, RecursionError) as err:
        raise InputError(f"manifest is not valid JSON: {_reason(err)}", path) from None
    if not isinstance(manifest, dict):
        raise InputError("manifest is not a JSON object", path)
    if manifest.get("format") != FORMAT:
        raise InputError(f"unknown run format {manifest.get('format')!r}, expected {FORMAT}", path)
    if not isinstance(manifest.get("method"), str):
        raise InputError("manifest has no method name", path)
    if not isinstance(manifest.get("options"), dict):
        raise InputError("manifest has no options object", path)
    fingerprint = manifest.get("fingerprint")
    if not isinstance(fingerprint, str):
        raise InputError("manifest has no fingerprint (made by an older bayesfa, or edited): "
                         "fit the run again", path)
    try:
        expected = manifest_fingerprint(manifest)
    except (ValueError, TypeError, RecursionError):
        expected = None
    if fingerprint != expected:
        raise InputError("manifest does not match its fingerprint: edited or damaged since "
                         "bayesfa wrote it; fit the run again", path)
    files = manifest.get("files")
    if not isinstance(files, dict) or not all(isinstance(v, str) for v in files.values()):
        raise InputError("manifest's files entry is not an object of SHA-256 digests", path)
    train = manifest.setdefault("train", {})
    if not isinstance(train, dict):
        raise InputError("manifest's train entry is not an object", path)
    size = train.get("alphabet_size")
    if size is not None and (isinstance(size, bool) or not isinstance(size, int) or size < 1):
        raise InputError(f"manifest's train.alphabet_size {size!r} is not a positive integer", path)
    fmt = train.get("format")
    if fmt is not None and fmt not in TRAIN_FORMATS:
        raise InputError(f"manifest's train.format {fmt!r} is unknown (expected one of "
                         f"{', '.join(TRAIN_FORMATS)})", path)
    alphabet = train.get("alphabet")
    if alphabet is not None and not (
            isinstance(alphabet, list)
            and all(isinstance(x, str) or (isinstance(x, int) and not isinstance(x, bool))
                    for x in alphabet)
            and len({(type(x), x) for x in alphabet}) == len(alphabet)):
        raise InputError("manifest's train.alphabet is not a list of distinct symbols (strings "
                         "or integers)", path)
    if alphabet is not None and isinstance(size, int) and len(alphabet) > size:
        raise InputError(f"manifest's train.alphabet has {len(alphabet)} symbols, more than its "
                         f"alphabet_size {size}", path)
    separator = train.get("separator")
    if separator is not None and not (isinstance(separator, str) and separator
                                      and "\n" not in separator and "\r" not in separator):
        raise InputError(f"manifest's train.separator {separator!r} is not a non-empty string "
                         f"without line breaks", path)
    return manifest


def _reject_constant(name: str):
    raise ValueError(f"{name} is not JSON")


def load_run(path: str | os.PathLike) -> Run:
    """Read a finished run's manifest (arrays are read when first used); an
    :class:`InputError` if ``path`` is not a finished run or its manifest is damaged."""
    path = Path(path)
    manifest_path = path / MANIFEST
    if not path.is_dir():
        raise InputError("no such run directory" if not path.exists() else "not a directory", path)
    if not manifest_path.is_file():
        what = "an unfinished bayesfa run" if (path / UNFINISHED).exists() else \
            "not a bayesfa run directory"
        raise InputError(f"{what} (no {MANIFEST})", path)
    return Run(path, read_manifest(manifest_path))


# -- where a fit may write: start, resume, refuse or replace --------------------------------------

def run_identity(method: str, options: dict[str, Any], seed: int | None,
                 train: dict[str, Any]) -> dict[str, Any]:
    """What makes two runs the same run: method, options (but :data:`EXECUTION_OPTIONS`),
    seed, and the training file's SHA-256, format and separator (the last only when one was
    given, so that runs recorded before separators existed keep their identity)."""
    identity = {"method": method, "seed": seed,
                "options": {k: v for k, v in options.items() if k not in EXECUTION_OPTIONS},
                "train_sha256": train.get("sha256"), "train_format": train.get("format")}
    if train.get("separator") is not None:
        identity["train_separator"] = train["separator"]
    return jsonable(identity)


def _identity_of_manifest(manifest: dict[str, Any]) -> dict[str, Any]:
    train = manifest.get("train", {})
    return run_identity(manifest.get("method"), manifest.get("options", {}), manifest.get("seed"),
                        train)


def _differences(old: dict[str, Any], new: dict[str, Any]) -> str:
    """How run ``old`` differs from ``new``, in one short phrase."""
    if old.get("train_sha256") != new.get("train_sha256"):
        return (f"other training data (SHA-256 {str(old.get('train_sha256'))[:12]}..., "
                f"this file {str(new.get('train_sha256'))[:12]}...)")
    parts = []
    if old.get("method") != new.get("method"):
        parts.append(f"--method {old.get('method')} (now {new.get('method')})")
    if old.get("train_format") != new.get("train_format"):
        parts.append(f"--format {old.get('train_format')} (now {new.get('train_format')})")
    if old.get("train_separator") != new.get("train_separator"):
        parts.append(f"--separator {old.get('train_separator')!r} "
                     f"(now {new.get('train_separator')!r})")
    if old.get("seed") != new.get("seed"):
        parts.append(f"--seed {old.get('seed')} (now {new.get('seed')})")
    a, b = old.get("options") or {}, new.get("options") or {}
    for key in sorted(set(a) | set(b)):
        if a.get(key) != b.get(key):
            flag = "--" + key.replace("_", "-")
            parts.append(f"{flag} {a.get(key, 'unset')} (now {b.get(key, 'unset')})")
    if len(parts) > 4:
        parts = parts[:4] + [f"{len(parts) - 4} more"]
    return "other settings: " + ", ".join(parts) if parts else "other settings"


@dataclass
class RunPlan:
    """What ``bayesfa fit --out final`` does (from :func:`plan_run`).

    status : ``"new"``, ``"resume"`` (an unfinished identical run), ``"done"`` (an identical
        finished run: nothing to do), ``"replace"`` (``--force``: build in ``build``, a
        sibling, then swap) or ``"swap"`` (a complete replacement waits in ``build``).
    build : where the run is written; ``workdir`` is the method's ``partial/`` inside it.
    """

    final: Path
    build: Path
    status: str
    identity: dict[str, Any]

    @property
    def workdir(self) -> Path:
        return self.build / WORKDIR

    _created: bool = field(default=False, repr=False)
    _recorded: bool = field(default=False, repr=False)

    def begin(self) -> None:
        """Create ``build`` and record what run it will hold (before any fitting)."""
        if self.status == "replace" and self.build.exists() and not _same_unfinished(self.build, self.identity):
            shutil.rmtree(self.build)  # our own staging folder, left by another forced fit
        self._created = not self.build.exists()
        self.build.mkdir(parents=True, exist_ok=True)
        self._recorded = not _same_unfinished(self.build, self.identity)
        if self._recorded:
            write_json(self.build / UNFINISHED, self.identity)

    def has_work(self) -> bool:
        """Whether the fit saved pieces to resume from (a non-empty ``partial/``)."""
        return self.workdir.is_dir() and any(self.workdir.iterdir())

    def abandon(self) -> bool:
        """After a fit refused or failed: undo :meth:`begin` unless work was saved to resume
        from, so the folder is as it was (no ``unfinished.json`` for a fit that never
        sampled). Returns True if the unfinished run was kept (resumable)."""
        if self.has_work():
            return True
        if self.workdir.is_dir():
            shutil.rmtree(self.workdir, ignore_errors=True)
        for name in (ARRAYS, TRACE, "predictions.npz"):  # a save that did not finish
            (self.build / name).unlink(missing_ok=True)
        if self._recorded:
            (self.build / UNFINISHED).unlink(missing_ok=True)
        if self._created and self.build.is_dir() and not any(self.build.iterdir()):
            self.build.rmdir()
        return False

    def finish(self) -> None:
        """After :func:`save_run` into ``build``: drop the work files, swap into place."""
        shutil.rmtree(self.workdir, ignore_errors=True)
        (self.build / UNFINISHED).unlink(missing_ok=True)
        if self.build != self.final:
            replace_dir(self.build, self.final)


def _read_identity(path: Path) -> dict[str, Any] | None:
    """The identity in an ``unfinished.json``, or None if it cannot be read."""
    try:
        obj = json.loads(path.read_text(), parse_constant=_reject_constant)
    except (OSError, ValueError, RecursionError):
        return None
    return obj if isinstance(obj, dict) else None


def _same_unfinished(build: Path, identity: dict[str, Any]) -> bool:
    return (build / UNFINISHED).is_file() and _read_identity(build / UNFINISHED) == identity


def _describe_run(path: Path) -> tuple[str, dict[str, Any] | None, str | None]:
    """``(kind, identity, problem)`` of a non-empty folder: kind ``"finished"``,
    ``"unfinished"`` or ``"other"`` (not a bayesfa run); identity None if unreadable."""
    if (path / MANIFEST).is_file():
        try:
            return "finished", _identity_of_manifest(read_manifest(path / MANIFEST)), None
        except InputError as err:
            return "finished", None, err.problem
    if (path / UNFINISHED).is_file():
        identity = _read_identity(path / UNFINISHED)
        if {p.name for p in path.iterdir()} <= {UNFINISHED, WORKDIR} and not (
                (path / WORKDIR).is_dir() and any((path / WORKDIR).iterdir())):
            return "empty", identity, None  # a fit that never saved work: nothing to lose
        return "unfinished", identity, None if identity else f"{UNFINISHED} is unreadable"
    if (path / WORKDIR).is_dir() and {p.name for p in path.iterdir()} <= {WORKDIR, ARRAYS, TRACE}:
        return "unfinished", None, f"no {UNFINISHED}"
    return "other", None, None


def plan_run(out: str | os.PathLike, identity: dict[str, Any], force: bool = False) -> RunPlan:
    """Decide what a fit of ``identity`` (:func:`run_identity`) may do with ``--out out``.

    Nothing is written here; an :class:`InputError` (one line, exit 2 in the CLI) refuses:
    ``out`` is a file; a non-empty folder that is not a bayesfa run (even with ``force``:
    only bayesfa runs are ever replaced); a run of other data or settings, or one whose
    manifest is damaged, without ``force``.
    """
    final = Path(out)
    if final.exists() and not final.is_dir():
        raise InputError("exists and is not a directory; choose another --out", final)
    if not final.exists() or not any(final.iterdir()):
        return RunPlan(final, final, "new", identity)
    kind, old, problem = _describe_run(final)
    if kind == "empty":  # left by a fit that stopped before saving any work (older bayesfa)
        return RunPlan(final, final, "resume" if old == identity else "new", identity)
    if kind == "other":
        raise InputError("not empty and not a bayesfa run directory; choose another --out "
                         "(--force replaces only bayesfa runs)", final)
    if old == identity and not force:
        return RunPlan(final, final, "done" if kind == "finished" else "resume", identity)
    if not force:
        raise InputError(_refusal(kind, old, identity, problem), final)
    staging = final.parent / STAGING.format(name=final.name)
    if staging.exists() and not staging.is_dir():
        raise InputError(f"{staging.name} is in the way of --force (not a directory)", staging)
    if staging.is_dir() and any(staging.iterdir()):
        skind, sold, _ = _describe_run(staging)
        if skind == "other":
            raise InputError("is in the way of --force and is not a bayesfa run; remove it", staging)
        if sold == identity:
            return RunPlan(final, staging, "swap" if skind == "finished" else "replace", identity)
    return RunPlan(final, staging, "replace", identity)


def _refusal(kind: str, old: dict[str, Any] | None, new: dict[str, Any], problem: str | None) -> str:
    what = "an unfinished bayesfa run" if kind == "unfinished" else "a bayesfa run"
    if old is None:
        return f"holds {what} that cannot be read ({problem}); use --force to replace it, or another --out"
    return f"holds {what} made with {_differences(old, new)}; use --force to replace it, or another --out"


def replace_dir(new: Path, old: Path) -> None:
    """Put directory ``new`` at ``old``'s place and delete what was there.

    With Linux ``renameat2(RENAME_EXCHANGE)`` the two are swapped in one atomic step, so at
    every instant ``old`` names either the old run or the new one; elsewhere ``old`` is first
    renamed aside (a crash between the two renames leaves it there, whole).
    """
    new, old = Path(new), Path(old)
    if old.exists() and _exchange(new, old):
        shutil.rmtree(new)  # now holds the old run
        return
    aside = None
    if old.exists():
        aside = Path(tempfile.mkdtemp(prefix=f".{old.name}.old-", dir=old.parent))
        os.rmdir(aside)
        os.rename(old, aside)
    os.rename(new, old)
    if aside is not None:
        shutil.rmtree(aside)


def _exchange(a: Path, b: Path) -> bool:
    """Atomically swap two paths (Linux ``renameat2`` with ``RENAME_EXCHANGE``); False if the
    system cannot."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    at_fdcwd, rename_exchange = -100, 2
    rc = renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange)
    return rc == 0


# -- guarded output: every file bayesfa writes for a user -----------------------------------------

LEDGER = ".bayesfa-written.json"  # in each folder bayesfa writes into: what it wrote there
LEDGER_FORMAT = "bayesfa-written/1"
STDOUT = "-"


def _ledger(directory: Path) -> dict[str, Any]:
    """The ``files`` record of ``directory/.bayesfa-written.json`` (name -> ``{"sha256"}``);
    empty if there is none, an InputError if the file is there but not bayesfa's record."""
    path = directory / LEDGER
    try:
        obj = json.loads(path.read_text(encoding="utf-8"), parse_constant=_reject_constant)
    except FileNotFoundError:
        return {}
    except (OSError, ValueError, RecursionError) as err:
        raise InputError(f"is not bayesfa's record of the files it wrote here ({_reason(err)}); "
                         f"remove it or write elsewhere", path) from None
    if not isinstance(obj, dict) or obj.get("format") != LEDGER_FORMAT \
            or not isinstance(obj.get("files"), dict):
        raise InputError("is not bayesfa's record of the files it wrote here; remove it or "
                         "write elsewhere", path)
    return {k: v for k, v in obj["files"].items() if isinstance(v, dict)}


def written_by_bayesfa(path: str | os.PathLike) -> bool:
    """Whether ``path`` is a regular file bayesfa wrote (with :func:`write_output`) and that
    nobody changed since: its folder's :data:`LEDGER` records its SHA-256."""
    path = Path(path)
    if path.is_symlink() or not path.is_file():
        return False
    entry = _ledger(path.parent).get(path.name)
    return entry is not None and entry.get("sha256") == file_sha256(path)


def check_output(path: str | os.PathLike, option: str = "--out", stream: bool = False,
                 legacy=None, make_folder: bool = False) -> None:
    """Refuse, before any work, what :func:`write_output` would refuse: an :class:`InputError`
    naming ``path`` if it is a directory, lies under a file, or is an existing file bayesfa
    did not write (or that was changed since). ``-`` passes when ``stream``. ``legacy(path)``,
    if given, may vouch for an existing file the ledger does not list (one that carries
    bayesfa's own format marker, written before there was a ledger). Its folder must exist
    unless ``make_folder`` (a folder output such as ``data --out DIR``)."""
    if os.fspath(path) == STDOUT:
        if stream:
            return
        raise InputError(f"{option} - (standard output) is not possible here; give a file name")
    path = Path(path)
    if os.fspath(path) == "":
        raise InputError(f"{option} is empty; give a file name")
    if path.is_dir():
        raise InputError(f"is a directory; give {option} a file name", path)
    for parent in path.parents:
        if parent.exists():
            if not parent.is_dir():
                raise InputError(f"is not a directory, so {option} {path} cannot be written", parent)
            break
        if not make_folder:
            raise InputError(f"cannot be written: no such folder {parent}", path)
    if (path.exists() or path.is_symlink()) and not written_by_bayesfa(path) and not (
            legacy is not None and path.is_file() and not path.is_symlink() and legacy(path)):
        raise InputError(f"exists and was not written by bayesfa (or was changed since): "
                         f"bayesfa does not replace it; choose another {option} or remove it",
                         path)


def check_output_dir(path: str | os.PathLike, option: str = "--out",
                     owned: frozenset[str] | None = None, what: str = "bayesfa") -> Path:
    """Refuse, before any work, a folder output that is a file (or ``-``); with ``owned``,
    also a non-empty folder holding anything but those names (and the :data:`LEDGER`):
    a folder that is not one of bayesfa's ``what`` folders."""
    if os.fspath(path) in ("", STDOUT):
        raise InputError(f"{option} needs a folder, not {os.fspath(path) or 'an empty name'!r}")
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise InputError(f"exists and is not a directory; choose another {option}", path)
    for parent in path.parents:
        if parent.exists():
            if not parent.is_dir():
                raise InputError(f"is not a directory, so {option} {path} cannot be made", parent)
            break
    if owned is not None and path.is_dir():
        foreign = sorted(p.name for p in path.iterdir() if p.name not in owned | {LEDGER})
        if foreign:
            raise InputError(f"not empty and not a {what} folder (it holds {foreign[0]!r}"
                             f"{f' and {len(foreign) - 1} more' if len(foreign) > 1 else ''}); "
                             f"choose another {option}", path)
    return path


@contextlib.contextmanager
def _folder_lock(directory: Path):
    """An exclusive lock on ``directory`` (``flock`` on the folder itself, so no lock file is
    left behind) while its :data:`LEDGER` is read and rewritten; no-op where unsupported."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        yield
        return
    fd = os.open(directory, os.O_RDONLY)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
        except OSError:  # e.g. a file system without locks: go on unlocked
            pass
        yield
    finally:
        os.close(fd)


def write_output(path: str | os.PathLike, write, option: str = "--out",
                 stream: bool = False, legacy=None, make_folder: bool = False) -> str:
    """Write a user's output file through ``write(tmp_path)``, guarded; returns the path
    written (``"-"`` for standard output).

    Refuses, with an :class:`InputError` naming ``path`` (one line, exit 2), a directory or an
    existing file bayesfa did not write (:func:`check_output`); writes atomically (a crash
    leaves the old file or the new one); follows the umask; records the file's SHA-256 in
    the folder's :data:`LEDGER`, so the next run of the command may replace it. With
    ``stream``, ``-`` writes to standard output instead; ``legacy`` and ``make_folder``:
    see :func:`check_output`."""
    if stream and os.fspath(path) == STDOUT:
        with tempfile.TemporaryDirectory(prefix="bayesfa-") as tmpdir:
            tmp = os.path.join(tmpdir, "out")
            write(tmp)
            sys.stdout.flush()
            with open(tmp, "rb") as f:
                shutil.copyfileobj(f, sys.stdout.buffer)
            sys.stdout.flush()
        return STDOUT
    check_output(path, option, legacy=legacy, make_folder=make_folder)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with _folder_lock(path.parent):
        check_output(path, option, legacy=legacy)  # again, under the lock
        ledger = _ledger(path.parent)
        atomic_write(path, write)
        ledger = {k: v for k, v in ledger.items() if (path.parent / k).is_file()}
        ledger[path.name] = {"sha256": file_sha256(path),
                             "written": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
        write_json(path.parent / LEDGER, {"format": LEDGER_FORMAT, "files": ledger})
    return str(path)


def write_output_text(path: str | os.PathLike, text: str, option: str = "--out",
                      stream: bool = False, legacy=None, make_folder: bool = False) -> str:
    """:func:`write_output` of a text (UTF-8, LF line ends)."""
    def write(tmp):
        with open(tmp, "w", encoding="utf-8", newline="\n") as f:
            f.write(text)

    return write_output(path, write, option, stream, legacy, make_folder)
