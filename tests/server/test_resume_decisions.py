"""The resume handshake's decision table (Think §2.7), one test per row, and the ACK rules."""

from __future__ import annotations

import pytest

from think.protocol.frames import StreamPending, StreamResumeNone, StreamResuming
from think.server.resume import (
    ActiveStream,
    PendingTurn,
    ProbeAnswer,
    Situation,
    answer_probe,
    greeting,
    plan_ack,
)

ME, OTHER = "me", "other"
OPEN = frozenset({ME, OTHER})


def probe(situation: Situation) -> ProbeAnswer:
    return answer_probe(situation, ME, "p1")


def test_a_continuation_owned_by_another_open_connection_is_not_offered() -> None:
    s = Situation(active=ActiveStream("c1", continuation=True, owner=OTHER), connected=OPEN)
    assert probe(s) == ProbeAnswer(StreamResumeNone("continuation-owned", "p1"), "none")


@pytest.mark.parametrize("active", [
    ActiveStream("r1"),                                        # an ordinary turn
    ActiveStream("c1", continuation=True, owner=ME),           # our own continuation
    ActiveStream("c1", continuation=True, owner="gone"),       # its owner has disconnected
    ActiveStream("c1", continuation=True, owner=None),         # a programmatic continuation
    ActiveStream("r0", orphaned=True),                         # a stream a restart interrupted
])
def test_an_active_stream_is_offered_and_the_connection_awaits_its_ack(active: ActiveStream) -> None:
    s = Situation(active=active, connected=OPEN, terminal="old", pre_stream="queued")
    assert probe(s) == ProbeAnswer(StreamResuming(active.request_id, "p1"), "await-ack")


@pytest.mark.parametrize("owner", [ME, None, "gone"])
def test_a_pending_continuation_of_ours_or_nobodys_parks_the_probe(owner: str | None) -> None:
    s = Situation(continuation=PendingTurn("c2", owner), connected=OPEN, terminal="old")
    assert probe(s) == ProbeAnswer(StreamPending("c2", "p1"), "park")


def test_a_pending_continuation_of_another_tab_falls_through() -> None:
    s = Situation(continuation=PendingTurn("c2", OTHER), connected=OPEN)
    assert probe(s) == ProbeAnswer(StreamResumeNone("idle", "p1"), "none")


def test_the_last_failed_turn_is_offered_again() -> None:
    s = Situation(terminal="failed-1", pre_stream="queued", connected=OPEN)
    assert probe(s) == ProbeAnswer(StreamResuming("failed-1", "p1"), "await-ack")


def test_an_accepted_turn_that_has_not_streamed_parks_the_probe() -> None:
    s = Situation(pre_stream="queued", connected=OPEN)
    assert probe(s) == ProbeAnswer(StreamPending("queued", "p1"), "park")


def test_otherwise_the_agent_is_idle() -> None:
    assert probe(Situation(connected=OPEN)) == ProbeAnswer(StreamResumeNone("idle", "p1"), "none")
    assert answer_probe(Situation(), ME, None) == ProbeAnswer(StreamResumeNone("idle", None), "none")


def test_the_connect_greeting_offers_the_stream_or_parks_without_a_probe_id() -> None:
    assert greeting(Situation(active=ActiveStream("r1"))) == ProbeAnswer(StreamResuming("r1"), "await-ack")
    assert greeting(Situation(active=ActiveStream("c1", continuation=True, owner=OTHER), connected=OPEN)) == \
        ProbeAnswer(StreamResuming("c1"), "await-ack")
    assert greeting(Situation(pre_stream="queued")) == ProbeAnswer(StreamPending("queued"), "park")
    assert greeting(Situation(continuation=PendingTurn("c2", OTHER))) == ProbeAnswer(StreamPending("c2"), "park")
    assert greeting(Situation(terminal="failed")) is None  # a failure is delivered by the handshake only
    assert greeting(Situation()) is None


def test_ack_rules() -> None:
    live = Situation(active=ActiveStream("r1"))
    assert plan_ack(live, "r1") == "replay-live"
    assert plan_ack(live, "other") == "done"  # not the active stream: it ended before the ACK
    assert plan_ack(Situation(active=ActiveStream("r0", orphaned=True)), "r0") == "replay-orphan"
    assert plan_ack(Situation(terminal="failed"), "failed") == "replay-failed"
    assert plan_ack(Situation(terminal="failed"), "r9") == "done"  # ended before the ACK
    assert plan_ack(Situation(), "r9") == "done"
