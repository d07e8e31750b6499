'use strict';
// faultproxy.js: the lab's programmable fault proxy, for faults the verifier's knobs
// cannot make (faults.js damages a response in flight; this one rewrites it whole).
//
//   client -> fp1: HTTP/1.1, plain, our own parser and byte-exact writer -> verifier
//   client -> fp2: HTTP/2 over TLS (Node's http2), stream-level control    -> verifier
//
// Every request is forwarded to the verifier (so it is signature-checked and logged
// there, under endpoint "fp1"/"fp2", with the proxy's fault in the log's `fault`
// field as "p:<kind>"), the whole answer is read, and then, if a rule matches, the
// answer the client gets is rewritten. A rule applies to the next `count` matching
// requests (method, key substring, request kind, endpoint, and with `from_byte` only
// range requests starting at or past that byte), as in faults.js.
//
// Kinds (`value` is a number some kinds take):
//   range416    416 InvalidRange with "Content-Range: bytes */<real size>"
//   empty200    200 with an empty body (Content-Length: 0)
//   nototal     206 whose Content-Range total is "*"
//   lietotal    206 whose Content-Range total is `value` (a lie)
//   corrupt     206, right length and Content-Range, every body byte zeroed
//   flip        206, right length and Content-Range, every `value`-th body byte
//               (default 997) inverted
//   longbody    206 whose body is `value` (default 100) bytes longer than its range
//   badrange    206 with "Content-Range: bytes garbage"
//   norange     206 (or 200) without its Content-Range header; the body untouched, or
//               `value` bytes shorter (a body that cannot be placed)
//   badlength   h1: the right body, its Content-Length sent as "<n>, <n>" (a header a
//               proxy repeated and joined; curl takes the leading number)
//   hugelength  h1: the right body, Content-Length 99999999999999999999 (past 2^63),
//               the connection closed after the body (curl reads to the close)
//   reqtimeout  400 RequestTimeout (S3 XML)
//   bigerror    503 SlowDown whose Message makes the body `value` bytes (default 10 MB)
//   s503        503 SlowDown          throttle  429 SlowDown + Retry-After: value s
//   trickle     the real answer, its body sent at `value` bytes/s (default 10)
//   refuse      h2: RST_STREAM REFUSED_STREAM before any header (h1: connection closed)
//   rst         h2: half the body, then RST_STREAM INTERNAL_ERROR
//   goaway      h2: half the body, then GOAWAY and the connection closed
//   noend       h2: the whole body, but never END_STREAM (h1: whole body, no close)

const http = require('http');
const http2 = require('http2');
const net = require('net');
const fs = require('fs');

const KINDS = new Set(['range416', 'empty200', 'nototal', 'lietotal', 'corrupt', 'flip', 'longbody',
  'badrange', 'norange', 'badlength', 'hugelength', 'reqtimeout', 'bigerror', 's503', 'throttle', 'trickle', 'refuse', 'rst', 'goaway',
  'noend']);
const REASONS = { 200: 'OK', 206: 'Partial Content', 400: 'Bad Request', 416:
  'Range Not Satisfiable', 429: 'Too Many Requests', 503: 'Service Unavailable' };
// Headers that belong to one hop (never forwarded, never sent over h2).
const HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding',
  'upgrade', 'te', 'http2-settings', 'host']);

function s3error(code, message, extra) {
  return Buffer.from('<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>' + code +
    '</Code><Message>' + message + '</Message>' + (extra || '') + '</Error>');
}

class ProxyFaults {
  constructor() { this.rules = []; }

  clear() { this.rules = []; }

  add(spec) {
    if (!KINDS.has(spec.kind)) {
      throw new Error(`unknown proxy fault '${spec.kind}'; known: ${[...KINDS].join(', ')}`);
    }
    const count = spec.count === undefined ? 1 : Number(spec.count);
    if (!Number.isInteger(count) || count < 1) throw new Error('count must be an integer >= 1');
    const fromByte = spec.from_byte === undefined || spec.from_byte === null ? null
      : Number(spec.from_byte);
    if (fromByte !== null && !(Number.isInteger(fromByte) && fromByte >= 0)) {
      throw new Error('from_byte must be an integer >= 0');
    }
    const rule = { kind: spec.kind, remaining: count, from_byte: fromByte,
      method: (spec.method || 'GET').toUpperCase(),
      key: spec.key || null, request_kind: spec.request_kind || null,
      endpoint: spec.endpoint || null,
      value: spec.value === undefined || spec.value === null ? null : Number(spec.value) };
    this.rules.push(rule);
    return rule;
  }

  take(method, key, kind, endpoint, range) {
    const m = /^bytes=(\d+)-/.exec(range || '');
    for (let i = 0; i < this.rules.length; i++) {
      const r = this.rules[i];
      if (r.method !== '*' && r.method !== method) continue;
      if (r.key !== null && !(key || '').includes(r.key)) continue;
      if (r.request_kind && r.request_kind !== kind) continue;
      if (r.endpoint && r.endpoint !== endpoint) continue;
      if (r.from_byte !== null && !(m && Number(m[1]) >= r.from_byte)) continue;
      if (--r.remaining <= 0) this.rules.splice(i, 1);
      return r;
    }
    return null;
  }
}

// The decoded key and the log's request kind of a request (as reqlog.js says).
function classify(method, rawPath, range) {
  const q = rawPath.indexOf('?');
  const p = (q < 0 ? rawPath : rawPath.slice(0, q)).replace(/^\/+/, '');
  const slash = p.indexOf('/');
  let key = '';
  try { key = slash < 0 ? '' : decodeURIComponent(p.slice(slash + 1)); } catch (e) { key = ''; }
  let kind = 'OTHER';
  if (method === 'GET') kind = key ? (range ? 'GET_RANGE' : 'GET') : 'LIST';
  else if (method === 'HEAD') kind = 'HEAD';
  return { key, kind };
}

// Ask the verifier; resolves { status, headers (lowercase, no hop headers), body }.
function forward(verifierPort, method, path, headers, fault) {
  return new Promise((resolve, reject) => {
    const h = {};
    for (const [k, v] of Object.entries(headers)) {
      if (!HOP.has(k) && !k.startsWith(':')) h[k] = v;
    }
    h.host = headers.host || headers[':authority'];
    if (fault) h['x-lab-proxy-fault'] = fault.kind;
    const req = http.request({ host: '127.0.0.1', port: verifierPort, method, path, headers: h,
      agent: false }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => {
        const out = {};
        for (const [k, v] of Object.entries(res.headers)) if (!HOP.has(k)) out[k] = v;
        resolve({ status: res.statusCode, headers: out, body: Buffer.concat(chunks) });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

// The answer the client is to get: { status, headers, body, act } where act names
// what the writer does beyond sending it (trickle, refuse, rst, goaway, noend).
function rewrite(ans, fault, method) {
  if (!fault) return ans;
  const h = Object.assign({}, ans.headers);
  const cr = /^bytes (\d+)-(\d+)\/(\d+|\*)$/.exec(h['content-range'] || '');
  const total = cr && cr[3] !== '*' ? Number(cr[3]) : null;
  const v = fault.value;
  const xml = (status, code, msg, extra) => {
    const body = s3error(code, msg, extra);
    return { status, headers: { 'content-type': 'application/xml',
      'x-amz-request-id': 'PROXYFAULT' }, body };
  };
  switch (fault.kind) {
    case 'range416': {
      const out = xml(416, 'InvalidRange', 'The requested range is not satisfiable');
      out.headers['content-range'] = `bytes */${total !== null ? total : 0}`;
      return out;
    }
    case 'empty200':
      delete h['content-range'];
      return { status: 200, headers: h, body: Buffer.alloc(0) };
    case 'nototal':
      if (cr) h['content-range'] = `bytes ${cr[1]}-${cr[2]}/*`;
      return { status: ans.status, headers: h, body: ans.body };
    case 'lietotal':
      if (cr) h['content-range'] = `bytes ${cr[1]}-${cr[2]}/${v}`;
      return { status: ans.status, headers: h, body: ans.body };
    case 'corrupt':
      return { status: ans.status, headers: h, body: Buffer.alloc(ans.body.length) };
    case 'flip': {
      const body = Buffer.from(ans.body);
      const step = v === null ? 997 : Math.max(1, v);
      for (let i = step - 1; i < body.length; i += step) body[i] ^= 0xff;
      return { status: ans.status, headers: h, body };
    }
    case 'longbody':
      return { status: ans.status, headers: h,
        body: Buffer.concat([ans.body, Buffer.alloc(v === null ? 100 : v, 0x41)]) };
    case 'badrange':
      h['content-range'] = 'bytes garbage';
      return { status: ans.status, headers: h, body: ans.body };
    case 'norange':
      delete h['content-range'];
      return { status: ans.status, headers: h,
        body: v ? ans.body.subarray(0, Math.max(0, ans.body.length - v)) : ans.body };
    case 'badlength':
    case 'hugelength': // the h1 writer states the length
      return { status: ans.status, headers: h, body: ans.body, length: fault.kind };
    case 'reqtimeout':
      return xml(400, 'RequestTimeout', 'Your socket connection to the server was not read ' +
        'from or written to within the timeout period. Idle connections will be closed.');
    case 's503':
      return xml(503, 'SlowDown', 'Please reduce your request rate.');
    case 'throttle': {
      const out = xml(429, 'SlowDown', 'Too many requests.');
      out.headers['retry-after'] = String(v === null ? 1 : v);
      return out;
    }
    case 'bigerror': {
      const size = v === null ? 10 * 1024 * 1024 : v;
      const head = '<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>SlowDown</Code><Message>';
      const tail = '</Message></Error>';
      const fill = Math.max(0, size - head.length - tail.length);
      return { status: 503, headers: { 'content-type': 'application/xml' },
        body: Buffer.concat([Buffer.from(head), Buffer.alloc(fill, 0x78), Buffer.from(tail)]) };
    }
    default: // trickle, refuse, rst, goaway, noend: the writer acts
      return { status: ans.status, headers: h, body: ans.body, act: fault.kind,
        rate: v === null ? 10 : v };
  }
}

// ---- fp1: HTTP/1.1, our own parser and writer --------------------------------

function serveH1(sock, ctx) {
  let buf = Buffer.alloc(0);
  let busy = false;
  let closed = false;
  sock.on('close', () => { closed = true; });
  sock.on('error', () => {});
  const pump = () => {
    if (busy || closed) return;
    const end = buf.indexOf('\r\n\r\n');
    if (end < 0) return;
    const lines = buf.subarray(0, end).toString('latin1').split('\r\n');
    const [method, path] = lines[0].split(' ');
    const headers = {};
    for (const l of lines.slice(1)) {
      const c = l.indexOf(':');
      if (c > 0) headers[l.slice(0, c).trim().toLowerCase()] = l.slice(c + 1).trim();
    }
    const blen = Number(headers['content-length'] || 0);
    if (buf.length < end + 4 + blen) return;
    buf = buf.subarray(end + 4 + blen);
    busy = true;
    handleH1(sock, ctx, method, path, headers).then((keep) => {
      busy = false;
      if (!keep) { sock.end(); return; }
      pump();
    }, () => sock.destroy());
  };
  sock.on('data', (d) => { buf = Buffer.concat([buf, d]); pump(); });
}

async function handleH1(sock, ctx, method, path, headers) {
  const { key, kind } = classify(method, path, headers.range);
  const fault = ctx.faults.take(method, key, kind, 'fp1', headers.range);
  const ans = rewrite(await forward(ctx.verifierPorts.fp1, method, path, headers, fault),
    fault, method);
  if (ans.act === 'refuse') { sock.destroy(); return false; }
  const head = (len) => {
    let s = `HTTP/1.1 ${ans.status} ${REASONS[ans.status] || 'Status'}\r\n`;
    for (const [k, v] of Object.entries(ans.headers)) {
      if (k !== 'content-length') s += `${k}: ${v}\r\n`;
    }
    if (ans.length === 'badlength') return s + `content-length: ${len}, ${len}\r\n\r\n`;
    if (ans.length === 'hugelength') {
      return s + 'content-length: 99999999999999999999\r\nconnection: close\r\n\r\n';
    }
    return s + `content-length: ${len}\r\nconnection: keep-alive\r\n\r\n`;
  };
  const body = method === 'HEAD' ? Buffer.alloc(0) : ans.body;
  const announced = method === 'HEAD' ? Number(ans.headers['content-length'] || ans.body.length)
    : body.length;
  if (ans.act === 'trickle') {
    sock.write(head(announced));
    await trickle((c) => sock.write(c), body, ans.rate, () => sock.destroyed);
    return true;
  }
  sock.write(Buffer.concat([Buffer.from(head(announced), 'latin1'), body]));
  return ans.length !== 'hugelength'; // its body ends at the close
}

function trickle(write, body, rate, gone) {
  const per = Math.max(1, Math.round(rate / 10)); // a chunk every 100 ms
  let at = 0;
  return new Promise((resolve) => {
    const t = setInterval(() => {
      if (gone() || at >= body.length) { clearInterval(t); resolve(); return; }
      write(body.subarray(at, at + per));
      at += per;
    }, 100);
  });
}

// ---- fp2: HTTP/2 over TLS with stream control --------------------------------

function h2headers(ans, method) {
  const out = { ':status': ans.status };
  for (const [k, v] of Object.entries(ans.headers)) {
    if (k !== 'content-length' && !HOP.has(k)) out[k] = v;
  }
  out['content-length'] = method === 'HEAD' && ans.headers['content-length'] !== undefined
    ? String(ans.headers['content-length']) : String(ans.body.length);
  return out;
}

async function handleH2(stream, headers, ctx) {
  const method = headers[':method'];
  const path = headers[':path'];
  const { key, kind } = classify(method, path, headers.range);
  const fault = ctx.faults.take(method, key, kind, 'fp2', headers.range);
  let ans;
  try {
    ans = rewrite(await forward(ctx.verifierPorts.fp2, method, path,
      Object.assign({ host: headers[':authority'] }, headers), fault), fault, method);
  } catch (e) {
    if (!stream.destroyed) stream.close(http2.constants.NGHTTP2_INTERNAL_ERROR);
    return;
  }
  if (stream.destroyed) return;
  const half = ans.body.subarray(0, Math.floor(ans.body.length / 2));
  switch (ans.act) {
    case 'refuse':
      stream.close(http2.constants.NGHTTP2_REFUSED_STREAM);
      return;
    case 'rst':
      stream.respond(h2headers(ans, method));
      stream.write(half, () => stream.close(http2.constants.NGHTTP2_INTERNAL_ERROR));
      return;
    case 'goaway':
      stream.respond(h2headers(ans, method));
      stream.write(half, () => {
        const s = stream.session;
        s.goaway(http2.constants.NGHTTP2_NO_ERROR, 0);
        setTimeout(() => s.destroy(), 20);
      });
      return;
    case 'noend':
      stream.respond(h2headers(ans, method));
      if (method !== 'HEAD') stream.write(ans.body); // and never end
      return;
    case 'trickle':
      stream.respond(h2headers(ans, method));
      await trickle((c) => stream.write(c), ans.body, ans.rate, () => stream.destroyed);
      if (!stream.destroyed) stream.end();
      return;
    default:
      stream.respond(h2headers(ans, method), { endStream: method === 'HEAD' });
      if (method !== 'HEAD') stream.end(ans.body);
  }
}

class FaultProxy {
  // verifierPorts: { fp1, fp2 } (the verifier's listeners for these endpoints);
  // tls: { cert, key } file paths.
  constructor(verifierPorts, tls) {
    this.faults = new ProxyFaults();
    this.ctx = { faults: this.faults, verifierPorts };
    this.tls = tls;
    this.sockets = new Set();
    this.sessions = new Set();
    this.accepted = { fp1: 0, fp2: 0 }; // connections since the last resetCounts()
  }

  resetCounts() { this.accepted = { fp1: 0, fp2: 0 }; }

  // The connections each front accepted and holds open, as the delay proxies count theirs.
  stats() {
    return { fp1: { accepted: this.accepted.fp1, open: this.sockets.size },
      fp2: { accepted: this.accepted.fp2, open: this.sessions.size } };
  }

  async start() {
    this.h1 = net.createServer((s) => {
      this.accepted.fp1++;
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
      serveH1(s, this.ctx);
    });
    this.h2 = http2.createSecureServer({ cert: fs.readFileSync(this.tls.cert),
      key: fs.readFileSync(this.tls.key), allowHTTP1: false });
    this.h2.on('session', (s) => {
      this.accepted.fp2++;
      this.sessions.add(s);
      s.on('close', () => this.sessions.delete(s));
      s.on('error', () => {});
    });
    this.h2.on('stream', (stream, headers) => {
      stream.on('error', () => {});
      handleH2(stream, headers, this.ctx).catch(() => {
        if (!stream.destroyed) stream.close(http2.constants.NGHTTP2_INTERNAL_ERROR);
      });
    });
    const listen = (srv) => new Promise((resolve, reject) => {
      srv.once('error', reject);
      srv.listen(0, '127.0.0.1', () => resolve(srv.address().port));
    });
    this.ports = { fp1: await listen(this.h1), fp2: await listen(this.h2) };
    return this.ports;
  }

  add(spec) { return this.faults.add(spec); }

  close() {
    for (const s of this.sockets) s.destroy();
    for (const s of this.sessions) s.destroy();
    return Promise.all([this.h1, this.h2].filter(Boolean).map((srv) =>
      new Promise((resolve) => srv.close(() => resolve()))));
  }
}

module.exports = { FaultProxy, KINDS, rewrite };
