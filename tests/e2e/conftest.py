"""The e2e workspaces hold a monorepo's own tests, which are data here, not tests to collect."""

collect_ignore = ["workspaces"]
