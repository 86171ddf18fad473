"""Building targets: the host's facts and interpreters, the plan (every step, check and provision
included), the compiler cache, the ``build.core`` step, the content-addressed store, the
pipeline that executes a plan's steps, and the results record.
"""
