"""A PEP 517 backend in the tree (nothing to download) that prints ninja-style progress while it builds."""

import base64
import hashlib
import os
import zipfile


def _record(name, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"

def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    for step in (1, 2, 3):
        print(f"[{step}/3] Building C object step{step}.o", flush=True)
    files = {"tiny/__init__.py": b"", "tiny-1.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: tiny\nVersion: 1.0\n",
             "tiny-1.0.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: t\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    name = "tiny-1.0-py3-none-any.whl"
    with zipfile.ZipFile(os.path.join(wheel_directory, name), "w") as zf:
        for member, data in files.items():
            zf.writestr(member, data)
        record = "\n".join([*(_record(m, d) for m, d in files.items()), "tiny-1.0.dist-info/RECORD,,"]) + "\n"
        zf.writestr("tiny-1.0.dist-info/RECORD", record)
    return name
