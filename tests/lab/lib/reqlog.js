'use strict';
// reqlog.js: the lab's in-memory request log, what tests read to see what the
// server saw. One plain object per request, appended when the request arrives and
// completed when its response ends, so seq follows arrival order. Cheap by design
// (no I/O per request, bounded length) so that it never slows 16 readers down.

const MAX_ENTRIES = 1000000;

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
  }

  // Returns the entry; the caller fills status, bytes_sent, ... when done.
  begin(fields) {
    const e = Object.assign({
      seq: ++this.seq,
      time: Date.now() / 1000,
      endpoint: null, method: null, path: null, query: '', range: null, if_match: null,
      bucket: null, key: null, kind: 'OTHER', sig: null, akid: null, user_agent: null,
      status: 0, bytes_sent: 0, error: null, fault: null, done: false, dur_ms: null,
    }, fields);
    if (this.entries.length >= MAX_ENTRIES) {
      this.entries.shift();
      this.dropped++;
    }
    this.entries.push(e);
    return e;
  }

  // Entries with seq > since.
  list(since) {
    const s = Number(since) || 0;
    if (!s) return this.entries;
    return this.entries.filter((e) => e.seq > s);
  }

  counts(endpoint) {
    const c = { LIST: 0, HEAD: 0, GET_RANGE: 0, GET: 0, PUT: 0, POST: 0, DELETE: 0, OTHER: 0,
      total: 0, bytes: 0 };
    for (const e of this.entries) {
      if (endpoint && e.endpoint !== endpoint) continue;
      c[e.kind]++;
      c.total++;
      c.bytes += e.bytes_sent;
    }
    return c;
  }
}

module.exports = { RequestLog, kindOf };
