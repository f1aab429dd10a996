"""Running code: the row judge, the sandboxed child it talks to, canonical outputs, health lines."""
