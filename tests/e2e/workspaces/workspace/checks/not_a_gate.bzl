"""A test that always fails, to show that --config=oracle_gate runs only the gates."""

def _always_fails_test_impl(ctx):
    script = ctx.actions.declare_file(ctx.label.name + ".sh")
    ctx.actions.write(
        output = script,
        content = "#!/usr/bin/env bash\necho 'not an oracle gate: --config=oracle_gate must skip me'\nexit 1\n",
        is_executable = True,
    )
    return [DefaultInfo(executable = script)]

always_fails_test = rule(
    implementation = _always_fails_test_impl,
    doc = "Fails whenever it runs.",
    test = True,
)
