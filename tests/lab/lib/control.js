'use strict';
// control.js: the lab's JSON control API, what tests and scripts drive the lab with.
// Plain HTTP on its own 127.0.0.1 port, never behind the delay proxies, never logged.
//
//   GET    /info                      lab.json content
//   GET    /log[?since=SEQ]           {"requests": [...]}
//   GET    /counts[?endpoint=E]       {"LIST": n, "HEAD": n, "GET_RANGE": n, ..., "bytes": n}
//   GET    /connections               {"h1": {"accepted": n, "open": n, "delay_ms": d,
//                                       "used": n, "conns": [{port, opened, closed,
//                                       bytes_in, bytes_out, ended_by}, ...]}, ...;
//                                       "fp1"/"fp2": {"accepted": n, "open": n}}
//   GET    /stats                     labd's own CPU time (ms) and memory (bytes)
//   POST   /reset                     clear log, connection counts, faults; delay back to start value
//   POST   /delay {"ms": N[, "endpoint": E]}        one-way delay (RTT = 2 x ms)
//   POST   /fault {"kind": K, "count": N, "method": M, "key": S, "request_kind": K,
//                  "endpoint": E, "seconds": S}
//   GET    /faults   DELETE /faults
//   POST   /pfault {"kind": K, "count": N, "method": M, "key": S, "request_kind": K,
//                   "endpoint": "fp1"|"fp2", "value": V, "from_byte": N}   (lib/faultproxy.js)
//   DELETE /pfaults
//   PUT    /object?bucket=B&key=K[&path=/abs/file][&family=az]   body = object bytes
//                                     (unless path); family az: into Azurite's container B
//   DELETE /object?bucket=B&key=K[&family=az]
//   POST   /bucket {"name": B[, "region": R]}   create a bucket (signatures must use R)
//   POST   /credentials {"akid": A, "secret": S, "token": T[, "expires_at": unix]}
//   POST   /presign {"bucket": B, "key": K[, "endpoint": E, "method": M, "expires": S,
//                    "signed_at": unix, "route": "norange,...", "akid": A]}  -> {"url": U}
//   POST   /token                     -> {"token": T} for /_web/<...token...>/ URLs
//   POST   /family {"name": "gcs"|"az"}  start a backend family (once) -> its info
//   POST   /shutdown
// Errors answer {"error": "..."} with 400/404/500.

const http = require('http');
const fs = require('fs');

function readJson(req) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      if (!text.trim()) return resolve({});
      try { resolve(JSON.parse(text)); } catch (e) { reject(new Error('body is not JSON: ' + e.message)); }
    });
    req.on('error', reject);
  });
}

function send(res, status, obj) {
  const body = JSON.stringify(obj);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

class BadRequest extends Error {}

// `lab` is the Lab object of labd.js: { log, faults, proxies, info(), reset(), ... }.
function createControlServer(lab) {
  const routes = {
    'GET /info': async () => lab.info(),
    'GET /log': async (req, url) => ({ requests: lab.log.list(url.searchParams.get('since')) }),
    'GET /counts': async (req, url) => lab.log.counts(url.searchParams.get('endpoint')),
    'GET /connections': async () => lab.connections(),
    'POST /reset': async () => { lab.reset(); return { ok: true }; },
    'GET /stats': async () => {
      const cpu = process.cpuUsage();
      const mem = process.memoryUsage();
      return { cpu_user_ms: cpu.user / 1000, cpu_system_ms: cpu.system / 1000, rss: mem.rss,
        heap_used: mem.heapUsed, uptime_s: process.uptime() };
    },
    'POST /delay': async (req) => {
      const b = await readJson(req);
      if (!(Number(b.ms) >= 0)) throw new BadRequest('delay needs "ms" >= 0');
      lab.setDelay(Number(b.ms), b.endpoint || null);
      return lab.connections();
    },
    'POST /fault': async (req) => {
      const b = await readJson(req);
      try { return { ok: true, rule: lab.faults.add(b) }; } catch (e) { throw new BadRequest(e.message); }
    },
    'GET /faults': async () => ({ rules: lab.faults.list() }),
    'POST /pfault': async (req) => {
      const b = await readJson(req);
      try { return { ok: true, rule: lab.faultProxy.add(b) }; } catch (e) { throw new BadRequest(e.message); }
    },
    'DELETE /pfaults': async () => { lab.faultProxy.faults.clear(); return { ok: true }; },
    'DELETE /faults': async () => { lab.faults.clear(); return { ok: true }; },
    'PUT /object': async (req, url) => {
      const bucket = url.searchParams.get('bucket');
      const key = url.searchParams.get('key');
      const file = url.searchParams.get('path');
      if (!bucket || !key) throw new BadRequest('PUT /object needs bucket and key');
      let body;
      let length;
      if (file) {
        let st;
        try { st = fs.statSync(file); } catch (e) { throw new BadRequest(`cannot read ${file}: ${e.code}`); }
        body = fs.createReadStream(file);
        length = st.size;
        req.resume();
      } else {
        body = req;
        length = Number(req.headers['content-length']);
        if (!Number.isFinite(length)) throw new BadRequest('PUT /object needs a Content-Length');
      }
      return lab.putObject(bucket, key, body, length, url.searchParams.get('family'), file);
    },
    'DELETE /object': async (req, url) => {
      const bucket = url.searchParams.get('bucket');
      const key = url.searchParams.get('key');
      if (!bucket || !key) throw new BadRequest('DELETE /object needs bucket and key');
      return lab.deleteObject(bucket, key, url.searchParams.get('family'));
    },
    'POST /bucket': async (req) => {
      const b = await readJson(req);
      if (!b.name || !/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(String(b.name))) {
        throw new BadRequest('bucket needs a valid "name" (3-63 of a-z 0-9 . -)');
      }
      if (b.region !== undefined && !/^[a-z]{2}(-[a-z]+)+-\d+$/.test(String(b.region))) {
        throw new BadRequest(`"${b.region}" is not a region name like eu-west-1`);
      }
      return lab.createBucket(String(b.name), b.region ? String(b.region) : null);
    },
    'POST /credentials': async (req) => {
      const b = await readJson(req);
      if (!b.akid || !b.secret) throw new BadRequest('credentials need "akid" and "secret"');
      lab.addCredential(String(b.akid), String(b.secret), b.token ? String(b.token) : null,
        b.expires_at ? Number(b.expires_at) : null);
      return { ok: true };
    },
    'POST /presign': async (req) => {
      const b = await readJson(req);
      if (!b.bucket || !b.key) throw new BadRequest('presign needs "bucket" and "key"');
      try {
        return { url: await lab.presign({ bucket: String(b.bucket), key: String(b.key),
          endpoint: b.endpoint || 'h1', method: b.method || 'GET',
          expires: b.expires === undefined ? 3600 : Number(b.expires),
          signedAt: b.signed_at ? Number(b.signed_at) : null, route: b.route || null,
          akid: b.akid || undefined }) };
      } catch (e) {
        throw new BadRequest(e.message || String(e));
      }
    },
    'POST /token': async () => ({ token: lab.issueToken() }),
    'POST /family': async (req) => {
      const b = await readJson(req);
      try { return await lab.startFamily(String(b.name)); } catch (e) { throw new BadRequest(e.message); }
    },
    'POST /shutdown': async () => { setImmediate(() => lab.shutdown(0)); return { ok: true }; },
  };

  return http.createServer((req, res) => {
    const url = new URL(req.url, 'http://127.0.0.1');
    const route = routes[`${req.method} ${url.pathname}`];
    if (!route) {
      req.resume();
      return send(res, 404, { error: `no such control endpoint: ${req.method} ${url.pathname}` });
    }
    route(req, url).then((out) => send(res, 200, out), (err) => {
      req.resume();
      send(res, err instanceof BadRequest ? 400 : 500, { error: err.message });
    });
  });
}

module.exports = { createControlServer };
