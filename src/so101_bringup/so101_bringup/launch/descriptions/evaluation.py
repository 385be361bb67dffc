"""``evaluation``: ``so101 eval``'s graph (policy server hosting ``checkpoint``, sim node, policy node) without the
evaluator: the description lives beside the evaluator (:mod:`so101_policy.evaluation_graph`), which runs it with
every argument given; here its checkpoint variant, with the eval config's defaults. Nothing moves before
``policy/start`` unless ``autostart:=true``; ``sim/reset`` draws a new scene."""

from so101_policy.evaluation_graph import evaluation_description

DESCRIPTION = evaluation_description()
