"""In-tree dynamic-metadata provider for minifw (loaded by scikit-build-core).

Wired in pyproject.toml as::

    [[tool.dynamic-metadata]]
    provider = { path = "_build", module = "version_provider" }

scikit-build-core >= 1.0 imports this module from ``_build/`` (its
``provider-path``) and calls ``dynamic_metadata(settings, project)``, which
returns a fragment of ``[project]``.  The deprecated scikit-build-core 0.x
table form (``[tool.scikit-build.metadata.version]`` with
``provider-path = "_build"``) calls ``dynamic_metadata(field, settings)``
instead; both call shapes are accepted below.

Fields produced:

* ``version``: ``$MINIFW_BUILD_VERSION`` when set (e.g. ``2.15.0+cu132``, like
  PyTorch's ``PYTORCH_BUILD_VERSION``), else ``BASE_VERSION``.
* ``dependencies``: on CUDA builds the CUDA runtime wheel that provides
  ``libcudart.so.<major>`` (the extension links it dynamically and finds it
  through its RUNPATH); nothing otherwise.

Only the standard library and ``packaging`` (a dependency of
scikit-build-core) are used; nothing here depends on the time or on paths, so
the metadata is reproducible.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

__all__ = ["BASE_VERSION", "dynamic_metadata", "get_requires_for_dynamic_metadata"]

BASE_VERSION = "2.15.0"
_ACCELERATORS = ("cpu", "cuda", "rocm", "xpu")


def _env(name: str) -> str:
    return os.environ.get(name, "").strip()


def build_version() -> str:
    raw = _env("MINIFW_BUILD_VERSION") or BASE_VERSION
    try:
        from packaging.version import InvalidVersion, Version
    except ImportError:  # pragma: no cover - packaging ships with scikit-build-core
        return raw
    try:
        normalized = str(Version(raw))
    except InvalidVersion as exc:
        msg = f"MINIFW_BUILD_VERSION={raw!r} is not a valid PEP 440 version"
        raise ValueError(msg) from exc
    if Version(normalized).base_version != BASE_VERSION:
        # Not fatal: a release pipeline may legitimately bump it, but say so.
        print(
            f"minifw: note: MINIFW_BUILD_VERSION={raw} differs from the source "
            f"version {BASE_VERSION}"
        )
    return normalized


def runtime_dependencies() -> list[str]:
    """None of its own: the runtime an accelerator build needs (the CUDA runtime
    wheel) is the release matrix's to declare, per variant, and the release tool
    adds it when it labels the wheel; a requirement added here as well would be
    one the matrix does not list. A build by hand installs the runtime itself."""
    accel = (_env("MINIFW_ACCELERATOR") or "cpu").lower()
    if accel not in _ACCELERATORS:
        msg = (
            f"MINIFW_ACCELERATOR={accel!r} is not one of {', '.join(_ACCELERATORS)}"
        )
        raise ValueError(msg)
    return []


def _fields() -> dict[str, Any]:
    return {"version": build_version(), "dependencies": runtime_dependencies()}


def dynamic_metadata(*args: Any) -> Any:
    """Both call shapes of scikit-build-core's provider hook.

    * ``dynamic_metadata(settings, project)`` -> dict fragment of [project]
      ([[tool.dynamic-metadata]], scikit-build-core >= 1.0);
    * ``dynamic_metadata(field, settings)`` -> value of one field
      (legacy ``tool.scikit-build.metadata.<field>`` table).
    """
    if args and isinstance(args[0], str):
        field = args[0]
        fields = _fields()
        if field not in fields:
            msg = f"minifw version_provider cannot provide {field!r}"
            raise KeyError(msg)
        return fields[field]
    project: Mapping[str, Any] = args[1] if len(args) > 1 else {}
    wanted = set(project.get("dynamic", ())) or {"version"}
    return {k: v for k, v in _fields().items() if k in wanted}


def get_requires_for_dynamic_metadata(
    _settings: Mapping[str, Any] | None = None,
) -> list[str]:
    return []
