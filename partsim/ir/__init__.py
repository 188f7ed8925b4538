"""partsim's intermediate representation: a model's nodes and values, their orders, and op schemas."""
