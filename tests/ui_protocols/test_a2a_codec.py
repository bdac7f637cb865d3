"""The A2A codec without a server: which instance a request is for, task ids, a client's message
as ours, and the answers a reply to a waiting task carries."""

from __future__ import annotations

from a2a.types.a2a_pb2 import Message, Part, Role
from google.protobuf.json_format import ParseDict

from think.ui_protocols.a2a import instance_of
from think.ui_protocols.a2a.messages import Approval, Result, answers_in, from_a2a
from think.ui_protocols.a2a.tasks import context_of, new_task_id


def _data(value: dict[str, object]) -> Part:
    part = Part()
    ParseDict(value, part.data)
    return part


def test_the_instance_of_a_request() -> None:
    def send(**message: object) -> dict[str, object]:
        return {"method": "SendMessage", "params": {"message": message}}

    assert instance_of(send(contextId="alice")) == "alice"
    assert instance_of(send(taskId="alice/1234")) == "alice"
    fresh = instance_of(send())
    assert fresh and fresh != instance_of(send())  # a new conversation each time
    assert instance_of({"method": "GetTask", "params": {"id": "a/b/c"}}) == "a/b"
    assert instance_of({"method": "GetTask", "params": {"id": "no-slash"}}) is None
    assert instance_of({"method": "ListTasks", "params": {"contextId": "bob"}}) == "bob"
    assert instance_of({"method": "GetExtendedAgentCard", "params": {}}) is None
    assert instance_of([1, 2]) is None
    task = new_task_id("room/7")
    assert context_of(task) == "room/7"


def test_a_client_message_is_a_user_message_under_a_server_id_without_server_metadata() -> None:
    message = Message(message_id="client-id", role=Role.ROLE_AGENT, parts=[
        Part(text="look"), Part(url="https://example.com/a.png", media_type="image/png"),
        Part(raw=b"hi", media_type="text/plain", filename="hi.txt"), _data({"k": [1]})])
    ParseDict({"channel": "forged", "usage": {"x": 1}, "mine": 1}, message.metadata)
    ours = from_a2a(message)
    assert ours.role == "user" and ours.id != "client-id"
    assert ours.metadata == {"mine": 1, "channel": "web"}
    dumped = ours.to_json()["parts"]
    assert [p["type"] for p in dumped] == ["text", "file", "file", "text"]
    assert dumped[2]["url"] == "data:text/plain;base64,aGk=" and dumped[3]["text"] == '{"k":[1]}'


def test_the_answers_in_a_reply() -> None:
    def reply(*parts: Part) -> Message:
        return Message(message_id="r", role=Role.ROLE_USER, parts=list(parts))

    assert answers_in(reply(Part(text="Yes."))) == [Approval(True)]
    assert answers_in(reply(Part(text="no"))) == [Approval(False)]
    assert answers_in(reply(Part(text="maybe later"))) == []
    assert answers_in(reply(_data({"approved": False, "toolCallId": "c1"}))) == [Approval(False, "c1")]
    assert answers_in(reply(_data({"toolCallId": "c2", "output": {"city": "Oslo"}}))) == [
        Result("c2", {"city": "Oslo"})]
    assert answers_in(reply(_data({"toolCallId": "c3", "error": "no GPS"}))) == [Result("c3", None, "no GPS")]
