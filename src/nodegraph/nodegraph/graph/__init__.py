"""The node interface node logic is written against, implemented by the transport backends."""
