"""qmckit: quantum Monte Carlo for Jupyter.

Quick start::

    import qmckit
    system = qmckit.TrappedBosons(n=20, lam=1.0, a=0.00433, alpha=0.495)
    run = qmckit.VMCRun(qmckit.RunConfig(system="bec", params=system.params.as_dict(), steps=2000))
    result = run.run()
    print(run.estimates()["energy_per_particle"])

Layers (data flow one way): systems → methods → stats → widgets/cli; see docs/architecture.md.
"""
from .methods.vmc import VMC
from .runs import RunConfig, VMCRun
from .scans import scan
from .stats import Estimate, estimate, reblock
from .systems.user_check import check
from .systems import (SYSTEMS, BosonParams, Capabilities, System, TrappedBosons, Unsupported, UserSystem, make_system,
                      parameter, register)
from .walkers import Walkers

__version__ = "0.1.0"

__all__ = ["VMC", "RunConfig", "VMCRun", "Estimate", "estimate", "reblock", "SYSTEMS", "System", "Capabilities",
           "Unsupported", "parameter", "register", "BosonParams", "TrappedBosons", "make_system", "Walkers",
           "scan", "UserSystem", "check", "__version__"]
