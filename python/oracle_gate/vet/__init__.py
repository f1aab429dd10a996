"""Vetting rows: mutants of the code a row guards, judged by the row's own oracles.

``run.vet`` is the command; ``operators`` and ``mutants`` make the mutants,
``judge`` judges one, ``results`` holds what was found, ``store`` files it in the
user's cache by content, ``require`` is ``check --require-vetted``, ``formats``
renders the report. This package imports none of its modules itself: ``gate``
imports ``require`` alone, without the runtime set-up ``run`` needs.
"""
