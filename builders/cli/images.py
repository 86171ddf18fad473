"""``images``: build (or find) the container images a selection of targets needs."""

from __future__ import annotations

import argparse
import os
import shlex

from builders.base.console import Console
from builders.base.errors import EngineError
from builders.cli import add_container_options, add_matrix_option, add_selection_options
from builders.cli.plan import selected
from builders.engines import images
from builders.engines.container import find_engine
from builders.matrix import loader as matrix_mod


def configure_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("images", help="build the container images a selection needs",
                       description="Build the content-addressed image of every (variant, platform) the selection "
                                   "needs, from builders/resources/containers/<family>.Containerfile and build arguments computed from "
                                   "the matrix. Existing images with the same tag are reused.")
    add_matrix_option(p)
    add_selection_options(p)
    add_container_options(p)
    p.add_argument("--dry-run", action="store_true", help="print each image's tag and build command, build nothing")
    p.set_defaults(execute=execute)


def execute(args: argparse.Namespace, console: Console) -> int:
    m = matrix_mod.load(args.matrix, builds=False)
    env = images.engine_env(os.environ)
    base = images.base_image(args.base_image, env)
    pythons = images.image_pythons(m)
    specs: dict[str, images.ImageSpec] = {}
    unset: set[str] | None = set() if args.dry_run else None
    for target in selected(m, args):
        if target.containerfile is not None:
            spec = images.image_spec(target, pythons, env, base, unset=unset)
            specs.setdefault(spec.tag, spec)
    exe = args.container_engine or "podman"
    if not args.dry_run:
        exe = find_engine(env, args.container_engine) or ""
        if not exe:
            raise EngineError("no working container engine (podman or docker)")
    for tag, spec in specs.items():
        if args.dry_run:
            print(shlex.join(images.build_argv(exe, spec, images.host_ca_bundle(env))))
            continue
        with console.group(f"image {tag}"):
            images.ensure(exe, spec, env, None, images.host_ca_bundle(env))
        console.line(f"{tag} ready ({spec.family.value}, base {dict(spec.args)['BASE_IMAGE']})")
    if unset:
        console.line(f"unset: {', '.join(sorted(unset))}: shown as ${{NAME}} above; building these images needs them "
                     "set (registry addresses come from the environment, never the repository)")
    return 0
