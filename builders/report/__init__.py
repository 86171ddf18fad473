"""The compatibility report a release manager and users read (Markdown, JSON, HTML)."""
