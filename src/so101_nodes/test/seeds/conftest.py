"""Graph fixtures: a real zenoh router on a free loopback port, peers as processes."""

from graph_testing import context, endpoint, peers, router  # noqa: F401
