"""Node logic: one class per node, written against the node interface (``graph.api.Node``)."""
