'use strict';
// faults.js: the lab's fault knobs. A rule applies to the next N requests that
// match it (method, optional key substring, optional kind and endpoint); each
// match consumes one. Rules are checked in the order they were added.
//
// Kinds:
//   slowdown   503 SlowDown (S3 XML)          internal  500 InternalError
//   throttle   429 + Retry-After: seconds     forbidden 403 AccessDenied
//   notfound   404 NoSuchKey
//   reset      headers + part of the body, then a TCP reset
//   truncated  full Content-Length, part of the body, then a clean close (FIN)
//   stall      headers + part of the body, then nothing for `seconds`
//              (then the rest), or forever (until the client gives up)

const STATUS_FAULTS = {
  slowdown: { status: 503, code: 'SlowDown', message: 'Please reduce your request rate.' },
  internal: { status: 500, code: 'InternalError',
    message: 'We encountered an internal error. Please try again.' },
  throttle: { status: 429, code: 'SlowDown', message: 'Too many requests; retry after the delay given.' },
  forbidden: { status: 403, code: 'AccessDenied', message: 'Access Denied' },
  notfound: { status: 404, code: 'NoSuchKey', message: 'The specified key does not exist.' },
};
const BODY_FAULTS = new Set(['reset', 'truncated', 'stall']);
// Aliases so tests may name a fault by its status.
const ALIASES = { '503': 'slowdown', '500': 'internal', '429': 'throttle', '403': 'forbidden',
  '404': 'notfound' };

function normalizeKind(kind) {
  const k = ALIASES[String(kind)] || String(kind);
  if (!(k in STATUS_FAULTS) && !BODY_FAULTS.has(k)) return null;
  return k;
}

class FaultTable {
  constructor() { this.rules = []; }

  clear() { this.rules = []; }

  // spec: { kind, count=1, method='GET', key=null, kind_filter=null, endpoint=null,
  // seconds=null }. Returns the stored rule or throws Error with a clear message.
  add(spec) {
    const kind = normalizeKind(spec.kind);
    if (!kind) {
      throw new Error(`unknown fault kind '${spec.kind}'; known: ` +
        Object.keys(STATUS_FAULTS).concat([...BODY_FAULTS]).join(', '));
    }
    const count = spec.count === undefined ? 1 : Number(spec.count);
    if (!Number.isInteger(count) || count < 1) throw new Error('count must be an integer >= 1');
    let seconds = spec.seconds === undefined || spec.seconds === null ? null : Number(spec.seconds);
    if (seconds !== null && !(seconds >= 0)) throw new Error('seconds must be a number >= 0');
    if (kind === 'throttle' && seconds === null) seconds = 1;
    const rule = {
      kind,
      remaining: count,
      method: (spec.method || 'GET').toUpperCase(),
      key: spec.key || null,
      request_kind: spec.request_kind || null,
      endpoint: spec.endpoint || null,
      seconds,
    };
    this.rules.push(rule);
    return rule;
  }

  // Find and consume the first rule matching this request; null when none does.
  take(method, key, requestKind, endpoint) {
    for (let i = 0; i < this.rules.length; i++) {
      const r = this.rules[i];
      if (r.method !== '*' && r.method !== method) continue;
      if (r.key !== null && !(key || '').includes(r.key)) continue;
      if (r.request_kind && r.request_kind !== requestKind) continue;
      if (r.endpoint && r.endpoint !== endpoint) continue;
      r.remaining--;
      if (r.remaining <= 0) this.rules.splice(i, 1);
      return r;
    }
    return null;
  }

  list() { return this.rules; }
}

module.exports = { FaultTable, STATUS_FAULTS, BODY_FAULTS };
