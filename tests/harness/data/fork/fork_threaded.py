"""A module that starts a thread when imported: a fork server that imported it must not fork."""
import threading

threading.Thread(target=threading.Event().wait, daemon=True).start()


def main(args):
    return 0
