"""The package indexes: per-variant pages (PEP 503/691/658), the object store and its credentials,
publishing a channel, the release manifest, validation over HTTP, promotion, yank, rollback, repair, and
the audit of a published index."""
from builders.base.untrusted import INDEX_PAGE_LIMIT as PAGE_LIMIT
from builders.base.untrusted import INDEX_TIMEOUT as PAGE_TIMEOUT

__all__ = ["PAGE_LIMIT", "PAGE_TIMEOUT"]
