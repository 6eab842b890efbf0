"""Packaging that pyproject.toml cannot say: the repository's top-level ``data/`` ships inside the wheel as the
package ``qmckit.data`` (read through :mod:`qmckit.resources`), so that an installed qmckit finds its reference data."""
from setuptools import find_packages, setup

setup(
    packages=find_packages(include=["qmckit*"]) + ["qmckit.data", "qmckit.data.molecules"],
    package_dir={"qmckit.data": "data"},
    package_data={"qmckit.data": ["*.json", "*.npz"], "qmckit.data.molecules": ["*.xyz", "*.md"]},
)
