"""``variants WHEELHOUSE``: the variant-enabled index (PEP 825) beside ``whl/<label>/``."""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

from builders.base.console import Console
from builders.base.errors import SmokeError
from builders.cli import load
from builders.cli.arguments import Options
from builders.index.mirror import pip_mirror
from builders.index.variants import Made, VariantIndex, labelled_wheels, make_variants, settings
from builders.pipeline.host import detect
from builders.wheel.smoke import smoke

HELP = "make the wheel variants (PEP 825) and their index"
DESCRIPTION = ("Turn every labelled wheel under WHEELHOUSE (verified as its target) into a wheel "
                "variant with variantlib: the public version (2.15.0, no +label), the variant's "
                "label after the platform tag (null for the variant without properties), the "
                "matrix's properties and providers in .dist-info/variant.json. Each is checked "
                "against the matrix and against its public-version twin (every other member "
                "byte-identical) and verified as the twin is; then OUTPUT/<wheel_variants.layout> "
                "gets every variant wheel in one project page with {name}-{version}-variants.json "
                "(variantlib generate-index-json, read back and compared with the matrix), PEP "
                "503/691 pages with hashes, PEP 658 metadata and the mirrored requirement wheels. A matrix without "
                "wheel_variants makes none (exit 0). "
                "Install from it with `uv pip install --preview-features wheel-variants "
                "--index-url URL NAME`; pip ignores variant wheels. Exit 27 on a wheel variant or "
                "variants.json that does not verify, or no labelled wheel.")


def execute(opts: Options, console: Console) -> int:
    m = load.matrix(opts, builds=opts.smoke)  # the smoke script only when it smoke-tests
    if opts.copy_wheels is not None:
        opts.copy_wheels.mkdir(parents=True, exist_ok=True)
    if m.wheel_variants is None:
        console.line(f"{opts.matrix}: no wheel_variants in the matrix, no wheel variants made")
        return 0
    output = opts.output or opts.wheelhouse
    wheels = labelled_wheels(opts.wheelhouse, output / settings(m).layout)
    env = dict(opts.env)
    with tempfile.TemporaryDirectory(prefix="builders-variants-") as tmp:
        work = Path(tmp)
        mirror = None if opts.no_mirror else pip_mirror(m, work / "mirror", python=sys.executable, env=env)
        result = make_variants(m, wheels, output, work=work / "work", env=env, requirements=mirror)
        report(result, console)
        for one in result.made if opts.copy_wheels is not None else ():
            shutil.copyfile(one.path, opts.copy_wheels / one.path.name)
        if opts.smoke:
            for one in result.made:
                smoke_twin(one, env, opts.installer, console)
    return 0


def report(result: VariantIndex, console: Console) -> None:
    for one in result.made:
        console.line(f"{one.labelled.name} -> {one.path} (verified for {one.target.id}, "
                     f"{len(one.target.variant.properties)} propert{'y' if len(one.target.variant.properties) == 1 else 'ies'})")
    for path in result.variants_json:
        console.line(f"{path}: read back by variantlib, the matrix's labels and properties")
    if result.mirrored:
        console.line(f"{result.root}: {len(result.mirrored)} requirement wheel(s) mirrored")


def smoke_twin(one: Made, env: dict[str, str], installer: str, console: Console) -> None:
    """The smoke test of ``one``'s twin: the variant wheel's files but variant.json (:mod:`builders.wheel.variant`)."""
    python = detect((one.target.python,), env).interpreter(one.target.python.abi)
    if python is None:
        raise SmokeError(f"no {one.target.python} interpreter on this host to smoke-test {one.target.id}")
    outcome = smoke(one.twin, one.target, python, env, None, dist_version=str(one.target.project.version),
                    installer=installer)
    if not outcome.ok:
        raise SmokeError(f"{one.path.name} (its twin {one.twin.name}): " + "; ".join(outcome.problems))
    console.line(f"{one.path.name}: smoke test passed on its twin ({one.target.id})")
