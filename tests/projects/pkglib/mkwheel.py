"""Pack a folder into a wheel for the running interpreter (the project's own packer: no build backend)."""

import base64
import hashlib
import sys
import sysconfig
import zipfile
from pathlib import Path

NAME, VERSION = "pkglib", "1.0.0"


def main(tree: Path, out: Path) -> None:
    impl = f"cp{sys.version_info[0]}{sys.version_info[1]}"
    plat = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    dist_info = f"{NAME}-{VERSION}.dist-info"
    files = {str(p.relative_to(tree)): p.read_bytes() for p in sorted(tree.rglob("*")) if p.is_file()}
    metadata = f"Metadata-Version: 2.1\nName: {NAME}\nVersion: {VERSION}\nRequires-Python: >=3.11\n"
    files[f"{dist_info}/METADATA"] = metadata.encode()
    files[f"{dist_info}/WHEEL"] = (f"Wheel-Version: 1.0\nGenerator: mkwheel\nRoot-Is-Purelib: false\n"
                                   f"Tag: {impl}-{impl}-{plat}\n").encode()
    lines = [f"{n},sha256={base64.urlsafe_b64encode(hashlib.sha256(d).digest()).rstrip(b'=').decode()},{len(d)}"
             for n, d in files.items()]
    files[f"{dist_info}/RECORD"] = ("\n".join([*lines, f"{dist_info}/RECORD,,"]) + "\n").encode()
    with zipfile.ZipFile(out / f"{NAME}-{VERSION}-{impl}-{impl}-{plat}.whl", "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in files.items():
            info = zipfile.ZipInfo(name, (1980, 1, 1, 0, 0, 0))
            info.external_attr = 0o755 << 16
            zf.writestr(info, data)


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
