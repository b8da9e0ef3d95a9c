'use strict';
// The `redlock` package (v4, on ioredis) on the slot's one store, as a Node.js service adopts it.
//
//   leasecheck run --lease node-redlock            (exec:node examples/node/redlock_lease.js)
//
// acquire: redlock.lock(key, ttl) with no retries — a Lua script, EXISTS then SET key value PX
// ttl, won when the lock is still valid by the local clock (ttl less 1% drift and 2 ms);
// release: lock.unlock(), a Lua compare-and-delete (a LockError there: it found nothing of its
// own); renew: lock.extend(ttl), a Lua compare-and-set.
const Redis = require('ioredis');
const Redlock = require('redlock');
const { serve } = require('./lease_protocol');

const redis = new Redis(process.env.LEASECHECK_URL, { maxRetriesPerRequest: 1, commandTimeout: 5000 });
redis.on('error', (err) => console.error(`ioredis: ${err.message}`));
const redlock = new Redlock([redis], { retryCount: 0 });

// redlock reports a store error only as an event, then as a lost vote ("unable to lock"): a call
// that met one has an unknown outcome, not a failed one, so it is reported as the error it met.
let clientError = null;
redlock.on('clientError', (err) => { clientError = err; });

async function watched(fn) {
  clientError = null;
  try {
    return await fn();
  } catch (err) {
    if (clientError) throw clientError;
    if (err instanceof Redlock.LockError) return false;
    throw err;
  }
}

class RedlockLease {
  constructor(key, ttlMs) {
    this.key = key;
    this.ttlMs = ttlMs;
    this.lock = null;
  }

  async acquire() {
    this.lock = await watched(() => redlock.lock(this.key, this.ttlMs));
    return this.lock !== false;
  }

  async release() {
    if (!this.lock) return false;
    return (await watched(() => this.lock.unlock())) !== false;
  }

  async renew() {
    if (!this.lock) return false;
    const extended = await watched(() => this.lock.extend(this.ttlMs));
    if (extended === false) return false;
    this.lock = extended;
    return true;
  }
}

serve({ begin: (key, ttlMs) => new RedlockLease(key, ttlMs), renew: true, close: () => redis.quit() });
