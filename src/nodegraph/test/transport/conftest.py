"""Graph fixtures: a real zenoh router on a free loopback port, peers as processes."""

from nodegraph.testing.graph import context, endpoint, peers, router  # noqa: F401
