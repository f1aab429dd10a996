"""Drafting the assumption register from a patch: ``run.propose`` writes ``status: proposed``
rows, ``changes`` finds the changed functions, ``rules`` reads their assumptions off the
syntax trees, ``candidates`` holds the schema and the rule that discards the unfounded."""
