'use strict';
// A lease with a plain DEL release, on ioredis: the classic mistake, in Node.js.
//
//   leasecheck run --lease node-ioredis-del        (exec:node examples/node/ioredis_del.js)
//
// acquire: SET key token NX PX ttl. release: DEL key — whoever holds it by then. When this
// claim's deadline passed mid-job and another worker claimed the key, the DEL frees *their*
// claim: leasecheck reports foreign releases (exit 1).
const crypto = require('crypto');
const Redis = require('ioredis');
const { serve } = require('./lease_protocol');

const redis = new Redis(process.env.LEASECHECK_URL, { maxRetriesPerRequest: 1, commandTimeout: 5000 });
redis.on('error', (err) => console.error(`ioredis: ${err.message}`));

class DelLease {
  constructor(key, ttlMs) {
    this.key = key;
    this.ttlMs = ttlMs;
    this.token = crypto.randomBytes(16).toString('hex');
  }

  async acquire() {
    return (await redis.set(this.key, this.token, 'PX', this.ttlMs, 'NX')) === 'OK';
  }

  async release() {
    return (await redis.del(this.key)) === 1;
  }
}

serve({ begin: (key, ttlMs) => new DelLease(key, ttlMs), close: () => redis.quit() });
