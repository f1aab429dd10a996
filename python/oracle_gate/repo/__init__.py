"""Reading the repository: git, the diff of two commits, both trees, files, the merge queue."""
