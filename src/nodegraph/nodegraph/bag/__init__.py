"""rosbag2 bags in MCAP storage, without ROS: record raw CDR, read, inspect, repair and play back.

from nodegraph.bag import BagWriter, info, format_info, read_messages, play, recover
"""

from nodegraph.bag.errors import (
    BagArgumentError,
    BagClosedError,
    BagError,
    BagExistsError,
    BagFormatError,
    BagNotFoundError,
    BagTopicError,
    BagWriteError,
    TruncatedBagWarning,
)
from nodegraph.bag.metadata import TopicStats, qos_profile_yaml
from nodegraph.bag.player import play
from nodegraph.bag.reader import BagInfo, BagMessage, format_info, info, read_messages
from nodegraph.bag.recover import RecoverySummary, recover
from nodegraph.bag.writer import BagWriter, WriterStats

__all__ = [
    "BagArgumentError",
    "BagClosedError",
    "BagError",
    "BagExistsError",
    "BagFormatError",
    "BagInfo",
    "BagMessage",
    "BagNotFoundError",
    "BagTopicError",
    "BagWriteError",
    "BagWriter",
    "RecoverySummary",
    "TopicStats",
    "TruncatedBagWarning",
    "WriterStats",
    "format_info",
    "info",
    "play",
    "qos_profile_yaml",
    "read_messages",
    "recover",
]
