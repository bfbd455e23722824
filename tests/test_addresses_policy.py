from ipaddress import ip_address, ip_network

import pytest

from webspider.addresses.policy import (
    AddressPolicy,
    BadNetworkError,
    parse_host_address,
    parse_ipv4,
    parse_networks,
    special_category,
)


@pytest.mark.parametrize(
    ("address", "category"),
    [
        ("127.0.0.1", "loopback"),
        ("127.255.255.254", "loopback"),
        ("10.1.2.3", "private"),
        ("172.16.0.1", "private"),
        ("172.31.255.255", "private"),
        ("192.168.1.1", "private"),
        ("169.254.169.254", "link-local"),
        ("100.64.0.1", "cgnat"),
        ("100.127.255.255", "cgnat"),
        ("0.0.0.0", "unspecified"),
        ("0.1.2.3", "unspecified"),
        ("224.0.0.1", "multicast"),
        ("239.255.255.250", "multicast"),
        ("240.0.0.1", "reserved"),
        ("255.255.255.255", "reserved"),
        ("192.0.2.1", "reserved"),
        ("198.18.0.1", "reserved"),
        ("198.51.100.7", "reserved"),
        ("203.0.113.9", "reserved"),
        ("192.0.0.8", "reserved"),
        ("::", "unspecified"),
        ("::1", "loopback"),
        ("fe80::1", "link-local"),
        ("fc00::1", "private"),
        ("fd12:3456::1", "private"),
        ("fec0::1", "private"),
        ("ff02::1", "multicast"),
        ("2001:db8::1", "reserved"),
        ("100::1", "reserved"),
        ("::127.0.0.2", "reserved"),  # IPv4-compatible
        # IPv6 standing for IPv4: judged as the IPv4 address reached
        ("::ffff:127.0.0.2", "loopback"),
        ("::ffff:169.254.169.254", "link-local"),
        ("64:ff9b::a9fe:a9fe", "link-local"),  # NAT64 of 169.254.169.254
        ("2002:7f00:2::1", "loopback"),  # 6to4 of 127.0.0.2
        ("2002:a00:1::1", "private"),  # 6to4 of 10.0.0.1
        # global
        ("93.184.216.34", None),
        ("8.8.8.8", None),
        ("172.32.0.1", None),
        ("100.128.0.1", None),
        ("2606:2800:220:1::1", None),
        ("::ffff:93.184.216.34", None),
        ("64:ff9b::808:808", None),  # NAT64 of 8.8.8.8
    ],
)
def test_special_categories(address, category):
    assert special_category(ip_address(address)) == category


@pytest.mark.parametrize(
    ("host", "address"),
    [
        ("127.0.0.2", "127.0.0.2"),
        ("2130706434", "127.0.0.2"),
        ("0x7f000002", "127.0.0.2"),
        ("0X7F000002", "127.0.0.2"),
        ("0177.0.0.2", "127.0.0.2"),
        ("0x7f.0.0.2", "127.0.0.2"),
        ("127.1", "127.0.0.1"),
        ("127.0.2", "127.0.0.2"),
        ("127.65538", "127.1.0.2"),
        ("127.0.0.2.", "127.0.0.2"),
        ("0", "0.0.0.0"),
        ("0x", "0.0.0.0"),
        ("4294967295", "255.255.255.255"),
        ("169.254.43518", "169.254.169.254"),
        ("0251.0376.0251.0376", "169.254.169.254"),
        # names, or no valid IPv4 (left to DNS, which the connection judges)
        ("4294967296", None),
        ("256.0.0.1", None),
        ("1.2.3.4.5", None),
        ("08.0.0.1", None),
        ("1_0.0.0.1", None),
        ("+1.0.0.1", None),
        ("example.org", None),
        ("0x7g000002", None),
        ("1.2.3.example", None),
        ("", None),
    ],
)
def test_ipv4_spellings(host, address):
    parsed = parse_ipv4(host)
    assert (str(parsed) if parsed is not None else None) == address


@pytest.mark.parametrize(
    ("host", "address"),
    [
        ("[::ffff:127.0.0.2]", "127.0.0.2"),
        ("::ffff:127.0.0.2", "::ffff:7f00:2"),
        ("[::1]", "::1"),
        ("fe80::1%eth0", "fe80::1"),
        ("0x7f000002", "127.0.0.2"),
        ("www.example.org", None),
        ("example.org.", None),
        ("xn--bcher-kva.test", None),
        ("[not:an:address", None),
    ],
)
def test_host_addresses(host, address):
    parsed = parse_host_address(host)
    if address == "127.0.0.2" and ":" in host:
        assert str(parsed.ipv4_mapped) == address
    else:
        assert (str(parsed) if parsed is not None else None) == address


def test_allowed_networks_and_exempt_addresses():
    policy = AddressPolicy(parse_networks(["10.1.0.0/16", "127.0.0.2", "fd00::/8"]))
    assert policy.refusal(ip_address("10.1.2.3")) is None
    assert policy.refusal(ip_address("10.2.0.1")) == "private"
    assert policy.refusal(ip_address("127.0.0.2")) is None
    assert policy.refusal(ip_address("::ffff:127.0.0.2")) is None
    assert policy.refusal(ip_address("127.0.0.3")) == "loopback"
    assert policy.refusal(ip_address("fd00::5")) is None
    assert policy.refusal(ip_address("8.8.8.8")) is None
    exempt = {ip_address("127.0.0.3")}
    assert policy.refusal(ip_address("127.0.0.3"), exempt) is None
    assert policy.refusal(ip_address("::ffff:127.0.0.3"), exempt) is None


def test_networks_parse_loosely_but_refuse_names():
    assert parse_networks([" 10.1.2.3/16 ", "", "::1"]) == (
        ip_network("10.1.0.0/16"),
        ip_network("::1/128"),
    )
    with pytest.raises(BadNetworkError, match="'intranet' is not an IP address"):
        parse_networks(["intranet"])
