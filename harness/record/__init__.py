"""The recorders: the history writer, the store's audit, and the client connections whose commands can be found in it."""
