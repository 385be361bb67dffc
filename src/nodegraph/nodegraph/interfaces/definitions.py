"""Parse ROS 2 ``.msg``, ``.srv`` and ``.action`` files into rosbags type dictionaries.

A service ``pkg/srv/Name`` becomes the messages ``Name_Request``, ``Name_Response`` and ``Name_Event`` plus a
description struct ``pkg/srv/Name`` (fields ``request_message``, ``response_message``, ``event_message``) whose
RIHS01 hash is the service's hash. An action ``pkg/action/Name`` becomes ``Name_Goal``, ``Name_Result``,
``Name_Feedback``, the services ``Name_SendGoal`` and ``Name_GetResult``, the message ``Name_FeedbackMessage``
and its own description struct, laid out as rosidl generates them (REP-2011 / rcl_action).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rosbags.interfaces import Nodetype
from rosbags.typesys import get_types_from_msg

Typesdict = dict[str, Any]

SERVICE_EVENT_INFO = "service_msgs/msg/ServiceEventInfo"
UUID = "unique_identifier_msgs/msg/UUID"
TIME = "builtin_interfaces/msg/Time"


class DefinitionError(ValueError):
    """An interface file is malformed."""


def _nested(name: str) -> tuple[Any, ...]:
    return (Nodetype.NAME, name)


def _bounded_sequence(name: str, bound: int) -> tuple[Any, ...]:
    return (Nodetype.SEQUENCE, ((Nodetype.NAME, name), bound))


def _base(typ: str) -> tuple[Any, ...]:
    return (Nodetype.BASE, (typ, 0))


def _parse_section(text: str, package: str, full_name: str) -> Typesdict:
    """Parse one message section; references stay as rosbags resolves them (``pkg/msg/Type``)."""
    try:
        parsed = get_types_from_msg(text, f"{package}/msg/_section")
    except Exception as exc:  # rosbags raises several parser error types
        raise DefinitionError(f"{full_name}: cannot parse definition: {exc}") from exc
    consts, fields = parsed[f"{package}/msg/_section"]
    return {full_name: (consts, fields)}


def _split(text: str, parts: int, full_name: str) -> list[str]:
    sections: list[list[str]] = [[]]
    for line in text.splitlines():
        if line.strip() == "---":
            sections.append([])
        else:
            sections[-1].append(line)
    if len(sections) != parts:
        raise DefinitionError(f"{full_name}: expected {parts} sections separated by '---', got {len(sections)}")
    return ["\n".join(section) for section in sections]


def service_types(name: str, request: Typesdict, response: Typesdict) -> Typesdict:
    """Request, response, event and description structs of service ``name`` (``pkg/srv/Name``)."""
    req, resp = f"{name}_Request", f"{name}_Response"
    types: Typesdict = {req: request[req], resp: response[resp]}
    types[f"{name}_Event"] = (
        [],
        [
            ("info", _nested(SERVICE_EVENT_INFO)),
            ("request", _bounded_sequence(req, 1)),
            ("response", _bounded_sequence(resp, 1)),
        ],
    )
    types[name] = (
        [],
        [
            ("request_message", _nested(req)),
            ("response_message", _nested(resp)),
            ("event_message", _nested(f"{name}_Event")),
        ],
    )
    return types


def parse_message(package: str, name: str, text: str) -> Typesdict:
    """Types of ``package/msg/name``."""
    return _parse_section(text, package, f"{package}/msg/{name}")


def parse_service(package: str, name: str, text: str) -> Typesdict:
    """Types of ``package/srv/name`` (request, response, event, description)."""
    full = f"{package}/srv/{name}"
    request_text, response_text = _split(text, 2, full)
    request = _parse_section(request_text, package, f"{full}_Request")
    response = _parse_section(response_text, package, f"{full}_Response")
    return service_types(full, request, response)


def parse_action(package: str, name: str, text: str) -> Typesdict:
    """Types of ``package/action/name`` with the rcl_action services and feedback message."""
    full = f"{package}/action/{name}"
    goal_text, result_text, feedback_text = _split(text, 3, full)
    types: Typesdict = {}
    for suffix, section in (("Goal", goal_text), ("Result", result_text), ("Feedback", feedback_text)):
        types.update(_parse_section(section, package, f"{full}_{suffix}"))
    send_goal = f"{full}_SendGoal"
    types.update(
        service_types(
            send_goal,
            {f"{send_goal}_Request": ([], [("goal_id", _nested(UUID)), ("goal", _nested(f"{full}_Goal"))])},
            {f"{send_goal}_Response": ([], [("accepted", _base("bool")), ("stamp", _nested(TIME))])},
        )
    )
    get_result = f"{full}_GetResult"
    types.update(
        service_types(
            get_result,
            {f"{get_result}_Request": ([], [("goal_id", _nested(UUID))])},
            {
                f"{get_result}_Response": (
                    [],
                    [("status", _base("int8")), ("result", _nested(f"{full}_Result"))],
                )
            },
        )
    )
    types[f"{full}_FeedbackMessage"] = (
        [],
        [("goal_id", _nested(UUID)), ("feedback", _nested(f"{full}_Feedback"))],
    )
    types[full] = (
        [],
        [
            ("goal", _nested(f"{full}_Goal")),
            ("result", _nested(f"{full}_Result")),
            ("feedback", _nested(f"{full}_Feedback")),
            ("send_goal_service", _nested(send_goal)),
            ("get_result_service", _nested(get_result)),
            ("feedback_message", _nested(f"{full}_FeedbackMessage")),
        ],
    )
    return types


PARSERS = {".msg": parse_message, ".srv": parse_service, ".action": parse_action}


def parse_package_dir(package_dir: Path, package: str | None = None) -> Typesdict:
    """Parse every interface file under ``package_dir/{msg,srv,action}``; the package name defaults to the dir name."""
    package = package or package_dir.name
    types: Typesdict = {}
    for sub in ("msg", "srv", "action"):
        for path in sorted((package_dir / sub).glob(f"*.{sub}")):
            types.update(PARSERS[path.suffix](package, path.stem, path.read_text()))
    return types
