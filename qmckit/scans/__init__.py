"""Parameter scans: grids of any system's parameters and run settings, run serially, on an executor or on a Dask
cluster, with a resumable results store (:mod:`qmckit.scans.execute`, :mod:`qmckit.scans.grid`, :mod:`qmckit.scans.store`);
one VMC run split over workers (:mod:`qmckit.scans.split`)."""
from .grid import cartesian, parse_axis, point_seed
from .execute import ScanResult, refine_minimum, run_point, scan
from .split import split_run
from .store import ScanStore

__all__ = ["scan", "refine_minimum", "run_point", "ScanResult", "ScanStore", "cartesian", "parse_axis", "point_seed",
           "split_run"]
