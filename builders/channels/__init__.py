"""A release channel's ledger and the records it is made of (docs/channels.md)."""
