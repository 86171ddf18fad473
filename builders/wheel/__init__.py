"""One wheel at a time: the archive and its METADATA (:mod:`.archive`), the rules verify and audit
share (:mod:`.rules`), ELF facts, RPATH clean-up, repair, verify and the smoke test.
"""
