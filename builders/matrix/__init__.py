"""The release matrix as data: read once from ``matrix.yaml`` (:mod:`.matrix`), validated, turned
into frozen values (:mod:`.model`), expanded into targets (:mod:`.targets`) under the release
policy (:mod:`.policy`).
"""
