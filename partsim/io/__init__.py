"""Getting models in and out: read a file, check external data, infer shapes, build the IR, make variants and weights."""
