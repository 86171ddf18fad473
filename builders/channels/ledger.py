"""A channel's ledger: an append-only chain of entries in the bucket, and the head that names the newest.

Layout beside the channels: ``ledger/<channel>/entries/<id>.json`` (one object per entry, never
rewritten: its id carries its sha256) and ``ledger/<channel>/head.json``. Appending writes the entry, then
moves the head. Two writers must never both move it from the same parent, and stores differ:

- ``conditional`` (AWS S3, moto): the head is written with ``IfMatch`` its ETag as read (or
  ``IfNoneMatch: *`` for the first); a 412 means another writer moved it, and the loser re-reads and
  replans.
- ``lease`` (``rclone serve s3`` overwrites despite both headers: measured): a lock object
  ``ledger/<channel>/lock.json`` taken with a fencing token one above any seen; the taker waits a settle
  time and reads it back, so of two takers only the last writer holds it. Under the lease the head is
  re-read, and a head whose token is above the holder's (a later lease moved it) fences the holder
  off. A lease held by another writer past the wait stops with a message naming that writer.

Which one a store needs is probed once per command (:func:`probe`): two ``IfNoneMatch: *`` writes of
a scratch object, the second refused or not. A reader never reads the head alone: it follows the
chain back and checks each parent's bytes against the digest its child names.
"""

from __future__ import annotations

import contextlib
import dataclasses
import secrets
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from builders.base.errors import LedgerBusy, ObjectStoreError
from builders.channels.evidence import FileRecord, Head, Lease, LedgerCorrupt, LedgerEntry
from builders.channels.objectstore import Bucket

LEDGER = "ledger/"
HEAD, LOCK = "head.json", "lock.json"  # JSON objects: the store serves them as such
LEASE_SECONDS = 120.0  # a holder that died frees the lock after this long
SETTLE_SECONDS = 1.0  # between a write and its read-back (the lease, the head): longer than one read-then-write
# gap of another writer, on a loaded machine too (0.5 s let two writers hold the lease at once on 2 busy cores)
WAIT_SECONDS = 180.0  # how long a writer waits for another writer's lease before it stops
TRIES = 8  # re-reads and replans after a lost race before giving up
MODES = ("conditional", "lease")


@dataclass(frozen=True, kw_only=True)
class ChannelState:
    """The fold of a chain: what the channel holds now. ``removed`` keys were held once (their objects may be
    deleted); every other object in a channel folder is a stray that no page may list."""

    files: Mapping[str, FileRecord] = field(default_factory=dict)
    yanks: Mapping[str, str] = field(default_factory=dict)
    removed: frozenset[str] = frozenset()
    entries: tuple[LedgerEntry, ...] = ()

    @property
    def head(self) -> LedgerEntry | None:
        return self.entries[-1] if self.entries else None

    def after(self, entry: LedgerEntry) -> ChannelState:
        """This state with ``entry`` applied (a yank of a key not held is corrupt: the chain is refused)."""
        files = {k: f for k, f in self.files.items() if k not in set(entry.removed)}
        files.update({f.key: f for f in entry.added})
        yanks = {k: r for k, r in self.yanks.items() if k in files}
        for mark in entry.yanks:
            if mark.key not in files:
                raise LedgerCorrupt(f"ledger entry {entry.id} yanks {mark.key}, which the channel does not hold")
            if mark.reason is None:
                yanks.pop(mark.key, None)
            else:
                yanks[mark.key] = mark.reason
        removed = (self.removed | set(entry.removed)) - {f.key for f in entry.added}
        return ChannelState(files=files, yanks=yanks, removed=frozenset(removed), entries=(*self.entries, entry))


def fold(entries: Iterable[LedgerEntry]) -> ChannelState:
    state = ChannelState()
    for entry in entries:
        state = state.after(entry)
    return state


def chained(state: ChannelState, entry: LedgerEntry) -> LedgerEntry:
    """``entry`` placed after ``state``'s head: its seq and parent filled in (what a replan after a lost race
    re-does on the new head)."""
    head = state.head
    return dataclasses.replace(entry, seq=0 if head is None else head.seq + 1,
                               parent=None if head is None else head.id,
                               parent_sha256=None if head is None else head.sha256)


@dataclass(frozen=True, kw_only=True)
class Snapshot:
    """What one read of the ledger found: the state, and the head object's ETag (None: no ledger yet)."""

    state: ChannelState
    head: Head | None
    etag: str | None


class Ledger:
    """One channel's ledger in ``bucket``; ``mode`` is ``conditional`` or ``lease`` (:func:`probe`)."""

    def __init__(self, bucket: Bucket, channel: str, *, mode: str, writer: str,
                 clock: Callable[[], float] = time.time, sleep: Callable[[float], None] = time.sleep) -> None:
        if mode not in MODES:
            raise ObjectStoreError(f"ledger writes: {mode!r} is neither of {', '.join(MODES)}")
        self.bucket, self.channel, self.mode, self.writer = bucket, channel, mode, writer
        self.folder = f"{LEDGER}{channel}/"
        self.clock, self.sleep = clock, sleep

    # --- reading ---------------------------------------------------------------------------------

    def read(self) -> Snapshot:
        """The whole chain from the head back, each parent checked against its child's digest."""
        raw, etag = self._get(f"{self.folder}{HEAD}")
        if raw is None:
            return Snapshot(state=ChannelState(), head=None, etag=None)
        head = Head.from_json(raw, f"{self.bucket.url}{self.folder}{HEAD}")
        return Snapshot(state=fold(self._chain(head)), head=head, etag=etag)

    def _chain(self, head: Head) -> list[LedgerEntry]:
        out: list[LedgerEntry] = []
        wanted: tuple[str | None, str | None] = (head.entry, head.sha256)
        while wanted[0] is not None:
            entry = self._entry(wanted[0], wanted[1])
            out.append(entry)
            wanted = (entry.parent, entry.parent_sha256)
        out.reverse()
        return out

    def _entry(self, ident: str, sha256: str | None) -> LedgerEntry:
        key = f"{self.folder}entries/{ident}.json"
        raw, _ = self._get(key)
        if raw is None:
            raise LedgerCorrupt(f"{self.bucket.url}{key}: the ledger names this entry and the bucket lacks it")
        entry = LedgerEntry.from_json(raw, f"{self.bucket.url}{key}")
        if entry.sha256 != sha256 or entry.id != ident:
            raise LedgerCorrupt(f"{self.bucket.url}{key}: its bytes are not those its child names (sha256 "
                                f"{entry.sha256}, named {sha256}): the ledger was changed by hand")
        return entry

    # --- appending -------------------------------------------------------------------------------

    def append(self, replan: Callable[[ChannelState], LedgerEntry | None]) -> tuple[LedgerEntry | None, ChannelState]:
        """Read, plan the entry on the head read (``replan``: pure; None: nothing to add), write it, move the head.
        A lost race re-reads and replans; returns the entry appended (None: none was needed) and the state after."""
        for _ in range(TRIES):
            snap = self.read()
            planned = replan(snap.state)
            if planned is None:
                return None, snap.state
            entry = chained(snap.state, planned)
            after = snap.state.after(entry)
            self._put(f"{self.folder}entries/{entry.id}.json", entry.to_json())
            if self._move(snap, entry):
                return entry, after
        raise LedgerBusy(f"{self.bucket.url}{self.folder}: another writer moved the head {TRIES} times while this "
                         f"one planned ({self._last_writer()}); run the command again")

    def _move(self, snap: Snapshot, entry: LedgerEntry) -> bool:
        """The head moved from ``snap``'s to ``entry``; False when another writer moved it first."""
        if self.mode == "conditional":
            head = Head(entry=entry.id, sha256=entry.sha256, seq=entry.seq, writer=self.writer)
            return self._put_conditional(f"{self.folder}{HEAD}", head.to_json(), snap.etag)
        token = self._take_lease(snap)
        try:
            raw, _ = self._get(f"{self.folder}{HEAD}")
            now = None if raw is None else Head.from_json(raw, f"{self.bucket.url}{self.folder}{HEAD}")
            if now != snap.head:
                return False  # moved since the read: replan on the new head
            head = Head(entry=entry.id, sha256=entry.sha256, seq=entry.seq, token=token, writer=self.writer)
            self._put(f"{self.folder}{HEAD}", head.to_json())
            self.sleep(SETTLE_SECONDS)
            return self._get(f"{self.folder}{HEAD}")[0] == head.to_json()
        finally:
            self._release(token)

    def _take_lease(self, snap: Snapshot) -> int:
        """The lock, with a fencing token above any lease or head seen; waits for a live lease of another writer."""
        key = f"{self.folder}{LOCK}"
        deadline = self.clock() + WAIT_SECONDS
        while True:
            held = self._lease()
            if held is not None and held.writer != self.writer and held.expires > self.clock():
                if self.clock() > deadline:
                    raise LedgerBusy(f"{self.bucket.url}{key}: held by {held.writer} (token {held.token}) for "
                                     f"{WAIT_SECONDS:.0f} s; wait for it to finish, or, if it died, for its "
                                     f"lease to lapse, and run the command again")
                self.sleep(0.2 + secrets.randbelow(300) / 1000)
                continue
            token = max(held.token if held else 0, snap.head.token if snap.head else 0) + 1
            mine = Lease(writer=self.writer, token=token, expires=self.clock() + LEASE_SECONDS)
            self._put(key, mine.to_json())
            self.sleep(SETTLE_SECONDS)
            if self._lease() == mine:
                return token

    def _lease(self) -> Lease | None:
        raw, _ = self._get(f"{self.folder}{LOCK}")
        return None if raw is None else Lease.from_json(raw, f"{self.bucket.url}{self.folder}{LOCK}")

    def _release(self, token: int) -> None:
        """The lock given up if it is still this writer's (an expired lease in its place: a delete may be refused)."""
        held = self._lease()
        if held is not None and held.writer == self.writer and held.token == token:
            self._put(f"{self.folder}{LOCK}", Lease(writer=self.writer, token=token, expires=0.0).to_json())

    def _last_writer(self) -> str:
        raw, _ = self._get(f"{self.folder}{HEAD}")
        return "last moved by " + (Head.from_json(raw, HEAD).writer if raw else "nobody")

    # --- the store -------------------------------------------------------------------------------

    def _get(self, key: str) -> tuple[bytes | None, str | None]:
        from botocore.exceptions import ClientError

        try:
            answer = self.bucket.s3.get_object(Bucket=self.bucket.url.bucket, Key=self.bucket.url.key(key))
            return bytes(answer["Body"].read()), str(answer.get("ETag", ""))
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in ("NoSuchKey", "404", "NotFound"):
                return None, None
            raise ObjectStoreError(f"{self.bucket.url}{key}: cannot read it: {exc}") from None

    def _put(self, key: str, data: bytes) -> None:
        self.bucket.upload(key, data, cache_control="no-cache")

    def _put_conditional(self, key: str, data: bytes, etag: str | None) -> bool:
        from botocore.exceptions import ClientError

        condition: dict[str, Any] = {"IfMatch": etag} if etag else {"IfNoneMatch": "*"}
        try:
            self.bucket.s3.put_object(Bucket=self.bucket.url.bucket, Key=self.bucket.url.key(key), Body=data,
                                      ContentType="application/json", CacheControl="no-cache", **condition)
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in ("PreconditionFailed", "412", "ConditionalRequestConflict"):
                return False
            raise ObjectStoreError(f"{self.bucket.url}{key}: write failed: {exc}") from None
        return True


def probe(bucket: Bucket, channel: str) -> str:
    """``conditional`` where the store refuses a second ``IfNoneMatch: *`` write of one key, else ``lease``."""
    from botocore.exceptions import ClientError

    key = bucket.url.key(f"{LEDGER}{channel}/probe-{secrets.token_hex(8)}")
    try:
        bucket.s3.put_object(Bucket=bucket.url.bucket, Key=key, Body=b"probe\n", IfNoneMatch="*")
        try:
            bucket.s3.put_object(Bucket=bucket.url.bucket, Key=key, Body=b"probe\n", IfNoneMatch="*")
            return "lease"
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in ("PreconditionFailed", "412"):
                return "conditional"
            raise ObjectStoreError(f"{bucket.url}: probing conditional writes failed: {exc}") from None
    except ClientError as exc:
        raise ObjectStoreError(f"{bucket.url}: probing conditional writes failed: {exc}") from None
    finally:
        with contextlib.suppress(ClientError):
            bucket.s3.delete_object(Bucket=bucket.url.bucket, Key=key)


def mode_for(bucket: Bucket, channel: str, env: Mapping[str, str]) -> str:
    """``BUILDERS_LEDGER_WRITES`` (conditional, lease) where set, else what :func:`probe` finds."""
    chosen = env.get("BUILDERS_LEDGER_WRITES", "")
    if chosen and chosen not in MODES:
        raise ObjectStoreError(f"BUILDERS_LEDGER_WRITES={chosen!r}: write conditional or lease")
    return chosen or probe(bucket, channel)


def writer_name(env: Mapping[str, str]) -> str:
    """Who writes: the CI run where there is one (what a release engineer can look up), the host and process."""
    import os
    import socket

    run = env.get("GITHUB_RUN_ID")
    where = f"{env.get('GITHUB_REPOSITORY', '')} run {run} ({env.get('GITHUB_JOB', '')})" if run else ""
    return f"{where + ' on ' if where else ''}{socket.gethostname()} pid {os.getpid()} #{secrets.token_hex(3)}"


def open_ledger(bucket: Bucket, channel: str, env: Mapping[str, str]) -> Ledger:
    return Ledger(bucket, channel, mode=mode_for(bucket, channel, env), writer=writer_name(env))
