"""Server-side compare-and-delete and compare-and-extend, each one atomic step (Lua)."""

COMPARE_AND_DELETE = """
if redis.call('get', KEYS[1]) == ARGV[1] then
  return redis.call('del', KEYS[1])
end
return 0
"""

COMPARE_AND_PEXPIRE = """
if redis.call('get', KEYS[1]) == ARGV[1] then
  return redis.call('pexpire', KEYS[1], ARGV[2])
end
return 0
"""


def registered(client, source: str):
    """``client.register_script(source)``, once per client: a lease is built for every attempt,
    and a script object hashes its source when made (redis-py's ``Script`` keeps nothing else
    per call: each call sends ``EVALSHA`` and loads the script when the store lacks it, so a kept
    one sends exactly what a new one would)."""
    try:
        kept = client.__dict__
    except AttributeError:     # no instance dict (a stand-in client): a new one each time
        return client.register_script(source)
    scripts = kept.get("_leasecheck_scripts")
    if scripts is None:
        scripts = kept["_leasecheck_scripts"] = {}
    script = scripts.get(source)
    if script is None:
        script = scripts[source] = client.register_script(source)
    return script
