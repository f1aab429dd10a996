"""Python source as the gate reads it: one parse, one set of errors, shared by every lane."""
