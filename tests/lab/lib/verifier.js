'use strict';
// verifier.js: the HTTP server in front of s3rver. For every request it
//   1. classifies and logs it (reqlog.js),
//   2. checks its SigV4 signature (sigcheck.js) or allows it anonymously
//      (bucket `public`, reads only), answering S3's XML errors otherwise,
//   3. applies a pending fault (faults.js), then
//   4. proxies it to s3rver without its credentials (s3rver would otherwise try its
//      own partial checks), implements If-Match (s3rver 3.7 ignores it) and counts
//      the body bytes actually sent.
// One http.Server per endpoint, all sharing this handler, so the log knows which
// endpoint (h1, h2, h1tls) a request came through.

const http = require('http');
const crypto = require('crypto');
const { verify } = require('./sigcheck');
const { kindOf } = require('./reqlog');
const { STATUS_FAULTS } = require('./faults');
const { verifyPresigned, isPresigned, SIGNING_PARAMS } = require('./presign');
const { parseWebRoute, stripAuthQuery, queryToken, htmlIndex } = require('./webroutes');

const PUBLIC_BUCKET = 'public';
const TOKEN_PARAM = new Set(['token']);
// Pause between the last body bytes and a reset/close fault (see act() in relay).
const CUT_GRACE_MS = 20;
// Request headers never forwarded to s3rver.
const DROP = new Set(['authorization', 'x-amz-security-token', 'if-match', 'connection',
  'x-lab-proxy-fault',
  'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade', 'te', 'via',
  'x-forwarded-for', 'x-forwarded-proto', 'forwarded', 'host']);

const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding',
  'upgrade', 'te']);

function xmlEscape(s) {
  return String(s).replace(/[<>&'"]/g, (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;',
    "'": '&apos;', '"': '&quot;' })[c]);
}

function requestId() { return crypto.randomBytes(8).toString('hex').toUpperCase(); }

// Answer an S3-style XML error. Returns nothing; the log entry is completed by
// the 'close' listener installed in handle().
function sendError(req, res, status, code, message, resource, extraHeaders, region) {
  req.resume(); // discard any request body so the connection stays usable
  const body = '<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>' + xmlEscape(code) +
    '</Code><Message>' + xmlEscape(message) + '</Message>' +
    (region ? '<Region>' + xmlEscape(region) + '</Region>' : '') +
    '<Resource>' + xmlEscape(resource) + '</Resource><RequestId>' + requestId() + '</RequestId></Error>';
  const headers = Object.assign({ 'content-type': 'application/xml',
    'content-length': Buffer.byteLength(body), 'x-amz-request-id': requestId() },
  extraHeaders || {});
  res.writeHead(status, headers);
  if (req.method === 'HEAD') {
    res.end();
  } else {
    res._labBytes += Buffer.byteLength(body);
    res.end(body);
  }
}

function decodePath(rawPath) {
  // "/bucket/key/with%20space" -> ['bucket', 'key/with space'] (null on bad escapes)
  const p = rawPath.replace(/^\/+/, '');
  const slash = p.indexOf('/');
  const rawBucket = slash < 0 ? p : p.slice(0, slash);
  const rawKey = slash < 0 ? '' : p.slice(slash + 1);
  try {
    return [decodeURIComponent(rawBucket), decodeURIComponent(rawKey)];
  } catch (e) {
    return null;
  }
}

function stripQuotes(etag) {
  return String(etag || '').replace(/^W\//, '').replace(/^"|"$/g, '');
}

// The x-amz-* request headers a client chose (storage class, encryption, copy source,
// ACL, ...): what tests compare between two clients. Signing plumbing is left out.
const AMZ_SIGNING = new Set(['x-amz-date', 'x-amz-content-sha256', 'x-amz-security-token']);
function amzHeaders(headers) {
  const out = {};
  for (const [k, v] of Object.entries(headers)) {
    if (k.startsWith('x-amz-') && !AMZ_SIGNING.has(k)) out[k] = v;
  }
  return Object.keys(out).length ? out : null;
}

// Other x-* request headers (a user's GDAL_HTTP_HEADERS, a proxy's): logged as sent.
function xHeaders(headers) {
  const out = {};
  for (const [k, v] of Object.entries(headers)) {
    if (k.startsWith('x-') && !k.startsWith('x-amz-')) out[k] = v;
  }
  return Object.keys(out).length ? out : null;
}

// A Range header asking more than max bytes, cut to its first max bytes (webroutes.js
// maxrange): s3rver then answers the shorter span, its Content-Range saying so.
function capRange(range, max) {
  const m = /^bytes=(\d+)-(\d*)$/.exec(range);
  if (!m) return range;
  const first = Number(m[1]);
  const last = m[2] === '' ? Infinity : Number(m[2]);
  return last - first + 1 > max ? `bytes=${first}-${first + max - 1}` : range;
}

class Verifier {
  // lab: { log, faults, lookupCredential(akid), region, s3rver: { host, port } }
  constructor(lab) {
    this.lab = lab;
    // timeout: idle upstream sockets close after 60 s, before s3rver's 10 min (labd.js).
    this.agent = new http.Agent({ keepAlive: true, maxSockets: Infinity, maxFreeSockets: 64,
      timeout: 60000 });
    this.servers = [];
    this.pendingTimers = new Set();
  }

  // Start an http.Server for `endpoint` on 127.0.0.1; resolves with its port.
  listen(endpoint) {
    const server = http.createServer((req, res) => {
      this.handle(endpoint, req, res).catch((err) => {
        if (!res.headersSent) {
          sendError(req, res, 500, 'InternalError', 'lab verifier: ' + err.message, req.url);
        } else {
          res.destroy();
        }
      });
    });
    server.keepAliveTimeout = 120000; // longer than nghttpx's backend keep-alive (30 s)
    server.headersTimeout = 125000;
    server.requestTimeout = 0;
    this.servers.push(server);
    return new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve(server.address().port));
    });
  }

  close() {
    for (const t of this.pendingTimers) clearTimeout(t);
    this.agent.destroy();
    return Promise.all(this.servers.map((s) => new Promise((resolve) => {
      s.close(() => resolve());
      if (typeof s.closeAllConnections === 'function') s.closeAllConnections();
    })));
  }

  async handle(endpoint, req, res) {
    const url = req.url || '/';
    const q = url.indexOf('?');
    const rawPath = q < 0 ? url : url.slice(0, q);
    const rawQuery = q < 0 ? '' : url.slice(q + 1);
    // A backend family of its own (gcs.js, azure.js) or the S3 endpoints.
    const family = this.lab.familyOf(endpoint);
    const web = family ? null : parseWebRoute(rawPath);
    const decoded = family && family.decode ? family.decode(rawPath)
      : decodePath(web && !web.error ? web.rest : rawPath);
    const [bucket, key] = decoded || [null, null];
    // (x-ms-range: Azure's alternative to Range)
    const range = req.headers.range || req.headers['x-ms-range'] || null;
    const entry = this.lab.log.begin({
      endpoint, method: req.method, path: rawPath, query: rawQuery, range,
      if_match: req.headers['if-match'] || null, bucket, key,
      kind: kindOf(req.method, key, !!range), user_agent: req.headers['user-agent'] || null,
      amz: amzHeaders(req.headers), xhdr: xHeaders(req.headers),
      req_length: req.headers['content-length'] || null,
      route: web ? web.name : null,
    });
    const t0 = process.hrtime.bigint();
    res._labBytes = 0;
    // A request the fault proxy (faultproxy.js) will answer with a fault of its own.
    if (req.headers['x-lab-proxy-fault']) entry.fault = 'p:' + req.headers['x-lab-proxy-fault'];
    res.once('close', () => {
      entry.status = res.statusCode;
      entry.bytes_sent = res._labBytes;
      entry.done = true;
      entry.dur_ms = Number(process.hrtime.bigint() - t0) / 1e6;
      this.lab.log.complete(entry);
    });

    if (!decoded || (web && web.error)) {
      entry.sig = 'bad';
      entry.error = web && web.error ? 'InvalidArgument' : 'InvalidURI';
      return sendError(req, res, 400, entry.error,
        web && web.error ? web.error : 'Could not parse the specified URI.', rawPath);
    }

    if (family && family.serves(endpoint)) return family.serve(endpoint, req, res, entry, rawPath, rawQuery);

    // 1. authentication
    if (family) {
      if (!family.authenticate(req, res, entry, rawPath, bucket)) return;
    } else if (!(await this.authenticate(req, res, entry, rawPath, rawQuery, bucket, web))) {
      return;
    }
    const opts = web ? web.opts : null;
    if (opts && opts.nohead && req.method === 'HEAD') {
      entry.error = opts.nohead === 405 ? 'MethodNotAllowed' : 'AccessDenied';
      return sendError(req, res, opts.nohead, entry.error, 'HEAD is refused here', rawPath,
        opts.nohead === 405 ? { allow: 'GET' } : {});
    }
    if (opts && opts.index && req.method === 'GET' && (key === '' || key.endsWith('/'))) {
      const page = Buffer.from(await htmlIndex(this.lab.s3rver, bucket, key, rawPath));
      req.resume();
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'content-length': page.length });
      res._labBytes += page.length;
      return res.end(page);
    }
    if (opts && opts.redirect && (req.method === 'GET' || req.method === 'HEAD')) {
      const location = await this.lab.presign({ bucket, key, endpoint, host: req.headers.host,
        expires: opts.ttl });
      req.resume();
      res.writeHead(opts.redirect, { location, 'content-length': 0 });
      return res.end();
    }

    // 2. faults
    const fault = this.lab.faults.take(req.method, key, entry.kind, endpoint);
    if (this.statusFault(req, res, entry, fault, rawPath)) return undefined;

    // 3. proxy to s3rver
    const fwdPath = web ? web.rest : rawPath;
    const fwdQuery = entry.auth === 'presigned' ? stripAuthQuery(rawQuery, SIGNING_PARAMS)
      : entry.auth === 'token' ? stripAuthQuery(rawQuery, TOKEN_PARAM) : rawQuery;
    return this.forward(req, res, fwdPath, fwdQuery, entry, fault, opts);
  }

  // Answer a status fault (503, 500, 429, 403, 404) if `fault` is one; true when answered.
  // A body fault is only recorded here (relay() applies it).
  statusFault(req, res, entry, fault, rawPath) {
    if (!fault) return false;
    entry.fault = fault.kind;
    const sf = STATUS_FAULTS[fault.kind];
    if (!sf) return false;
    entry.error = sf.code;
    const extra = fault.kind === 'throttle' ? { 'retry-after': String(fault.seconds) } : {};
    sendError(req, res, sf.status, sf.code, sf.message, rawPath, extra);
    return true;
  }

  // For backend families whose server checks credentials itself (azure.js): faults,
  // then `upstream` ({ host, port }) with every end-to-end header, Host included.
  passOn(req, res, entry, fault, rawPath, rawQuery, upstream) {
    if (this.statusFault(req, res, entry, fault, rawPath)) return undefined;
    return this.forward(req, res, rawPath, rawQuery, entry, fault, null, upstream);
  }

  // Check who is asking; answers the error itself and resolves false when refused.
  // Order: a SigV4 header, a presigned query, a /_web/ token, else anonymous
  // (reads of bucket `public`, and /_web/ redirects, which anyone may follow).
  async authenticate(req, res, entry, rawPath, rawQuery, bucket, web) {
    const refuse = (v) => {
      entry.error = v.code;
      sendError(req, res, v.status, v.code, v.message, rawPath, v.extraHeaders, v.region);
      return false;
    };
    let v = null;
    if (req.headers.authorization) {
      entry.auth = 'sigv4';
      v = await verify({ method: req.method, rawPath, rawQuery, headers: req.headers },
        (akid) => this.lab.lookupCredential(akid), this.lab.bucketRegion(bucket));
    } else if (isPresigned(rawQuery)) {
      entry.auth = 'presigned';
      v = await verifyPresigned({ method: req.method, rawPath, rawQuery, headers: req.headers },
        (akid) => this.lab.lookupCredential(akid), this.lab.bucketRegion(bucket));
    } else if (web && web.opts.token) {
      entry.auth = 'token';
      const ok = this.lab.tokens.has(queryToken(rawQuery));
      v = ok ? { verdict: 'ok' } : { verdict: 'bad', status: 403, code: 'AuthenticationFailed',
        message: 'Server failed to authenticate the request: missing or unknown token.' };
    } else {
      entry.auth = 'anonymous';
      entry.sig = 'anonymous';
      const read = req.method === 'GET' || req.method === 'HEAD';
      // A redirector hands anyone the signed URL; the target checks it.
      if (!read || (bucket !== PUBLIC_BUCKET && !(web && web.opts.redirect))) {
        return refuse({ status: 403, code: 'AccessDenied', message: 'Access Denied' });
      }
      return true;
    }
    entry.sig = v.verdict;
    entry.akid = v.akid || null;
    return v.verdict === 'ok' ? true : refuse(v);
  }

  // To s3rver without the credentials, or to `upstream` with them (passOn).
  forward(req, res, rawPath, rawQuery, entry, fault, opts, upstream) {
    const to = upstream || this.lab.s3rver;
    const headers = {};
    for (const [k, v] of Object.entries(req.headers)) {
      if (!(upstream ? HOP_BY_HOP : DROP).has(k)) headers[k] = v;
    }
    if (opts && opts.norange) delete headers.range;
    if (opts && opts.maxrange && headers.range) headers.range = capRange(headers.range, opts.maxrange);
    if (!upstream) headers.host = `127.0.0.1:${this.lab.s3rver.port}`;
    // The path and query bytes exactly as received.
    const path = rawPath + (rawQuery ? '?' + rawQuery : '');
    return new Promise((resolve) => {
      const up = http.request({ host: to.host, port: to.port,
        method: req.method, path, headers, agent: this.agent }, (ures) => {
        this.relay(req, res, ures, entry, fault, opts);
        resolve();
      });
      up.on('error', (err) => {
        if (!res.headersSent) {
          entry.error = 'InternalError';
          sendError(req, res, 502, 'InternalError', 'lab: upstream unreachable: ' + err.message, rawPath);
        } else {
          res.destroy();
        }
        resolve();
      });
      res.once('close', () => { if (!up.writableEnded || !res.writableFinished) up.destroy(); });
      req.pipe(up);
    });
  }

  relay(req, res, ures, entry, fault, opts) {
    const ifMatch = req.headers['if-match'];
    if (ifMatch && (ures.statusCode === 200 || ures.statusCode === 206)) {
      const want = ifMatch.split(',').map((s) => stripQuotes(s.trim()));
      if (!want.includes('*') && !want.includes(stripQuotes(ures.headers.etag))) {
        ures.resume();
        entry.error = 'PreconditionFailed';
        return sendError(req, res, 412, 'PreconditionFailed',
          'At least one of the pre-conditions you specified did not hold', entry.path);
      }
    }
    const headers = Object.assign({}, ures.headers);
    delete headers.connection;
    delete headers['keep-alive'];
    delete headers['transfer-encoding'];
    if (opts && opts.noetag) delete headers.etag;
    if (opts && opts.nolm) delete headers['last-modified'];
    res.writeHead(ures.statusCode, headers);

    const length = Number(ures.headers['content-length']);
    const isBodyFault = !!fault && !STATUS_FAULTS[fault.kind] && req.method !== 'HEAD';
    // A body fault sends half the body, then acts.
    const cut = isBodyFault ? (Number.isFinite(length) ? Math.floor(length / 2) : 0) : Infinity;
    const errBody = ures.statusCode >= 400 ? [] : null;
    let sent = 0;
    let acted = !isBodyFault; // the fault has been applied (or there is none)
    let stalled = false;
    let upstreamEnded = false;
    let tail = []; // chunks held back during a stall

    const write = (chunk) => {
      if (!chunk.length) return;
      res._labBytes += chunk.length;
      sent += chunk.length;
      if (errBody && sent <= 4096) errBody.push(chunk);
      if (!res.write(chunk)) {
        ures.pause();
        res.once('drain', () => { if (!stalled) ures.resume(); });
      }
    };
    const finish = () => {
      if (errBody) {
        const m = /<Code>([^<]*)<\/Code>/.exec(Buffer.concat(errBody).toString('utf8'));
        if (m) entry.error = m[1];
      }
      res.end();
    };
    const act = () => {
      acted = true;
      const sock = res.socket;
      if (fault.kind === 'reset') {
        ures.destroy();
        // The RST waits a moment: one that overtakes unread data reads as EOF.
        res.write('', () => setTimeout(() => {
          if (sock && !sock.destroyed && typeof sock.resetAndDestroy === 'function') sock.resetAndDestroy();
          else res.destroy();
        }, CUT_GRACE_MS));
      } else if (fault.kind === 'truncated') {
        ures.destroy();
        // Same grace as for reset, so a front (nghttpx) has passed the headers and
        // the partial body on before it sees the backend close.
        res.write('', () => setTimeout(() => { if (sock) sock.end(); res.destroy(); }, CUT_GRACE_MS));
      } else if (fault.kind === 'stall') {
        stalled = true;
        ures.pause();
        if (fault.seconds === null) return; // until the client gives up
        const t = setTimeout(() => {
          this.pendingTimers.delete(t);
          stalled = false;
          if (res.destroyed) return;
          for (const c of tail) write(c);
          tail = [];
          if (upstreamEnded) finish();
          else ures.resume();
        }, fault.seconds * 1000);
        this.pendingTimers.add(t);
      }
    };

    if (isBodyFault && cut === 0) act();
    ures.on('data', (chunk) => {
      if (stalled) { tail.push(chunk); return; }
      if (acted) { write(chunk); return; }
      const room = cut - sent;
      if (chunk.length < room) { write(chunk); return; }
      write(chunk.subarray(0, room));
      if (fault.kind === 'stall' && chunk.length > room) tail.push(chunk.subarray(room));
      act();
    });
    ures.on('end', () => {
      upstreamEnded = true;
      if (stalled || (isBodyFault && fault.kind !== 'stall')) return;
      finish();
    });
    ures.on('error', () => res.destroy());
  }
}

module.exports = { Verifier, sendError };
