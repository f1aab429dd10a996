"""bzlmod: the `python` module extension creates `@oracle_gate_python` (see python.bzl).

In MODULE.bazel, optionally:

    python = use_extension("@oracle_gate//rules:extensions.bzl", "python")
    python.interpreter(path = "/usr/bin/python3")

The root module's tag wins; without one, `python3` on PATH (or
$ORACLE_GATE_PYTHON) is used.
"""

load(":python.bzl", "oracle_gate_python")

_interpreter = tag_class(
    doc = "The interpreter the gates run.",
    attrs = {
        "path": attr.string(doc = "A name on PATH or an absolute path.", default = "python3"),
        "label": attr.label(doc = "The interpreter as a label; wins over `path`."),
    },
)

def _python_impl(module_ctx):
    chosen = None
    for module in module_ctx.modules:
        for tag in module.tags.interpreter:
            if chosen == None or module.is_root:
                chosen = tag
    oracle_gate_python(
        name = "oracle_gate_python",
        interpreter = chosen.path if chosen else "python3",
        interpreter_label = chosen.label if chosen else None,
    )

python = module_extension(
    implementation = _python_impl,
    doc = "Creates @oracle_gate_python, the interpreter record every gate takes as input.",
    tag_classes = {"interpreter": _interpreter},
)
