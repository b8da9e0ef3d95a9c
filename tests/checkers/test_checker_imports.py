"""The store model is Redis semantics only: it imports no other module of the project. (That the
checkers package, like the whole tree, has no import cycle is tests/test_import_graph.py's job;
this file reads the same graph.)"""
from tests.test_import_graph import import_graph


def test_the_store_model_knows_nothing_of_claims_or_calls():
    graph, _ = import_graph()
    assert "leasecheck.checkers.model.store_model" in graph["leasecheck.checkers.model.claims"]   # an edge the graph must see
    assert graph["leasecheck.checkers.model.store_model"] == set()
