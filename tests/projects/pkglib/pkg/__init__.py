"""A package whose extension is in pkg/ and whose library is in pkg/lib/."""
