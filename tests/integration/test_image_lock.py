"""Two runs on one host that need one image build it once (builders.engines.images.ensure's lock).

Real podman, a real build: two threads stand for two processes (``flock`` locks belong to an
open file, so two opens in one process exclude each other as two processes do). The image is
new to the store (its Containerfile names this test's folder), and is removed afterwards.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from builders.engines import images
from builders.engines.images import ImageSpec
from builders.families.cpu import ACCELERATOR as CPU

pytestmark = pytest.mark.slow


def spec(folder: Path, base: str) -> ImageSpec:
    containerfile = folder / "Containerfile"
    # The folder's name makes the tag new; the sleep keeps the first build running while the second asks.
    containerfile.write_text(f"ARG BASE_IMAGE\nFROM $BASE_IMAGE\nRUN echo {folder.name} > /made && sleep 5\n")
    return ImageSpec(family=CPU, containerfile=containerfile, args=(("BASE_IMAGE", base),),
                     platform="linux-x86_64", arch="x86_64")


def test_two_runs_needing_one_image_build_it_once(tmp_path: Path, base_image: str) -> None:
    image = spec(tmp_path, base_image)
    env = images.engine_env(os.environ)
    logs = [tmp_path / "first.log", tmp_path / "second.log"]
    tags: list[str] = []
    threads = [threading.Thread(target=lambda log=log: tags.append(images.ensure("podman", image, env, log, None)))
               for log in logs]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=600)
        assert tags == [image.tag, image.tag]
        texts = [log.read_text() for log in logs]
        built = [text for text in texts if "podman build" in text]
        assert len(built) == 1, texts
        waited = [text for text in texts if "is in use by" in text]
        assert len(waited) == 1 and waited != built, texts
    finally:
        assert images.remove_image("podman", image.tag, env) is None
