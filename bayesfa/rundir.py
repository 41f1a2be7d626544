"""One run-directory format for every method.

A run directory holds

- ``manifest.json``: ``{"format": "bayesfa-run/1", "method", "options", "seed", "versions",
  "train": {"path", "sha256", "n_strings", "n_letters", "alphabet_size"}, "info", "created"}``;
- ``arrays.npz``: the arrays the method's ``predict_log_prob`` needs;
- ``trace.nc`` (where the method has a trace): per-sample diagnostics with dims
  ``(chain, draw)`` in the NetCDF group ``posterior``, so ``arviz.from_netcdf`` reads it.

Every file is written to a temporary name and renamed into place, and the manifest is
written last: a directory with a manifest is a finished run.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from bayesfa.errors import InputError

FORMAT = "bayesfa-run/1"
MANIFEST = "manifest.json"
ARRAYS = "arrays.npz"
TRACE = "trace.nc"


@dataclass
class Run:
    path: Path
    manifest: dict[str, Any]
    arrays: dict[str, np.ndarray]

    @property
    def method(self) -> str:
        return self.manifest["method"]

    @property
    def options(self) -> dict[str, Any]:
        return self.manifest["options"]

    @property
    def trace_path(self) -> Path | None:
        p = self.path / TRACE
        return p if p.exists() else None


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


def atomic_write(path: str | os.PathLike, write) -> None:
    """Call ``write(tmp_path)`` then rename the temporary file onto ``path``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        write(tmp)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def write_json(path: str | os.PathLike, obj: Any) -> None:
    def write(tmp):
        with open(tmp, "w") as f:
            json.dump(obj, f, indent=2, sort_keys=True, default=_json_default)
            f.write("\n")

    atomic_write(path, write)


def _json_default(obj):
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, Path):
        return str(obj)
    raise TypeError(f"not JSON serialisable: {type(obj).__name__}")


def write_trace(path: str | os.PathLike, trace: dict[str, np.ndarray]) -> None:
    """Write ``(chain, draw)`` arrays as the ``posterior`` group of a NetCDF file."""
    import xarray as xr

    first = next(iter(trace.values()))
    n_chain, n_draw = np.shape(first)
    data = {}
    for name, values in trace.items():
        values = np.asarray(values)
        if values.shape[:2] != (n_chain, n_draw):
            raise ValueError(f"trace variable {name} has shape {values.shape}, expected (chain, draw, ...)")
        dims = ("chain", "draw") + tuple(f"{name}_dim_{i}" for i in range(values.ndim - 2))
        data[name] = (dims, values)
    ds = xr.Dataset(data, coords={"chain": np.arange(n_chain), "draw": np.arange(n_draw)})
    ds.attrs["created_by"] = "bayesfa"
    atomic_write(path, lambda tmp: ds.to_netcdf(tmp, group="posterior", engine="h5netcdf", mode="w"))


def read_trace(path: str | os.PathLike) -> dict[str, np.ndarray]:
    """The ``(chain, draw, ...)`` arrays of a ``trace.nc``."""
    import xarray as xr

    with xr.open_dataset(path, group="posterior", engine="h5netcdf") as ds:
        return {name: np.asarray(ds[name].values) for name in ds.data_vars}


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
    }
    write_json(out / MANIFEST, manifest)
    return out


def _save_npz(tmp: str, arrays: dict[str, np.ndarray]) -> None:
    with open(tmp, "wb") as f:
        np.savez_compressed(f, **arrays)


def load_run(path: str | os.PathLike) -> Run:
    """Read a run directory; an :class:`InputError` if it is not a finished run."""
    path = Path(path)
    manifest_path = path / MANIFEST
    if not manifest_path.is_file():
        raise InputError(f"not a bayesfa run directory (no {MANIFEST})", path)
    try:
        manifest = json.loads(manifest_path.read_text())
    except json.JSONDecodeError as err:
        raise InputError(f"manifest is not valid JSON: {err.msg}", manifest_path, err.lineno) from None
    if manifest.get("format") != FORMAT:
        raise InputError(f"unknown run format {manifest.get('format')!r}, expected {FORMAT}", manifest_path)
    with np.load(path / ARRAYS) as npz:
        arrays = {k: npz[k] for k in npz.files}
    return Run(path, manifest, arrays)
