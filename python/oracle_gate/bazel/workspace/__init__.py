"""Reading a Bazel workspace's own files (WORKSPACE, MODULE.bazel, .bazelignore,
symbolic links, registered toolchains) into plain data the package graph is built from."""
