"""Environment bindings, one module per family."""
