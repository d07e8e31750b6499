'use strict';
// reqlog.js: the lab's in-memory request log, what tests read to see what the
// server saw. One plain object per request, appended when the request arrives and
// completed when its response ends, so seq follows arrival order. Cheap by design
// (no I/O per request, bounded length) so that it never slows 16 readers down.

// About 0.5 KB an entry; past the cap the oldest entries go (counts stay exact).
const MAX_ENTRIES = 200000;
const KINDS = ['LIST', 'HEAD', 'GET_RANGE', 'GET', 'PUT', 'POST', 'DELETE', 'OTHER'];

// Classify a request the way the tests count them.
function kindOf(method, key, hasRange) {
  switch (method) {
    case 'GET':
      if (!key) return 'LIST';
      return hasRange ? 'GET_RANGE' : 'GET';
    case 'HEAD': return 'HEAD';
    case 'PUT': return 'PUT';
    case 'POST': return 'POST';
    case 'DELETE': return 'DELETE';
    default: return 'OTHER';
  }
}

class RequestLog {
  constructor() {
    this.reset();
  }

  reset() {
    this.entries = [];
    this.seq = 0;
    this.dropped = 0;
    this.generation = (this.generation || 0) + 1;
    this.totals = new Map(); // endpoint -> counts, kept as requests come and finish
  }

  totalsFor(endpoint) {
    let t = this.totals.get(endpoint);
    if (!t) {
      t = { total: 0, bytes: 0 };
      for (const k of KINDS) t[k] = 0;
      this.totals.set(endpoint, t);
    }
    return t;
  }

  // Returns the entry; the caller fills status, bytes_sent, ... when done.
  begin(fields) {
    const e = Object.assign({
      seq: ++this.seq,
      time: Date.now() / 1000,
      endpoint: null, method: null, path: null, query: '', range: null, if_match: null,
      bucket: null, key: null, kind: 'OTHER', sig: null, akid: null, user_agent: null,
      status: 0, bytes_sent: 0, error: null, fault: null, done: false, dur_ms: null,
      amz: null, xhdr: null, req_length: null, route: null, auth: null,
    }, fields);
    if (this.entries.length >= MAX_ENTRIES) {
      this.entries.shift();
      this.dropped++;
    }
    this.entries.push(e);
    Object.defineProperty(e, 'generation', { value: this.generation, enumerable: false });
    const t = this.totalsFor(e.endpoint);
    t[e.kind]++;
    t.total++;
    return e;
  }

  // Called once when the entry's response is over (bytes_sent final).
  complete(e) {
    if (e.generation !== this.generation) return; // began before a reset
    this.totalsFor(e.endpoint).bytes += e.bytes_sent;
  }

  // Entries with seq > since.
  list(since) {
    const s = Number(since) || 0;
    if (!s) return this.entries;
    return this.entries.filter((e) => e.seq > s);
  }

  counts(endpoint) {
    const c = { total: 0, bytes: 0 };
    for (const k of KINDS) c[k] = 0;
    for (const [ep, t] of this.totals) {
      if (endpoint && ep !== endpoint) continue;
      for (const k of Object.keys(c)) c[k] += t[k];
    }
    c.dropped_entries = this.dropped;
    return c;
  }
}

module.exports = { RequestLog, kindOf };
