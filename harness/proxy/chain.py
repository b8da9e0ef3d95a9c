"""A proxy's toxics: one ordered chain per direction, and their changes applied to open links."""
from __future__ import annotations

from typing import Any, Callable, Iterable, Iterator

from leasecheck.harness.proxy.errors import TOXIC_EXISTS, TOXIC_NOT_FOUND, ApiError, bad_request
from leasecheck.harness.proxy.link import Link
from leasecheck.harness.proxy.toxics import DOWNSTREAM, UPSTREAM, Toxic, make_toxic


class ToxicChain:
    """``open_links(stream)``: the links of the proxy's open connections in that direction, to
    which every change of the chain is applied at once."""

    def __init__(self, open_links: Callable[[str], Iterable[Link]]):
        self._open_links = open_links
        self._chains: dict[str, list[Toxic]] = {UPSTREAM: [], DOWNSTREAM: []}

    def toxics(self, stream: str) -> list[Toxic]:
        return list(self._chains[stream])

    def all(self) -> list[Toxic]:
        """Upstream toxics first, then downstream, each in the order added (as Toxiproxy lists them)."""
        return self._chains[UPSTREAM] + self._chains[DOWNSTREAM]

    def find(self, name: str) -> Toxic | None:
        for toxic in self.all():
            if toxic.name == name:
                return toxic
        return None

    def get(self, name: str) -> Toxic:
        toxic = self.find(name)
        if toxic is None:
            raise ApiError(TOXIC_NOT_FOUND, 404)
        return toxic

    def _links(self, stream: str) -> Iterator[Link]:
        yield from self._open_links(stream)

    def add(self, body: Any) -> Toxic:
        toxic = make_toxic(body)
        if self.find(toxic.name) is not None:
            raise ApiError(TOXIC_EXISTS, 409)
        toxic.update(attributes=body.get("attributes"))
        self._chains[toxic.stream].append(toxic)
        for link in self._links(toxic.stream):
            link.add_toxic(toxic)
        return toxic

    def update(self, name: str, body: Any) -> Toxic:
        toxic = self.get(name)
        if not isinstance(body, dict):
            raise bad_request("bad request body: expected a JSON object")
        toxic.update(attributes=body.get("attributes"), toxicity=body.get("toxicity"))
        for link in self._links(toxic.stream):
            link.update_toxic(toxic)
        return toxic

    def remove(self, name: str) -> None:
        toxic = self.get(name)
        self._chains[toxic.stream].remove(toxic)
        for link in self._links(toxic.stream):
            link.remove_toxic(toxic)

    def reset(self) -> None:
        for toxic in self.all():
            self.remove(toxic.name)
