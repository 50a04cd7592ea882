"""The heads panel: what each head does (the head table, the layer x head grid) and the model run with heads off."""
