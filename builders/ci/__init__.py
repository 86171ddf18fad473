"""The GitHub Actions side: the job matrix the workflows take, `workflow --check` (the policy, the linters,
the lifecycle rules), the release checks, and what a run costs (estimate, disk, rehearsal)."""
