"""The package indexes: per-variant pages (PEP 503/691/658), the object store and its credentials,
publishing a channel, the release manifest, validation over HTTP, promotion, yank, rollback, repair, and
the audit of a published index."""

# What builders reads of an index it does not control before any installer does (validate, promote-release's
# package server): the project's page, at most this many bytes, each read within this many seconds. The
# defaults of ``validate --index-page-limit`` and ``--index-timeout``.
PAGE_LIMIT = 64 * 1024 * 1024  # torch's page on PyPI: about 2 MiB of JSON
PAGE_TIMEOUT = 60.0
