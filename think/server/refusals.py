"""The log lines of what the server refused from one client, rate-limited per connection.

A frame we cannot accept (not a protocol frame, an invalid one, an answer the trust rules refuse,
a client tool a server tool shadows) is answered to its sender and logged on `think.protocol`
at INFO. A client can send such frames at will, so a connection logs its first
`LOGGED_PER_CONNECTION` refusals, then one line saying the rest are counted, not logged; when it
closes, a last line gives the count of the ones left out. A misbehaving client therefore costs at
most `LOGGED_PER_CONNECTION + 2` lines, however much it sends.
"""

from __future__ import annotations

import logging

log = logging.getLogger("think.protocol")

LOGGED_PER_CONNECTION = 5
"""Refusals logged line by line per connection; later ones are only counted."""


class RefusalLog:
    """The refusals of one connection: logs the first few, counts the rest."""

    def __init__(self, connection_id: str) -> None:
        self.connection_id = connection_id
        self.count = 0

    def refused(self, what: str, reason: object) -> None:
        """Note one refusal: `what` was refused because of `reason`."""
        self.count += 1
        if self.count <= LOGGED_PER_CONNECTION:
            log.info("connection %s: refused %s: %s", self.connection_id, what, reason,
                     extra={"think": {"connection": self.connection_id, "refused": what}})
        elif self.count == LOGGED_PER_CONNECTION + 1:
            log.info("connection %s: more than %d refusals; the rest are counted, not logged",
                     self.connection_id, LOGGED_PER_CONNECTION)

    def closed(self) -> None:
        """The connection is gone: say how many refusals were left out of the log, if any."""
        left_out = self.count - LOGGED_PER_CONNECTION
        if left_out > 0:
            log.info("connection %s closed after %d refusals (%d not logged)", self.connection_id, self.count,
                     left_out)
            self.count = LOGGED_PER_CONNECTION  # said once
