"""The release matrix as data: read once from ``matrix.yaml`` (:mod:`.loader`: the shape check of
:mod:`.schema`, one pass of :mod:`.build` into the keyed values of :mod:`.draft`, the semantic
:mod:`.rules` over them), turned into frozen values (:mod:`.model`), expanded into targets
(:mod:`.targets`) under the release policy (:mod:`.policy`).
"""
