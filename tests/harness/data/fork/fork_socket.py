"""A module that opens a connection when imported: a fork server that imported it must not fork
(its children would share the socket)."""
import socket

HELD = socket.socketpair()


def main(args):
    return 0
