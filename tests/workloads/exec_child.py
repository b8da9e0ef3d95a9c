"""A lease process for the exec: tests, in Python: the line protocol over an in-memory lock shared
through a file-free dict (one process: one slot). ``MODE`` (argv[1]) makes it misbehave:

  good     a correct lease (renew supported)
  exit     says ready, then exits with code 3 on the first acquire, after a line on stderr
  garbage  says ready, then answers acquire with a line that is not a reply
  silent   never says ready
  error    answers every acquire {"error": "store gone", "type": "ConnectionError"}
  pid      as good, and writes its pid into the folder $EXEC_CHILD_PIDS
"""
import json
import os
import sys
import time

mode = sys.argv[1] if len(sys.argv) > 1 else "good"
if mode == "pid":
    folder = os.environ["EXEC_CHILD_PIDS"]
    # written whole under another name, then renamed: a reader never sees the file empty
    tmp = os.path.join(folder, f".{os.getpid()}")
    with open(tmp, "w") as f:
        f.write(os.environ.get("LEASECHECK_SLOT", ""))
    os.replace(tmp, os.path.join(folder, str(os.getpid())))
if mode == "silent":
    time.sleep(60)
    sys.exit(0)


def say(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


say({"ready": True, "renew": True})
held = {}
current = None
for line in sys.stdin:
    msg = json.loads(line)
    op = msg["op"]
    if op == "acquire":
        if mode == "exit":
            sys.stderr.write("lease: cannot reach the store\n")
            sys.stderr.flush()
            sys.exit(3)
        if mode == "garbage":
            sys.stdout.write("connected to redis!\n")
            sys.stdout.flush()
            continue
        if mode == "error":
            say({"error": "store gone", "type": "ConnectionError"})
            continue
        current = (msg["key"], msg["url"], os.environ["LEASECHECK_URL"])
        won = msg["key"] not in held
        if won:
            held[msg["key"]] = msg["ttl_ms"]
        say({"ok": won})
    elif op == "release":
        say({"ok": held.pop(current[0], None) is not None})
    elif op == "renew":
        say({"ok": current[0] in held})
