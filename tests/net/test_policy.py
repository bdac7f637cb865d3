"""The static rules of the URL policy: schemes, credentials, blocked hosts, origins, allowlists,
redirects (no network)."""

from __future__ import annotations

import httpx
import pytest

from think.errors import ConfigurationError
from think.net import Allowlist, UrlPolicy, blocked_address, blocked_host

ANY = UrlPolicy()


@pytest.mark.parametrize("host", [
    "", "localhost", "LOCALHOST.", "api.localhost", "metadata.google.internal", "2130706433", "0x7f000001",
    "0X7F000001", "127.1", "0x7f.0.0.1", "017700000001", "0.0.0.0", "0.1.2.3", "10.0.0.1", "127.0.0.1", "127.255.0.9",
    "169.254.169.254", "172.16.0.1", "172.31.255.255", "192.168.1.1", "100.64.0.1", "100.127.255.255", "224.0.0.1",
    "255.255.255.255", "[::]", "[::1]", "::1", "[fc00::1]", "[fd12:3456::1]", "[fe80::1]", "[febf::1]",
    "[::ffff:127.0.0.1]", "[::ffff:10.1.2.3]", "[::ffff:a9fe:a9fe]", "[64:ff9b::7f00:1]", "[2002:7f00:1::]",
    "[::127.0.0.1]", "[ff02::1]",
])
def test_blocked_hosts(host: str) -> None:
    assert blocked_host(host), host


@pytest.mark.parametrize("host", [
    "example.com", "8.8.8.8", "172.15.255.255", "172.32.0.1", "100.63.255.255", "100.128.0.1", "169.253.1.1",
    "192.169.0.1", "11.0.0.1", "[2606:4700::1111]", "[::ffff:8.8.8.8]", "[64:ff9b::808:808]", "internal.example",
    "localhost.example.com", "1.example",
])
def test_public_hosts(host: str) -> None:
    assert blocked_host(host) is None, host


def test_blocked_addresses_cover_resolved_forms() -> None:
    assert blocked_address("127.0.0.1") and blocked_address("::ffff:192.168.0.1") and blocked_address("fe80::1%eth0")
    assert blocked_address("not-an-ip")
    assert blocked_address("93.184.216.34") is None and blocked_address("2606:4700::1111") is None


@pytest.mark.parametrize(("url", "rule"), [
    ("ftp://example.com/x", "scheme"), ("file:///etc/passwd", "scheme"), ("javascript:alert(1)", "scheme"),
    ("//example.com/x", "invalid"), ("/relative", "invalid"), ("not a url", "invalid"),
    ("http://user:pw@example.com/", "credentials"), ("https://user@example.com/", "credentials"),
    ("http://127.0.0.1/", "host"), ("http://[::1]:8080/", "host"), ("http://2130706433/", "host"),
    ("http://foo.localhost/", "host"), ("http://169.254.169.254/latest/meta-data", "host"),
])
def test_check_refuses(url: str, rule: str) -> None:
    decision = ANY.check(url)
    assert not decision and decision.rule == rule and decision.reason


def test_check_allows_public_urls_without_an_allowlist() -> None:
    decision = ANY.check("https://example.com/a?b=c#d")
    assert decision and decision.url == httpx.URL("https://example.com/a?b=c#d")


def test_allowlist_patterns() -> None:
    policy = UrlPolicy(["https://docs.example.com", "https://api.example.com/v1/*/items", "http://x.example:8080/**"])
    allowed = ["https://docs.example.com", "https://docs.example.com/", "https://DOCS.example.com./a/b?q=1#f",
               "https://docs.example.com:443/deep/er", "https://api.example.com/v1/abc/items",
               "https://api.example.com/v1/abc/items?page=2", "http://x.example:8080/anything/at/all"]
    refused = ["http://docs.example.com/", "https://docs.example.com.evil.com/", "https://evil.com/docs.example.com",
               "https://api.example.com/v1/a/b/items", "https://api.example.com/v1/abc/items/more",
               "http://x.example/", "http://x.example:8081/a", "https://sub.docs.example.com/"]
    for url in allowed:
        assert policy.check(url), url
    for url in refused:
        decision = policy.check(url)
        assert not decision and decision.rule == "allowlist", url


def test_pattern_metacharacters_are_literal() -> None:
    policy = UrlPolicy(["https://example.com/a.b/(x)+"])
    assert policy.check("https://example.com/a.b/(x)+")
    assert not policy.check("https://example.com/aXb/(x)+")


def test_empty_allowlist_allows_nothing() -> None:
    assert not UrlPolicy([]).check("https://example.com/")


def test_path_patterns_need_fixed_origins() -> None:
    with pytest.raises(ConfigurationError):
        UrlPolicy(["/v1/**"])
    policy = UrlPolicy(["/v1/**"], origins=["https://api.example.com"])
    assert policy.check("https://api.example.com/v1/a/b")
    assert policy.check("https://api.example.com:443/v1/x")
    assert not policy.check("https://api.example.com/v2/a")
    assert policy.check("https://other.example.com/v1/a").rule == "origin"
    assert policy.check("http://api.example.com/v1/a").rule == "origin"


def test_private_networks_only_when_asked() -> None:
    assert UrlPolicy(allow_private_networks=True).check("http://127.0.0.1:9/x")
    assert UrlPolicy(allow_private_networks=True).check("http://localhost/")
    some = UrlPolicy(allow_private_networks=["127.0.0.1/32"])
    assert some.check("http://127.0.0.1:9/x")
    assert some.check("http://127.0.0.2/").rule == "host"
    assert some.check("http://10.0.0.1/").rule == "host"
    assert some.check("http://localhost/").rule == "host"
    with pytest.raises(ConfigurationError):
        UrlPolicy(allow_private_networks=["not a network"])


def test_environment_does_not_open_private_networks(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("THINK_ALLOW_PRIVATE_NETWORKS", "ALLOW_PRIVATE_NETWORKS"):
        monkeypatch.setenv(name, "1")
    assert not UrlPolicy().check("http://127.0.0.1/")


def test_redirect_rules() -> None:
    policy = UrlPolicy(["https://a.example/**", "https://b.example/ok/**"])
    start = httpx.URL("https://a.example/start")
    assert policy.check_redirect("/next", current=start, initial=start).url == httpx.URL("https://a.example/next")
    assert policy.check_redirect("https://b.example/ok/1", current=start, initial=start)
    assert policy.check_redirect("https://b.example/no", current=start, initial=start).rule == "allowlist"
    assert policy.check_redirect("/x", current=start, initial=start, mode="none").rule == "redirect"
    assert policy.check_redirect("https://b.example/ok/1", current=start, initial=start,
                                 mode="same-origin").rule == "redirect"
    assert policy.check_redirect("/not/listed/but/same/origin", current=start, initial=start, mode="same-origin")
    for location, rule in [("ftp://a.example/x", "scheme"), ("https://u:p@a.example/x", "credentials"),
                           ("http://169.254.169.254/", "host"), ("http://[::1]/", "host")]:
        for mode in ("allowlisted", "same-origin"):
            decision = policy.check_redirect(location, current=start, initial=start, mode=mode)
            assert not decision and decision.rule == rule, (location, mode)


@pytest.mark.parametrize("path", ["/v1/%2e%2e/admin", "/v1/%2E%2E/admin", "/v1/..%2fadmin", "/v1/a%2f..%2f..%2fadmin",
                                  "/v1/%2e/x", "/v1/..%5cadmin", "/v1/..\\admin"])
def test_encoded_dot_segments_cannot_climb_out_of_the_allowlist(path: str) -> None:
    policy = UrlPolicy(["/v1/**"], origins=["https://api.example.com"])
    decision = policy.check("https://api.example.com" + path)
    assert not decision and decision.rule == "invalid"


def test_plain_dot_segments_are_resolved_before_matching() -> None:
    policy = UrlPolicy(["/v1/**"], origins=["https://api.example.com"])
    assert policy.check("https://api.example.com/v1/a/../b")
    assert policy.check("https://api.example.com/v1/../admin").rule == "allowlist"
    assert policy.check("https://api.example.com/v1/file..name/x.y")


def test_host_patterns_match_the_host_and_an_optional_port() -> None:
    policy = UrlPolicy(Allowlist.of_hosts(["a.example", "*.b.example", "c.example:8443"]))
    for url in ["http://a.example/", "https://A.Example./x?q=1", "http://a.example:9000/any/path",
                "https://x.b.example/", "https://y.x.b.example/", "https://c.example:8443/"]:
        assert policy.check(url), url
    for url in ["https://b.example/", "https://a.example.evil/", "https://evila.example/", "https://c.example/",
                "https://c.example:8444/", "https://x.b.example.evil/"]:
        assert policy.check(url).rule == "allowlist", url
    # The other rules still apply to a granted host pattern.
    assert UrlPolicy(Allowlist.of_hosts(["localhost"])).check("http://localhost/").rule == "host"
    assert UrlPolicy(Allowlist.of_hosts(["127.0.0.1"])).check("http://127.0.0.1/").rule == "host"
    assert policy.check("ftp://a.example/").rule == "scheme"
    assert policy.check("https://u:p@a.example/").rule == "credentials"


@pytest.mark.parametrize("pattern", ["https://a.example", "a.example/x", "*", "*.", "a*.example", "a.*.example",
                                     "a.example:", "a.example:http", "", "-a.example", "a..example"])
def test_what_is_not_a_host_pattern(pattern: str) -> None:
    with pytest.raises(ValueError, match="is not a host pattern"):
        Allowlist.of_hosts([pattern])
