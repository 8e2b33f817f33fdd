"""Packages are found, not listed.

The repository keeps gatecheck's four layers as top-level folders (``servers``, ``fixtures``, ``conformance``,
``load``) and the top package in ``src/gatecheck``; the wheel puts each layer inside the ``gatecheck`` package, with
every sub-package below it found by ``find_packages``. A folder with an ``__init__.py`` ships without anyone adding it
to a list; ``tests/install/test_wheel.py`` checks that every tracked file of those folders is in the built wheel.
"""

from setuptools import find_packages, setup

LAYERS = ("servers", "fixtures", "conformance", "load")
PACKAGE_DATA = {
    "gatecheck.load": ["profiles/*.toml", "seeds/*.toml", "README.md"],
    "gatecheck.fixtures": ["static/*", "ROUTES.md", "tls/*"],
    "gatecheck.conformance": ["expectations/*.toml", "data/*", "levels/*.toml"],
}


def _packages() -> tuple:
    packages, package_dir = ["gatecheck"], {"gatecheck": "src/gatecheck"}
    for layer in LAYERS:
        name = f"gatecheck.{layer}"
        package_dir[name] = layer
        packages += [name] + [f"{name}.{sub}" for sub in find_packages(layer)]
    return packages, package_dir


_found, _dirs = _packages()
setup(packages=_found, package_dir=_dirs, package_data=PACKAGE_DATA)
