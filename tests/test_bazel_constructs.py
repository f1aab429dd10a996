"""Small real-shaped Bazel workspaces, one per construct the static reader cannot evaluate.

Each workspace states the package edges Bazel itself reports (``TRUTH``:
``bazel query`` of every rule and package group (``--output=xml``), implicit dependencies
included). The graph must never select less than that: every true edge is in
it, whatever the backend. The e2e test checks ``TRUTH`` against the installed
Bazel, so the expectations are Bazel's, not ours.
"""

from __future__ import annotations

import datetime
import json
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from backends import _native
from bazel_edges import bazel_package_edges
from gitrepo import GitRepo, run
from oracle_gate import backend
from oracle_gate.bazel import starlark
from oracle_gate.bazel.query import bazel_query_edges
from oracle_gate.graph import PackageGraph, load_graph
from oracle_gate.pipeline import Request, stage
from oracle_gate.repo.trees import GitTree

FG = 'filegroup(name = "{name}", srcs = {srcs})\n'


def _rule_bzl(attrs: str, prelude: str = "") -> str:
    """A .bzl file declaring the rule ``r`` with ``attrs`` (Starlark source of the dict)."""
    return (
        f"{prelude}def _impl(ctx):\n    return []\n\n"
        f"r = rule(\n    implementation = _impl,\n    attrs = {attrs},\n)\n"
    )


WORKSPACES: dict[str, dict[str, str]] = {
    # gvisor: a macro in the repository's own tools/defs.bzl adds a dependency.
    "macro_adds_deps": {
        "tools/BUILD": "",
        "tools/defs.bzl": (
            "def my_group(name, srcs = [], **kwargs):\n"
            '    native.filegroup(name = name, srcs = srcs + ["//helpers:h"], **kwargs)\n'
        ),
        "helpers/BUILD": FG.format(name="h", srcs="[]"),
        "a/BUILD": 'load("//tools:defs.bzl", "my_group")\nmy_group(name = "t")\n',
        "other/BUILD": FG.format(name="o", srcs="[]"),
    },
    # jax: deps = COMMON_DEPS, a constant loaded from a .bzl file.
    "loaded_constant": {
        "tools/BUILD": "",
        "tools/deps.bzl": 'COMMON_DEPS = ["//common:c"]\n',
        "common/BUILD": FG.format(name="c", srcs="[]"),
        "a/BUILD": 'load("//tools:deps.bzl", "COMMON_DEPS")\n'
        + FG.format(name="a", srcs="COMMON_DEPS"),
    },
    # A macro from a .bzl that loads another .bzl, which holds the label.
    "transitive_load": {
        "tools/BUILD": "",
        "tools/outer.bzl": 'load(":inner.bzl", "DEPS")\n'
        "def grp(name):\n    native.filegroup(name = name, srcs = DEPS)\n",
        "tools/inner.bzl": 'DEPS = ["//deep:d"]\n',
        "deep/BUILD": FG.format(name="d", srcs="[]"),
        "a/BUILD": 'load("//tools:outer.bzl", "grp")\ngrp(name = "a")\n',
    },
    # Labels built in a comprehension: no invented node `libs/%s`, no dropped edge.
    "comprehension_labels": {
        "libs/one/BUILD": FG.format(name="one", srcs="[]"),
        "libs/two/BUILD": FG.format(name="two", srcs="[]"),
        "a/BUILD": FG.format(name="a", srcs='["//libs/%s" % n for n in ["one", "two"]]'),
    },
    # "//lib:" + n
    "concatenated_labels": {
        "lib/BUILD": FG.format(name="x", srcs="[]") + FG.format(name="y", srcs="[]"),
        "a/BUILD": 'NAMES = ["x", "y"]\n'
        + FG.format(name="a", srcs='["//lib:" + n for n in NAMES]'),
    },
    # protobuf: a rule's private attribute default is an implicit dependency.
    "rule_private_default": {
        "tools/BUILD": "",
        "tools/stamp.bzl": (
            "def _impl(ctx):\n    return []\n\n"
            "stamped = rule(\n    implementation = _impl,\n    attrs = {\n"
            '        "srcs": attr.label_list(allow_files = True),\n'
            '        "_tool": attr.label(default = "//tools/stamper:bin"),\n'
            "    },\n)\n"
        ),
        "tools/stamper/BUILD": FG.format(name="bin", srcs="[]"),
        "a/BUILD": 'load("//tools:stamp.bzl", "stamped")\nstamped(name = "s")\n',
    },
    # The main repository's own name is the main repository.
    "own_workspace_name": {
        "WORKSPACE": 'workspace(name = "mono")\n',
        "b/BUILD": FG.format(name="b", srcs="[]"),
        "a/BUILD": FG.format(name="a", srcs='["@mono//b:b"]'),
    },
    # A select() key in `features` is a dependency on the config_setting.
    "select_key_in_features": {
        "config/BUILD": 'config_setting(name = "opt", values = {"compilation_mode": "opt"})\n',
        "a/BUILD": 'filegroup(name = "a", srcs = [], features = select('
        '{"//config:opt": ["x"], "//conditions:default": []}))\n',
    },
    # Visibility names a package_group (which includes another): not a dependency.
    "visibility_package_group": {
        "vis/BUILD": 'package_group(name = "friends", packages = ["//a/..."], '
        'includes = ["//more:others"])\n',
        "more/BUILD": 'package_group(name = "others", packages = ["//b/..."])\n',
        "lib/BUILD": 'filegroup(name = "l", srcs = [], visibility = ["//vis:friends"])\n',
        "a/BUILD": FG.format(name="a", srcs='["//lib:l"]'),
    },
    # An alias is a package of its own between the dependent and the actual target.
    "alias": {
        "al/BUILD": 'alias(name = "x", actual = "//lib:l", visibility = ["//visibility:public"])\n',
        "lib/BUILD": 'filegroup(name = "l", srcs = [], visibility = ["//visibility:public"])\n',
        "a/BUILD": FG.format(name="a", srcs='["//al:x"]'),
    },
    # A file another package exports is a dependency on that package.
    "exports_files": {
        "lib/BUILD": 'exports_files(["data.txt"])\n',
        "lib/data.txt": "1\n",
        "a/BUILD": FG.format(name="a", srcs='["//lib:data.txt"]'),
    },
    # A macro passes a loaded dict of attributes with **.
    "kwargs_dict_constant": {
        "tools/BUILD": "",
        "tools/defs.bzl": (
            'COMMON = {"srcs": ["//common:c"]}\n'
            "\n"
            "def grp(name):\n"
            "    native.filegroup(name = name, **COMMON)\n"
        ),
        "common/BUILD": FG.format(name="c", srcs="[]"),
        "a/BUILD": 'load("//tools:defs.bzl", "grp")\ngrp(name = "a")\n',
    },
    # A macro builds the label from native.package_name().
    "package_name_label": {
        "tools/BUILD": "",
        "tools/defs.bzl": (
            "def grp(name):\n"
            '    native.filegroup(name = name, srcs = ["//%s/sub:s" % native.package_name()])\n'
        ),
        "a/sub/BUILD": FG.format(name="s", srcs="[]"),
        "a/BUILD": 'load("//tools:defs.bzl", "grp")\ngrp(name = "a")\n',
    },
    # A macro reached through a struct, as rule sets export them.
    "struct_namespace": {
        "tools/BUILD": "",
        "tools/defs.bzl": (
            "def _grp(name, srcs):\n"
            "    native.filegroup(name = name, srcs = srcs)\n"
            "\n"
            "tools = struct(grp = _grp)\n"
        ),
        "lib/BUILD": FG.format(name="l", srcs="[]"),
        "a/BUILD": 'load("//tools:defs.bzl", "tools")\ntools.grp(name = "a", srcs = ["//lib:l"])\n',
    },
    # A Label() made in the .bzl file.
    "label_object_in_bzl": {
        "tools/BUILD": FG.format(name="helper", srcs="[]"),
        "tools/defs.bzl": (
            'def grp(name):\n    native.filegroup(name = name, srcs = [Label("//tools:helper")])\n'
        ),
        "a/BUILD": 'load("//tools:defs.bzl", "grp")\ngrp(name = "a")\n',
    },
    # The label is a macro parameter's default.
    "default_arg_label": {
        "tools/BUILD": "",
        "tools/defs.bzl": (
            'def grp(name, srcs = ["//lib:l"]):\n    native.filegroup(name = name, srcs = srcs)\n'
        ),
        "lib/BUILD": FG.format(name="l", srcs="[]"),
        "a/BUILD": 'load("//tools:defs.bzl", "grp")\ngrp(name = "a")\n',
    },
    # Labels in a select() branch added to a plain list.
    "select_value_label": {
        "config/BUILD": 'config_setting(name = "opt", values = {"compilation_mode": "opt"})\n',
        "x/BUILD": FG.format(name="x", srcs="[]"),
        "lib/BUILD": FG.format(name="l", srcs="[]"),
        "a/BUILD": (
            'filegroup(name = "a", srcs = ["//x:x"] + select({"//config:opt": ["//lib:l"], '
            '"//conditions:default": []}))\n'
        ),
    },
    # A label made by str.format.
    "format_label": {
        "lib/BUILD": FG.format(name="l", srcs="[]"),
        "a/BUILD": FG.format(name="a", srcs='["//{}:{}".format("lib", "l")]'),
    },
    # A macro's loop declares one rule per name.
    "loop_in_macro": {
        "tools/BUILD": "",
        "tools/defs.bzl": (
            "def grps(names):\n"
            "    for n in names:\n"
            '        native.filegroup(name = n, srcs = ["//lib:" + n])\n'
        ),
        "lib/BUILD": FG.format(name="x", srcs="[]") + FG.format(name="y", srcs="[]"),
        "a/BUILD": 'load("//tools:defs.bzl", "grps")\ngrps(["x", "y"])\n',
    },
    # A genrule's tools.
    "genrule_tools": {
        "tools/gen/BUILD": FG.format(name="g", srcs="[]"),
        "a/BUILD": (
            'genrule(name = "g", outs = ["o"], cmd = "touch $@", tools = ["//tools/gen:g"])\n'
        ),
    },
    # A public attribute's default, the call leaving it unset.
    "public_attr_default": {
        "tools/BUILD": "",
        "tools/r.bzl": _rule_bzl('{"deps": attr.label_list(default = ["//lib:l"])}'),
        "lib/BUILD": FG.format(name="l", srcs="[]"),
        "a/BUILD": 'load("//tools:r.bzl", "r")\nr(name = "a")\n',
    },
    # A private label_list default in the exec configuration.
    "private_label_list_exec": {
        "tools/BUILD": "",
        "tools/r.bzl": _rule_bzl(
            '{"_tools": attr.label_list(default = ["//t1:x", "//t2:y"], cfg = "exec")}'
        ),
        "t1/BUILD": FG.format(name="x", srcs="[]"),
        "t2/BUILD": FG.format(name="y", srcs="[]"),
        "a/BUILD": 'load("//tools:r.bzl", "r")\nr(name = "a")\n',
    },
    # The label is dict.get's default.
    "dict_get_default": {
        "tools/BUILD": "",
        "tools/deps.bzl": "DEPS = {}\n",
        "lib/BUILD": FG.format(name="l", srcs="[]"),
        "a/BUILD": 'load("//tools:deps.bzl", "DEPS")\n'
        + FG.format(name="a", srcs='DEPS.get("a", ["//lib:l"])'),
    },
    # A relative label in a macro belongs to the calling package.
    "macro_relative_label": {
        "tools/BUILD": "",
        "tools/defs.bzl": 'def grp(name):\n    native.filegroup(name = name, srcs = [":local"])\n',
        "a/BUILD": 'load("//tools:defs.bzl", "grp")\ngrp(name = "a")\n'
        + FG.format(name="local", srcs="[]"),
    },
    # A macro wraps its argument in select().
    "select_in_macro": {
        "tools/BUILD": "",
        "tools/defs.bzl": (
            "def grp(name, deps):\n"
            '    native.filegroup(name = name, srcs = select({"//conditions:default": deps}))\n'
        ),
        "lib/BUILD": FG.format(name="l", srcs="[]"),
        "a/BUILD": 'load("//tools:defs.bzl", "grp")\ngrp(name = "a", deps = ["//lib:l"])\n',
    },
    # A macro calls a macro of another .bzl, which reads a third's constant.
    "macro_chain_across_files": {
        "tools/BUILD": "",
        "tools/a.bzl": 'load(":b.bzl", "inner")\n\ndef outer(name):\n    inner(name = name)\n',
        "tools/b.bzl": (
            'load(":c.bzl", "DEPS")\n'
            "\n"
            "def inner(name):\n"
            "    native.filegroup(name = name, srcs = DEPS)\n"
        ),
        "tools/c.bzl": 'DEPS = ["//deep:d"]\n',
        "deep/BUILD": FG.format(name="d", srcs="[]"),
        "a/BUILD": 'load("//tools:a.bzl", "outer")\nouter(name = "a")\n',
    },
    # A test_suite names another package's suite.
    "test_suite_tests": {
        "t/BUILD": 'test_suite(name = "inner", tests = [])\n',
        "a/BUILD": 'test_suite(name = "all", tests = ["//t:inner"])\n',
    },
    # A %-format that makes the label's //.
    "percent_builds_the_label": {
        "lib/BUILD": FG.format(name="l", srcs="[]"),
        "a/BUILD": FG.format(name="a", srcs='["%slib:l" % "//"]'),
    },
    # A slice of a longer string.
    "sliced_label": {
        "lib/BUILD": FG.format(name="l", srcs="[]"),
        "a/BUILD": FG.format(name="a", srcs='["xx//lib:l"[2:]]'),
    },
    # str.join makes the label.
    "joined_label": {
        "lib/BUILD": FG.format(name="l", srcs="[]"),
        "a/BUILD": FG.format(name="a", srcs='["/".join(["/", "lib:l"])]'),
    },
    # str.format with a keyword.
    "format_keywords_label": {
        "lib/BUILD": FG.format(name="l", srcs="[]"),
        "a/BUILD": FG.format(name="a", srcs='["//{pkg}:l".format(pkg = "lib")]'),
    },
    # Escaped characters: a .bzl constant and a BUILD string write "//" as octal escapes.
    "escaped_labels": {
        "tools/BUILD": "",
        "tools/deps.bzl": 'DEPS = ["\\057\\057lib:l"]\n',
        "lib/BUILD": FG.format(name="l", srcs="[]") + FG.format(name="m", srcs="[]"),
        "a/BUILD": 'load("//tools:deps.bzl", "DEPS")\n' + FG.format(name="a", srcs="DEPS"),
        "b/BUILD": FG.format(name="b", srcs='["\\057\\057lib:m"]'),
    },
    # A rule attribute whose dict keys are labels.
    "label_keyed_dict_attr": {
        "tools/BUILD": "",
        "tools/r.bzl": _rule_bzl('{"data": attr.label_keyed_string_dict(allow_files = True)}'),
        "lib/BUILD": FG.format(name="l", srcs="[]"),
        "a/BUILD": ('load("//tools:r.bzl", "r")\nr(name = "a", data = {"//lib:l": "x"})\n'),
    },
    # A .bzl in a package's subdirectory loads :helper.bzl, which is the package's.
    "bzl_in_package_subdirectory": {
        "tools/BUILD": "",
        "tools/sub/defs.bzl": (
            'load(":helper.bzl", "DEPS")\n'
            "\n"
            "def grp(name):\n"
            "    native.filegroup(name = name, srcs = DEPS)\n"
        ),
        "tools/helper.bzl": ('DEPS = ["//lib:l"]\n'),
        "tools/sub/helper.bzl": ('DEPS = ["//decoy:d"]\n'),
        "lib/BUILD": FG.format(name="l", srcs="[]"),
        "decoy/BUILD": FG.format(name="d", srcs="[]"),
        "a/BUILD": ('load("//tools:sub/defs.bzl", "grp")\ngrp(name = "a")\n'),
    },
    # A private attribute's default is a Label object.
    "label_object_default": {
        "tools/BUILD": "",
        "tools/r.bzl": _rule_bzl('{"_t": attr.label(default = Label("//lib:l"))}'),
        "lib/BUILD": FG.format(name="l", srcs="[]"),
        "a/BUILD": ('load("//tools:r.bzl", "r")\nr(name = "a")\n'),
    },
    # A rule's attributes merged with dict() from another .bzl's constant.
    "attrs_merged_from_another_bzl": {
        "tools/BUILD": "",
        "tools/common.bzl": ('COMMON_ATTRS = {"_c": attr.label(default = "//common:c")}\n'),
        "tools/r.bzl": _rule_bzl(
            'dict(COMMON_ATTRS, extra = attr.label(default = "//lib:l"))',
            prelude='load(":common.bzl", "COMMON_ATTRS")\n\n',
        ),
        "lib/BUILD": FG.format(name="l", srcs="[]"),
        "common/BUILD": FG.format(name="c", srcs="[]"),
        "a/BUILD": ('load("//tools:r.bzl", "r")\nr(name = "a")\n'),
    },
    # A macro reads native.existing_rules() and adds a label.
    "existing_rules_macro": {
        "tools/BUILD": "",
        "tools/defs.bzl": (
            "def collect(name):\n"
            '    rules = [":" + r for r in native.existing_rules().keys()]\n'
            '    native.filegroup(name = name, srcs = rules + ["//lib:l"])\n'
        ),
        "lib/BUILD": FG.format(name="l", srcs="[]"),
        "a/BUILD": (
            'load("//tools:defs.bzl", "collect")\n'
            'filegroup(name = "x", srcs = [])\n'
            'collect(name = "all")\n'
        ),
    },
    # A macro pops deps from **kwargs and adds its own.
    "macro_kwargs_passthrough": {
        "tools/BUILD": "",
        "tools/defs.bzl": (
            "def grp(**kwargs):\n"
            '    deps = kwargs.pop("deps", [])\n'
            '    native.filegroup(srcs = deps + ["//extra:e"], **kwargs)\n'
        ),
        "lib/BUILD": FG.format(name="l", srcs="[]"),
        "extra/BUILD": FG.format(name="e", srcs="[]"),
        "a/BUILD": ('load("//tools:defs.bzl", "grp")\ngrp(name = "a", deps = ["//lib:l"])\n'),
    },
    # A macro loaded under another name.
    "load_alias_macro": {
        "tools/BUILD": "",
        "tools/defs.bzl": (
            'def grp(name):\n    native.filegroup(name = name, srcs = ["//lib:l"])\n'
        ),
        "lib/BUILD": FG.format(name="l", srcs="[]"),
        "a/BUILD": ('load("//tools:defs.bzl", my_group = "grp")\nmy_group(name = "a")\n'),
    },
    # A string method the static reader does not compute: every package.
    "capitalized_label": {
        "lib/BUILD": FG.format(name="l", srcs="[]"),
        "other/BUILD": FG.format(name="o", srcs="[]"),
        "a/BUILD": FG.format(name="a", srcs='["//LIB:L".capitalize()]'),
    },
    # A label lowercased by str.lower.
    "string_methods_label": {
        "lib/BUILD": FG.format(name="l", srcs="[]"),
        "a/BUILD": FG.format(name="a", srcs='["//LIB:L".lower()]'),
    },
    # An aspect's private attribute: bazel query (aspect_deps=conservative) follows it.
    "aspect_private_attr": {
        "tools/BUILD": "",
        "tools/r.bzl": _rule_bzl(
            '{"deps": attr.label_list(aspects = [my_aspect])}',
            prelude=(
                "def _a(target, ctx):\n    return []\n\n"
                "my_aspect = aspect(\n    implementation = _a,\n"
                '    attrs = {"_t": attr.label(default = "//lib:l")},\n)\n\n'
            ),
        ),
        "lib/BUILD": FG.format(name="l", srcs="[]"),
        "b/BUILD": FG.format(name="b", srcs="[]"),
        "a/BUILD": 'load("//tools:r.bzl", "r")\nr(name = "a", deps = ["//b:b"])\n',
    },
    # Labels built from the names glob() finds.
    "glob_built_labels": {
        "lib/BUILD": FG.format(name="x", srcs="[]"),
        "a/x.dep": "",
        "a/BUILD": FG.format(name="a", srcs='["//lib:" + f[:-4] for f in glob(["*.dep"])]'),
    },
    # The same in a macro, with native.glob(): the calling package's files.
    "native_glob_in_macro": {
        "tools/BUILD": "",
        "tools/defs.bzl": (
            "def grp(name):\n"
            '    srcs = ["//lib:" + f[:-4] for f in native.glob(["*.dep"])]\n'
            "    native.filegroup(name = name, srcs = srcs)\n"
        ),
        "lib/BUILD": FG.format(name="x", srcs="[]"),
        "a/x.dep": "",
        "a/BUILD": 'load("//tools:defs.bzl", "grp")\ngrp(name = "a")\n',
    },
    # glob() stops at subpackages and honours exclude.
    "glob_skips_subpackages_and_excludes": {
        "one/BUILD": FG.format(name="t", srcs="[]"),
        "two/BUILD": FG.format(name="t", srcs="[]"),
        "three/BUILD": FG.format(name="t", srcs="[]"),
        "a/one.dep": "",
        "a/three.dep": "",
        "a/sub/BUILD": "",
        "a/sub/two.dep": "",
        "a/BUILD": FG.format(
            name="a",
            srcs='["//" + f.split("/")[-1][:-4] + ":t" for f in '
            'glob(["**/*.dep"], exclude = ["three.dep"])]',
        ),
    },
    # A name starting with "." is matched by "*" or a pattern segment starting with ".",
    # never by another wildcard ("*.dep" leaves out ".one.dep"); "**" enters ".d".
    "glob_hidden_names": {
        **{f"{n}/BUILD": FG.format(name="t", srcs="[]") for n in ("one", "two", "three", "four")},
        "a/.one.dep": "",
        "a/two.dep": "",
        "a/sub/.three.dep": "",
        "a/.d/four.dep": "",
        "a/BUILD": FG.format(
            name="a",
            srcs='["//" + f.split("/")[-1].strip(".")[:-4] + ":t" '
            'for f in glob(["**/*.dep", "*/.*"])]',
        ),
    },
    # A visibility naming a package group is a dependency on it (bazel query follows it);
    # //visibility:public and private, and package specs (__pkg__, __subpackages__), are not.
    "visibility_of_a_package_group": {
        "lib/BUILD": 'package_group(name = "grp", packages = ["//a"])\n',
        "b/BUILD": FG.format(name="b", srcs="[]"),
        "c/BUILD": FG.format(name="c", srcs="[]"),
        "a/BUILD": 'filegroup(name = "a", visibility = ["//lib:grp", "//b:__pkg__", '
        '"//c:__subpackages__"])\n'
        'filegroup(name = "p", visibility = ["//visibility:private"])\n'
        'exports_files(["x.txt"], visibility = ["//visibility:public"])\n',
    },
    # So are a package's default visibility and the groups a package group includes; its
    # packages are package specs.
    "default_visibility_and_includes": {
        "vis/BUILD": 'package_group(name = "base", packages = ["//a"])\n',
        "lib/BUILD": 'package_group(name = "grp", includes = ["//vis:base"], '
        'packages = ["//other/..."])\n',
        "other/BUILD": FG.format(name="o", srcs="[]"),
        "a/BUILD": 'package(default_visibility = ["//lib:grp"])\n' + FG.format(name="a", srcs="[]"),
    },
    # Bazel 4.2.3 takes a package name with a space.
    "package_name_with_a_space": {
        "my lib/BUILD": FG.format(name="l", srcs="[]"),
        "a/BUILD": FG.format(name="a", srcs='["//my lib:l"]'),
    },
    # glob() does not enter a directory .bazelignore names.
    "glob_skips_bazelignored_directories": {
        ".bazelignore": "a/ign\n",
        "one/BUILD": FG.format(name="t", srcs="[]"),
        "two/BUILD": FG.format(name="t", srcs="[]"),
        "a/one.dep": "",
        "a/ign/two.dep": "",
        "a/BUILD": FG.format(
            name="a", srcs='["//" + f.split("/")[-1][:-4] + ":t" for f in glob(["**/*.dep"])]'
        ),
    },
    # Bazel 4.2.3 holds a file name as Latin-1 bytes: len("é.dep") is 6 there. A glob
    # that finds such a name is opaque to the evaluator, and the file is read statically.
    "glob_non_ascii_name": {
        "lib/BUILD": FG.format(name="l", srcs="[]"),
        "a/é.dep": "",
        "a/BUILD": FG.format(
            name="a", srcs='["//lib:l"] if [len(f) for f in glob(["*.dep"])] == [6] else []'
        ),
    },
    # A glob that may list directories: the evaluator leaves the file to the static reader.
    "glob_with_directories": {
        "one/BUILD": FG.format(name="t", srcs="[]"),
        "a/one/x.txt": "",
        "a/BUILD": FG.format(
            name="a",
            srcs='["//" + f + ":t" for f in glob(["*"], exclude_directories = 0) '
            'if "." not in f and f != "BUILD"]',
        ),
    },
    # A rule's attributes built by a function.
    "attrs_from_function": {
        "tools/BUILD": "",
        "tools/r.bzl": _rule_bzl(
            "_attrs()",
            prelude='def _attrs():\n    return {"_t": attr.label(default = "//lib:l")}\n\n',
        ),
        "lib/BUILD": FG.format(name="l", srcs="[]"),
        "a/BUILD": 'load("//tools:r.bzl", "r")\nr(name = "a")\n',
    },
    # A native rule reached with getattr() and a computed name.
    "getattr_native": {
        "tools/BUILD": "",
        "tools/defs.bzl": (
            "def grp(name):\n"
            '    getattr(native, "file" + "group")(name = name, srcs = ["//lib:l"])\n'
        ),
        "lib/BUILD": FG.format(name="l", srcs="[]"),
        "a/BUILD": 'load("//tools:defs.bzl", "grp")\ngrp(name = "a")\n',
    },
    # A label assembled from Label(...).package.
    "label_package_attribute": {
        "tools/BUILD": "",
        "tools/defs.bzl": 'DEPS = ["//" + Label("//lib:zz").package + ":l"]\n',
        "lib/BUILD": FG.format(name="l", srcs="[]"),
        "a/BUILD": 'load("//tools:defs.bzl", "DEPS")\n' + FG.format(name="a", srcs="DEPS"),
    },
    # Label(...).relative(...).
    "label_relative": {
        "tools/BUILD": "",
        "tools/defs.bzl": 'DEPS = [str(Label("//lib:x").relative(":l"))]\n',
        "lib/BUILD": FG.format(name="l", srcs="[]") + FG.format(name="x", srcs="[]"),
        "a/BUILD": 'load("//tools:defs.bzl", "DEPS")\n' + FG.format(name="a", srcs="DEPS"),
    },
    # A relative default a .bzl file holds without a colon: of the .bzl file's package.
    "attr_default_without_colon": {
        "lib/r.bzl": _rule_bzl('{"_t": attr.label(default = "l")}'),
        "lib/BUILD": FG.format(name="l", srcs="[]"),
        "a/BUILD": 'load("//lib:r.bzl", "r")\nr(name = "a")\n',
    },
    # A rule re-exported under another name by a second .bzl file.
    "reexported_rule": {
        "tools/BUILD": "",
        "tools/r.bzl": _rule_bzl('{"_t": attr.label(default = "//lib:l")}'),
        "tools/defs.bzl": 'load(":r.bzl", _r = "r")\n\nmy_rule = _r\n',
        "lib/BUILD": FG.format(name="l", srcs="[]"),
        "a/BUILD": 'load("//tools:defs.bzl", "my_rule")\nmy_rule(name = "a")\n',
    },
    # restricted_to names environments: dependencies.
    "restricted_to": {
        "env/BUILD": (
            'environment(name = "e")\n'
            'environment_group(name = "g", environments = [":e"], defaults = [":e"])\n'
        ),
        "a/BUILD": 'filegroup(name = "a", srcs = [], restricted_to = ["//env:e"])\n',
    },
    # The labels package() gives each of its rules: no edge in Bazel 4.2.3's query, one in
    # the graph (see WIDER). A default that is no label (a deprecation message) is none.
    "package_label_defaults": {
        "lic/BUILD": FG.format(name="l", srcs="[]"),
        "env/BUILD": (
            'environment(name = "e")\n'
            'environment_group(name = "g", environments = [":e"], defaults = [":e"])\n'
        ),
        "a/BUILD": 'package(default_applicable_licenses = ["//lic:l"], '
        'default_compatible_with = ["//env:e"], default_restricted_to = ["//env:e"])\n'
        + FG.format(name="a", srcs="[]"),
        "b/BUILD": 'package(default_deprecation = "//lic:l")\n' + FG.format(name="b", srcs="[]"),
    },
    # A rule's toolchain type: no edge in Bazel 4.2.3, one in the evaluator (see WIDER).
    "rule_toolchain_type": {
        "tools/BUILD": "",
        "tc/BUILD": 'toolchain_type(name = "t")\n',
        "tools/r.bzl": (
            "def _impl(ctx):\n    return []\n\n"
            'r = rule(implementation = _impl, toolchains = ["//tc:t"])\n'
        ),
        "a/BUILD": 'load("//tools:r.bzl", "r")\nr(name = "a")\n',
    },
    # A conditional expression picks the package.
    "conditional_label": {
        "lib/BUILD": FG.format(name="l", srcs="[]"),
        "a/BUILD": 'X = "lib" if len("ab") == 2 else "none"\n'
        + FG.format(name="a", srcs='["//%s:l" % X]'),
    },
}


def _macro_choosing_by(condition: str) -> dict[str, str]:
    """A macro that names //lib:l only when ``condition`` holds, as it does in Bazel: a
    patch could pick its labels by what the evaluator answers where Bazel would differ."""
    return {
        "tools/BUILD": "",
        "tools/defs.bzl": (
            "def grp(name):\n"
            f'    native.filegroup(name = name, srcs = ["//lib:l"] if {condition} else [])\n'
        ),
        "lib/BUILD": FG.format(name="l", srcs="[]"),
        "a/BUILD": FG.format(name="x", srcs="[]")
        + 'load("//tools:defs.bzl", "grp")\ngrp(name = "a")\n',
    }


# What the evaluator knows as Bazel does.
WORKSPACES["existing_rules_membership"] = _macro_choosing_by('"x" in native.existing_rules()')
WORKSPACES["existing_rule_kind"] = _macro_choosing_by(
    'native.existing_rule("x")["kind"] == "filegroup"'
)
WORKSPACES["type_of_select"] = _macro_choosing_by(
    'type(select({"//conditions:default": []})) == "select"'
)
WORKSPACES["type_of_label"] = _macro_choosing_by('type(Label("//lib:l")) == "Label"')
# What it computes otherwise than Bazel, whose strings are Latin-1 bytes: the file goes
# to the static reader, which keeps both branches.
WORKSPACES["non_ascii_string"] = {
    "lib/BUILD": FG.format(name="l", srcs="[]"),
    "a/BUILD": FG.format(name="a", srcs='["//lib:l"] if len("é") == 2 else []'),
}
# Documentation computes nothing: text outside ASCII there leaves the file evaluated.
WORKSPACES["non_ascii_documentation"] = {
    "tools/BUILD": "",
    "tools/defs.bzl": (
        '"""Groups \u2014 documented with an em dash."""\n\n'
        "def _impl(ctx):\n    return []\n\n"
        'r = rule(implementation = _impl, doc = "R\u00e8gle", '
        'attrs = {"_t": attr.label(default = "//lib:l", doc = "\u00e0 d\u00e9faut")})\n\n'
        'def grp(name):\n    """Un groupe \u00e0 part."""\n    r(name = name)\n'
    ),
    "lib/BUILD": FG.format(name="l", srcs="[]"),
    "a/BUILD": 'load("//tools:defs.bzl", "grp")\ngrp(name = "a")\n',
}
WORKSPACES["elems_is_a_list"] = {
    "lib/BUILD": FG.format(name="l", srcs="[]"),
    "a/BUILD": FG.format(name="a", srcs='["//lib:l"] if "ab".elems() == ["a", "b"] else []'),
}
# What it only approximates: the file goes to the static reader (STATIC_FALLBACK).
WORKSPACES["dir_of_native"] = _macro_choosing_by('"filegroup" in dir(native)')
WORKSPACES["getattr_default_of_native"] = _macro_choosing_by(
    'getattr(native, "nope", None) == None'
)
WORKSPACES["str_of_select"] = _macro_choosing_by(
    'str(select({"//conditions:default": []})).startswith("select(")'
)

# The interpreter's builtins are typed and printed as Bazel's; a BUILD file lists its
# rules with `existing_rules()` as a macro does with `native.existing_rules()`.
WORKSPACES["type_of_a_builtin"] = {
    "lib/BUILD": FG.format(name="l", srcs="[]"),
    "a/BUILD": FG.format(
        name="a", srcs='["//lib:l"] if type(len) == "builtin_function_or_method" else []'
    ),
}
WORKSPACES["str_of_a_builtin"] = {
    "lib/BUILD": FG.format(name="l", srcs="[]"),
    "a/BUILD": FG.format(
        name="a",
        srcs='["//lib:l"] if "%s" % [len] == "[<built-in function len>]" '
        'and "{}".format(print) == "<built-in function print>" else []',
    ),
}
WORKSPACES["existing_rules_in_build"] = {
    "lib/BUILD": FG.format(name="l", srcs="[]"),
    "a/BUILD": FG.format(name="x", srcs="[]")
    + FG.format(name="a", srcs='["//lib:l"] if existing_rules() and existing_rule("x") else []'),
}


def _build_choosing_by(condition: str) -> dict[str, str]:
    """A BUILD file that names //lib:l only when ``condition`` holds, as it does in Bazel
    4.2.3 and not in the interpreter: the file goes to the static reader, which keeps
    both branches."""
    return {
        "lib/BUILD": FG.format(name="l", srcs="[]"),
        "a/BUILD": FG.format(name="a", srcs=f'["//lib:l"] if {condition} else []'),
    }


# Its strings have methods Bazel 4.2.3 lacks, and newer Bazels differ again.
WORKSPACES["hasattr_of_a_string"] = _build_choosing_by('not hasattr("", "removeprefix")')
WORKSPACES["dir_of_a_string"] = _build_choosing_by('len(dir("")) == 30')
WORKSPACES["str_of_a_bound_method"] = _build_choosing_by(
    'str(getattr("", "upper")) == "<built-in method upper of string value>"'
)
WORKSPACES["str_of_a_depset"] = _build_choosing_by('str(depset([1])) == "depset([1])"')
WORKSPACES["str_of_a_range"] = _build_choosing_by('str(range(3)) == "range(0, 3)"')
# repr() prints DEL raw in Bazel, escaped in the interpreter.
WORKSPACES["control_character"] = _build_choosing_by('len(repr("\\177")) == 3')
# The interpreter shifts a small int within 32 bits.
WORKSPACES["left_shift_past_31_bits"] = _build_choosing_by("-(1 << 31) < 0")
WORKSPACES["float_printed"] = _build_choosing_by('str(7 / 2) == "3.5"')
WORKSPACES["hasattr_of_a_string_in_macro"] = _macro_choosing_by('not hasattr("", "codepoints")')
WORKSPACES["getattr_default_of_a_string"] = _macro_choosing_by(
    'getattr("", "removesuffix", None) == None'
)

# .bazelignore lines as Bazel reads them: normalised, never trimmed, absolute ones ignored.
# Labels of the main repository, however written, are one label in Bazel 4.2.3.
WORKSPACES["main_repository_label_equal"] = _macro_choosing_by(
    'Label("//lib:l") == Label("@//lib:l")'
)
WORKSPACES["main_repository_label_printed"] = _macro_choosing_by(
    'str(Label("@//lib:l")) == "//lib:l"'
)
WORKSPACES["own_name_label_workspace_root"] = {
    **_macro_choosing_by('Label("@mono//lib:l").workspace_root == ""'),
    "WORKSPACE": 'workspace(name = "mono")\n',
}
# This interpreter prints a label through % and format() as Label("//lib:l"), Bazel as
# //lib:l: the file goes to the static reader.
WORKSPACES["label_printed_by_percent"] = {
    "tools/BUILD": "",
    "tools/defs.bzl": (
        'def grp(name):\n    native.filegroup(name = name, srcs = ["%s" % Label("//lib:l")])\n'
    ),
    "lib/BUILD": FG.format(name="l", srcs="[]"),
    "a/BUILD": 'load("//tools:defs.bzl", "grp")\ngrp(name = "a")\n',
}
WORKSPACES["label_printed_by_format"] = {
    **WORKSPACES["label_printed_by_percent"],
    "tools/defs.bzl": (
        "def grp(name):\n"
        '    native.filegroup(name = name, srcs = ["{}".format(Label("//lib:l"))])\n'
    ),
}
# A default computed by a function, which Bazel calls with the rule's attributes.
WORKSPACES["computed_attr_default"] = {
    "tools/BUILD": "",
    "tools/r.bzl": _rule_bzl(
        '{"flavor": attr.string(default = "l"), "_t": attr.label(default = _pick)}',
        prelude='def _pick(flavor):\n    return Label("//lib:" + flavor)\n\n',
    ),
    "lib/BUILD": FG.format(name="l", srcs="[]"),
    "a/BUILD": 'load("//tools:r.bzl", "r")\nr(name = "a")\n',
}
# The kind of a rule() of the tree is the name it is exported as (`r`).
WORKSPACES["existing_rule_kind_of_a_starlark_rule"] = {
    "tools/BUILD": "",
    "tools/r.bzl": _rule_bzl("{}")
    + "\ndef grp(name):\n"
    + '    r(name = name + "_r")\n'
    + '    kind = native.existing_rule(name + "_r")["kind"]\n'
    + '    native.filegroup(name = name, srcs = ["//lib:l"] if kind == "r" else [])\n',
    "lib/BUILD": FG.format(name="l", srcs="[]"),
    "a/BUILD": 'load("//tools:r.bzl", "grp")\ngrp(name = "a")\n',
}


def _macro_srcs(expression: str) -> dict[str, str]:
    """A macro whose filegroup's ``srcs`` is ``expression``, which makes ``//lib:l`` in Bazel."""
    return {
        "tools/BUILD": "",
        "tools/defs.bzl": (
            f"def grp(name):\n    native.filegroup(name = name, srcs = {expression})\n"
        ),
        "lib/BUILD": FG.format(name="l", srcs="[]"),
        "a/BUILD": 'load("//tools:defs.bzl", "grp")\ngrp(name = "a")\n',
    }


# What a depset holds comes back out of it, however deep.
WORKSPACES["depset_to_list"] = _macro_srcs('depset(["//lib:l"]).to_list()')
WORKSPACES["transitive_depset_to_list"] = _macro_srcs(
    'depset(transitive = [depset(["//lib:l"])]).to_list()'
)
# A label cut out of a longer string: the static reader finds it inside the string.
WORKSPACES["label_in_a_json_document"] = _macro_srcs("json.decode('[\"//lib:l\"]')")
WORKSPACES["label_stripped"] = _macro_srcs('[" //lib:l ".strip()]')
WORKSPACES["label_split_out"] = _macro_srcs('["a,//lib:l".split(",")[1]]')
# A repository name that is computed (the main repository's, "@"): any repository's label.
WORKSPACES["repository_name_computed"] = _macro_srcs(
    '["@%s//lib:l" % native.repository_name().lstrip("@")]'
)
WORKSPACES["repository_name_formatted"] = _macro_srcs('["@{}//lib:l".format("")]')
WORKSPACES["bazelignore_lines"] = {
    ".bazelignore": " lib/a\n/lib/b\nlib/c/\n./lib/d\nlib//e\nlib/x/../f\r\n#lib/h\n",
    **{f"lib/{name}/BUILD": FG.format(name=name, srcs='["//x:x"]') for name in "abcdefh"},
    "x/BUILD": FG.format(name="x", srcs="[]"),
}

# Package edges (dependent, dependency) bazel query reports for each workspace.
TRUTH: dict[str, set[tuple[str, str]]] = {
    "bazelignore_lines": {("lib/a", "x"), ("lib/b", "x"), ("lib/h", "x")},
    "macro_adds_deps": {("a", "helpers")},
    "loaded_constant": {("a", "common")},
    "transitive_load": {("a", "deep")},
    "comprehension_labels": {("a", "libs/one"), ("a", "libs/two")},
    "concatenated_labels": {("a", "lib")},
    "rule_private_default": {("a", "tools/stamper")},
    "own_workspace_name": {("a", "b")},
    "select_key_in_features": {("a", "config")},
    "visibility_package_group": {("a", "lib"), ("lib", "vis"), ("vis", "more")},
    "alias": {("a", "al"), ("al", "lib")},
    "exports_files": {("a", "lib")},
    "kwargs_dict_constant": {("a", "common")},
    "package_name_label": {("a", "a/sub")},
    "struct_namespace": {("a", "lib")},
    "label_object_in_bzl": {("a", "tools")},
    "default_arg_label": {("a", "lib")},
    "select_value_label": {("a", "config"), ("a", "lib"), ("a", "x")},
    "format_label": {("a", "lib")},
    "loop_in_macro": {("a", "lib")},
    "genrule_tools": {("a", "tools/gen")},
    "public_attr_default": {("a", "lib")},
    "private_label_list_exec": {("a", "t1"), ("a", "t2")},
    "dict_get_default": {("a", "lib")},
    "macro_relative_label": set(),
    "attr_default_without_colon": {("a", "lib")},
    "select_in_macro": {("a", "lib")},
    "macro_chain_across_files": {("a", "deep")},
    "test_suite_tests": {("a", "t")},
    "percent_builds_the_label": {("a", "lib")},
    "sliced_label": {("a", "lib")},
    "joined_label": {("a", "lib")},
    "format_keywords_label": {("a", "lib")},
    "escaped_labels": {("a", "lib"), ("b", "lib")},
    "attrs_merged_from_another_bzl": {("a", "common"), ("a", "lib")},
    "bzl_in_package_subdirectory": {("a", "lib")},
    "existing_rules_macro": {("a", "lib")},
    "label_keyed_dict_attr": {("a", "lib")},
    "label_object_default": {("a", "lib")},
    "load_alias_macro": {("a", "lib")},
    "macro_kwargs_passthrough": {("a", "extra"), ("a", "lib")},
    "capitalized_label": {("a", "lib")},
    "string_methods_label": {("a", "lib")},
    "aspect_private_attr": {("a", "b"), ("a", "lib")},
    "glob_built_labels": {("a", "lib")},
    "native_glob_in_macro": {("a", "lib")},
    "glob_skips_subpackages_and_excludes": {("a", "one")},
    "package_name_with_a_space": {("a", "my lib")},
    "visibility_of_a_package_group": {("a", "lib")},
    "default_visibility_and_includes": {("a", "lib"), ("lib", "vis")},
    "glob_hidden_names": {("a", "two"), ("a", "three"), ("a", "four")},
    "glob_skips_bazelignored_directories": {("a", "one")},
    "glob_non_ascii_name": {("a", "lib")},
    "glob_with_directories": {("a", "one")},
    "attrs_from_function": {("a", "lib")},
    "getattr_native": {("a", "lib")},
    "label_package_attribute": {("a", "lib")},
    "label_relative": {("a", "lib")},
    "reexported_rule": {("a", "lib")},
    "restricted_to": {("a", "env")},
    "rule_toolchain_type": set(),
    "package_label_defaults": set(),
    "conditional_label": {("a", "lib")},
    "existing_rules_membership": {("a", "lib")},
    "existing_rule_kind": {("a", "lib")},
    "type_of_select": {("a", "lib")},
    "type_of_label": {("a", "lib")},
    "dir_of_native": {("a", "lib")},
    "getattr_default_of_native": {("a", "lib")},
    "str_of_select": {("a", "lib")},
    "non_ascii_string": {("a", "lib")},
    "elems_is_a_list": {("a", "lib")},
    "non_ascii_documentation": {("a", "lib")},
    "type_of_a_builtin": {("a", "lib")},
    "str_of_a_builtin": {("a", "lib")},
    "existing_rules_in_build": {("a", "lib")},
    "hasattr_of_a_string": {("a", "lib")},
    "dir_of_a_string": {("a", "lib")},
    "str_of_a_bound_method": {("a", "lib")},
    "str_of_a_depset": {("a", "lib")},
    "str_of_a_range": {("a", "lib")},
    "control_character": {("a", "lib")},
    "left_shift_past_31_bits": {("a", "lib")},
    "float_printed": {("a", "lib")},
    "hasattr_of_a_string_in_macro": {("a", "lib")},
    "getattr_default_of_a_string": {("a", "lib")},
    "main_repository_label_equal": {("a", "lib")},
    "main_repository_label_printed": {("a", "lib")},
    "own_name_label_workspace_root": {("a", "lib")},
    "label_printed_by_percent": {("a", "lib")},
    "label_printed_by_format": {("a", "lib")},
    "computed_attr_default": {("a", "lib")},
    "existing_rule_kind_of_a_starlark_rule": {("a", "lib")},
    "depset_to_list": {("a", "lib")},
    "transitive_depset_to_list": {("a", "lib")},
    "label_in_a_json_document": {("a", "lib")},
    "label_stripped": {("a", "lib")},
    "label_split_out": {("a", "lib")},
    "repository_name_computed": {("a", "lib")},
    "repository_name_formatted": {("a", "lib")},
}

# Where the evaluator knowingly finds more edges than Bazel 4.2.3 reports: a rule's
# toolchain types and the labels its package gives it are taken as its dependencies
# (never fewer edges than any Bazel).
WIDER: dict[str, set[tuple[str, str]]] = {
    "rule_toolchain_type": {("a", "tc")},
    "package_label_defaults": {("a", "lic"), ("a", "env")},
}
# Files the evaluator hands to the static reader, whose graph says it is approximate:
# a glob that may list directories, and a look at a value the evaluator only stands in
# for (the file then depends on every package: its macro's labels are unknown).
STATIC_FALLBACK = {
    "glob_with_directories",
    "dir_of_native",
    "getattr_default_of_native",
    "str_of_select",
    "hasattr_of_a_string_in_macro",
    "getattr_default_of_a_string",
    "label_printed_by_percent",
    "computed_attr_default",
    "existing_rule_kind_of_a_starlark_rule",
}
for _name in STATIC_FALLBACK - {"glob_with_directories"}:
    WIDER[_name] = {("a", "lib"), ("a", "tools")}


@pytest.fixture(params=["static", "starlark"])
def reader(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each way a BUILD file is read: the static reader, and the native core's evaluator."""
    if request.param == "static":
        monkeypatch.setattr(starlark, "available", lambda: False)
    elif _native is None:
        pytest.skip("native extension is not built")
    else:
        monkeypatch.setattr(starlark, "available", lambda: True)
        monkeypatch.setattr(backend, "_load", lambda: ("native", _native))
    return str(request.param)


def _commit(repo: GitRepo, files: dict[str, str]) -> str:
    files = {"WORKSPACE": "", **files}
    for path, text in files.items():
        repo.write(path, text)
    return repo.commit("workspace")


def _edges(graph: PackageGraph) -> set[tuple[str, str]]:
    return {(a, b) for a in graph.nodes() for b in graph.nodes() if a != b and graph.why(a, b)}


@pytest.mark.parametrize("name", sorted(WORKSPACES))
def test_graph_holds_every_edge_bazel_reports(repo: GitRepo, name: str, reader: str) -> None:
    graph = load_graph(GitTree(repo.path, _commit(repo, WORKSPACES[name])))
    assert TRUTH[name] <= _edges(graph)
    if reader == "starlark":  # evaluated, not approximated: exactly Bazel's edges
        assert _edges(graph) == WIDER.get(name, TRUTH[name])
        assert (graph.approximate == ()) is (name not in STATIC_FALLBACK)


def test_package_metadata_is_a_dependency_of_the_package(repo: GitRepo, reader: str) -> None:
    """Bazel 6+ makes ``default_package_metadata`` a dependency of every rule of the package
    (Bazel 4.2.3 rejects the argument, so no e2e workspace holds it)."""
    files = {
        "meta/BUILD": FG.format(name="m", srcs="[]"),
        "a/BUILD": 'package(default_package_metadata = ["//meta:m"])\n'
        + FG.format(name="a", srcs="[]"),
        "b/BUILD": 'package(default_visibility = ["//meta:__pkg__"])\n'
        + FG.format(name="b", srcs="[]"),
    }
    graph = load_graph(GitTree(repo.path, _commit(repo, files)))
    assert _edges(graph) == {("a", "meta")}


# What Bazel 7 and 8 add to macros and rules, which Bazel 4.2.3 rejects (no e2e
# workspace holds them): each is Bazel's edge a -> lib, whatever steers it. The bool
# says whether the evaluator knows the construct (exact edges) or hands the file to the
# static reader (an approximate graph: a rule's initializer rewrites the arguments of
# every call; a module's name or the package's subpackages are not known here).
_NEWER_BAZEL: dict[str, tuple[str, bool]] = {
    "repo_name": ('["//lib:l"] if native.repo_name() == "" else []', True),
    "package_relative_label": ('[native.package_relative_label("//lib:l")]', True),
    "package_relative_label_name": (
        '["//lib:" + native.package_relative_label(":l").name]',
        True,
    ),
    "module_name": ('["//lib:l"] if native.module_name() == None else []', False),
    "subpackages": ('["//lib:l"] if not native.subpackages(include = ["*"]) else []', False),
}


@pytest.mark.parametrize("name", sorted(_NEWER_BAZEL))
def test_a_newer_bazel_native_function_keeps_the_edge_it_steers(
    repo: GitRepo, reader: str, name: str
) -> None:
    srcs, known = _NEWER_BAZEL[name]
    files = {
        "tools/BUILD": "",
        "tools/defs.bzl": f"def grp(name):\n    native.filegroup(name = name, srcs = {srcs})\n",
        "lib/BUILD": FG.format(name="l", srcs="[]"),
        "a/BUILD": 'load("//tools:defs.bzl", "grp")\ngrp(name = "a")\n',
        # A BUILD file calls each of them without `native.`.
        "b/BUILD": FG.format(name="b", srcs=srcs.replace("native.", "")),
    }
    graph = load_graph(GitTree(repo.path, _commit(repo, files)))
    assert {("a", "lib"), ("b", "lib")} <= _edges(graph)
    if reader == "starlark":
        assert (_edges(graph) == {("a", "lib"), ("b", "lib")}) is known
        assert (graph.approximate == ()) is known


@pytest.mark.parametrize("label", ['Label(":" + "l")', 'Label("l")', "Label(NAME)"])
def test_a_relative_label_a_bzl_file_makes_is_of_its_package(
    repo: GitRepo, reader: str, label: str
) -> None:
    """Bazel 6+ reads a relative ``Label()`` in the package of the .bzl file calling it
    (Bazel 4.2.3 rejects one, so no e2e workspace holds it)."""
    files = {
        "lib/defs.bzl": 'NAME = "l"\n\ndef grp(name):\n'
        f"    native.filegroup(name = name, srcs = [{label}])\n",
        "lib/BUILD": FG.format(name="l", srcs="[]"),
        "a/BUILD": 'load("//lib:defs.bzl", "grp")\ngrp(name = "a")\n',
        "other/BUILD": FG.format(name="o", srcs="[]"),
    }
    graph = load_graph(GitTree(repo.path, _commit(repo, files)))
    assert _edges(graph) == {("a", "lib")}


@pytest.mark.parametrize(
    ("declaration", "known"),
    [
        # A rule extending another keeps the private defaults of its parent.
        (
            'base = rule(implementation = _impl, extendable = True, attrs = {"_t": '
            'attr.label(default = "//lib:l")})\nr = rule(implementation = _impl, parent = base)',
            True,
        ),
        # An initializer adds to the arguments of every call.
        (
            'def _init(name, deps = [], **kwargs):\n    return {"deps": deps + ["//lib:l"]}\n'
            "r = rule(implementation = _impl, initializer = _init, "
            'attrs = {"deps": attr.label_list()})',
            False,
        ),
        # A symbolic macro's private attribute default is handed to its implementation.
        (
            "def _m(name, visibility, _t):\n    native.filegroup(name = name, srcs = [_t])\n"
            'r = macro(implementation = _m, attrs = {"_t": attr.label(default = "//lib:l")})',
            True,
        ),
    ],
)
def test_a_newer_bazel_rule_declaration_keeps_its_edges(
    repo: GitRepo, reader: str, declaration: str, known: bool
) -> None:
    files = {
        "tools/BUILD": "",
        "tools/defs.bzl": f"def _impl(ctx):\n    return []\n\n{declaration}\n",
        "lib/BUILD": FG.format(name="l", srcs="[]"),
        "a/BUILD": 'load("//tools:defs.bzl", "r")\nr(name = "a")\n',
        "other/BUILD": FG.format(name="o", srcs="[]"),
    }
    graph = load_graph(GitTree(repo.path, _commit(repo, files)))
    assert ("a", "lib") in _edges(graph)
    if reader == "starlark":
        assert (_edges(graph) == {("a", "lib")}) is known
        assert (graph.approximate == ()) is known


# glob() and symbolic links: Bazel follows a link to a directory (a/linkdir/x.txt is a
# file of a) and leaves out the directory it names (b's glob(["link*"]) finds nothing).
# The evaluator leaves such a glob opaque, and the file to the static reader; c's link
# is one no glob of c reaches, so c is evaluated.
_LINKED_FILES = {
    "WORKSPACE": "",
    "lib/BUILD": FG.format(name="l", srcs="[]"),
    "one/BUILD": FG.format(name="t", srcs="[]"),
    "a/realdir/x.txt": "",
    "a/BUILD": FG.format(name="a", srcs='["//lib:l"] if glob(["linkdir/*"]) else []'),
    "b/realdir/x.txt": "",
    "b/BUILD": FG.format(name="b", srcs='[] if glob(["link*"]) else ["//lib:l"]'),
    "c/one.dep": "",
    "c/BUILD": FG.format(name="c", srcs='["//" + f[:-4] + ":t" for f in glob(["*.dep"])]'),
}
_LINKS = {"a/linkdir": "realdir", "b/linkdir": "realdir", "c/other": "one.dep"}
_LINKED_TRUTH = {("a", "lib"), ("b", "lib"), ("c", "one")}


def _write_linked(root: Path) -> None:
    for path, text in _LINKED_FILES.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    for path, target in _LINKS.items():
        (root / path).symlink_to(target)


def test_a_glob_that_may_reach_a_symbolic_link_is_read_statically(
    repo: GitRepo, reader: str
) -> None:
    _write_linked(repo.path)
    graph = load_graph(GitTree(repo.path, repo.commit("links")))
    assert _edges(graph) >= _LINKED_TRUTH
    if reader == "starlark":  # a and b read statically, c evaluated: all exact
        assert _edges(graph) == _LINKED_TRUTH
        assert graph.approximate == ()


@pytest.mark.e2e
@pytest.mark.skipif(shutil.which("bazel") is None, reason="bazel is not on PATH")
def test_bazel_follows_a_link_to_a_directory_in_glob(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    _write_linked(root)
    assert bazel_package_edges(root, tmp_path / "bazel-root") == _LINKED_TRUTH


def test_evaluated_edges_say_where_the_macro_named_the_label(repo: GitRepo, reader: str) -> None:
    if reader == "static":
        pytest.skip("the static reader does not run macros")
    graph = load_graph(GitTree(repo.path, _commit(repo, WORKSPACES["macro_adds_deps"])))
    assert graph.why("a", "helpers") == "tools/defs.bzl:2, through a/BUILD, names //helpers:h"


def test_a_symbol_from_an_absent_repository_is_opaque_and_over_approximated(
    repo: GitRepo, reader: str
) -> None:
    files = {
        "b/BUILD": FG.format(name="b", srcs="[]"),
        "c/BUILD": FG.format(name="c", srcs="[]"),
        "a/BUILD": 'load("@rules_go//go:def.bzl", "go_library")\n'
        'go_library(name = "a", deps = ["//b:b"], embed = select({"//c:c": []}), x = "//d:nope")\n',
    }
    graph = load_graph(GitTree(repo.path, _commit(repo, files)))
    assert graph.dependents(["b"]) == graph.dependents(["c"]) == {"a"}
    assert graph.has_node("d")  # named, absent from the tree: still a node
    if reader == "starlark":
        assert graph.why("a", "b") == (
            "over-approximation: a/BUILD:2 names //b:b in a call to "
            "@rules_go//go:def.bzl%go_library"
        )
        assert graph.approximate == (
            "a/BUILD calls @rules_go//go:def.bzl%go_library, from a repository not in the tree: "
            "every label it is given is taken as a dependency",
        )


def test_a_build_file_the_evaluator_rejects_is_read_statically(repo: GitRepo, reader: str) -> None:
    """``len()`` of an opaque value fails at run time: the file is read the static way."""
    files = {
        "b/BUILD": FG.format(name="b", srcs="[]"),
        "a/BUILD": 'load("@ext//:defs.bzl", "X")\nN = len(X)\n'
        + FG.format(name="a", srcs='["//b"]'),
    }
    graph = load_graph(GitTree(repo.path, _commit(repo, files)))
    assert graph.dependents(["b"]) == {"a"}
    assert graph.why("a", "b") == "a/BUILD:3 names //b"


def test_a_file_the_evaluator_rejects_depends_on_everything_its_tree_code_can_build(
    repo: GitRepo, reader: str
) -> None:
    """A macro that calls what the evaluator lacks (``struct.to_json()``) sends its BUILD
    file to the static reader, which cannot see the label the macro builds from pieces."""
    files = {
        **WORKSPACES["macro_adds_deps"],
        "tools/defs.bzl": (
            "def my_group(name, srcs = []):\n"
            "    d = struct(a = 1).to_json()\n"
            '    native.filegroup(name = name, srcs = srcs + ["/" + "/helpers:h"])\n'
        ),
    }
    graph = load_graph(GitTree(repo.path, _commit(repo, files)))
    if reader == "static":
        pytest.skip("the Python backend's limit, documented: it runs no .bzl code")
    assert graph.dependents(["helpers"]) == graph.dependents(["other"]) == {"a"}
    assert graph.approximate == (
        "a/BUILD loads the tree's own .bzl code, and the evaluator could not run it "
        "(Object of type `struct` has no attribute `to_json`): taken to depend on every package",
    )


def test_a_rule_a_macro_not_in_the_tree_declares_is_listed_by_name_but_of_no_known_kind(
    repo: GitRepo, reader: str
) -> None:
    """``native.existing_rules()`` lists the rule ``generate(name = "gen")`` declared (as
    Bazel does), so a macro testing for it is exact; the rule's kind is unknown here, so
    a macro testing that is not trusted (every package: its labels are unknown)."""
    by_name = {
        **_macro_choosing_by('"gen" in native.existing_rules()'),
        "other/BUILD": FG.format(name="o", srcs="[]"),
        "a/BUILD": 'load("@ext//:defs.bzl", "generate")\ngenerate(name = "gen")\n'
        'load("//tools:defs.bzl", "grp")\ngrp(name = "a")\n',
    }
    graph = load_graph(GitTree(repo.path, _commit(repo, by_name)))
    assert graph.dependents(["lib"]) == {"a"}
    if reader == "starlark":
        assert graph.dependents(["other"]) == set()
    repo.write(
        "tools/defs.bzl",
        _macro_choosing_by('native.existing_rule("gen")["kind"] == "genrule"')["tools/defs.bzl"],
    )
    graph = load_graph(GitTree(repo.path, repo.commit("test the kind")))
    assert graph.dependents(["lib"]) == {"a"}
    if reader == "starlark":
        assert graph.dependents(["other"]) == {"a"}
        assert "the kind or an attribute of <existing rule gen>" in " ".join(graph.approximate)


def test_labels_into_a_local_repository_of_the_tree_are_edges(repo: GitRepo, reader: str) -> None:
    """``@vendored//lib:x``, where the main repository calls ``third_party/vendored``
    ``vendored``, is that directory's package (Bazel 4.2.3 agrees: ``deps(//a:a)`` holds
    ``@vendored//lib:x``); and from there, ``@main//`` and ``@//`` are the main one."""
    files = {
        "WORKSPACE": 'workspace(name = "main")\n'
        'local_repository(name = "vendored", path = "third_party/vendored")\n',
        "third_party/vendored/WORKSPACE": 'workspace(name = "vendored")\n',
        "third_party/vendored/lib/BUILD": FG.format(name="x", srcs="[]"),
        "third_party/vendored/tools/BUILD": "",
        # A Label() is the .bzl file's repository's; a plain string, the caller's.
        "third_party/vendored/tools/defs.bzl": (
            "def grp(name):\n"
            '    native.filegroup(name = name, srcs = [Label("//lib:x"), "//shared:s"])\n'
        ),
        "third_party/vendored/user/BUILD": FG.format(name="u", srcs='["@main//shared:s"]'),
        "third_party/vendored/user2/BUILD": FG.format(name="u", srcs='["@//shared:s"]'),
        "shared/BUILD": FG.format(name="s", srcs="[]"),
        "a/BUILD": FG.format(name="a", srcs='["@vendored//lib:x"]'),
        "b/BUILD": 'load("@vendored//tools:defs.bzl", "grp")\ngrp(name = "b")\n',
        "c/BUILD": FG.format(name="c", srcs='["@elsewhere//lib:x"]'),
    }
    graph = load_graph(GitTree(repo.path, _commit(repo, files)))
    assert graph.dependents(["third_party/vendored/lib"]) == {"a", "b"}
    users = {"third_party/vendored/user", "third_party/vendored/user2"}
    assert {"b", *users} <= graph.dependents(["shared"])
    if reader == "starlark":
        assert graph.dependents(["shared"]) == {"b", *users}
        assert graph.why("b", "third_party/vendored/lib") == (
            "third_party/vendored/tools/defs.bzl:2, through b/BUILD, names @vendored//lib:x"
        )


# A vendored C library whose BUILD file lives beside its directory (Bazel 4.2.3 agrees:
# ``rdeps(//..., @x//:foo.c)`` is ``//app``, and ``deps(@x//:lib)`` holds ``//lib:y``).
_VENDORED = {
    "WORKSPACE": (
        "new_local_repository(\n"
        '    name = "x",\n'
        '    path = "third_party/x",\n'
        '    build_file = "//third_party:x.BUILD",\n'
        ")\n"
    ),
    "third_party/BUILD": "",
    "third_party/x.BUILD": FG.format(name="lib", srcs='glob(["*.c"]) + ["@//lib:y"]'),
    "third_party/x/foo.c": "int f;\n",
    "app/BUILD": FG.format(name="app", srcs='["@x//:lib"]'),
    "lib/BUILD": FG.format(name="y", srcs='["y.txt"]'),
    "lib/y.txt": "",
    "other/BUILD": FG.format(name="o", srcs="[]"),
}


def _affected(repo: GitRepo, base: str, head: str) -> set[str]:
    return set(stage(Request(repo.path, base, head, datetime.date(2026, 12, 1))).selection.affected)


# A toolchain package the root registers, a gate that uses no label of it, and a tool
# package the root does not register.
_GATED_APP = (
    'load("@oracle_gate//rules:defs.bzl", "invariant", "oracle_gate")\n'
    + FG.format(name="d", srcs='["m.py"]')
    + 'oracle_gate(name = "g", rows = [invariant(id = "r", globs = ["*.py"])])\n'
)
_TOOLCHAINS = {
    "tc/cc/BUILD": 'toolchain_type(name = "t")\n'
    'toolchain(name = "x", toolchain_type = ":t", toolchain = ":impl")\n'
    + FG.format(name="impl", srcs='["compiler.sh"]'),
    "tc/cc/compiler.sh": 'cc "$@"\n',
    "tools/BUILD": FG.format(name="lint", srcs='["lint.sh"]'),
    "tools/lint.sh": "true\n",
    "app/BUILD": _GATED_APP,
    "app/m.py": "x = 1\n",
}


@pytest.mark.parametrize(
    ("marker", "text", "why"),
    [
        ("WORKSPACE", 'register_toolchains("//tc/...")', "WORKSPACE registers //tc/..."),
        (
            "WORKSPACE",
            'register_execution_platforms("@//tc/cc:all")',
            "WORKSPACE registers @//tc/cc:all",
        ),
        (
            "MODULE.bazel",
            'module(name = "m")\nregister_toolchains("//tc/cc:x")',
            "MODULE.bazel registers //tc/cc:x",
        ),
        (
            ".bazelrc",
            "build:ci --extra_toolchains=@rules_cc//cc:all,//tc/cc:x",
            ".bazelrc names //tc/cc:x",
        ),
        (".bazelrc", "common --platforms //tc/cc:p", ".bazelrc names //tc/cc:p"),
        (".bazelrc", "build --aspects=//tc/cc:a.bzl%a", ".bazelrc names //tc/cc:a.bzl%a"),
        (".bazelrc", "build --//tc/cc:mode=opt --copt=-O2", ".bazelrc names //tc/cc:mode"),
        (".bazelrc", "build --platforms='//tc/cc:p'", ".bazelrc names //tc/cc:p"),
        (".bazelrc", 'build --extra_toolchains "//tc/cc:x"', ".bazelrc names //tc/cc:x"),
    ],
)
def test_a_change_to_a_package_that_configures_every_rule_reaches_every_package(
    repo: GitRepo, reader: str, marker: str, text: str, why: str
) -> None:
    """Toolchain resolution may hand any rule what a registered package declares: an edge
    ``bazel query`` does not show. A tool package nobody registers reaches only its users."""
    base = _commit(repo, {**_TOOLCHAINS, marker: f"{text}\n"})
    repo.write("tc/cc/compiler.sh", 'cc -O2 "$@"\n')
    toolchain = repo.commit("the compiler wrapper changes")
    selection = stage(Request(repo.path, base, toolchain, datetime.date(2026, 12, 1))).selection
    assert [s.package for s in selection.rows] == ["app"]
    assert selection.rows[0].reason == f"{why}, and tc/cc is affected"
    repo.write("tools/lint.sh", "false\n")
    assert _affected(repo, toolchain, repo.commit("the linter changes")) == {"tools"}


@pytest.mark.parametrize("registers", [True, False])
def test_a_toolchain_the_workspace_registers_through_its_macros_reaches_every_package(
    repo: GitRepo, reader: str, registers: bool
) -> None:
    """Which labels a loaded macro registers is not read: each one its file names counts.
    The same macros naming the package without registering anything register nothing."""
    call = "native.register_toolchains" if registers else "print"
    files = {
        **_TOOLCHAINS,
        "WORKSPACE": 'load("//tools:deps.bzl", "deps")\n\ndeps()\n',
        "tools/deps.bzl": 'load(":tc.bzl", "tc")\n\ndef deps():\n    tc()\n',
        "tools/tc.bzl": f'def tc():\n    {call}("//tc/" + "cc:x", "//tc/cc:impl")\n',
    }
    base = _commit(repo, files)
    repo.write("tc/cc/compiler.sh", 'cc -O2 "$@"\n')
    head = repo.commit("the compiler wrapper changes")
    selection = stage(Request(repo.path, base, head, datetime.date(2026, 12, 1))).selection
    if not registers:
        assert set(selection.affected) == {"tc/cc"}
        return
    assert [s.package for s in selection.rows] == ["app"]
    assert selection.rows[0].reason == (
        "tools/tc.bzl, which the root WORKSPACE loads, may register //tc/cc:impl, "
        "and tc/cc is affected"
    )
    assert any(place.startswith("tools/tc.bzl, which the") for place in selection.approximate)


@pytest.mark.parametrize(
    ("marker", "text"),
    [
        ("WORKSPACE", 'register_toolchains("@rules_cc//tc/...")'),
        (".bazelrc", "build --platforms=@rules_cc//tc/cc:p"),
        (".bazelrc", "# build --platforms=//tc/cc:p"),
        (".bazelrc", "build --copt=-O2  # //tc/cc:p is the default"),
    ],
)
def test_a_toolchain_of_another_repository_or_a_comment_reaches_nothing_here(
    repo: GitRepo, reader: str, marker: str, text: str
) -> None:
    base = _commit(repo, {**_TOOLCHAINS, marker: f"{text}\n"})
    repo.write("tc/cc/compiler.sh", 'cc -O2 "$@"\n')
    assert _affected(repo, base, repo.commit("the compiler wrapper changes")) == {"tc/cc"}


def test_a_new_local_repository_is_a_node_its_build_file_gives_edges(
    repo: GitRepo, reader: str
) -> None:
    graph = load_graph(GitTree(repo.path, _commit(repo, _VENDORED)))
    assert graph.node_of("third_party/x/foo.c") == "third_party/x"
    assert graph.dependents(["third_party/x"]) == {"app"}
    assert graph.dependents(["lib"]) == {"third_party/x", "app"}
    assert graph.why("third_party/x", "lib") == "third_party/x.BUILD:1 names @//lib:y"
    assert graph.dependents(["other"]) == set()


@pytest.mark.parametrize(
    ("path", "affected"),
    [
        ("third_party/x/foo.c", {"third_party/x", "app"}),  # the vendored code
        ("third_party/x.BUILD", {"third_party", "third_party/x", "app"}),  # its BUILD file
        ("other/o.txt", {"other"}),  # the honest neighbour: nothing names it
    ],
)
def test_a_change_of_a_new_local_repository_selects_its_dependents(
    repo: GitRepo, path: str, affected: set[str]
) -> None:
    base = _commit(repo, _VENDORED)
    repo.write(path, repo.read(path) + "# edited\n" if path in _VENDORED else "new\n")
    assert _affected(repo, base, repo.commit("edit")) == affected


# A repository fetched from outside the tree that reads files of it: Bazel fetches it
# again, patched and with the BUILD file given, when one of them changes.
_HTTP_ARCHIVE = (
    'load("@bazel_tools//tools/build_defs/repo:http.bzl", "http_archive")\n'
    "http_archive(\n"
    '    name = "foo",\n'
    '    urls = ["https://example.com/foo.tar.gz"],\n'
    '    build_file = "//third_party:foo.BUILD",\n'
    '    patches = ["//third_party:foo.patch"],\n'
    ")\n"
)
_MODULE_OVERRIDE = (
    'bazel_dep(name = "foo", version = "1.0")\n'
    'single_version_override(module_name = "foo", patches = ["@//third_party:foo.patch"])\n'
)
# The module is known in the main repository by its bazel_dep's repo_name.
_MODULE_OVERRIDE_RENAMED = (
    'bazel_dep(name = "foo_module", version = "1.0", repo_name = "foo")\n'
    'archive_override(module_name = "foo_module", urls = ["https://example.com/f.zip"], '
    'patches = ["//third_party:foo.patch"])\n'
)
_FETCHED = {
    "third_party/BUILD": 'exports_files(["foo.BUILD", "foo.patch"])\n',
    "third_party/foo.BUILD": FG.format(name="lib", srcs='glob(["*.c"])'),
    "third_party/foo.patch": "--- a/foo.c\n+++ b/foo.c\n",
    "third_party/notes.txt": "",
    "app/BUILD": FG.format(name="app", srcs='["@foo//:lib"]'),
    "tool/BUILD": FG.format(name="t", srcs='["@foo//sub:x"]'),
    "other/BUILD": FG.format(name="o", srcs="[]"),
}
_USERS_OF_FOO = {"third_party", "@foo", "app", "tool"}


@pytest.mark.parametrize(
    ("marker", "declaration", "path", "affected"),
    [
        ("WORKSPACE", _HTTP_ARCHIVE, "third_party/foo.patch", _USERS_OF_FOO),
        ("WORKSPACE", _HTTP_ARCHIVE, "third_party/foo.BUILD", _USERS_OF_FOO),
        ("MODULE.bazel", _MODULE_OVERRIDE, "third_party/foo.patch", _USERS_OF_FOO),
        ("MODULE.bazel", _MODULE_OVERRIDE_RENAMED, "third_party/foo.patch", _USERS_OF_FOO),
        # the honest neighbours: a file the declaration does not name, another package
        ("WORKSPACE", _HTTP_ARCHIVE, "third_party/notes.txt", {"third_party"}),
        ("WORKSPACE", _HTTP_ARCHIVE, "other/o.txt", {"other"}),
        # a BUILD file of another repository: the archive's labels are no tree's
        (
            "WORKSPACE",
            _HTTP_ARCHIVE.replace("//third_party:foo", "@bar//:foo"),
            "other/o.txt",
            {"other"},
        ),
    ],
)
def test_a_file_a_fetched_repository_reads_selects_what_uses_the_repository(
    repo: GitRepo, reader: str, marker: str, declaration: str, path: str, affected: set[str]
) -> None:
    base = _commit(repo, {**_FETCHED, marker: declaration})
    repo.write(path, repo.read(path) + "# edited\n" if path in _FETCHED else "new\n")
    assert _affected(repo, base, repo.commit("edit")) == affected


@pytest.mark.parametrize(
    ("module", "users"),
    [
        ('bazel_dep(name = "v_module", repo_name = "v")\n', {"third_party/v", "app"}),
        # the honest neighbour: the name the module is known by is another's
        ('bazel_dep(name = "v_module", repo_name = "w")\n', {"third_party/v"}),
    ],
)
def test_a_local_path_overrides_module_is_known_by_its_repo_name(
    repo: GitRepo, reader: str, module: str, users: set[str]
) -> None:
    """``@v//:l`` is the module ``v_module`` of third_party/v when its bazel_dep says
    ``repo_name = "v"``: an edit there reaches what names it."""
    files = {
        "MODULE.bazel": module
        + 'local_path_override(module_name = "v_module", path = "third_party/v")\n',
        "third_party/v/MODULE.bazel": 'module(name = "v_module")\n',
        "third_party/v/BUILD": FG.format(name="l", srcs='["f.txt"]'),
        "third_party/v/f.txt": "",
        "app/BUILD": FG.format(name="app", srcs='["@v//:l"]'),
    }
    base = _commit(repo, files)
    repo.write("third_party/v/f.txt", "edited\n")
    assert _affected(repo, base, repo.commit("edit")) == users


@pytest.mark.parametrize(
    "declaration",
    [
        'local_repository(name = "v", path = "vlink")\n',
        'new_local_repository(name = "v", path = "vlink", build_file = "//tools:v.BUILD")\n',
    ],
)
def test_a_repository_path_through_a_symbolic_link_is_where_the_link_leads(
    repo: GitRepo, declaration: str
) -> None:
    """Bazel follows ``vlink -> third_party/v``: an edit of third_party/v/f.txt reaches
    what names ``@v//:l``, and not the honest neighbour, which names nothing there."""
    lib = FG.format(name="l", srcs='["f.txt"]')
    files = {
        "WORKSPACE": declaration,
        "tools/BUILD": "",
        "tools/v.BUILD": lib,
        "third_party/v/WORKSPACE": "",
        "third_party/v/BUILD": lib,
        "third_party/v/f.txt": "1\n",
        "a/BUILD": FG.format(name="a", srcs='["@v//:l"]'),
        "other/BUILD": FG.format(name="o", srcs="[]"),
    }
    for path, text in files.items():
        repo.write(path, text)
    (repo.path / "vlink").symlink_to("third_party/v")
    base = repo.commit("a repository through a link")
    repo.write("third_party/v/f.txt", "2\n")
    assert _affected(repo, base, repo.commit("edit")) == {"a", "third_party/v"}


def test_a_repository_outside_the_tree_links_its_users_to_what_its_build_file_names(
    repo: GitRepo, tmp_path: Path
) -> None:
    """``new_local_repository(path = <outside>, build_file = <in the tree>)``: Bazel 4.2.3
    has ``app -> @x//:lib -> //lib:y``, so an edit of lib/y.txt reaches app (through the
    node ``@x``); other names nothing of it."""
    outside = tmp_path / "outside"
    outside.mkdir()
    files = {
        "WORKSPACE": f'new_local_repository(name = "x", path = "{outside}", '
        'build_file = "//third_party:x.BUILD")\n',
        "third_party/BUILD": "",
        "third_party/x.BUILD": FG.format(name="lib", srcs='["@//lib:y"]'),
        "app/BUILD": FG.format(name="app", srcs='["@x//:lib"]'),
        "lib/BUILD": FG.format(name="y", srcs='["y.txt"]'),
        "lib/y.txt": "1\n",
        "other/BUILD": FG.format(name="o", srcs="[]"),
    }
    for path, text in files.items():
        repo.write(path, text)
    base = repo.commit("a repository outside the tree")
    repo.write("lib/y.txt", "2\n")
    edited = repo.commit("edit lib")
    assert _affected(repo, base, edited) == {"lib", "@x", "app"}
    repo.write("third_party/x.BUILD", FG.format(name="lib", srcs="[]"))
    assert "app" in _affected(repo, edited, repo.commit("edit its BUILD file"))


def test_a_bare_repository_label_names_its_root_package(repo: GitRepo, reader: str) -> None:
    """``"@v"`` is ``@v//:v`` and ``"@main"`` (the workspace's own name) ``//:main``, as
    Bazel 4.2.3 reads them; other names nothing of either."""
    files = {
        "WORKSPACE": 'workspace(name = "main")\nlocal_repository(name = "v", path = "vendor/v")\n',
        "BUILD": FG.format(name="main", srcs="[]"),
        "vendor/v/WORKSPACE": "",
        "vendor/v/BUILD": FG.format(name="v", srcs='["f.txt"]'),
        "vendor/v/f.txt": "",
        "a/BUILD": FG.format(name="a", srcs='["@v"]'),
        "b/BUILD": FG.format(name="b", srcs='["@main"]'),
        "other/BUILD": FG.format(name="o", srcs='["@v//:f.txt"[:0]]'),
    }
    graph = load_graph(GitTree(repo.path, _commit(repo, files)))
    assert graph.dependents(["vendor/v"]) == {"a"}
    assert graph.dependents([""]) == {"b"}


def test_a_build_file_repository_depends_on_what_the_tree_macros_it_loads_name(
    repo: GitRepo,
) -> None:
    """x.BUILD calls the tree's macro ``m``, which adds ``Label("//lib:l")``: Bazel 4.2.3
    has ``@x//:x -> //lib:l``, so an edit of lib reaches app through ``third_party/x``."""
    files = {
        "WORKSPACE": 'new_local_repository(name = "x", path = "third_party/x", '
        'build_file = "//third_party:x.BUILD")\n',
        "third_party/BUILD": 'exports_files(["x.BUILD"])\n',
        "third_party/x.BUILD": 'load("@//tools:defs.bzl", "m")\nm(name = "x")\n',
        "third_party/x/y.c": "",
        "tools/BUILD": "",
        "tools/defs.bzl": "def m(name):\n"
        '    native.filegroup(name = name, srcs = [Label("//lib:l")])\n',
        "lib/BUILD": FG.format(name="l", srcs='["f.txt"]'),
        "lib/f.txt": "1\n",
        "app/BUILD": FG.format(name="app", srcs='["@x//:x"]'),
        "other/BUILD": FG.format(name="o", srcs="[]"),
    }
    for path, text in files.items():
        repo.write(path, text)
    base = repo.commit("a build_file calling a macro of the tree")
    repo.write("lib/f.txt", "2\n")
    assert _affected(repo, base, repo.commit("edit lib")) == {"lib", "third_party/x", "app"}


def test_labels_a_main_bzl_makes_are_the_main_repositorys_wherever_it_is_used(
    repo: GitRepo, reader: str
) -> None:
    """@v's BUILD file uses the main repository's rule (private default
    ``//tools:stamper.sh``) and macro (``Label("//lib:l")``): Bazel resolves both in the
    main repository, where they were written, not in @v."""
    files = {
        "WORKSPACE": 'workspace(name = "main")\nlocal_repository(name = "v", path = "vendor/v")\n',
        "vendor/v/WORKSPACE": "",
        "vendor/v/BUILD": 'load("@main//tools:defs.bzl", "r", "m")\nr(name = "x")\nm(name = "y")\n',
        "tools/BUILD": 'exports_files(["stamper.sh"])\n',
        "tools/defs.bzl": _rule_bzl(
            '{"_tool": attr.label(default = "//tools:stamper.sh", allow_single_file = True)}'
        )
        + "\ndef m(name):\n"
        '    native.filegroup(name = name, srcs = [Label("//lib:l")])\n',
        "lib/BUILD": FG.format(name="l", srcs="[]"),
        "a/BUILD": FG.format(name="a", srcs='["@v//:x"]'),
        "other/BUILD": FG.format(name="o", srcs="[]"),
    }
    graph = load_graph(GitTree(repo.path, _commit(repo, files)))
    assert {"vendor/v", "a"} <= graph.dependents(["tools"])
    assert {"vendor/v", "a"} <= graph.dependents(["lib"])
    assert "other" not in graph.dependents(["tools"]) | graph.dependents(["lib"])
    if reader == "starlark":  # evaluated: exactly these
        assert graph.dependents(["lib"]) == {"vendor/v", "a"}


def test_a_macro_of_another_repository_may_assemble_a_main_repository_label(
    repo: GitRepo, reader: str
) -> None:
    """@v's macro builds ``"@" + "main" + "//lib:l"``, the main repository's lib, and
    @v's BUILD file holds a non-ASCII string, so the evaluator leaves it to the static
    reader: both readers reach the main repository's lib, not only @v's packages."""
    files = {
        "WORKSPACE": 'workspace(name = "main")\nlocal_repository(name = "v", path = "vendor/v")\n',
        "vendor/v/WORKSPACE": "",
        "vendor/v/defs.bzl": "def m(name):\n"
        '    repo = "main"\n'
        '    native.filegroup(name = name, srcs = ["@" + repo + "//lib:l"])\n',
        "vendor/v/BUILD": 'load("//:defs.bzl", "m")\nAUTHOR = "René"\nm(name = "x")\n',
        "lib/BUILD": FG.format(name="l", srcs="[]"),
        "a/BUILD": FG.format(name="a", srcs='["@v//:x"]'),
        "other/BUILD": FG.format(name="o", srcs="[]"),
    }
    graph = load_graph(GitTree(repo.path, _commit(repo, files)))
    assert {"vendor/v", "a"} <= graph.dependents(["lib"])
    assert "other" not in graph.dependents(["vendor/v"])


def test_a_build_file_with_a_docs_suffix_still_changes_its_repository(repo: GitRepo) -> None:
    """A build_file may have any name; ``x.BUILD.md`` is in the docs lane, which selects
    nothing by itself, yet Bazel reads it as the repository's BUILD file."""
    files = {
        **{path: text for path, text in _VENDORED.items() if path != "third_party/x.BUILD"},
        "WORKSPACE": _VENDORED["WORKSPACE"].replace("x.BUILD", "x.BUILD.md"),
        "third_party/x.BUILD.md": _VENDORED["third_party/x.BUILD"],
    }
    base = _commit(repo, files)
    repo.write("third_party/x.BUILD.md", files["third_party/x.BUILD.md"] + "# edited\n")
    assert {"third_party/x", "app"} <= _affected(repo, base, repo.commit("edit"))


def test_an_edge_a_patch_adds_to_a_build_file_repository_is_read_from_head(repo: GitRepo) -> None:
    files = {**_VENDORED, "third_party/x.BUILD": FG.format(name="lib", srcs='glob(["*.c"])')}
    base = _commit(repo, files)
    repo.write("third_party/x.BUILD", _VENDORED["third_party/x.BUILD"])
    repo.write("lib/y.txt", "changed\n")
    assert _affected(repo, base, repo.commit("edit")) >= {"lib", "third_party/x", "app"}


def test_build_file_content_is_read_where_it_is_written(repo: GitRepo, reader: str) -> None:
    inline = FG.format(name="lib", srcs='["@//lib:y"]').strip().replace('"', '\\"')
    files = {
        **_VENDORED,
        "WORKSPACE": (
            f'new_local_repository(name = "x", path = "third_party/x", '
            f'build_file_content = "{inline}")\n'
        ),
    }
    del files["third_party/x.BUILD"]
    graph = load_graph(GitTree(repo.path, _commit(repo, files)))
    assert graph.dependents(["lib"]) == {"third_party/x", "app"}
    assert graph.loaders("WORKSPACE") == frozenset({"third_party/x"})


def test_a_build_file_from_outside_the_tree_may_name_every_package(
    repo: GitRepo, reader: str
) -> None:
    files = {**_VENDORED, "WORKSPACE": _VENDORED["WORKSPACE"].replace("//third_party", "@y//")}
    graph = load_graph(GitTree(repo.path, _commit(repo, files)))
    assert graph.dependents(["other"]) == {"third_party/x", "app"}
    assert graph.approximate == (
        "WORKSPACE gives third_party/x a BUILD file not in the tree: it may name every package",
    )


def test_a_computed_label_depends_on_every_package_under_its_prefix(
    repo: GitRepo, reader: str
) -> None:
    if reader == "starlark":
        pytest.skip("evaluated labels are exact")
    files = {**WORKSPACES["comprehension_labels"], "libs/three/BUILD": "", "libsx/BUILD": ""}
    graph = load_graph(GitTree(repo.path, _commit(repo, files)))
    assert not graph.has_node("libs/%s")  # no invented package
    assert graph.dependents(["libs/three"]) == {"a"}  # may be named: over-approximation
    assert graph.dependents(["libsx"]) == set()
    assert graph.why("a", "libs/three").startswith("a/BUILD:1 names //libs/%s, a computed label")
    assert any("computed label" in why for why in graph.approximate)


def test_labels_a_loaded_bzl_names_are_over_approximated_and_said_so(
    repo: GitRepo, reader: str
) -> None:
    if reader == "starlark":
        pytest.skip("the evaluator runs the macro instead")
    files = {
        **WORKSPACES["macro_adds_deps"],
        "tools/defs.bzl": WORKSPACES["macro_adds_deps"]["tools/defs.bzl"]
        + '\nUNUSED = "//other:o"\n',
    }
    graph = load_graph(GitTree(repo.path, _commit(repo, files)))
    assert graph.dependents(["helpers"]) == {"a"}
    assert graph.dependents(["other"]) == {"a"}  # named in the file, never used: still an edge
    assert graph.why("a", "helpers") == "over-approximation: tools/defs.bzl names //helpers:h"
    assert graph.approximate == (
        "tools/defs.bzl is loaded by 1 BUILD file(s), which are taken to depend on every "
        "label it names",
    )


def test_a_url_or_a_comment_in_a_bzl_string_names_no_package(repo: GitRepo, reader: str) -> None:
    """The static reader finds labels inside longer strings (``label_stripped``), but not
    the host of a URL nor a comment's words: each would name a package of the tree."""
    defs = _macro_srcs('["//lib:l"]')["tools/defs.bzl"]
    files = {
        **_macro_srcs('["//lib:l"]'),
        "tools/defs.bzl": defs + 'URL = "https://other"\nFILE = "file:///other"\nC = "// other"\n',
        "other/BUILD": FG.format(name="o", srcs="[]"),
    }
    graph = load_graph(GitTree(repo.path, _commit(repo, files)))
    assert graph.dependents(["lib"]) == {"a"}
    assert graph.dependents(["other"]) == set()
    if reader == "static":  # the same package inside a string that code may cut it out of
        files["tools/defs.bzl"] += 'E = "x //other:o"\n'
        graph = load_graph(GitTree(repo.path, _commit(repo, files)))
        assert graph.dependents(["other"]) == {"a"}


@pytest.mark.parametrize(
    "name",
    [
        "format_keywords_label",
        "format_label",
        "joined_label",
        "percent_builds_the_label",
        "sliced_label",
        "string_methods_label",
    ],
)
def test_the_static_reader_computes_the_string_operations_a_label_is_made_with(
    repo: GitRepo, name: str, reader: str
) -> None:
    graph = load_graph(GitTree(repo.path, _commit(repo, WORKSPACES[name])))
    assert _edges(graph) == TRUTH[name]
    assert graph.approximate == ()


def test_a_string_the_static_reader_cannot_compute_may_name_every_package(
    repo: GitRepo, reader: str
) -> None:
    """``"//LIB:L".capitalize()`` is ``//lib:l`` to Bazel; the static reader does not
    compute capitalize(), so the string may be any label: every package."""
    graph = load_graph(GitTree(repo.path, _commit(repo, WORKSPACES["capitalized_label"])))
    assert graph.dependents(["lib"]) == {"a"}
    if reader == "static":
        assert graph.dependents(["other"]) == {"a"}
        assert graph.approximate == (
            "a/BUILD:1 names //, a computed label: every package under //",
        )


def _spinning_macro(iterations: str) -> dict[str, str]:
    """A macro that loops ``iterations`` squared times before adding its edge."""
    return {
        **WORKSPACES["macro_adds_deps"],
        "tools/defs.bzl": (
            "def my_group(name, srcs = []):\n"
            "    n = 0\n"
            f"    for i in range({iterations}):\n"
            f"        for j in range({iterations}):\n"
            "            n += 1\n"
            '    native.filegroup(name = name, srcs = srcs + ["//helpers:h"])\n'
        ),
    }


def test_a_macro_that_loops_past_the_step_budget_fails_closed(repo: GitRepo) -> None:
    """A patch whose .bzl code would hold Bazel for hours must not hold the gate, nor send
    the file to the static reader (which cannot run the code that makes its labels)."""
    if not starlark.available():
        pytest.skip("the Python backend does not evaluate Starlark")
    base = _commit(repo, _spinning_macro("100"))  # the honest neighbour: a short loop
    graph = load_graph(GitTree(repo.path, base))
    assert graph.dependents(["helpers"]) == {"a"} and graph.approximate == ()
    # range() takes 32-bit bounds: two nested loops make the 10**10 steps.
    head = _commit(repo, _spinning_macro("100000"))
    done = run("select", "--repo", str(repo.path), "--base", base, "--head", head)
    assert done.returncode == 2, done.stderr
    # The inner loop, whose iterations would pass the budget, is where it stops.
    assert done.stderr == (
        "oracle-gate: error: tools/defs.bzl:4: Starlark evaluation stopped after 100000000 "
        "steps evaluating a/BUILD, as long as Bazel would spend on it\n"
    )


def _hoarding_macro(rows: str, columns: str) -> dict[str, str]:
    """A macro that builds a ``rows`` x ``columns`` table of strings before adding its edge."""
    return {
        **WORKSPACES["macro_adds_deps"],
        "tools/defs.bzl": (
            "def my_group(name, srcs = []):\n"
            f'    table = [["//x:" + str(i)] * {columns} for i in range({rows})]\n'
            '    native.filegroup(name = name, srcs = srcs + ["//helpers:h"][:len(table)])\n'
        ),
    }


def test_a_macro_that_builds_gigabytes_fails_closed(repo: GitRepo) -> None:
    """A patch whose Starlark fills the memory must not take the gate's machine down,
    nor send the file to the static reader: each item ``*`` builds is a step, and the
    budget is spent long before the table's 7 GiB are."""
    if not starlark.available():
        pytest.skip("the Python backend does not evaluate Starlark")
    base = _commit(repo, _hoarding_macro("100", "1000"))  # the honest neighbour: 100,000 cells
    graph = load_graph(GitTree(repo.path, base))
    assert graph.dependents(["helpers"]) == {"a"} and graph.approximate == ()
    head = _commit(repo, _hoarding_macro("30000", "30000"))  # 7 GiB of list cells
    done = run("select", "--repo", str(repo.path), "--base", base, "--head", head)
    assert done.returncode == 2, done.stderr
    assert done.stderr == (
        "oracle-gate: error: tools/defs.bzl:2: Starlark evaluation stopped after 100000000 "
        "steps evaluating a/BUILD, as long as Bazel would spend on it\n"
    )


def _display_hoarding_macro(rows: str) -> dict[str, str]:
    """A macro that writes a table of ``rows`` ten-item lists, each a display (no
    operation the evaluator counts items of), before adding its edge."""
    return {
        **WORKSPACES["macro_adds_deps"],
        "tools/defs.bzl": (
            "def my_group(name, srcs = []):\n"
            f"    table = [[i, i, i, i, i, i, i, i, i, i] for i in range({rows})]\n"
            '    native.filegroup(name = name, srcs = srcs + ["//helpers:h"][:len(table)])\n'
        ),
    }


def test_a_macro_whose_lists_fill_the_memory_stops_at_its_limit(repo: GitRepo) -> None:
    """Lists written out take memory a step at a time: the evaluation stops at 1 GiB."""
    if not starlark.available():
        pytest.skip("the Python backend does not evaluate Starlark")
    base = _commit(repo, _display_hoarding_macro("100"))  # the honest neighbour
    graph = load_graph(GitTree(repo.path, base))
    assert graph.dependents(["helpers"]) == {"a"} and graph.approximate == ()
    head = _commit(repo, _display_hoarding_macro("30000000"))  # 3 GiB of lists
    done = run("select", "--repo", str(repo.path), "--base", base, "--head", head)
    assert done.returncode == 2, done.stderr
    assert done.stderr == (
        "oracle-gate: error: tools/defs.bzl:2: Starlark evaluation stopped after 1024 MiB of "
        "memory evaluating a/BUILD, more than any BUILD file needs\n"
    )


def _hoarding_modules(rows: str) -> dict[str, str]:
    """Eight .bzl files, each keeping a ``rows`` x 1000 table, all loaded by ``a``."""
    files = {f"tools/c{i}.bzl": f"X = [[0] * 1000 for i in range({rows})]\n" for i in range(8)}
    loads = "".join(f'load("//tools:c{i}.bzl", X{i} = "X")\n' for i in range(8))
    return {
        **files,
        "tools/BUILD": "",
        "helpers/BUILD": FG.format(name="h", srcs="[]"),
        "a/BUILD": loads + FG.format(name="a", srcs='["//helpers:h"][:len(X0)]'),
    }


def test_bzl_files_that_keep_gigabytes_between_them_fail_closed(repo: GitRepo) -> None:
    """Each file under its own 1 GiB, eight files keep 2.4 GiB until the run ends: the
    run's .bzl modules may keep 2 GiB together."""
    if not starlark.available():
        pytest.skip("the Python backend does not evaluate Starlark")
    base = _commit(repo, _hoarding_modules("40"))  # the honest neighbour: 2.5 MB in all
    graph = load_graph(GitTree(repo.path, base))
    assert graph.dependents(["helpers"]) == {"a"} and graph.approximate == ()
    head = _commit(repo, _hoarding_modules("40000"))  # 300 MiB each
    done = run("select", "--repo", str(repo.path), "--base", base, "--head", head)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("oracle-gate: error: tools/c"), done.stderr
    assert done.stderr.endswith(
        ".bzl:1: Starlark evaluation stopped after 2048 MiB of memory for the .bzl files "
        "loaded up to this one, more than any repository's .bzl files need\n"
    ), done.stderr
    assert len(done.stderr.splitlines()) == 1


def test_a_plain_workspace_is_not_approximate(repo: GitRepo) -> None:
    graph = load_graph(GitTree(repo.path, _commit(repo, WORKSPACES["own_workspace_name"])))
    assert graph.approximate == ()


def test_an_edit_to_an_inner_bzl_selects_the_packages_loading_the_outer_one(
    repo: GitRepo, reader: str
) -> None:
    graph = load_graph(GitTree(repo.path, _commit(repo, WORKSPACES["transitive_load"])))
    assert graph.loaders("tools/inner.bzl") == {"a"}


# --- property: macro-generated graphs never select less than the truth --------------------


@st.composite
def _macro_monorepos(draw: st.DrawFn) -> tuple[dict[str, str], set[tuple[str, str]]]:
    """Packages p0..pN whose deps come plainly, through a macro's extra deps, a loaded
    constant, a comprehension or a concatenation; returns (files, true package edges)."""
    count = draw(st.integers(min_value=2, max_value=6))
    macro_extra = draw(st.sets(st.integers(0, count - 1), max_size=2))
    constant = draw(st.sets(st.integers(0, count - 1), max_size=2))
    files = {
        "tools/BUILD": "",
        "tools/defs.bzl": (
            f"EXTRA = {sorted(f'//p{n}:t' for n in macro_extra)!r}\n"
            "def grp(name, srcs = []):\n"
            "    native.filegroup(name = name, srcs = srcs + EXTRA)\n"
        ).replace("'", '"'),
        "tools/deps.bzl": f"COMMON = {sorted(f'//p{n}:t' for n in constant)!r}\n".replace("'", '"'),
    }
    truth: set[tuple[str, str]] = set()
    for node in range(count):
        style = draw(st.sampled_from(["plain", "macro", "constant", "comprehension", "concat"]))
        deps = sorted(draw(st.sets(st.integers(0, count - 1), max_size=3)) - {node})
        head = 'load("//tools:defs.bzl", "grp")\nload("//tools:deps.bzl", "COMMON")\n'
        names = repr([f"p{d}" for d in deps]).replace("'", '"')
        srcs = {
            "plain": repr([f"//p{d}:t" for d in deps]).replace("'", '"'),
            "macro": repr([f"//p{d}:t" for d in deps]).replace("'", '"'),
            "constant": "COMMON",
            "comprehension": f'["//%s:t" % n for n in {names}]',
            "concat": f'["//" + n + ":t" for n in {names}]',
        }[style]
        call = "grp" if style == "macro" else "filegroup"
        files[f"p{node}/BUILD"] = head + f'{call}(name = "t", srcs = {srcs})\n'
        targets = set(deps)
        if style == "macro":
            targets |= macro_extra
        if style == "constant":
            targets = set(constant)
        truth |= {(f"p{node}", f"p{t}") for t in targets if t != node}
    return files, truth


# ``reader`` only patches which reader runs, the same for every example.
@settings(
    max_examples=25,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(_macro_monorepos())
def test_macro_generated_graphs_never_select_less_than_the_truth(
    tmp_path_factory: pytest.TempPathFactory,
    reader: str,
    monorepo: tuple[dict[str, str], set[tuple[str, str]]],
) -> None:
    files, truth = monorepo
    repo = GitRepo.init(tmp_path_factory.mktemp("macro") / "repo")
    graph = load_graph(GitTree(repo.path, _commit(repo, files)))
    for dependent, dependency in truth:
        assert dependent in graph.dependents([dependency]), (dependent, dependency)
    if reader == "starlark":
        assert _edges(graph) == truth


# --- against the installed Bazel -----------------------------------------------------------


@pytest.mark.e2e
@pytest.mark.skipif(shutil.which("bazel") is None, reason="bazel is not on PATH")
def test_truth_is_what_bazel_query_reports(tmp_path: Path) -> None:
    """One Bazel server answers for every workspace in turn (output base under tmp_path)."""
    root = tmp_path / "ws"
    failures = []
    try:
        for name, files in sorted(WORKSPACES.items()):
            for old in root.glob("*") if root.exists() else ():
                if old.name != ".bazelrc":
                    shutil.rmtree(old) if old.is_dir() else old.unlink()
            for path, text in {"WORKSPACE": "", **files}.items():
                (root / path).parent.mkdir(parents=True, exist_ok=True)
                (root / path).write_text(text)
            rc = f"startup --output_user_root={tmp_path / 'bazel-root'}\n"
            (root / ".bazelrc").write_text(rc)
            edges = {(a, b) for a, b, _ in bazel_query_edges(root, timeout=600)}
            if edges != TRUTH[name]:
                failures.append((name, edges))
    finally:
        subprocess.run(["bazel", "shutdown"], cwd=root, capture_output=True, timeout=120)
    assert failures == []


@pytest.mark.e2e
@pytest.mark.skipif(shutil.which("bazel") is None, reason="bazel is not on PATH")
def test_bazel_agrees_a_new_local_repository_links_its_users_to_its_files(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    for path, text in _VENDORED.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    (root / ".bazelrc").write_text(f"startup --output_user_root={tmp_path / 'bazel-root'}\n")

    def query(expression: str) -> set[str]:
        done = subprocess.run(
            ["bazel", "query", expression], cwd=root, capture_output=True, text=True, timeout=600
        )
        assert done.returncode == 0, done.stderr
        return set(done.stdout.split())

    try:
        assert "//app:app" in query("rdeps(//..., @x//:foo.c)")
        assert "//lib:y" in query("deps(@x//:lib)")
        assert "//other:o" not in query("rdeps(//..., @x//:foo.c)")
    finally:
        subprocess.run(["bazel", "shutdown"], cwd=root, capture_output=True, timeout=120)


@pytest.mark.e2e
@pytest.mark.skipif(shutil.which("bazel") is None, reason="bazel is not on PATH")
def test_the_bazel_graph_keeps_edges_into_a_repository_of_the_tree(repo: GitRepo) -> None:
    """``bazel query`` lists the main repository's inputs only: ``//app`` naming ``@x//:lib``
    is not among them, so that edge keeps its static reading."""
    repo.write(".gitignore", "/bazel-*\n")
    repo.write(".bazelrc", f"startup --output_user_root={repo.path.parent / 'bazel-root'}\n")
    head = _commit(repo, _VENDORED)
    try:
        graph = load_graph(GitTree(repo.path, head), mode="bazel", timeout=600)
    finally:
        subprocess.run(["bazel", "shutdown"], cwd=repo.path, capture_output=True, timeout=120)
    assert graph.dependents(["third_party/x"]) == {"app"}
    assert graph.dependents(["lib"]) == {"third_party/x", "app"}


def _gate_behind_a_macro_then_helper_edited(repo: GitRepo, impl: str) -> str:
    """A gate in ``a`` that reaches ``helpers`` only through a macro; returns the base commit.

    The head commit edits an assembler file of ``helpers``, a suffix no lane knows.
    """
    if impl == "native" and _native is None:
        pytest.skip("native extension is not built")
    files = {
        **WORKSPACES["macro_adds_deps"],
        "a/BUILD": WORKSPACES["macro_adds_deps"]["a/BUILD"]
        + 'load("@oracle_gate//rules:defs.bzl", "invariant", "oracle_gate")\n'
        'oracle_gate(name = "g", rows = [invariant(id = "r", globs = ["*.py"])])\n',
        "helpers/h.S": "nop\n",
    }
    base = _commit(repo, files)
    repo.write("helpers/h.S", "ret\n")
    repo.commit("edit the helper")
    return base


@pytest.mark.parametrize("impl", ["python", "native"])
def test_select_explains_an_edge_a_macro_adds(repo: GitRepo, impl: str) -> None:
    base = _gate_behind_a_macro_then_helper_edited(repo, impl)
    done = run(
        "select", "--repo", str(repo.path), "--base", base, "--explain", ORACLE_GATE_IMPL=impl
    )
    assert done.returncode == 0, done.stderr
    assert "a  r\n" in done.stdout
    if impl == "python":  # the static reader takes every label of the loaded file
        assert "why: a -> helpers [over-approximation: tools/defs.bzl names //helpers:h]: " in (
            done.stdout
        )
        assert "the package graph is approximate in 1 place(s)" in done.stdout
        assert "    approximate: tools/defs.bzl is loaded by 1 BUILD file(s)" in done.stdout
    else:  # the evaluator ran the macro
        assert "why: a -> helpers [tools/defs.bzl:2, through a/BUILD, names //helpers:h]: " in (
            done.stdout
        )
        assert "approximate" not in done.stdout


def test_a_gate_called_through_a_load_alias_is_a_gate(repo: GitRepo, reader: str) -> None:
    """Only files that call oracle_gate are read for a matrix; an alias is a call too."""
    files = {
        "a/BUILD": 'load("@oracle_gate//rules:defs.bzl", inv = "invariant", g = "oracle_gate")\n'
        'g(name = "gate", rows = [inv(id = "r", globs = ["*.py"])])\n',
        "b/BUILD": 'load("@oracle_gate//rules:defs.bzl", "invariant", "oracle_gate")\n',
    }
    graph = load_graph(GitTree(repo.path, _commit(repo, files)))
    assert sorted(graph.packages) == ["a"]
    assert graph.packages["a"].target == "//a:gate"


@pytest.mark.parametrize("impl", ["python", "native"])
def test_check_says_when_the_graph_it_selected_with_is_approximate(
    repo: GitRepo, impl: str
) -> None:
    """What select prints about over-approximation, check's report carries in every format."""
    base = _gate_behind_a_macro_then_helper_edited(repo, impl)
    out = repo.path.parent / f"report-{impl}"
    done = run(
        "check",
        "--repo",
        str(repo.path),
        "--base",
        base,
        "--output",
        f"json:{out}.json",
        "--output",
        f"markdown:{out}.md",
        "--output",
        f"junit:{out}.xml",
        "--output",
        f"sarif:{out}.sarif",
        ORACLE_GATE_IMPL=impl,
    )
    assert done.returncode in (0, 1), done.stderr
    document = json.loads(Path(f"{out}.json").read_text())
    sarif = json.loads(Path(f"{out}.sarif").read_text())
    approximated = sarif["runs"][0]["properties"]["graphApproximate"]
    if impl == "python":  # the static reader takes every label of the loaded .bzl file
        place = (
            "tools/defs.bzl is loaded by 1 BUILD file(s), which are taken to depend on every "
            "label it names"
        )
        assert document["graph_approximate"] == [place]
        assert approximated == [place]
        assert "package graph approximate in 1 place(s)" in done.stdout
        assert f"  approximate: {place}\n" in done.stdout
        assert "package graph approximate in 1 place(s)" in Path(f"{out}.md").read_text()
        assert 'name="package graph approximate"' in Path(f"{out}.xml").read_text()
    else:  # the evaluator ran the macro: the graph is exact, and no format says otherwise
        assert document["graph_approximate"] == []
        assert approximated == []
        for text in (done.stdout, Path(f"{out}.md").read_text(), Path(f"{out}.xml").read_text()):
            assert "approximate" not in text
