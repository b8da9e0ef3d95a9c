"""The HTTP API, through toxiproxy-python (as the harness uses it) and raw HTTP for statuses."""
from __future__ import annotations

import json
import socket

import pytest
from toxiproxy.exceptions import InvalidToxic, NotFound, ProxyExists
from toxiproxy.proxy import Proxy

from .servers import connect, recv_exactly, rtt_ms


def test_version(tp):
    assert json.loads(tp.version())["version"].startswith("2.")


def test_create_list_get_destroy(tp, api, echo):
    proxy = tp.create(upstream=echo, name="p1")
    host, port = proxy.listen.rsplit(":", 1)
    assert host == "127.0.0.1" and int(port) > 0     # "127.0.0.1:0" -> the real port
    assert proxy.enabled is True and proxy.upstream == echo
    assert set(tp.proxies()) == {"p1"}
    assert tp.get_proxy("p1").listen == proxy.listen
    shown = api("get", "/proxies/p1").json()
    assert shown == {"name": "p1", "listen": proxy.listen, "upstream": echo, "enabled": True,
                     "toxics": []}
    with connect(proxy) as sock:
        assert rtt_ms(sock) < 1000
    assert tp.destroy(proxy) is True
    assert tp.get_proxy("p1") is None
    with pytest.raises(ConnectionRefusedError):
        connect(proxy)


def test_create_disabled_then_enable(tp, echo):
    proxy = tp.create(upstream=echo, name="p1", enabled=False)
    assert proxy.enabled is False
    proxy.enable()
    listen = tp.get_proxy("p1").listen
    assert not listen.endswith(":0")
    with connect(listen) as sock:
        rtt_ms(sock)


def test_duplicate_proxy_is_409(tp, api, echo):
    tp.create(upstream=echo, name="p1")
    with pytest.raises(ProxyExists):
        tp.create(upstream=echo, name="p1")
    r = api("post", "/proxies", json={"name": "p1", "upstream": echo, "listen": "127.0.0.1:0"})
    assert r.status_code == 409
    assert r.json() == {"error": "proxy already exists", "status": 409}


@pytest.mark.parametrize("body, words", [
    ({"upstream": "127.0.0.1:1"}, "missing required field: name"),
    ({"name": "x"}, "missing required field: upstream"),
    ({"name": "x", "upstream": "nonsense"}, "bad upstream"),
    ({"name": "x", "upstream": "127.0.0.1:1", "enabled": "yes"}, "enabled"),
    ({"name": "x", "upstream": "127.0.0.1:1", "listen": "0.0.0.0:0"}, "127.0.0.1 only"),
    ({"name": "x", "upstream": "127.0.0.1:1", "listen": "10.1.2.3:9999"}, "127.0.0.1 only"),
    ({"name": "x", "upstream": "127.0.0.1:1", "listen": ":9999"}, "127.0.0.1 only"),
])
def test_bad_proxy_is_400(tp, api, body, words):
    r = api("post", "/proxies", json=body)
    assert r.status_code == 400, r.text
    assert r.json()["status"] == 400 and words in r.json()["error"]
    assert tp.proxies() == {}


def test_bad_json_is_400(api):
    r = api("post", "/proxies", data="{not json", headers={"Content-Type": "application/json"})
    assert r.status_code == 400 and r.json()["error"].startswith("bad request body")


def test_listen_port_taken_is_500(tp, api, echo):
    first = tp.create(upstream=echo, name="p1")
    r = api("post", "/proxies", json={"name": "p2", "upstream": echo, "listen": first.listen})
    assert r.status_code == 500 and r.json()["status"] == 500
    assert "p2" not in tp.proxies()


def test_not_found_is_404(tp, api, echo):
    assert api("get", "/proxies/nope").status_code == 404
    assert api("get", "/proxies/nope").json() == {"error": "proxy not found", "status": 404}
    assert api("delete", "/proxies/nope").status_code == 404
    assert api("post", "/proxies/nope", json={"enabled": False}).status_code == 404
    ghost = Proxy(name="nope", upstream=echo, enabled=True, listen="127.0.0.1:1")
    with pytest.raises(NotFound):
        ghost.destroy()
    with pytest.raises(NotFound):
        ghost.add_toxic(type="latency", attributes={"latency": 1})
    proxy = tp.create(upstream=echo, name="p1")
    with pytest.raises(NotFound):
        proxy.destroy_toxic("nope")
    r = api("get", "/proxies/p1/toxics/nope")
    assert r.status_code == 404 and r.json() == {"error": "toxic not found", "status": 404}
    assert api("post", "/proxies/p1/toxics/nope", json={"toxicity": 1}).status_code == 404
    assert api("get", "/no/such/route").status_code == 404


def test_toxic_defaults_and_shapes(tp, api, echo):
    proxy = tp.create(upstream=echo, name="p1")
    proxy.add_toxic(type="latency", attributes={"latency": 5})
    proxy.add_toxic(type="bandwidth", stream="upstream", name="bw", toxicity=0.5,
                    attributes={"rate": 100})
    toxics = proxy.toxics()
    assert set(toxics) == {"latency_downstream", "bw"}
    lat = toxics["latency_downstream"]
    assert (lat.type, lat.stream, lat.toxicity) == ("latency", "downstream", 1.0)
    assert lat.attributes == {"latency": 5, "jitter": 0}
    listed = api("get", "/proxies/p1/toxics").json()
    assert [t["name"] for t in listed] == ["bw", "latency_downstream"]   # upstream first
    assert api("get", "/proxies/p1/toxics/bw").json() == {
        "attributes": {"rate": 100}, "name": "bw", "type": "bandwidth", "stream": "upstream",
        "toxicity": 0.5}
    assert [t["name"] for t in api("get", "/proxies/p1").json()["toxics"]] == \
        ["bw", "latency_downstream"]
    # a raw create answers the toxic (200, as Toxiproxy does)
    r = api("post", "/proxies/p1/toxics", json={"type": "slow_close", "attributes": {"delay": 1}})
    assert r.status_code == 200 and r.json()["name"] == "slow_close_downstream"
    assert api("delete", "/proxies/p1/toxics/bw").status_code == 204
    assert set(proxy.toxics()) == {"latency_downstream", "slow_close_downstream"}


def test_duplicate_toxic_is_409(tp, api, echo):
    proxy = tp.create(upstream=echo, name="p1")
    proxy.add_toxic(type="latency", name="t", attributes={"latency": 1})
    with pytest.raises(ProxyExists):   # the client's name for any 409
        proxy.add_toxic(type="latency", name="t", attributes={"latency": 1})
    r = api("post", "/proxies/p1/toxics", json={"type": "timeout", "name": "t",
                                                "stream": "upstream"})
    assert r.status_code == 409 and r.json() == {"error": "toxic already exists", "status": 409}


@pytest.mark.parametrize("body, words", [
    ({"type": "nosuch"}, "invalid toxic type"),
    ({}, "invalid toxic type"),
    ({"type": "latency", "stream": "sideways"}, "stream was invalid"),
    ({"type": "latency", "attributes": {"latency": "100"}}, "integer"),
    ({"type": "latency", "attributes": {"latency": 1.5}}, "integer"),
    ({"type": "latency", "attributes": {"latency": -1}}, "negative"),
    ({"type": "latency", "attributes": [1]}, "attributes"),
    ({"type": "latency", "toxicity": "all"}, "toxicity"),
    ({"type": "slicer", "attributes": {"average_size": 0}}, "average_size"),
])
def test_bad_toxic_is_400(tp, api, echo, body, words):
    proxy = tp.create(upstream=echo, name="p1")
    r = api("post", "/proxies/p1/toxics", json=body)
    assert r.status_code == 400, r.text
    assert words in r.json()["error"] and r.json()["status"] == 400
    with pytest.raises(InvalidToxic):
        proxy.add_toxic(**{"type": None, **body})
    assert proxy.toxics() == {}


@pytest.mark.parametrize("method", ["post", "patch"])
def test_toxic_update_merges_attributes(tp, api, echo, method):
    tp.create(upstream=echo, name="p1")
    api("post", "/proxies/p1/toxics", json={"type": "latency", "name": "lat",
                                            "attributes": {"latency": 100, "jitter": 5}})
    r = api(method, "/proxies/p1/toxics/lat", json={"attributes": {"jitter": 7}, "toxicity": 0.25,
                                                    "type": "timeout", "stream": "upstream"})
    assert r.status_code == 200
    assert r.json() == {"attributes": {"latency": 100, "jitter": 7}, "name": "lat",
                        "type": "latency", "stream": "downstream", "toxicity": 0.25}
    bad = api(method, "/proxies/p1/toxics/lat", json={"attributes": {"latency": -5}})
    assert bad.status_code == 400
    assert api("get", "/proxies/p1/toxics/lat").json()["attributes"]["latency"] == 100


def test_populate(tp, api, echo, greeter):
    r = api("post", "/populate", json=[
        {"name": "a", "upstream": echo, "listen": "127.0.0.1:0"},
        {"name": "b", "upstream": greeter, "enabled": False},
    ])
    assert r.status_code == 201
    created = {p["name"]: p for p in r.json()["proxies"]}
    assert created["a"]["enabled"] is True and not created["a"]["listen"].endswith(":0")
    assert created["b"]["enabled"] is False
    # the same addresses again: left alone (same listen port, still has its toxic)
    tp.get_proxy("a").add_toxic(type="latency", attributes={"latency": 1})
    again = api("post", "/populate", json=[{"name": "a", "upstream": echo,
                                            "listen": created["a"]["listen"]}])
    assert again.status_code == 201
    assert again.json()["proxies"][0]["listen"] == created["a"]["listen"]
    assert len(again.json()["proxies"][0]["toxics"]) == 1
    # another upstream: replaced
    api("post", "/populate", json=[{"name": "a", "upstream": greeter,
                                    "listen": created["a"]["listen"]}])
    assert tp.get_proxy("a").upstream == greeter
    with connect(tp.get_proxy("a")) as sock:
        assert recv_exactly(sock, 6) == b"hello\n"
    # the client's populate (it creates through POST /proxies)
    made = tp.populate([{"name": "c", "upstream": echo, "listen": "127.0.0.1:0"}])
    assert [p.name for p in made] == ["c"] and set(tp.proxies()) == {"a", "b", "c"}


def test_populate_bad_input_changes_nothing(tp, api, echo):
    r = api("post", "/populate", json=[{"name": "a", "upstream": echo},
                                       {"name": "b"}])
    assert r.status_code == 400 and "upstream at proxy 2" in r.json()["error"]
    assert api("post", "/populate", json={"name": "a"}).status_code == 400
    assert tp.proxies() == {}


def test_reset_enables_all_and_removes_toxics(tp, api, echo):
    a = tp.create(upstream=echo, name="a")
    b = tp.create(upstream=echo, name="b")
    a.add_toxic(type="latency", attributes={"latency": 500})
    b.add_toxic(type="timeout", stream="upstream", attributes={"timeout": 0})
    b.disable()
    assert tp.reset() is True
    assert api("post", "/reset").status_code == 204
    for name in ("a", "b"):
        shown = api("get", f"/proxies/{name}").json()
        assert shown["enabled"] is True and shown["toxics"] == []
    with connect(a) as sock:
        assert rtt_ms(sock) < 200


def test_disable_closes_connections_and_enable_reopens(tp, echo):
    proxy = tp.create(upstream=echo, name="p1")
    sock = connect(proxy)
    rtt_ms(sock)
    proxy.disable()
    try:
        assert sock.recv(10) == b""
    except ConnectionResetError:
        pass
    sock.close()
    with pytest.raises(ConnectionRefusedError):
        connect(proxy)
    assert tp.get_proxy("p1").enabled is False
    proxy.enable()
    assert tp.get_proxy("p1").listen == proxy.listen   # the same port again
    with connect(proxy) as sock:
        rtt_ms(sock)
    with proxy.down():
        with pytest.raises(ConnectionRefusedError):
            connect(proxy)
    with connect(proxy) as sock:
        rtt_ms(sock)


def test_update_upstream_and_listen(tp, api, echo, greeter):
    proxy = tp.create(upstream=echo, name="p1")
    old = connect(proxy)
    r = api("patch", "/proxies/p1", json={"upstream": greeter})
    assert r.status_code == 200 and r.json()["upstream"] == greeter and r.json()["enabled"]
    assert old.recv(10) == b""          # a new address restarts the proxy: connections drop
    old.close()
    with connect(r.json()["listen"]) as sock:
        assert recv_exactly(sock, 6) == b"hello\n"
    with socket.socket() as s:          # a free port to move to
        s.bind(("127.0.0.1", 0))
        free = s.getsockname()[1]
    r = api("post", "/proxies/p1", json={"listen": f"127.0.0.1:{free}"})
    assert r.json()["listen"] == f"127.0.0.1:{free}"
    with connect(f"127.0.0.1:{free}") as sock:
        assert recv_exactly(sock, 6) == b"hello\n"
    assert api("post", "/proxies/p1", json={"listen": "0.0.0.0:0"}).status_code == 400
    assert api("get", "/proxies/p1").json()["listen"] == f"127.0.0.1:{free}"


def test_browsers_are_refused(api):
    r = api("get", "/proxies", headers={"User-Agent": "Mozilla/5.0"})
    assert r.status_code == 403
