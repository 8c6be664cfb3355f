"""The one thing pyproject.toml cannot say: ``resources/`` (prompts, templates, the built-in judge's
parameters, the demo's samples) goes into the wheel as the package data ``sourcecheckup/_resources``,
where ``sourcecheckup.resources.resources_dir()`` finds it in an installed copy. In the source tree
(and an editable install) the folder is read where it is."""
from pathlib import Path

from setuptools import find_packages, setup

DATA = "sourcecheckup._resources"
# every folder of resources/ is named, so setuptools copies its files as that package's data
folders = sorted(p for p in Path("resources").rglob("*") if p.is_dir() and p.name != "__pycache__")
data_packages = [DATA, *(".".join((DATA, *p.relative_to("resources").parts)) for p in folders)]

setup(
    packages=[*find_packages(include=["sourcecheckup*", "ui*"]), *data_packages],
    package_dir={DATA: "resources"},
    package_data={name: ["*"] for name in data_packages},
)
