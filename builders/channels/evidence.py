"""The records a channel's ledger is made of: frozen, versioned types with ``to_json``/``from_json``.

A channel's authoritative state is the fold of its ledger's entries (:mod:`builders.channels.ledger`):
every file it holds (key, sha256, size, target, form), every yank with its reason, and each promotion's
manifest and validation digests. An entry names its parent by id and by the sha256 of the parent's
bytes, so a chain read back is the chain written or it is refused. Everything read from the bucket is
untrusted: a malformed record is :class:`LedgerCorrupt` (exit 40, a message, never a traceback).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from builders.base.errors import LedgerCorrupt

SCHEMA = 1
# the project's own wheel, a mirrored requirement, a PEP 658 file, a PEP 740 provenance (``<wheel>.provenance``)
FORMS = ("wheel", "requirement", "metadata", "provenance")
LISTED = ("wheel", "requirement")  # the forms a page lists as files
KINDS = ("adopt", "publish", "promotion", "yank", "rollback", "repair")


@dataclass(frozen=True, kw_only=True)
class FileRecord:
    """One object a channel holds; ``requires_python`` is the wheel's (its pages carry it)."""

    key: str
    sha256: str
    size: int
    target: str = ""  # the target id a labelled wheel was built for; "" for a requirement or .metadata
    form: str = "wheel"
    requires_python: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"key": self.key, "sha256": self.sha256, "size": self.size, "target": self.target,
                               "form": self.form}
        return out | ({"requires_python": self.requires_python} if self.requires_python else {})

    @classmethod
    def from_dict(cls, data: Any, where: str) -> FileRecord:
        item = _mapping(data, where)
        form = _text(item, "form", where)
        if form not in FORMS:
            raise LedgerCorrupt(f"{where}: form {form!r} is none of {', '.join(FORMS)}")
        size = item.get("size")
        if not isinstance(size, int) or size < 0:
            raise LedgerCorrupt(f"{where}: size {size!r} is not a byte count")
        rp = item.get("requires_python")
        return cls(key=_text(item, "key", where), sha256=_digest(item, "sha256", where), size=size,
                   target=str(item.get("target", "")), form=form, requires_python=rp if isinstance(rp, str) else None)


@dataclass(frozen=True, kw_only=True)
class YankMark:
    """A key yanked with ``reason`` ("" for none given), or listed again (``reason`` None)."""

    key: str
    reason: str | None

    def to_dict(self) -> dict[str, Any]:
        return {"key": self.key, "reason": self.reason}

    @classmethod
    def from_dict(cls, data: Any, where: str) -> YankMark:
        item = _mapping(data, where)
        reason = item.get("reason")
        if reason is not None and not isinstance(reason, str):
            raise LedgerCorrupt(f"{where}: reason {reason!r} is not text")
        return cls(key=_text(item, "key", where), reason=reason)


@dataclass(frozen=True, kw_only=True)
class PromotionDigests:
    """What a promotion released from: the manifest's sha256 and every validation record's sha256."""

    version: str
    manifest_sha256: str
    validation_sha256: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"version": self.version, "manifest_sha256": self.manifest_sha256,
                "validation_sha256": list(self.validation_sha256)}

    @classmethod
    def from_dict(cls, data: Any, where: str) -> PromotionDigests:
        item = _mapping(data, where)
        digests = item.get("validation_sha256", [])
        if not isinstance(digests, list) or not all(isinstance(d, str) for d in digests):
            raise LedgerCorrupt(f"{where}: validation_sha256 is not a list of digests")
        return cls(version=_text(item, "version", where), manifest_sha256=_digest(item, "manifest_sha256", where),
                   validation_sha256=tuple(digests))


@dataclass(frozen=True, kw_only=True)
class LedgerEntry:
    """One step of a channel's chain: what it added, removed and yanked, after ``parent`` (None: the first)."""

    seq: int
    parent: str | None  # the parent entry's id
    parent_sha256: str | None  # the sha256 of the parent entry's bytes
    kind: str
    at: str  # UTC, ISO 8601
    writer: str  # who appended it (host, process, CI run): named when another writer must wait
    added: tuple[FileRecord, ...] = ()
    removed: tuple[str, ...] = ()
    yanks: tuple[YankMark, ...] = ()
    promotion: PromotionDigests | None = None
    undoes: str | None = None  # a rollback: the id of the promotion entry it undoes
    note: str = ""
    schema: int = SCHEMA

    def to_json(self) -> bytes:
        data: dict[str, Any] = {
            "schema": self.schema, "seq": self.seq, "parent": self.parent, "parent_sha256": self.parent_sha256,
            "kind": self.kind, "at": self.at, "writer": self.writer, "added": [f.to_dict() for f in self.added],
            "removed": list(self.removed), "yanks": [y.to_dict() for y in self.yanks], "note": self.note,
            "promotion": self.promotion.to_dict() if self.promotion else None, "undoes": self.undoes}
        return (json.dumps(data, indent=1, sort_keys=True) + "\n").encode()

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.to_json()).hexdigest()

    @property
    def id(self) -> str:
        """``<seq>-<sha256 prefix>``: sorts in chain order and names the bytes."""
        return entry_id(self.seq, self.sha256)

    @classmethod
    def from_json(cls, raw: bytes, where: str) -> LedgerEntry:
        item = _mapping(_loads(raw, where), where)
        if item.get("schema") != SCHEMA:
            raise LedgerCorrupt(f"{where}: ledger schema {item.get('schema')!r}, this builders reads {SCHEMA} "
                                "(a newer builders wrote it: upgrade)")
        kind, seq = _text(item, "kind", where), item.get("seq")
        if kind not in KINDS or not isinstance(seq, int) or seq < 0:
            raise LedgerCorrupt(f"{where}: kind {kind!r} or seq {seq!r} is not an entry's")
        promotion = item.get("promotion")
        return cls(seq=seq, parent=_optional(item, "parent", where), parent_sha256=_optional(item, "parent_sha256", where),
                   kind=kind, at=_text(item, "at", where), writer=_text(item, "writer", where),
                   added=tuple(FileRecord.from_dict(f, f"{where}: added") for f in _list(item, "added", where)),
                   removed=tuple(str(k) for k in _list(item, "removed", where)),
                   yanks=tuple(YankMark.from_dict(y, f"{where}: yanks") for y in _list(item, "yanks", where)),
                   promotion=None if promotion is None else PromotionDigests.from_dict(promotion, f"{where}: promotion"),
                   undoes=_optional(item, "undoes", where), note=str(item.get("note", "")))


@dataclass(frozen=True, kw_only=True)
class Head:
    """The ledger's head object: the newest entry, and the fencing token of the lease that moved it last."""

    entry: str
    sha256: str
    seq: int
    token: int = 0
    writer: str = ""

    def to_json(self) -> bytes:
        return (json.dumps({"schema": SCHEMA, "entry": self.entry, "sha256": self.sha256, "seq": self.seq,
                            "token": self.token, "writer": self.writer}, sort_keys=True) + "\n").encode()

    @classmethod
    def from_json(cls, raw: bytes, where: str) -> Head:
        item = _mapping(_loads(raw, where), where)
        seq, token = item.get("seq"), item.get("token", 0)
        if item.get("schema") != SCHEMA or not isinstance(seq, int) or not isinstance(token, int):
            raise LedgerCorrupt(f"{where}: not a ledger head of schema {SCHEMA} (seq, token)")
        return cls(entry=_text(item, "entry", where), sha256=_digest(item, "sha256", where), seq=seq, token=token,
                   writer=str(item.get("writer", "")))


@dataclass(frozen=True, kw_only=True)
class Lease:
    """The lock object where the store ignores conditional writes: who holds it, until when, with which token."""

    writer: str
    token: int
    expires: float  # seconds since the epoch

    def to_json(self) -> bytes:
        return (json.dumps({"schema": SCHEMA, "writer": self.writer, "token": self.token,
                            "expires": self.expires}, sort_keys=True) + "\n").encode()

    @classmethod
    def from_json(cls, raw: bytes, where: str) -> Lease:
        item = _mapping(_loads(raw, where), where)
        token, expires = item.get("token"), item.get("expires")
        if not isinstance(token, int) or not isinstance(expires, int | float):
            raise LedgerCorrupt(f"{where}: not a ledger lease (writer, token, expires)")
        return cls(writer=_text(item, "writer", where), token=token, expires=float(expires))


def entry_id(seq: int, sha256: str) -> str:
    return f"{seq:08d}-{sha256[:16]}"


def _loads(raw: bytes, where: str) -> Any:
    try:
        return json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise LedgerCorrupt(f"{where}: not JSON ({exc})") from None


def _mapping(data: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(data, Mapping):
        raise LedgerCorrupt(f"{where}: not a JSON object")
    return data


def _text(item: Mapping[str, Any], name: str, where: str) -> str:
    value = item.get(name)
    if not isinstance(value, str) or not value:
        raise LedgerCorrupt(f"{where}: {name} is missing or not text")
    return value


def _optional(item: Mapping[str, Any], name: str, where: str) -> str | None:
    value = item.get(name)
    if value is not None and not isinstance(value, str):
        raise LedgerCorrupt(f"{where}: {name} is not text")
    return value


def _digest(item: Mapping[str, Any], name: str, where: str) -> str:
    value = _text(item, name, where)
    if len(value) != 64 or any(c not in "0123456789abcdef" for c in value):
        raise LedgerCorrupt(f"{where}: {name} {value!r} is not a sha256")
    return value


def _list(item: Mapping[str, Any], name: str, where: str) -> list[Any]:
    value = item.get(name, [])
    if not isinstance(value, list):
        raise LedgerCorrupt(f"{where}: {name} is not a list")
    return value


# --- the records that cross commands (local files: a malformed one is InputError, exit 20, file and key named) ---

VALIDATION_VERSION = 2  # 2: manifest_sha256, and with a manifest both installers' sha256
PROMOTION_SCHEMA = 1


@dataclass(frozen=True, kw_only=True)
class InstallVerdict:
    """What one installer got when it installed a target: the file and its sha256 (what promotion must release)."""

    installer: str
    status: str
    reason: str = ""
    filename: str = ""
    sha256: str = ""

    def to_dict(self) -> dict[str, str]:
        return {k: v for k, v in {"installer": self.installer, "status": self.status, "reason": self.reason,
                                  "filename": self.filename, "sha256": self.sha256}.items() if v}

    @classmethod
    def from_dict(cls, data: Any, where: str) -> InstallVerdict:
        item = _record_mapping(data, where)
        return cls(installer=_record_text(item, "installer", where), status=_record_text(item, "status", where),
                   reason=_record_text(item, "reason", where, ""), filename=_record_text(item, "filename", where, ""),
                   sha256=_record_text(item, "sha256", where, ""))


@dataclass(frozen=True, kw_only=True)
class Containment:
    """How a validated candidate's code was contained (:class:`builders.base.sandbox.Isolation`, as recorded)."""

    pid_namespace: bool
    why: str
    environment: str

    def to_dict(self) -> dict[str, object]:
        return {"pid_namespace": self.pid_namespace, "why": self.why, "environment": self.environment}

    @classmethod
    def from_dict(cls, data: Any, where: str) -> Containment:
        item = _record_mapping(data, where)
        pid = item.get("pid_namespace")
        if not isinstance(pid, bool):
            raise _malformed(where, "pid_namespace", "is not true or false")
        return cls(pid_namespace=pid, why=_record_text(item, "why", where, ""),
                   environment=_record_text(item, "environment", where, ""))


@dataclass(frozen=True, kw_only=True)
class TargetVerdict:
    """One target's verdict in a validation record (``installs``: each installer's; a pass counts only if every
    installer installed the manifest's bytes)."""

    target: str
    status: str
    reason: str = ""
    index_url: str = ""
    installs: tuple[InstallVerdict, ...] = ()
    isolation: Containment | None = None

    @property
    def sha256(self) -> str:
        return next((i.sha256 for i in self.installs if i.sha256), "")

    @property
    def filename(self) -> str:
        return next((i.filename for i in self.installs if i.filename), "")

    def to_dict(self) -> dict[str, Any]:
        return {"target": self.target, "status": self.status, "reason": self.reason, "index_url": self.index_url,
                "filename": self.filename, "sha256": self.sha256, "installs": [i.to_dict() for i in self.installs],
                **({"isolation": self.isolation.to_dict()} if self.isolation is not None else {})}

    @classmethod
    def from_dict(cls, data: Any, where: str) -> TargetVerdict:
        item = _record_mapping(data, where)
        installs = item.get("installs", [])
        if not isinstance(installs, list):
            raise _malformed(where, "installs", "is not a list")
        iso = item.get("isolation")
        target = _record_text(item, "target", where)
        return cls(target=target, status=_record_text(item, "status", where),
                   reason=_record_text(item, "reason", where, ""), index_url=_record_text(item, "index_url", where, ""),
                   installs=tuple(InstallVerdict.from_dict(i, f"{where}: {target}: installs") for i in installs),
                   isolation=None if iso is None else Containment.from_dict(iso, f"{where}: {target}: isolation"))


@dataclass(frozen=True, kw_only=True)
class ValidationRecord:
    """What ``validate --record`` writes and promote-release and the workflow's jobs read: each target's verdict on
    one host, against one manifest (``manifest_sha256`` ``""``: none)."""

    project: str
    channel: str
    version: str
    host: str
    manifest_sha256: str
    targets: tuple[TargetVerdict, ...]
    record_version: int = VALIDATION_VERSION

    STATUSES = ("passed", "failed", "not-runnable", "not-published")

    def count(self, status: str) -> int:
        return sum(1 for t in self.targets if t.status == status)

    def to_json(self) -> bytes:
        data = {"record_version": self.record_version, "project": self.project, "channel": self.channel,
                "version": self.version, "host": self.host, "manifest_sha256": self.manifest_sha256,
                "targets": [t.to_dict() for t in self.targets], **{s: self.count(s) for s in self.STATUSES}}
        return (json.dumps(data, indent=2, sort_keys=True) + "\n").encode()

    @classmethod
    def from_json(cls, raw: bytes, where: str) -> ValidationRecord:
        item = _record_mapping(_record_loads(raw, where, "validation record"), where)
        if item.get("record_version") != VALIDATION_VERSION:
            raise _malformed(where, "record_version", f"is {item.get('record_version')!r}, this builders reads "
                                                      f"{VALIDATION_VERSION} (validate again with this builders)")
        targets = item.get("targets")
        if not isinstance(targets, list):
            raise _malformed(where, "targets", "is missing or not a list")
        return cls(project=_record_text(item, "project", where), channel=_record_text(item, "channel", where),
                   version=_record_text(item, "version", where), host=_record_text(item, "host", where, "?"),
                   manifest_sha256=_record_text(item, "manifest_sha256", where, ""),
                   targets=tuple(TargetVerdict.from_dict(t, f"{where}: targets") for t in targets))


@dataclass(frozen=True, kw_only=True)
class PromotionRecord:
    """What ``promote-release`` records (``--record``, and beside the channels under ``publish-records/release/``)
    and ``rollback`` reads: the release, the manifest it came from, and the ledger entry that committed it
    (``""`` in ``--record``'s copy written before the preflight's verdict)."""

    version: str
    manifest_sha256: str
    at: str = ""
    ledger_entry: str = ""
    released: tuple[tuple[str, str], ...] = ()  # release wheel key -> sha256
    unchanged: tuple[str, ...] = ()  # release keys that held these bytes already
    left_out: tuple[str, ...] = ()  # the version's files on test the manifest does not name
    pypi: tuple[tuple[str, str], ...] = ()  # PyPI file -> sha256
    accepted: tuple[tuple[str, str], ...] = ()  # target released unvalidated -> why and by what
    refusals: tuple[str, ...] = ()
    before: tuple[tuple[str, tuple[str, ...]], ...] = ()  # release folder -> the wheels its pages listed before
    schema: int = PROMOTION_SCHEMA

    def to_json(self) -> bytes:
        data = {"schema": self.schema, "kind": "promotion", "channel": "release", "version": self.version,
                "manifest_sha256": self.manifest_sha256, "at": self.at, "ledger_entry": self.ledger_entry,
                "released": dict(self.released), "unchanged": list(self.unchanged), "left_out": list(self.left_out),
                "pypi": dict(self.pypi), "accepted_not_runnable": dict(self.accepted), "refusals": list(self.refusals),
                "before": {folder: list(keys) for folder, keys in self.before}}
        return (json.dumps(data, indent=2, sort_keys=True) + "\n").encode()

    @classmethod
    def from_json(cls, raw: bytes, where: str) -> PromotionRecord:
        item = _record_mapping(_record_loads(raw, where, "promotion record"), where)
        if item.get("schema") != PROMOTION_SCHEMA or item.get("kind") != "promotion":
            raise _malformed(where, "schema", f"is {item.get('schema')!r} of kind {item.get('kind')!r}: not a "
                                              f"promotion record of schema {PROMOTION_SCHEMA} (promote-release --record "
                                              "writes one; a ledger entry id works too: builders history)")
        return cls(version=_record_text(item, "version", where),
                   manifest_sha256=_record_text(item, "manifest_sha256", where),
                   at=_record_text(item, "at", where, ""), ledger_entry=_record_text(item, "ledger_entry", where, ""),
                   released=_pairs(item, "released", where), unchanged=_texts(item, "unchanged", where),
                   left_out=_texts(item, "left_out", where), pypi=_pairs(item, "pypi", where),
                   accepted=_pairs(item, "accepted_not_runnable", where), refusals=_texts(item, "refusals", where),
                   before=tuple((folder, tuple(keys)) for folder, keys in _before(item, where)))


def _malformed(where: str, key: str, why: str) -> Exception:
    from builders.base.errors import InputError, Problem

    return InputError([Problem(message=f"{where}: {key} {why}")])


def _record_loads(raw: bytes, where: str, what: str) -> Any:
    try:
        return json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise _malformed(where, "(the file)", f"is not a {what}: not JSON ({exc})") from None


def _record_mapping(data: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(data, Mapping):
        raise _malformed(where, "(the value)", "is not a JSON object")
    return data


def _record_text(item: Mapping[str, Any], name: str, where: str, default: str | None = None) -> str:
    value = item.get(name, default)
    if not isinstance(value, str) or (default is None and not value):
        raise _malformed(where, name, "is missing or not text")
    return value


def _texts(item: Mapping[str, Any], name: str, where: str) -> tuple[str, ...]:
    value = item.get(name, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise _malformed(where, name, "is not a list of text")
    return tuple(value)


def _pairs(item: Mapping[str, Any], name: str, where: str) -> tuple[tuple[str, str], ...]:
    value = item.get(name, {})
    if not isinstance(value, Mapping):
        raise _malformed(where, name, "is not a JSON object")
    return tuple(sorted((str(k), v if isinstance(v, str) else json.dumps(v, sort_keys=True)) for k, v in value.items()))


def _before(item: Mapping[str, Any], where: str) -> list[tuple[str, list[str]]]:
    value = item.get("before", {})
    if not isinstance(value, Mapping) or not all(isinstance(v, list) for v in value.values()):
        raise _malformed(where, "before", "is not a JSON object of lists")
    return sorted((str(k), [str(x) for x in v]) for k, v in value.items())
