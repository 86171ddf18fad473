"""``images``: build (or find) the container images a selection of targets needs."""

from __future__ import annotations

import shlex

from builders.base.console import Console
from builders.base.errors import EngineError
from builders.cli import load
from builders.cli.arguments import Options
from builders.engines import images
from builders.matrix.targets import selected
from builders.pipeline.host import CONTAINER_ENGINES, find_engine, missing_container_engine

HELP = "build the container images a selection needs"
DESCRIPTION = ("Build the content-addressed image of every (variant, platform) the selection "
                "needs, from builders/resources/containers/<family>.Containerfile and build arguments computed from "
                "the matrix. Existing images with the same tag are reused.")


def execute(opts: Options, console: Console) -> int:
    m = load.matrix(opts)
    env = images.engine_env(opts.env)
    base = opts.base_image
    pythons = images.image_pythons(m)
    specs: dict[str, images.ImageSpec] = {}
    unset: set[str] | None = set() if opts.dry_run else None
    for target in selected(m, load.selection(opts)):
        if target.containerfile is not None:
            spec = images.image_spec(target, pythons, env, base, unset=unset)
            specs.setdefault(spec.tag, spec)
    exe = opts.container_engine or CONTAINER_ENGINES[0]
    if not opts.dry_run:
        exe = find_engine(env, opts.container_engine) or ""
        if not exe:
            raise EngineError(missing_container_engine(env, opts.container_engine))
    for tag, spec in specs.items():
        if opts.dry_run:
            console.out(shlex.join(images.build_argv(exe, spec, images.host_ca_bundle(env))))
            continue
        with console.group(f"image {tag}"):
            images.ensure(exe, spec, env, None, images.host_ca_bundle(env))
        console.line(f"{tag} ready ({spec.family.value}, base {dict(spec.args)['BASE_IMAGE']})")
    if unset:
        console.line(f"unset: {', '.join(sorted(unset))}: shown as ${{NAME}} above; building these images needs them "
                     "set (registry addresses come from the environment, never the repository)")
    return 0
