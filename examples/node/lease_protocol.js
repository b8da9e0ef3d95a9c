'use strict';
// leasecheck's exec: line protocol, protocol 1 (docs/how-to/other-languages.md), for Node.js.
//
// The harness starts one process per worker slot with LEASECHECK_URL (the slot's
// redis://127.0.0.1:<port>/<db>) in the environment and talks to it one JSON line at a time:
//
//   process:  {"ready": true, "renew": <bool>}                       once, first
//   harness:  {"op": "acquire", "key": K, "ttl_ms": T, "url": U}     a new attempt
//   process:  {"ok": true} | {"ok": false} | {"error": "...", "type": "ConnectionError"}
//   harness:  {"op": "release"} / {"op": "renew"}                   on the attempt in hand
//
// Nothing else goes to stdout (log with console.error). When stdin closes, the process exits.
const readline = require('readline');

const CONNECTION_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENOTCONN']);

// An error as the harness counts it: a lost connection or a timeout is the store's path failing
// (a fault, the network), anything else is the lease's own error, counted by its name.
function errorReply(err) {
  const message = String((err && err.message) || err);
  let type = (err && err.name) || 'Error';
  if (/timed? ?out/i.test(message)) type = 'TimeoutError';
  else if ((err && CONNECTION_CODES.has(err.code)) || type === 'MaxRetriesPerRequestError' ||
           /Connection is closed|Stream isn't writeable|connect E/i.test(message)) type = 'ConnectionError';
  return { error: message.slice(0, 240), type };
}

// Serve the protocol. `begin(key, ttlMs)` starts an attempt and returns an object with
// async acquire() -> bool, release() -> bool and, when `renew` is true, renew() -> bool.
// `close()` is awaited before the process exits.
function serve({ begin, renew = false, close = async () => {} }) {
  const send = (obj) => process.stdout.write(JSON.stringify(obj) + '\n');
  let attempt = null;
  let queue = Promise.resolve();

  async function handle(line) {
    let msg;
    try {
      msg = JSON.parse(line);
    } catch (e) {
      send({ error: `not a JSON request: ${line.slice(0, 80)}`, type: 'ProtocolError' });
      return;
    }
    try {
      if (msg.op === 'acquire') {
        attempt = begin(msg.key, msg.ttl_ms);
        send({ ok: Boolean(await attempt.acquire()) });
      } else if (msg.op === 'release' || (msg.op === 'renew' && renew)) {
        if (attempt === null) throw new Error(`${msg.op} before any acquire`);
        send({ ok: Boolean(await attempt[msg.op]()) });
      } else {
        send({ error: `unknown op ${JSON.stringify(msg.op)}`, type: 'ProtocolError' });
      }
    } catch (err) {
      send(errorReply(err));
    }
  }

  const lines = readline.createInterface({ input: process.stdin, terminal: false });
  lines.on('line', (line) => { queue = queue.then(() => handle(line)); });
  lines.on('close', () => {
    queue.then(close).catch((err) => console.error(err)).finally(() => process.exit(0));
  });
  send({ ready: true, renew: Boolean(renew) });
}

module.exports = { serve, errorReply };
