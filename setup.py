"""Package list for setuptools (the rest of the metadata is in pyproject.toml).

`codegen/`, `templates/` and `autotune_cache/` sit at the top of the repository but install
inside the package as `triton_metal.codegen`, `triton_metal.templates` and
`triton_metal.autotune_cache` (the shipped tuning results, JSON files only), so nothing named
`codegen` reaches site-packages; discovery alone cannot express that mapping.
"""

from setuptools import find_packages, setup

MAPPED = {
    "triton_metal.codegen": "codegen",
    "triton_metal.templates": "templates",
    "triton_metal.autotune_cache": "autotune_cache",
}

setup(
    packages=find_packages(include=["triton_metal", "triton_metal.*"]) + list(MAPPED),
    package_dir=MAPPED,
)
