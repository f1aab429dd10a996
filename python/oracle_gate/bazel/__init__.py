"""Bazel without a Bazel server: labels, BUILD files, glob(), and ``bazel query`` when asked."""
