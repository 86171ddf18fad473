"""After the build: promotion to public versions, per-label indexes and their mirrors, audit of a
published index, the compatibility report, the release checks, and the CI workflow (shards,
drift, runner-minute estimates).
"""
