"""Which hosts and addresses outbound requests may never reach (unless private networks are allowed).

Two questions, both answered here only:

* `blocked_host(host)`: is the host *as written in a URL* refused before any lookup — empty,
  `localhost` / `*.localhost`, `*.internal`, an integer or hex host (`2130706433`, `0x7f000001`),
  another non-dotted-quad numeric form (`127.1`, `0x7f.0.0.1`), or a literal address that
  `blocked_address` refuses.
* `blocked_address(ip)`: is a *resolved* address refused — the ranges below, IPv4-mapped and
  IPv4-compatible IPv6 forms of them, and NAT64 / 6to4 addresses that embed them.

Both return the reason as text, or None when the host or address is allowed.
"""

from __future__ import annotations

import ipaddress
import re

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

BLOCKED_IPV4 = tuple(ipaddress.IPv4Network(n) for n in (
    "0.0.0.0/8",        # "this network"
    "10.0.0.0/8",       # private
    "100.64.0.0/10",    # carrier-grade NAT
    "127.0.0.0/8",      # loopback
    "169.254.0.0/16",   # link-local (cloud metadata endpoints live here)
    "172.16.0.0/12",    # private
    "192.168.0.0/16",   # private
    "224.0.0.0/4",      # multicast
    "240.0.0.0/4",      # reserved, and the broadcast address
))
BLOCKED_IPV6 = tuple(ipaddress.IPv6Network(n) for n in (
    "::/128",           # unspecified
    "::1/128",          # loopback
    "fc00::/7",         # unique local
    "fe80::/10",        # link-local
    "ff00::/8",         # multicast
))
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
_IPV4_COMPATIBLE = ipaddress.IPv6Network("::/96")
_NUMERIC_LABEL = re.compile(r"^(?:0x[0-9a-f]*|[0-9]+)$")
_OCTET = r"(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"
_DOTTED_QUAD = re.compile(rf"^{_OCTET}(?:\.{_OCTET}){{3}}$")


def _embedded_ipv4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address stands for, if it is a form that carries one."""
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip.sixtofour is not None:
        return ip.sixtofour
    if ip in _NAT64 or (ip in _IPV4_COMPATIBLE and int(ip) > 1):
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return None


def blocked_address(ip: str | IPAddress) -> str | None:
    """Why the address `ip` may not be connected to, or None if it may."""
    try:
        address = ipaddress.ip_address(ip.split("%", 1)[0] if isinstance(ip, str) else ip)
    except ValueError:
        return f"{ip} is not an IP address"
    if isinstance(address, ipaddress.IPv6Address):
        if any(address in net for net in BLOCKED_IPV6):
            return f"{address} is a loopback, link-local, unique-local or multicast IPv6 address"
        embedded = _embedded_ipv4(address)
        if embedded is None:
            return None
        reason = blocked_address(embedded)
        return f"{address} embeds a blocked IPv4 address ({reason})" if reason else None
    if any(address in net for net in BLOCKED_IPV4):
        return f"{address} is a private, loopback, link-local or otherwise non-public IPv4 address"
    return None


def blocked_host(host: str) -> str | None:
    """Why a URL's host is refused before it is looked up, or None when only its resolved
    addresses remain to be checked. `host` may be bracketed (`[::1]`) and end in a dot."""
    name = host.strip().lower().rstrip(".")
    if name.startswith("[") and name.endswith("]"):
        name = name[1:-1]
    if not name:
        return "the URL has no host"
    if name == "localhost" or name.endswith(".localhost"):
        return f"{name} is a local host name"
    if name.endswith(".internal"):
        return f"{name} is an internal host name"
    if ":" in name:
        try:
            ipaddress.IPv6Address(name.split("%", 1)[0])
        except ValueError:
            return f"{name} is not a valid host"
        return blocked_address(name)
    if _DOTTED_QUAD.match(name):
        return blocked_address(name)
    if all(_NUMERIC_LABEL.match(label) for label in name.split(".")):
        return f"{name} is a numeric host that is not a dotted-quad IPv4 address"
    return None
