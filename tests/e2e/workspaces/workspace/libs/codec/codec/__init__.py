"""A tiny key=value record codec that refuses duplicate keys."""


def encode(record):
    """One ``key=value`` line per item, keys sorted."""
    return "".join(f"{key}={record[key]}\n" for key in sorted(record))


def decode(text):
    """The record ``encode`` wrote; a repeated key is an error, not a silent overwrite."""
    record = {}
    # Only "\n" ends a line: str.splitlines() would also split on \f, \x1e and friends.
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    for number, line in enumerate(lines, start=1):
        key, sep, value = line.partition("=")
        if not sep:
            raise ValueError(f"line {number}: expected key=value")
        if key in record:
            raise ValueError(f"line {number}: duplicate key {key!r}")
        record[key] = value
    return record
