"""The one thing pyproject.toml cannot say: the distribution installs a single import name,
``leasecheck``, whose subpackages live in the repository's top-level folders."""
from setuptools import find_packages, setup

FOLDERS = ("harness", "workloads", "checkers")   # installed as leasecheck.<folder>

setup(
    packages=["leasecheck"] + [f"leasecheck.{p}" for p in find_packages(include=[f"{f}*" for f in FOLDERS])],
    package_dir={"leasecheck": "leasecheck", **{f"leasecheck.{f}": f for f in FOLDERS}},
)
