import os

# Tests and notebooks (their kernels inherit this environment) run at CI-friendly sizes.
os.environ.setdefault("QMCKIT_FAST", "1")
