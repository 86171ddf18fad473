"""The ground floor: typed errors and the one exit-code table, the one subprocess helper, the
console, run-once locks, arch names, and the readers for untrusted text (bounded files, YAML
with marks). Nothing here knows what a matrix, a wheel or an engine is.
"""
